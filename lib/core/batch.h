// Application batch section (section type 1, docs/wire-format.md).
//
// body: count u16, reserved u16, then `count` entries:
//   msg_id u64 | submit_ns i64 | client u16 | length u16 | payload[length]
// msg_id counts up per sender in submit order; submit_ns is the sender's submit instant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tob::core {

inline constexpr size_t kBatchHeaderBytes = 4;
inline constexpr size_t kBatchEntryHeaderBytes = 20;

struct AppMessage {
  uint64_t msg_id = 0;
  int64_t submit_ns = 0;
  uint16_t client = 0;
  std::span<const uint8_t> payload;
};

// Writes entries into a section body opened with FrameWriter::open_section.
class BatchWriter {
 public:
  explicit BatchWriter(std::span<uint8_t> body) : body_(body) {}
  bool fits(size_t payload_bytes) const {
    return pos() + kBatchEntryHeaderBytes + payload_bytes <= body_.size();
  }
  bool add(const AppMessage& m);
  // Writes the header; returns the body length (0 if even the header did not fit).
  size_t finish();
  uint16_t count() const { return count_; }

 private:
  size_t pos() const { return kBatchHeaderBytes + used_; }
  std::span<uint8_t> body_;
  size_t used_ = 0;
  uint16_t count_ = 0;
};

// Validates a batch body: true when every entry lies inside it, none is longer than
// `payload_max` ([limits] payload_bytes: a peer's message is held to the limit its own
// applications are, docs/fuzzing.md) and the count matches.
bool validate_batch(std::span<const uint8_t> body, uint16_t* count_out = nullptr, size_t payload_max = SIZE_MAX);

// Iterates a validated batch body.
class BatchReader {
 public:
  explicit BatchReader(std::span<const uint8_t> body) : body_(body), off_(kBatchHeaderBytes) {}
  bool next(AppMessage& out);

 private:
  std::span<const uint8_t> body_;
  size_t off_;
};

}  // namespace tob::core
