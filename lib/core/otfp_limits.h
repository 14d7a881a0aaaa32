// The otfp engine's named thresholds (docs/protocol-otfp.md), each with the rule it serves. The
// timeouts are at least their floor in cycles and at least the configured duration
// ([timing] heard_ns, recovery_ns, retry_ns: docs/configuration.md), so that at short cycles
// they ride out a stall of the host instead of counting it as a crash.
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

// The timeouts of one node in cycles: the floors above, or the configured durations if longer.
struct Timeouts {
  int heard = kHeardCycles;
  int recovery = kRecoveryCycles;
  int retry = kRequestRetryCycles;
  int patience = 0;  // see proposal_patience below
};
// ceil(ns / cycle_ns), at least `floor`.
constexpr int cycles_at_least(int64_t ns, int64_t cycle_ns, int floor) {
  if (ns <= 0 || cycle_ns <= 0) return floor;
  const int64_t c = (ns + cycle_ns - 1) / cycle_ns;
  return c > floor ? static_cast<int>(c < (1 << 20) ? c : (1 << 20)) : floor;
}
// The catch-up reach (below) must hold the window, kappa, a recovery and a silence.
inline constexpr int64_t kCatchUpCycles = kOtfpRing - 2;
constexpr Timeouts timeouts(int64_t cycle_ns, int64_t heard_ns, int64_t recovery_ns, int64_t retry_ns, int nodes,
                            int window, int kappa) {
  Timeouts t;
  t.heard = cycles_at_least(heard_ns, cycle_ns, kHeardCycles);
  t.recovery = cycles_at_least(recovery_ns, cycle_ns, kRecoveryCycles);
  t.retry = cycles_at_least(retry_ns, cycle_ns, kRequestRetryCycles);
  // A classic proposal is repeated every slot and acceptors vote once they hold the batches it
  // names: a new round would void it without helping them fetch those. It gets one only after
  // the retransmission partition had time to reach every acceptor, twice (N attempts each), and
  // while the instance is still within every node's reach.
  const int64_t want = 2 * (static_cast<int64_t>(t.recovery) + static_cast<int64_t>(nodes) * t.retry);
  const int64_t reach = kCatchUpCycles - window - kappa - t.recovery;
  t.patience = static_cast<int>(want < reach ? want : (reach > t.recovery ? reach : t.recovery));
  return t;
}
// The stall budget ([timing] stall_budget_ns, docs/configuration.md "The stall budget"): the
// longest stall of a node's loop (the host taking its CPU) that costs no suspicion and no tempo
// hold. The heard and recovery timeouts default to 1.5 x the budget, rounded up to a whole
// millisecond (13 ms -> 20 ms): stalls come in clusters on such hosts. The tempo window defaults
// to the instances a stall of the budget leaves undelivered, plus kappa and a round after it
// (kRoundCycles: phase 1, activation, phase 2, each waiting for a sync), at least 32, at most 64.
inline constexpr int kRoundCycles = 8;
constexpr int64_t timeout_for_budget(int64_t budget_ns) {
  const int64_t ns = budget_ns + budget_ns / 2;
  return (ns + 999'999) / 1'000'000 * 1'000'000;
}
constexpr int window_for_budget(int64_t budget_ns, int64_t cycle_ns, int kappa) {
  const int64_t w = cycles_at_least(budget_ns, cycle_ns, 0) + kappa + kRoundCycles;
  return static_cast<int>(w < 32 ? 32 : (w > 64 ? 64 : w));
}

// Whether a node's ring holds what catch-up needs with these timeouts (NodeConfig::validate).
constexpr bool timeouts_fit(const Timeouts& t, int window, int kappa) {
  return window + kappa + t.recovery + t.heard < kCatchUpCycles;
}

// A collision waiting this many cycles past its votes, with the coordinator silent as long, passes
// the coordinator over before the heard timeout (OtfpNode::coordinator): a live coordinator
// proposes in its next slot, and its frames come every cycle.
inline constexpr int kTakeoverCycles = 3;

// An instance settles (its fast votes are fixed before cycle i + kappa) once every node heard
// within this many cycles sent its slot frame: a node silent longer (crashed, stalled) is not
// waited for, long before the heard timeout (docs/protocol-otfp.md "Fast ballot").
inline constexpr int kSettleSilenceCycles = 2;

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

// A node more than kCatchUpCycles behind the present cannot catch up from its peers (they keep
// kOtfpRing instances): it records a gap and continues from what they still hold. With the
// largest window (64), kappa (16) and the floors it holds a node frozen for 20 cycles.
static_assert(kCatchUpCycles > 64 + 16 + kRecoveryCycles + kHeardCycles + 20, "the ring holds what catch-up needs");

}  // namespace tob::core::otfp
