#include "core/kv_batch.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/bytes.h"
#include "core/result.h"

namespace tob::core {

bool validate_kv_batch(std::span<const uint8_t> body, const KvLimits& limits, uint16_t* count_out) {
  if (body.size() < kKvBatchHeaderBytes) return false;
  const uint16_t count = load_be16(body.data());
  if (load_be16(body.data() + 2) != 0 || count > limits.keys_max) return false;
  size_t off = kKvBatchHeaderBytes;
  for (uint16_t i = 0; i < count; ++i) {
    if (body.size() - off < kKvEntryHeaderBytes) return false;
    const uint8_t* e = body.data() + off;
    const size_t key_len = e[8];
    const size_t value_len = load_be16(e + 10);
    if (e[9] != 0 || key_len == 0 || key_len > limits.key_bytes_max || value_len > limits.value_bytes_max)
      return false;
    if (body.size() - off - kKvEntryHeaderBytes < key_len + value_len) return false;
    off += kKvEntryHeaderBytes + key_len + value_len;
  }
  if (off != body.size()) return false;
  if (count_out != nullptr) *count_out = count;
  return true;
}

bool KvBatchReader::next(KvEntry& out) {
  if (off_ + kKvEntryHeaderBytes > body_.size()) return false;
  const uint8_t* e = body_.data() + off_;
  const size_t key_len = e[8];
  const size_t value_len = load_be16(e + 10);
  out.t_pub_ns = static_cast<int64_t>(load_be64(e));
  out.key = body_.subspan(off_ + kKvEntryHeaderBytes, key_len);
  out.value = body_.subspan(off_ + kKvEntryHeaderBytes + key_len, value_len);
  off_ += kKvEntryHeaderBytes + key_len + value_len;
  return true;
}

KvPending::KvPending(const KvLimits& limits) : limits_(limits) {
  TOB_ASSERT(limits.keys_max >= 1 && limits.keys_max <= kKvKeysMax);
  TOB_ASSERT(limits.key_bytes_max >= 1 && limits.key_bytes_max <= kKvKeyBytesMax);
  TOB_ASSERT(limits.value_bytes_max <= kKvValueBytesMax);
  meta_.resize(limits.keys_max);
  keys_.resize(limits.keys_max * limits.key_bytes_max);
  values_.resize(limits.keys_max * limits.value_bytes_max);
  index_.assign(std::bit_ceil(2 * limits.keys_max), 0);
}

size_t KvPending::probe(std::span<const uint8_t> key, int64_t t_pub_ns) const {
  uint8_t t[8];
  store_be64(t, static_cast<uint64_t>(t_pub_ns));
  const size_t mask = index_.size() - 1;
  size_t at = static_cast<size_t>(fnv1a64(key, fnv1a64(t))) & mask;
  // The table is at least twice the entry bound: an empty cell is always found.
  for (;; at = (at + 1) & mask) {
    const uint32_t cell = index_[at];
    if (cell == 0) return at;
    const Meta& m = meta_[cell - 1];
    if (m.t_pub_ns == t_pub_ns && m.key_len == key.size() &&
        std::memcmp(keys_.data() + (cell - 1) * limits_.key_bytes_max, key.data(), key.size()) == 0)
      return at;
  }
}

KvPending::Add KvPending::add(std::span<const uint8_t> key, int64_t t_pub_ns, std::span<const uint8_t> value) {
  TOB_ASSERT(!key.empty() && key.size() <= limits_.key_bytes_max && value.size() <= limits_.value_bytes_max);
  const size_t at = probe(key, t_pub_ns);
  size_t slot;
  Add result;
  if (index_[at] != 0) {
    slot = index_[at] - 1;
    result = Add::replaced;
  } else {
    if (count_ == limits_.keys_max) return Add::full;
    slot = count_++;
    index_[at] = static_cast<uint32_t>(slot + 1);
    std::memcpy(keys_.data() + slot * limits_.key_bytes_max, key.data(), key.size());
    result = Add::added;
  }
  meta_[slot] = {t_pub_ns, static_cast<uint8_t>(key.size()), static_cast<uint16_t>(value.size())};
  if (!value.empty()) std::memcpy(values_.data() + slot * limits_.value_bytes_max, value.data(), value.size());
  return result;
}

size_t KvPending::encode(std::span<uint8_t> out) const {
  TOB_ASSERT(out.size() >= limits_.batch_bytes_max());
  store_be16(out.data(), static_cast<uint16_t>(count_));
  store_be16(out.data() + 2, 0);
  size_t off = kKvBatchHeaderBytes;
  for (size_t i = 0; i < count_; ++i) {
    const Meta& m = meta_[i];
    uint8_t* e = out.data() + off;
    store_be64(e, static_cast<uint64_t>(m.t_pub_ns));
    e[8] = m.key_len;
    e[9] = 0;
    store_be16(e + 10, m.value_len);
    std::memcpy(e + kKvEntryHeaderBytes, keys_.data() + i * limits_.key_bytes_max, m.key_len);
    if (m.value_len > 0)
      std::memcpy(e + kKvEntryHeaderBytes + m.key_len, values_.data() + i * limits_.value_bytes_max, m.value_len);
    off += kKvEntryHeaderBytes + m.key_len + m.value_len;
  }
  TOB_ASSERT(off <= limits_.batch_bytes_max());
  return off;
}

void KvPending::clear() {
  if (count_ == 0) return;
  count_ = 0;
  std::fill(index_.begin(), index_.end(), 0u);
}

}  // namespace tob::core
