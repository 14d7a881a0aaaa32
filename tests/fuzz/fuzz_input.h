// The fuzzer's input read as a stream of numbers and bytes (the engine harnesses,
// docs/fuzzing.md). Reading past the end gives zeros, so every input is a valid program: a short
// input is a short sequence of operations padded with zeros.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tob::fuzz {

class FuzzInput {
 public:
  explicit FuzzInput(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  bool done() const { return pos_ >= bytes_.size(); }
  uint8_t u8() { return pos_ < bytes_.size() ? bytes_[pos_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() << 8 | u8()); }
  uint32_t u32() { return static_cast<uint32_t>(u16()) << 16 | u16(); }
  uint64_t u64() { return static_cast<uint64_t>(u32()) << 32 | u32(); }
  // Up to n bytes of the input, as a view (fewer at its end).
  std::span<const uint8_t> take(size_t n) {
    const size_t left = bytes_.size() - pos_;  // pos_ never passes the end
    const std::span<const uint8_t> out = bytes_.subspan(pos_, n < left ? n : left);
    pos_ += out.size();
    return out;
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace tob::fuzz
