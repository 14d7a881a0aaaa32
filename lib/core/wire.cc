#include "core/wire.h"

#include <algorithm>
#include <cstring>

#include "core/bytes.h"
#include "core/crc32c.h"

namespace tob::core {

const char* to_string(DecodeError e) {
  switch (e) {
    case DecodeError::none: return "ok";
    case DecodeError::too_short: return "too short";
    case DecodeError::bad_magic: return "bad magic";
    case DecodeError::bad_version: return "unsupported version";
    case DecodeError::bad_kind: return "unknown frame kind";
    case DecodeError::bad_sender: return "sender id out of range";
    case DecodeError::bad_segment: return "segment index not below segment count";
    case DecodeError::bad_stage: return "unknown stage";
    case DecodeError::bad_suspect: return "suspected node out of range";
    case DecodeError::bad_length: return "section bytes beyond the frame";
    case DecodeError::bad_crc: return "CRC mismatch";
    case DecodeError::section_overrun: return "section overruns the section area";
    case DecodeError::section_count: return "section count mismatch";
  }
  return "unknown";
}

namespace {

// The header's fields as the sender wrote them (docs/wire-format.md "Header"), unchecked.
FrameHeader read_header(const uint8_t* p) {
  FrameHeader h;
  h.kind = static_cast<FrameKind>(p[3]);
  h.cluster_id = load_be16(p + 4);
  h.sender = p[6];
  h.flags = p[7];
  h.cycle = load_be64(p + 8);
  h.segment_index = load_be16(p + 16);
  h.segment_count = load_be16(p + 18);
  h.view_vector = load_be64(p + 20);
  h.stage = static_cast<Stage>(p[28]);
  h.suspected = p[29];
  return h;
}

}  // namespace

DecodeResult decode_frame(std::span<const uint8_t> bytes) {
  DecodeResult r;
  const uint8_t* p = bytes.data();
  if (bytes.size() < kMinFrameBytes) return {DecodeError::too_short, {}};
  if (load_be16(p) != kFrameMagic) return {DecodeError::bad_magic, {}};
  if (p[2] != kWireVersion) return {DecodeError::bad_version, {}};
  if (p[3] != static_cast<uint8_t>(FrameKind::slot) && p[3] != static_cast<uint8_t>(FrameKind::ic))
    return {DecodeError::bad_kind, {}};
  const uint32_t section_bytes = load_be32(p + 32);
  // Compare in 64 bits: no overflow for any 32-bit length.
  const uint64_t frame_bytes = uint64_t{kHeaderBytes} + section_bytes + kTrailerBytes;
  if (frame_bytes > bytes.size()) return {DecodeError::bad_length, {}};
  const size_t body_end = kHeaderBytes + section_bytes;
  // CRC before looking at anything else the sender wrote: a corrupted frame is "bad crc".
  if (crc32c(bytes.first(body_end)) != load_be32(p + body_end)) return {DecodeError::bad_crc, {}};

  FrameHeader& h = r.view.header;
  h = read_header(p);  // its stage is checked below
  const uint8_t stage = p[28];
  const uint16_t section_count = load_be16(p + 30);
  if (h.sender >= kMaxNodes) return {DecodeError::bad_sender, {}};
  if (h.segment_count == 0 || h.segment_index >= h.segment_count)
    return {DecodeError::bad_segment, {}};
  if (stage > static_cast<uint8_t>(Stage::member)) return {DecodeError::bad_stage, {}};
  if (h.suspected != kNoNode && h.suspected >= kMaxNodes) return {DecodeError::bad_suspect, {}};

  // Walk the sections once: each header and body must lie inside the section area.
  const std::span<const uint8_t> area = bytes.subspan(kHeaderBytes, section_bytes);
  size_t off = 0;
  uint32_t found = 0;
  while (off < area.size()) {
    if (area.size() - off < kSectionHeaderBytes) return {DecodeError::section_overrun, {}};
    const size_t len = load_be16(area.data() + off + 2);
    if (area.size() - off - kSectionHeaderBytes < len) return {DecodeError::section_overrun, {}};
    off += kSectionHeaderBytes + len;
    ++found;
  }
  if (found != section_count) return {DecodeError::section_count, {}};
  r.view.section_count = section_count;
  r.view.sections = area;
  r.view.frame_bytes = static_cast<size_t>(frame_bytes);
  return r;
}

bool FrameView::next_section(size_t& offset, SectionView& out) const {
  if (offset >= sections.size()) return false;
  const uint8_t* s = sections.data() + offset;
  const size_t len = load_be16(s + 2);
  out.type = static_cast<SectionType>(s[0]);
  out.flags = s[1];
  out.body = sections.subspan(offset + kSectionHeaderBytes, len);
  offset += kSectionHeaderBytes + len;
  return true;
}

bool FrameView::find_section(SectionType type, SectionView& out) const {
  for (size_t off = 0; next_section(off, out);)
    if (out.type == type) return true;
  return false;
}

bool FrameWriter::begin(const FrameHeader& h) {
  pos_ = 0;
  reserved_ = 0;
  sections_ = 0;
  open_ = false;
  failed_ = false;
  if (buf_.size() < kMinFrameBytes || h.sender >= kMaxNodes || h.segment_count == 0 ||
      h.segment_index >= h.segment_count) {
    failed_ = true;
    return false;
  }
  uint8_t* p = buf_.data();
  store_be16(p, kFrameMagic);
  p[2] = kWireVersion;
  p[3] = static_cast<uint8_t>(h.kind);
  store_be16(p + 4, h.cluster_id);
  p[6] = h.sender;
  p[7] = h.flags;
  store_be64(p + 8, h.cycle);
  store_be16(p + 16, h.segment_index);
  store_be16(p + 18, h.segment_count);
  store_be64(p + 20, h.view_vector);
  p[28] = static_cast<uint8_t>(h.stage);
  p[29] = h.suspected;
  pos_ = kHeaderBytes;
  return true;
}

size_t FrameWriter::room() const {
  const size_t used = pos_ + kSectionHeaderBytes + kTrailerBytes + reserved_;
  if (failed_ || open_ || buf_.size() < used) return 0;
  return std::min(buf_.size() - used, kMaxSectionBody);
}

std::span<uint8_t> FrameWriter::open_section(SectionType type, uint8_t flags, size_t max_body) {
  if (failed_ || open_ || pos_ == 0) {
    failed_ = true;
    return {};
  }
  // room() is 0 both when a header fits with an empty body and when not even the section
  // header fits: check the latter explicitly, or an empty section would overrun the buffer.
  if (buf_.size() < pos_ + kSectionHeaderBytes + kTrailerBytes || max_body > room()) {
    failed_ = true;
    return {};
  }
  buf_[pos_] = static_cast<uint8_t>(type);
  buf_[pos_ + 1] = flags;
  open_at_ = pos_;
  open_ = true;
  return buf_.subspan(pos_ + kSectionHeaderBytes, max_body);
}

void FrameWriter::close_section(size_t body_bytes) {
  TOB_ASSERT(open_);
  TOB_ASSERT(body_bytes <= kMaxSectionBody);
  TOB_ASSERT(open_at_ + kSectionHeaderBytes + body_bytes + kTrailerBytes <= buf_.size());
  store_be16(buf_.data() + open_at_ + 2, static_cast<uint16_t>(body_bytes));
  pos_ = open_at_ + kSectionHeaderBytes + body_bytes;
  ++sections_;
  open_ = false;
}

bool FrameWriter::add_section(SectionType type, uint8_t flags, std::span<const uint8_t> body) {
  std::span<uint8_t> dst = open_section(type, flags, body.size());
  if (failed_) return false;
  if (!body.empty()) std::memcpy(dst.data(), body.data(), body.size());
  close_section(body.size());
  return true;
}

bool FrameWriter::set_segments(uint16_t index, uint16_t count) {
  if (failed_ || pos_ == 0 || count == 0 || index >= count) return false;
  store_be16(buf_.data() + 16, index);
  store_be16(buf_.data() + 18, count);
  return true;
}

void mark_second_copy(std::span<uint8_t> frame) {
  TOB_ASSERT(frame.size() >= kMinFrameBytes);
  frame[7] |= kFlagSecondCopy;
  store_be32(frame.data() + frame.size() - kTrailerBytes, crc32c(frame.first(frame.size() - kTrailerBytes)));
}

void mark_authenticated(std::span<uint8_t> frame) {
  TOB_ASSERT(frame.size() >= kMinFrameBytes);
  frame[7] |= kFlagAuthenticated;
  store_be32(frame.data() + frame.size() - kTrailerBytes, crc32c(frame.first(frame.size() - kTrailerBytes)));
}

FrameHeader peek_header(std::span<const uint8_t> frame) {
  TOB_ASSERT(frame.size() >= kMinFrameBytes);
  return read_header(frame.data());
}

void renumber_segments(std::span<uint8_t> frame, uint16_t index, uint16_t count) {
  TOB_ASSERT(frame.size() >= kMinFrameBytes && index < count);
  store_be16(frame.data() + 16, index);
  store_be16(frame.data() + 18, count);
  store_be32(frame.data() + frame.size() - kTrailerBytes, crc32c(frame.first(frame.size() - kTrailerBytes)));
}

size_t FrameWriter::finish() {
  if (failed_ || open_ || pos_ == 0) return 0;
  uint8_t* p = buf_.data();
  store_be16(p + 30, sections_);
  store_be32(p + 32, static_cast<uint32_t>(pos_ - kHeaderBytes));
  store_be32(p + pos_, crc32c(buf_.first(pos_)));
  return pos_ + kTrailerBytes;
}

size_t encode_wake_samples(std::span<const WakeSample> samples, std::span<uint8_t> out) {
  const size_t n = std::min(samples.size(), kWakeSamplesMax);
  TOB_ASSERT(out.size() >= n * kWakeSampleBytes);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* p = out.data() + i * kWakeSampleBytes;
    const int64_t late = std::clamp<int64_t>(samples[i].late_ns, INT32_MIN, INT32_MAX);
    store_be64(p, static_cast<uint64_t>(samples[i].release_ns));
    store_be32(p + 8, static_cast<uint32_t>(static_cast<int32_t>(late)));
    store_be32(p + 12, 0);
  }
  return n * kWakeSampleBytes;
}

