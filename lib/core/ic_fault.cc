#include "core/ic_fault.h"

#include <cstring>

#include "core/ic_wire.h"

#include <algorithm>

#include "core/bytes.h"
#include "core/eig.h"
#include "core/ic_reduce.h"

namespace tob::core {
namespace {


}  // namespace

void ic_lie(std::span<uint8_t> message, size_t entry_bytes, const KvLimits& limits, uint64_t seed) {
  TOB_ASSERT(entry_bytes > kEigEntryHeaderBytes && message.size() % entry_bytes == 0);
  const size_t value_max = entry_bytes - kEigEntryHeaderBytes;
  for (size_t off = 0; off < message.size(); off += entry_bytes) {
    std::span<uint8_t> e = message.subspan(off, entry_bytes);
    std::span<const uint8_t> v;
    if (!EigTree::entry_value(e, value_max, v) || !validate_kv_batch(v, limits)) continue;
    std::span<uint8_t> batch = e.subspan(kEigEntryHeaderBytes, v.size());
    size_t at = kKvBatchHeaderBytes;
    const uint16_t count = load_be16(batch.data());
    for (uint16_t i = 0; i < count; ++i) {
      uint8_t* h = batch.data() + at;
      const size_t key_len = h[8];
      const size_t value_len = load_be16(h + 10);
      uint64_t t_pub = load_be64(h);
      if (seed & 1) {
        ++t_pub;
        store_be64(h, t_pub);
      }
      uint64_t x = mix64(fnv1a64({h + kKvEntryHeaderBytes, key_len}, mix64(seed ^ t_pub)));
      uint8_t* value = h + kKvEntryHeaderBytes + key_len;
      if (value_len == kNumericValueBytes) {
        encode_f64(static_cast<double>(static_cast<int64_t>(x % 200001) - 100000) / 100.0, {value, value_len});
      } else {
        for (size_t k = 0; k < value_len; ++k) {
          if (k % 8 == 0) x = mix64(x);
          value[k] = static_cast<uint8_t>(x >> (8 * (k % 8)));
        }
      }
      at += kKvEntryHeaderBytes + key_len + value_len;
    }
  }
}

void ic_garble(std::span<uint8_t> message, size_t entry_bytes, uint64_t seed) {
  TOB_ASSERT(entry_bytes > kEigEntryHeaderBytes && message.size() % entry_bytes == 0);
  const size_t value_max = entry_bytes - kEigEntryHeaderBytes;
  uint64_t x = mix64(seed);
  for (size_t off = 0; off < message.size(); off += entry_bytes) {
    std::span<uint8_t> e = message.subspan(off, entry_bytes);
    x = mix64(x);
    switch (x % 4) {
      case 0: EigTree::write_bottom(e); break;
      case 1: store_be32(e.data(), static_cast<uint32_t>(value_max + 1 + (x >> 32) % 1000)); break;
      case 2:
        for (size_t k = 0; k < e.size(); ++k) {
          if (k % 8 == 0) x = mix64(x);
          e[k] = static_cast<uint8_t>(x >> (8 * (k % 8)));
        }
        break;
      default: {
        // A batch header that claims more entries than the bytes hold.
        const size_t len = std::min<size_t>(value_max, kKvBatchHeaderBytes + (x >> 40) % 16);
        store_be32(e.data(), static_cast<uint32_t>(len));
        if (len >= kKvBatchHeaderBytes) {
          store_be16(e.data() + kEigEntryHeaderBytes, static_cast<uint16_t>(1 + (x >> 20) % 50));
          store_be16(e.data() + kEigEntryHeaderBytes + 2, 0);
        }
      }
    }
  }
}

IcFaultInjector::IcFaultInjector(const IcNode& node, const NodeConfig& node_config, IcTestFault fault)
    : fault_(fault),
      cluster_id_(node_config.cluster_id),
      self_(node_config.self),
      chunk_bytes_(node.config().chunk_bytes),
      frame_bytes_max_(node_config.frame_bytes_max),
      copies_(node.config().copies),
      frames_max_(node.frames_per_slot_max()),
      entry_bytes_(node.entry_bytes()),
      limits_(node.config().limits()) {
  scratch_.assign(node.round_data_bytes_max(), 0);
  tx_bytes_.assign(static_cast<size_t>(copies_) * frames_max_ * frame_bytes_max_, 0);
  tx_lengths_.assign(frames_max_, 0);
  messages_.reserve(kEigRoundsMax);
  out_.tx.reserve(static_cast<size_t>(copies_) * frames_max_);
  out_.rounds.reserve(kEigRoundsMax);
  out_.decisions.reserve(64);
}

const IcActions& IcFaultInjector::apply(const IcActions& honest) {
  out_.clear();
  out_.rounds.assign(honest.rounds.begin(), honest.rounds.end());  // what it would have sent
  out_.decisions.assign(honest.decisions.begin(), honest.decisions.end());
  if (fault_.mode == IcFaultMode::none) {
    out_.tx.assign(honest.tx.begin(), honest.tx.end());
    return out_;
  }
  if (fault_.mode == IcFaultMode::omit || honest.rounds.empty()) return out_;
  // One slot's round data per boundary (IcNode::transmit): rewrite each message, encode again.
  messages_.clear();
  size_t at = 0;
  for (const IcRoundData& r : honest.rounds) {
    // After a host stall one call can carry rounds of two boundaries (a CI run aborted here): the
    // faulty node rewrites and sends the first boundary's and omits the rest, which its fault allows.
    if (r.cycle != honest.rounds.front().cycle || at + r.message.size() > scratch_.size()) continue;
    std::span<uint8_t> copy(scratch_.data() + at, r.message.size());
    std::memcpy(copy.data(), r.message.data(), copy.size());
    const uint64_t seed = fault_.seed ^ (r.instance * 0x9E3779B97F4A7C15ull);
    if (fault_.mode == IcFaultMode::lie) {
      ic_lie(copy, entry_bytes_, limits_, seed);
    } else {
      ic_garble(copy, entry_bytes_, seed ^ static_cast<uint64_t>(r.round));
    }
    messages_.push_back({r.instance, static_cast<uint8_t>(r.round), copy});
    at += copy.size();
  }
  IcFrameParams p;
  p.cluster_id = cluster_id_;
  p.sender = self_;
  p.cycle = static_cast<uint64_t>(honest.rounds.front().cycle);
  p.chunk_bytes = chunk_bytes_;
  p.frame_bytes_max = frame_bytes_max_;
  const size_t frames =
      emit_ic_copies(messages_, p, copies_, frames_max_, honest.rounds.front().tx_ns, tx_bytes_, tx_lengths_, out_.tx);
  TOB_ASSERT(frames > 0);
  return out_;
}

}  // namespace tob::core
