#include "core/segments.h"

#include <cstring>

#include "core/bytes.h"
#include "core/crc32c.h"
#include "core/result.h"

namespace tob::core {

Reassembly::Reassembly(size_t segments_max, size_t segment_bytes_max, size_t payload_max)
    : segments_max_(segments_max),
      stride_(segment_bytes_max),
      payload_max_(payload_max),
      bytes_store_(new uint8_t[segments_max * segment_bytes_max]),
      len_(segments_max, 0),
      have_((segments_max + 63) / 64, 0) {
  TOB_ASSERT(segments_max >= 1 && segments_max <= UINT16_MAX);
}

Reassembly::Reassembly(const Reassembly& other) : Reassembly(other.segments_max_, other.stride_, other.payload_max_) { *this = other; }

Reassembly& Reassembly::operator=(const Reassembly& other) {
  if (this == &other) return *this;
  if (segments_max_ != other.segments_max_ || stride_ != other.stride_) {
    segments_max_ = other.segments_max_;
    stride_ = other.stride_;
    bytes_store_.reset(new uint8_t[segments_max_ * stride_]);
  }
  payload_max_ = other.payload_max_;
  len_ = other.len_;
  have_ = other.have_;
  for (size_t j = 0; j < segments_max_; ++j)  // the bytes written: the rest is never read
    if (len_[j] != 0) std::memcpy(bytes_store_.get() + j * stride_, other.bytes_store_.get() + j * stride_, len_[j]);
  cycle_ = other.cycle_;
  count_ = other.count_;
  have_n_ = other.have_n_;
  bytes_ = other.bytes_;
  msgs_ = other.msgs_;
  complete_ = other.complete_;
  return *this;
}

void Reassembly::reset(int64_t cycle) {
  cycle_ = cycle;
  count_ = 0;
  have_n_ = 0;
  bytes_ = 0;
  msgs_ = 0;
  complete_ = false;
  for (uint64_t& w : have_) w = 0;
}

Reassembly::Add Reassembly::add(int64_t cycle, uint16_t index, uint16_t count, std::span<const uint8_t> body,
                                Checked checked) {
  if (cycle != cycle_) reset(cycle);
  // A segment that cannot belong to this batch is refused alone: what was taken stands, and the
  // batch still completes from consistent segments (as the first good copy of a single frame
  // was taken whatever else arrived).
  if (count == 0 || count > segments_max_ || index >= count || (count_ != 0 && count != count_)) return Add::malformed;
  if (complete_) return Add::duplicate;  // every index below count_ is here
  if ((have_[index / 64] & (uint64_t{1} << (index % 64))) != 0) return Add::duplicate;
  uint16_t entries = 0;
  if (body.size() > stride_) return Add::malformed;
  if (checked == Checked::yes) {
    entries = load_be16(body.data());  // a valid batch's header counts its entries
  } else if (!validate_batch(body, &entries, payload_max_)) {
    return Add::malformed;
  }
  count_ = count;
  std::memcpy(room(index).data(), body.data(), body.size());
  put(index, body.size(), entries);
  if (have_n_ < count_) return Add::fresh;
  complete_ = true;
  return Add::complete;
}

std::span<uint8_t> Reassembly::room(uint16_t j) {
  TOB_ASSERT(j < segments_max_);
  return {bytes_store_.get() + static_cast<size_t>(j) * stride_, stride_};
}

void Reassembly::put(uint16_t j, size_t length, uint16_t entries) {
  TOB_ASSERT(j < segments_max_ && length <= stride_);
  have_[j / 64] |= uint64_t{1} << (j % 64);
  ++have_n_;
  len_[j] = static_cast<uint32_t>(length);
  bytes_ += length;
  msgs_ += entries;
}

void Reassembly::close(uint16_t count) {
  TOB_ASSERT(count >= 1 && count == have_n_);
  count_ = count;
  complete_ = true;
}

uint32_t Reassembly::crc() const {
  uint32_t crc = 0;
  for (uint16_t j = 0; j < count_; ++j) crc = crc32c(segment(j), crc);
  return crc;
}

std::span<const uint8_t> Reassembly::segment(uint16_t j) const {
  TOB_ASSERT(j < count_);
  return {bytes_store_.get() + static_cast<size_t>(j) * stride_, len_[j]};
}

bool Reassembly::has(int64_t cycle, uint16_t j) const {
  if (cycle != cycle_) return false;
  return complete_ || (j < segments_max_ && (have_[j / 64] & (uint64_t{1} << (j % 64))) != 0);
}

bool Reassembly::missing(int64_t cycle, uint16_t& lo, uint16_t& hi) const {
  if (cycle == cycle_ && complete_) return false;
  lo = 0;
  hi = UINT16_MAX;
  if (cycle != cycle_ || count_ == 0) return true;
  const auto held = [&](uint16_t j) { return (have_[j / 64] & (uint64_t{1} << (j % 64))) != 0; };
  for (lo = 0; held(lo); ++lo) {}
  for (hi = static_cast<uint16_t>(count_ - 1); held(hi); --hi) {}
  return true;
}

}  // namespace tob::core
