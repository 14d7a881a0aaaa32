// Byzantine behaviour for tests: the simulator's faulty nodes and the daemon's IC test knobs
// (IcConfig::test_fault). A correct node never runs these. Both rewrite a round message (one EIG
// level: entries of `entry_bytes`, docs/protocol-ic.md) in place, deterministically from `seed`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/kv_batch.h"

namespace tob::core {

// Lie: every well-formed batch in the message keeps its keys and publishing times but every value
// is replaced by one derived only from (seed, key, t_pub): an 8-byte value becomes a plausible
// f64 ("0.15 to one, 35.33 to another", seed 004 §I), other values pseudo-random bytes. The lie
// depends on the seed and not on the liar, so liars that use one seed per receiver tell that
// receiver the same story in every round: they collude, the hardest case for EIG. With
// (seed & 1) the publishing times shift by 1 ns as well (copies that match no correct one).
void ic_lie(std::span<uint8_t> message, size_t entry_bytes, const KvLimits& limits, uint64_t seed);

// Garble: entries become ⊥, lengths above the value bound, random bytes, or batches with a count
// that does not match their entries: everything a receiver must treat as default.
void ic_garble(std::span<uint8_t> message, size_t entry_bytes, uint64_t seed);

}  // namespace tob::core
