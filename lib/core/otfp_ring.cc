#include "core/otfp_ring.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/batch.h"
#include "core/bytes.h"
#include "core/crc32c.h"
#include "core/result.h"

namespace tob::core {

OtfpRing::OtfpRing(int nodes, size_t batch_bytes_max)
    : n_(nodes),
      batch_bytes_max_(batch_bytes_max),
      slots_(static_cast<size_t>(kOtfpRing)),
      bytes_(static_cast<size_t>(kOtfpRing) * static_cast<size_t>(nodes) * batch_bytes_max) {
  TOB_ASSERT(nodes > 0 && nodes <= kMaxNodes);
}

OtfpInstance* OtfpRing::held(int64_t i) {
  if (i < floor_) return nullptr;
  OtfpInstance& in = slot(i);
  return in.id == i ? &in : nullptr;
}

const OtfpInstance* OtfpRing::held(int64_t i) const {
  if (i < floor_) return nullptr;
  const OtfpInstance& in = slot(i);
  return in.id == i ? &in : nullptr;
}

OtfpInstance* OtfpRing::open(int64_t i) {
  if (i < floor_) return nullptr;
  OtfpInstance& in = slot(i);
  if (in.id == i) return &in;
  if (in.id > i) return nullptr;  // the ring moved past i: forgotten
  // Everything at or below i - kOtfpRing is forgotten from now on, whatever the slot held.
  floor_ = std::max(floor_, oldest_with(i));
  in = OtfpInstance{};
  in.id = i;
  return &in;
}

std::span<uint8_t> OtfpRing::batch(int64_t i, NodeId sender) {
  TOB_ASSERT(i >= 0 && sender < n_);
  const size_t at = static_cast<size_t>(i % kOtfpRing) * static_cast<size_t>(n_) + sender;
  return {bytes_.data() + at * batch_bytes_max_, batch_bytes_max_};
}

std::span<const uint8_t> OtfpRing::stored(const OtfpInstance& in, NodeId sender) const {
  TOB_ASSERT((in.have & (uint64_t{1} << sender)) != 0);
  const size_t at = static_cast<size_t>(in.id % kOtfpRing) * static_cast<size_t>(n_) + sender;
  return {bytes_.data() + at * batch_bytes_max_, in.bytes[sender]};
}

bool OtfpRing::store(OtfpInstance& in, NodeId sender, std::span<const uint8_t> body) {
  if (sender >= n_ || (in.have & (uint64_t{1} << sender)) != 0 || body.size() > batch_bytes_max_) return false;
  uint16_t count = 0;
  if (!validate_batch(body, &count) || count == 0) return false;
  std::memcpy(batch(in.id, sender).data(), body.data(), body.size());
  keep_own(in, sender, body.size());
  return true;
}

void OtfpRing::keep_own(OtfpInstance& in, NodeId sender, size_t bytes) {
  TOB_ASSERT(bytes <= batch_bytes_max_ && bytes <= UINT16_MAX);
  in.have |= uint64_t{1} << sender;
  in.bytes[sender] = static_cast<uint16_t>(bytes);
  in.crc[sender] = crc32c(batch(in.id, sender).first(bytes));
}

OtfpValue OtfpRing::value_of(const OtfpInstance& in, uint64_t mask) const {
  uint64_t h = mix64(static_cast<uint64_t>(in.id));
  for (uint64_t m = mask; m != 0; m &= m - 1) {
    const int s = std::countr_zero(m);
    h = mix64(h ^ (static_cast<uint64_t>(s) << 32 | in.crc[static_cast<size_t>(s)]));
  }
  return {mask, mask == 0 ? 0 : h};
}

}  // namespace tob::core
