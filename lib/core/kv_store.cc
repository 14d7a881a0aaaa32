#include "core/kv_store.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "core/kv_batch.h"

namespace tob::core {

const char* to_string(KvStatus s) {
  switch (s) {
    case KvStatus::ok: return "ok";
    case KvStatus::never_written: return "never written";
    case KvStatus::not_fresh: return "no value published in [t_min, now]";
    case KvStatus::evicted: return "evicted (older than the retained versions)";
    case KvStatus::reduction_failed: return "reduction failed (no quorum)";
  }
  return "unknown";
}

Result<KvStore> KvStore::create(const KvStoreConfig& c) {
  if (c.keys_max < 1 || c.keys_max > (1u << 24))
    return Error{"store keys must be 1..16777216, got " + std::to_string(c.keys_max)};
  if (c.versions_per_key < 1 || c.versions_per_key > 1024)
    return Error{"versions per key must be 1..1024, got " + std::to_string(c.versions_per_key)};
  if (c.key_bytes_max < 1 || c.key_bytes_max > kKvKeyBytesMax)
    return Error{"key size must be 1..255 bytes, got " + std::to_string(c.key_bytes_max)};
  if (c.value_bytes_max < 1 || c.value_bytes_max > kKvValueBytesMax)
    return Error{"value size must be 1..65535 bytes, got " + std::to_string(c.value_bytes_max)};
  const size_t cells = std::bit_ceil(2 * c.keys_max);
  const size_t value_bytes = cells * c.versions_per_key * c.value_bytes_max;
  if (value_bytes / c.value_bytes_max / c.versions_per_key != cells || value_bytes > (size_t{1} << 32))
    return Error{"the store needs " + std::to_string(value_bytes) +
                 " bytes of values (more than 4 GiB): fewer keys, versions or a smaller value size"};
  KvStore s;
  s.config_ = c;
  s.slots_.assign(cells, Slot{});
  s.key_bytes_.assign(cells * c.key_bytes_max, 0);
  s.versions_.assign(cells * c.versions_per_key, Version{});
  s.values_.assign(value_bytes, 0);
  return s;
}

size_t KvStore::find(std::span<const uint8_t> key, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  // At most keys_max of the >= 2 x keys_max cells are taken: the probe always ends.
  for (size_t at = static_cast<size_t>(hash) & mask;; at = (at + 1) & mask) {
    const Slot& s = slots_[at];
    if (s.key_len == 0) return at;
    if (s.key_len == key.size() && std::memcmp(key_bytes_.data() + at * config_.key_bytes_max, key.data(), key.size()) == 0)
      return at;
  }
}

KvPublish KvStore::publish(std::span<const uint8_t> key, int64_t t_pub_ns, uint64_t instance, bool ok,
                           std::span<const uint8_t> value) {
  TOB_ASSERT(!key.empty() && key.size() <= config_.key_bytes_max);
  TOB_ASSERT(value.size() <= config_.value_bytes_max);
  const size_t cell = find(key, fnv1a64(key));
  Slot& s = slots_[cell];
  if (s.key_len == 0) {
    if (keys_ == config_.keys_max) {
      ++counters_.store_full;
      return KvPublish::store_full;
    }
    ++keys_;
    s = Slot{};
    s.key_len = static_cast<uint8_t>(key.size());
    std::memcpy(key_bytes_.data() + cell * config_.key_bytes_max, key.data(), key.size());
  }
  Version* v = versions_of(cell);
  const size_t n = s.versions;
  for (size_t i = 0; i < n; ++i)
    if (v[i].t_pub_ns == t_pub_ns) {
      ++counters_.duplicates;
      return KvPublish::duplicate;
    }
  uint16_t value_slot = static_cast<uint16_t>(n);
  size_t count = n;
  if (n == config_.versions_per_key) {
    // Bounded retention: the oldest publishing time goes, whether it is this one or a kept one.
    ++counters_.evictions;
    if (t_pub_ns < v[0].t_pub_ns) {
      s.evicted_max_ns = s.evicted_any ? std::max(s.evicted_max_ns, t_pub_ns) : t_pub_ns;
      s.evicted_any = true;
      return KvPublish::too_old;
    }
    s.evicted_max_ns = s.evicted_any ? std::max(s.evicted_max_ns, v[0].t_pub_ns) : v[0].t_pub_ns;
    s.evicted_any = true;
    value_slot = v[0].value_slot;
    for (size_t i = 1; i < n; ++i) v[i - 1] = v[i];
    count = n - 1;
  }
  size_t at = count;
  while (at > 0 && v[at - 1].t_pub_ns > t_pub_ns) {
    v[at] = v[at - 1];
    --at;
  }
  v[at] = {t_pub_ns, instance, ok ? static_cast<uint32_t>(value.size()) : 0u, value_slot, ok};
  if (ok && !value.empty()) std::memcpy(value_at(cell, value_slot), value.data(), value.size());
  s.versions = static_cast<uint16_t>(count + 1);
  ++counters_.versions_stored;
  return KvPublish::stored;
}

KvRead KvStore::read(std::span<const uint8_t> key, int64_t t_min_ns, int64_t now_ns) const {
  KvRead r;
  if (key.empty() || key.size() > config_.key_bytes_max) return r;  // never written: too long to be stored
  const size_t cell = find(key, fnv1a64(key));
  const Slot& s = slots_[cell];
  if (s.key_len == 0) return r;
  const Version* v = versions_of(cell);
  for (size_t i = s.versions; i-- > 0;) {
    if (v[i].t_pub_ns > now_ns) continue;  // not visible yet
    if (v[i].t_pub_ns < t_min_ns) break;   // the latest visible one is too old
    r.status = v[i].ok ? KvStatus::ok : KvStatus::reduction_failed;
    r.t_pub_ns = v[i].t_pub_ns;
    r.instance = v[i].instance;
    if (v[i].ok) r.value = {value_at(cell, v[i].value_slot), v[i].value_len};
    return r;
  }
  // Every kept version is newer than every evicted one. A range that reaches back to the newest
  // evicted publishing time asks for history that is no longer kept; one after it has no answer.
  r.status = s.evicted_any && t_min_ns <= s.evicted_max_ns ? KvStatus::evicted : KvStatus::not_fresh;
  return r;
}

}  // namespace tob::core
