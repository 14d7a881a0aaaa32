// Byzantine behaviour for tests, kept out of the production IC node: the simulator's faulty nodes
// and the daemon's IC test knob (--ic-fault). A correct node never runs these. ic_lie and
// ic_garble rewrite a round message (one EIG level: entries of `entry_bytes`,
// docs/protocol-ic.md) in place, deterministically from `seed`; IcFaultInjector wraps a node's
// outputs and sends its round data lied about, garbled, or not at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/ic_node.h"
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

// This node misbehaves in the round data it sends: the same lie or garble for every receiver
// (per receiver lies are the simulator's).
enum class IcFaultMode : uint8_t { none = 0, lie, omit, garble };
struct IcTestFault {
  IcFaultMode mode = IcFaultMode::none;
  uint64_t seed = 0;
};

// Wraps the actions of an honest IcNode: its decisions and round data as they are, its frames
// replaced by frames of the rewritten round data (lie, garble) or dropped (omit). Buffers sized at
// construction from the node's; apply() allocates nothing.
class IcFaultInjector {
 public:
  IcFaultInjector(const IcNode& node, const NodeConfig& node_config, IcTestFault fault);
  // What the node sends instead; valid until the next call (and while `honest` is).
  const IcActions& apply(const IcActions& honest);
  IcFaultMode mode() const { return fault_.mode; }

 private:
  IcTestFault fault_;
  uint16_t cluster_id_;
  NodeId self_;
  size_t chunk_bytes_;
  size_t frame_bytes_max_;
  int copies_;
  size_t frames_max_;
  size_t entry_bytes_;
  KvLimits limits_;
  std::vector<uint8_t> scratch_;  // the rewritten round messages
  std::vector<uint8_t> tx_bytes_;
  std::vector<size_t> tx_lengths_;
  std::vector<IcMessage> messages_;
  IcActions out_;
};

}  // namespace tob::core
