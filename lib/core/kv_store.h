// The time-aware key-value store (seed 004 §IV-B, docs/protocol-ic.md "The store"): the
// published side of In-ConcReTeS. Every publication is a version (key, t_pub) with either a value
// or a failed reduction; (key, t_pub) is unique and the first publication of it wins.
//
//   read(k, t_min, now): the version of k with the largest t_pub in [t_min, now], i.e. the latest
//   value published no earlier than t_min (the seed's freshness bound) that is visible at `now`
//   (a version becomes visible exactly at its t_pub). Errors: never_written, not_fresh (nothing
//   in the range yet), evicted (the range reaches back into history that the bounded retention
//   dropped: t_min at or before the newest evicted t_pub), reduction_failed
//   (the answer is a version whose reduction missed its quorum: no value, never a wrong one).
//
// A bounded number of keys, each with a bounded number of versions (the oldest by t_pub is
// evicted), all preallocated: publish and read never allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"

namespace tob::core {

struct KvStoreConfig {
  size_t keys_max = 1024;
  size_t versions_per_key = 4;
  size_t key_bytes_max = 32;
  size_t value_bytes_max = 16;
};

enum class KvStatus : uint8_t {
  ok = 0,
  never_written,     // no version of this key was ever published here
  not_fresh,         // no version with t_min <= t_pub <= now
  evicted,           // the range reaches into history dropped by the bounded retention
  reduction_failed,  // the answer is a version whose reduction did not reach its quorum
};
inline constexpr int kKvStatusCount = 5;
const char* to_string(KvStatus s);

struct KvRead {
  KvStatus status = KvStatus::never_written;
  int64_t t_pub_ns = 0;     // of the answering version (ok, reduction_failed)
  uint64_t instance = 0;    // the IC instance that published it
  std::span<const uint8_t> value;  // valid until the next publish
};

enum class KvPublish : uint8_t {
  stored = 0,
  duplicate,  // (key, t_pub) was published before; the first publication stands
  too_old,    // all versions are newer and retention is full: dropped at once
  store_full, // a new key and no room for it
};

struct KvStoreCounters {
  uint64_t versions_stored = 0;
  uint64_t duplicates = 0;
  uint64_t evictions = 0;
  uint64_t store_full = 0;
};

class KvStore {
 public:
  static Result<KvStore> create(const KvStoreConfig& config);

  // `ok` false: a failed reduction (no value). The key and value lengths must be within the
  // configuration (asserted: the IC node validated them).
  KvPublish publish(std::span<const uint8_t> key, int64_t t_pub_ns, uint64_t instance, bool ok,
                    std::span<const uint8_t> value);
  KvRead read(std::span<const uint8_t> key, int64_t t_min_ns, int64_t now_ns) const;

  size_t keys() const { return keys_; }
  const KvStoreConfig& config() const { return config_; }
  const KvStoreCounters& counters() const { return counters_; }

 private:
  struct Version {
    int64_t t_pub_ns;
    uint64_t instance;
    uint32_t value_len;
    uint16_t value_slot;  // index among the key's value slots
    bool ok;
  };
  struct Slot {
    uint8_t key_len = 0;   // 0: empty
    uint16_t versions = 0;
    bool evicted_any = false;
    int64_t evicted_max_ns = 0;  // newest evicted t_pub; every retained one is at least this
  };
  KvStore() = default;
  size_t find(std::span<const uint8_t> key, uint64_t hash) const;  // cell or empty cell
  Version* versions_of(size_t cell) { return versions_.data() + cell * config_.versions_per_key; }
  const Version* versions_of(size_t cell) const { return versions_.data() + cell * config_.versions_per_key; }
  uint8_t* value_at(size_t cell, size_t slot) {
    return values_.data() + (cell * config_.versions_per_key + slot) * config_.value_bytes_max;
  }
  const uint8_t* value_at(size_t cell, size_t slot) const {
    return values_.data() + (cell * config_.versions_per_key + slot) * config_.value_bytes_max;
  }

  KvStoreConfig config_;
  size_t keys_ = 0;
  std::vector<Slot> slots_;       // open addressing, power of two >= 2 x keys_max
  std::vector<uint8_t> key_bytes_;
  std::vector<Version> versions_;  // per cell, sorted by t_pub ascending
  std::vector<uint8_t> values_;
  KvStoreCounters counters_;
};

}  // namespace tob::core