int decode_wake_samples(std::span<const uint8_t> body, std::span<WakeSample, kWakeSamplesMax> out) {
  if (body.empty() || body.size() % kWakeSampleBytes != 0 || body.size() > kWakeSamplesMax * kWakeSampleBytes) return -1;
  const size_t n = body.size() / kWakeSampleBytes;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = body.data() + i * kWakeSampleBytes;
    out[i].release_ns = static_cast<int64_t>(load_be64(p));
    out[i].late_ns = static_cast<int32_t>(load_be32(p + 8));
  }
  return static_cast<int>(n);
}

size_t encode_clock_window(const ClockWindow& w, std::span<uint8_t> out) {
  TOB_ASSERT(out.size() >= kClockWindowBytes);
  store_be64(out.data(), static_cast<uint64_t>(w.window));
  store_be64(out.data() + 8, static_cast<uint64_t>(w.sum_ns));
  return kClockWindowBytes;
}

bool decode_clock_window(std::span<const uint8_t> body, ClockWindow& out) {
  if (body.size() != kClockWindowBytes) return false;
  out.window = static_cast<int64_t>(load_be64(body.data()));
  out.sum_ns = static_cast<int64_t>(load_be64(body.data() + 8));
  return true;
}

size_t append_section(std::span<uint8_t> buffer, size_t frame_bytes, SectionType type, uint8_t flags,
                      std::span<const uint8_t> body) {
  TOB_ASSERT(frame_bytes >= kMinFrameBytes && frame_bytes <= buffer.size());
  const size_t grown = frame_bytes + kSectionHeaderBytes + body.size();
  if (body.size() > kMaxSectionBody || grown > buffer.size() || grown > kMaxFrameBytes) return 0;
  uint8_t* p = buffer.data();
  uint8_t* at = p + frame_bytes - kTrailerBytes;  // the section goes where the CRC was
  at[0] = static_cast<uint8_t>(type);
  at[1] = flags;
  store_be16(at + 2, static_cast<uint16_t>(body.size()));
  if (!body.empty()) std::memcpy(at + kSectionHeaderBytes, body.data(), body.size());
  store_be16(p + 30, static_cast<uint16_t>(load_be16(p + 30) + 1));
  store_be32(p + 32, static_cast<uint32_t>(grown - kHeaderBytes - kTrailerBytes));
  store_be32(p + grown - kTrailerBytes, crc32c(buffer.first(grown - kTrailerBytes)));
  return grown;
}

}  // namespace tob::core
