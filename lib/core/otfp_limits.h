// The otfp engine's named thresholds (docs/protocol-otfp.md), each with the rule it serves.
// Counted in cycles for now; issue 17 turns the timeouts into configured durations.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/otfp_ring.h"
#include "core/otfp_wire.h"
#include "core/wire.h"
#include "core/schedule.h"

namespace tob::core::otfp {

inline constexpr uint64_t node_bit(NodeId n) { return uint64_t{1} << n; }

// Omega (seed 002 §4: one coordinator, replaced when it crashes): a node is alive while one of
// its frames arrived within this many cycles; the lowest live id coordinates.
inline constexpr int kHeardCycles = 2;
// An instance still undecided this long after its votes were due, or a round whose activation
// has not completed in this long, gets a new round with phase 1 (seed 002 §4: "ultimately the
// intervention of a coordinator may be necessary to start a new ballot").
inline constexpr int kRecoveryCycles = 4;
// A retransmission request without an answer is sent again, to the next acceptor of the
// partition, after this long (seed 002 §5.5: "the request is resent with increased counter").
inline constexpr int kRequestRetryCycles = 2;
// A classic proposal is repeated every slot and acceptors vote once they hold the batches it names:
// a new round would void it without helping them fetch those. It gets one only after the
// retransmission partition had time to reach every acceptor, twice (N attempts each).
inline constexpr int proposal_patience_cycles(int nodes) { return 2 * (kRecoveryCycles + nodes * kRequestRetryCycles); }

// Frames a slot carries besides its copies for retransmissions (the slot budget counts them);
// a node owed more borrows up to half of its own batch's frames.
inline constexpr int kAuxFramesMin = 1;

// Bounded sections per frame (frame room permitting; the rest goes in a later slot).
inline constexpr size_t kVotesPerFrame = 24;
inline constexpr size_t kRequestsPerFrame = 32;
inline constexpr size_t kServeMax = 32;  // retransmissions owed at once
static_assert(kServeMax >= kRequestsPerFrame, "one frame's requests can all be owed at once");
static_assert(2 * kVotesPerFrame < static_cast<size_t>(kOtfpRing), "a frame's votes and decisions name distinct held instances");
static_assert(kOtfpListHeader + 2 * kVotesPerFrame * kOtfpVoteBytes <= kMaxFrameBytes,
              "a full vote list fits the largest frame");

// Exactly-once: per sender, ids within this distance below the highest delivered are checked.
inline constexpr size_t kDedupBits = 65536;
inline constexpr size_t kDedupWords = kDedupBits / 64;
static_assert(kDedupBits % 64 == 0, "dedup bitmap in whole words");

// A node more than this far behind the present cannot catch up from its peers (they keep
// kOtfpRing instances): it records a gap and continues from what they still hold.
inline constexpr int64_t kCatchUpCycles = kOtfpRing - 2;
// It holds the largest window (64) and kappa (16), a recovery, and a node frozen for 20 cycles.
inline constexpr int kStallBudgetCycles = 20;
static_assert(kCatchUpCycles > 64 + 16 + kRecoveryCycles + kStallBudgetCycles, "the ring holds what catch-up needs");

}  // namespace tob::core::otfp
