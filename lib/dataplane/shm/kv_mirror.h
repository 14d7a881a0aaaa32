// The shared mirror of the time-aware key-value store (docs/protocol-ic.md, docs/client-api.md
// "Key-value store"): the daemon's control lcore publishes every IC publication into it,
// applications read it from their own processes through tob_kv_read without asking the daemon. It
// applies exactly the rules of core::KvStore (seed 004 §IV-B, docs/protocol-ic.md "The store"):
// versions by publishing time, the first publication of (key, t_pub) stands, bounded retention per
// key, a bounded number of keys; a read answers the version with the largest t_pub in [t_min, now].
//
// Layout: a header and `cells` fixed-size cells (open addressing on the key's FNV-1a hash, at
// least twice as many cells as keys), every field an atomic 64-bit word so that a reader racing
// the writer reads torn words only to discard them. Each cell has its own sequence lock: the
// single writer makes the sequence odd, changes the cell, makes it even; a reader copies what it
// needs and retries (a bounded number of times) when the sequence moved. No locks, no
// allocation after format(), no system calls: the control lcore can publish, any process read.
//
//   cell words: seq | key_len, versions, evicted_any | newest evicted t_pub | key bytes |
//               versions x (t_pub, instance, ok | value slot | value length) | value slots
//
// `complete_below_ns`: every version with t_pub below it is in the mirror (the daemon sets it to
// the next cycle boundary it has not processed yet: publications happen at boundaries and carry
// t_pub >= that boundary). A read at `now` >= complete_below_ns could miss a version that is
// already visible by time, so it answers `behind` instead of a stale value.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/kv_store.h"

namespace tob::dataplane {

enum class KvMirrorStatus : uint8_t {
  ok = 0,
  never_written,     // no version of the key was ever published on this node
  not_fresh,         // no version with t_min <= t_pub <= now
  evicted,           // the range reaches into versions dropped by retention
  reduction_failed,  // the answering version has no value: its reduction missed its quorum
  too_small,         // ok, but the caller's buffer is shorter than the value (value_bytes says how long)
  busy,              // the writer kept changing the cell: every attempt was torn
  behind,            // the daemon has not yet published everything that is visible at `now`
};
const char* to_string(KvMirrorStatus s);

struct KvMirrorRead {
  KvMirrorStatus status = KvMirrorStatus::never_written;
  int64_t t_pub_ns = 0;    // of the answering version (ok, reduction_failed, too_small)
  uint64_t instance = 0;   // the IC instance that published it
  size_t value_bytes = 0;  // ok, too_small: the value's length (copied to `out` when ok)
};

struct KvMirrorCounters {
  uint64_t keys = 0;
  uint64_t versions_stored = 0;
  uint64_t duplicates = 0;
  uint64_t evictions = 0;
  uint64_t store_full = 0;
};

class KvMirror {
 public:
  static constexpr uint64_t kMagic = 0x31304D564B424F54ull;  // "TOBKVM01"
  static constexpr int kReadAttempts = 64;                   // torn reads before `busy`
  static constexpr size_t kBytesMax = size_t{1} << 36;        // 64 GiB: beyond is a configuration mistake

  // Shared bytes a mirror of a store with this configuration needs; 0 when beyond kBytesMax.
  static size_t bytes_for(const core::KvStoreConfig& c);
  // Writer side, at start-up: formats `mem` (bytes_for(c) bytes, 8-byte aligned) and returns the
  // writer's view. complete_below starts at INT64_MIN: nothing is readable before the first set.
  static KvMirror format(void* mem, size_t bytes, const core::KvStoreConfig& c);
  // Reader side: a view of a region another process formatted. False when `mem` holds no mirror
  // or its geometry does not fit `bytes`.
  static bool attach(void* mem, size_t bytes, KvMirror& out);

  KvMirror() = default;
  bool valid() const { return header_ != nullptr; }

  // Single writer. The rules of core::KvStore::publish; key and value within the configuration.
  core::KvPublish publish(std::span<const uint8_t> key, int64_t t_pub_ns, uint64_t instance, bool ok,
                          std::span<const uint8_t> value);
  void set_complete_below(int64_t ns);

  // Any thread of any process. The value is copied to `out` when the status is ok.
  KvMirrorRead read(std::span<const uint8_t> key, int64_t t_min_ns, int64_t now_ns, std::span<uint8_t> out) const;

  int64_t complete_below_ns() const;
  KvMirrorCounters counters() const;
  const core::KvStoreConfig& config() const { return config_; }

 private:
  struct Header;
  using Word = std::atomic<uint64_t>;

  Word* cell(size_t at) const { return cells_ + at * cell_words_; }
  size_t find_for_write(std::span<const uint8_t> key, uint64_t hash) const;
  bool key_equals(const Word* c, std::span<const uint8_t> key) const;
  void begin_write(Word* c) const;
  void end_write(Word* c) const;
  size_t key_words() const { return (config_.key_bytes_max + 7) / 8; }
  size_t value_words() const { return (config_.value_bytes_max + 7) / 8; }
  Word* version_at(Word* c, size_t i) const { return c + 3 + key_words() + 3 * i; }
  Word* value_at(Word* c, size_t slot) const {
    return c + 3 + key_words() + 3 * config_.versions_per_key + slot * value_words();
  }

  Header* header_ = nullptr;
  Word* cells_ = nullptr;
  size_t cells_count_ = 0;
  size_t cell_words_ = 0;
  core::KvStoreConfig config_;
};

}  // namespace tob::dataplane
