#include "core/otfp_ring.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/batch.h"
#include "core/bytes.h"
#include "core/crc32c.h"
#include "core/result.h"

namespace tob::core {

OtfpRing::OtfpRing(int nodes, std::span<const uint16_t> segments, size_t segment_bytes)
    : n_(nodes), segment_bytes_(segment_bytes), slots_(static_cast<size_t>(kOtfpRing)) {
  TOB_ASSERT(nodes > 0 && nodes <= kMaxNodes && segments.size() == static_cast<size_t>(nodes));
  for (NodeId k = 0; k < n_; ++k) segments_[k] = segments[k];
  parts_.reserve(static_cast<size_t>(kOtfpRing) * static_cast<size_t>(n_));
  for (int64_t i = 0; i < kOtfpRing; ++i)
    for (NodeId k = 0; k < n_; ++k) parts_.emplace_back(segments_[k], segment_bytes_);
}

OtfpRing::OtfpRing(int nodes, size_t batch_bytes)
    : OtfpRing(nodes, std::vector<uint16_t>(static_cast<size_t>(nodes), 1), batch_bytes) {}

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

OtfpRing::Store OtfpRing::store_segment(OtfpInstance& in, NodeId sender, uint16_t index, uint16_t count,
                                        std::span<const uint8_t> body, Reassembly::Checked checked) {
  if (sender >= n_) return Store::refused;
  if ((in.have & (uint64_t{1} << sender)) != 0) return Store::duplicate;
  Reassembly& r = parts(in.id, sender);
  switch (r.add(in.id, index, count, body, checked)) {
    case Reassembly::Add::fresh: return Store::fresh;
    case Reassembly::Add::duplicate: return Store::duplicate;
    case Reassembly::Add::malformed: return Store::refused;
    case Reassembly::Add::complete: break;
  }
  if (r.count() == 1 && r.messages() == 0) {  // a slot without messages carries no batch
    r.reset(in.id);
    return Store::refused;
  }
  in.have |= uint64_t{1} << sender;
  in.crc[sender] = r.crc();
  return Store::complete;
}

bool OtfpRing::has_segment(const OtfpInstance& in, NodeId sender, uint16_t index) const {
  return sender < n_ && ((in.have >> sender & 1u) != 0 || parts(in.id, sender).has(in.id, index));
}

bool OtfpRing::missing(const OtfpInstance& in, NodeId sender, uint16_t& first, uint16_t& last) const {
  if (sender >= n_ || (in.have >> sender & 1u) != 0) return false;
  return parts(in.id, sender).missing(in.id, first, last);
}

void OtfpRing::forget(OtfpInstance& in, uint64_t mask) {
  for (uint64_t m = mask; m != 0; m &= m - 1)
    if (const auto s = static_cast<NodeId>(std::countr_zero(m)); s < n_) parts(in.id, s).reset(in.id);
  in.have &= ~mask;
  in.persisted &= ~mask;  // the body fetched instead goes to the log in its turn
}

void OtfpRing::begin_own(OtfpInstance& in, NodeId self) {
  TOB_ASSERT(self < n_ && (in.have >> self & 1u) == 0);
  parts(in.id, self).reset(in.id);
}

std::span<uint8_t> OtfpRing::own_room(OtfpInstance& in, NodeId self, uint16_t j) {
  TOB_ASSERT(self < n_ && j < segments_[self]);
  return parts(in.id, self).room(j);
}

void OtfpRing::put_own(OtfpInstance& in, NodeId self, uint16_t j, size_t bytes, uint16_t messages) {
  parts(in.id, self).put(j, bytes, messages);
}

void OtfpRing::close_own(OtfpInstance& in, NodeId self, uint16_t segments) {
  Reassembly& r = parts(in.id, self);
  r.close(segments);
  in.have |= uint64_t{1} << self;
  in.crc[self] = r.crc();
}

const Reassembly& OtfpRing::batch(const OtfpInstance& in, NodeId sender) const {
  TOB_ASSERT(sender < n_ && (in.have >> sender & 1u) != 0);
  return parts(in.id, sender);
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
