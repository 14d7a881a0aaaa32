// The value of one interactive-consistency instance: every key write a node batched during one IC
// period (seed 004 §IV-C: "each instance of RT-EIGByz batches all tuples ... and copies the batch
// into the root of its EIG tree"). docs/protocol-ic.md, "Instance value".
//
//   count u16 | 0 u16 | count entries of  t_pub_ns i64 | key_len u8 | 0 u8 | value_len u16 |
//                                         key[key_len] | value[value_len]
//
// Keys are 1..key_bytes_max bytes, values 0..value_bytes_max bytes; (key, t_pub) is unique
// within a batch. The entries fill the body exactly. Everything is allocated at creation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tob::core {

inline constexpr size_t kKvBatchHeaderBytes = 4;
inline constexpr size_t kKvEntryHeaderBytes = 12;
inline constexpr size_t kKvKeyBytesMax = 255;
inline constexpr size_t kKvValueBytesMax = 65535;
inline constexpr size_t kKvKeysMax = 65535;

struct KvLimits {
  size_t keys_max = 64;        // writes batched into one instance
  size_t key_bytes_max = 32;   // 1..255
  size_t value_bytes_max = 16; // 1..65535

  size_t entry_bytes_max() const { return kKvEntryHeaderBytes + key_bytes_max + value_bytes_max; }
  size_t batch_bytes_max() const { return kKvBatchHeaderBytes + keys_max * entry_bytes_max(); }
};

struct KvEntry {
  std::span<const uint8_t> key;
  int64_t t_pub_ns = 0;
  std::span<const uint8_t> value;
};

// FNV-1a, 64 bits: hashing of keys for the pending table and the store.
inline uint64_t fnv1a64(std::span<const uint8_t> bytes, uint64_t h = 0xCBF29CE484222325ull) {
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001B3ull;
  return h;
}

// True when `body` is a well-formed batch within `limits` (every entry inside the body, lengths
// within bounds, reserved bytes zero, entries covering the body exactly). A node that sends
// anything else is faulty; its batch counts as missing.
bool validate_kv_batch(std::span<const uint8_t> body, const KvLimits& limits, uint16_t* count_out = nullptr);

// Iterates a validated batch.
class KvBatchReader {
 public:
  explicit KvBatchReader(std::span<const uint8_t> body) : body_(body), off_(kKvBatchHeaderBytes) {}
  bool next(KvEntry& out);
  size_t offset() const { return off_; }

 private:
  std::span<const uint8_t> body_;
  size_t off_;
};

// The writes of the period being collected: a later write of the same (key, t_pub) replaces the
// earlier one. Encodes into a batch when the instance starts.
class KvPending {
 public:
  enum class Add : uint8_t { added, replaced, full };

  explicit KvPending(const KvLimits& limits);
  // Lengths must be within the limits (checked by the caller, asserted here).
  Add add(std::span<const uint8_t> key, int64_t t_pub_ns, std::span<const uint8_t> value);
  size_t count() const { return count_; }
  // Writes the batch into `out` (at least limits.batch_bytes_max() bytes); returns its length.
  size_t encode(std::span<uint8_t> out) const;
  void clear();

 private:
  struct Meta {
    int64_t t_pub_ns;
    uint8_t key_len;
    uint16_t value_len;
  };
  size_t probe(std::span<const uint8_t> key, int64_t t_pub_ns) const;

  KvLimits limits_;
  size_t count_ = 0;
  std::vector<Meta> meta_;
  std::vector<uint8_t> keys_;
  std::vector<uint8_t> values_;
  std::vector<uint32_t> index_;  // open addressing: entry + 1, 0 empty
};

}  // namespace tob::core
