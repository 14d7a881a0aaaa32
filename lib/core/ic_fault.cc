#include "core/ic_fault.h"

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

}  // namespace tob::core
