#include "core/ic_wire.h"

#include <cstring>

#include "core/bytes.h"

namespace tob::core {

bool parse_ic_chunk(std::span<const uint8_t> body, IcChunk& out) {
  if (body.size() < kIcChunkHeaderBytes) return false;
  const uint8_t* p = body.data();
  if (p[9] != 0) return false;
  out.instance = load_be64(p);
  out.round = p[8];
  out.index = load_be16(p + 10);
  out.message_bytes = load_be32(p + 12);
  out.data = body.subspan(kIcChunkHeaderBytes);
  return true;
}

size_t ic_chunk_count(size_t message_bytes, size_t chunk_bytes) {
  TOB_ASSERT(chunk_bytes > 0);
  return (message_bytes + chunk_bytes - 1) / chunk_bytes;
}

size_t ic_chunk_length(size_t message_bytes, size_t chunk_bytes, size_t index) {
  const size_t start = index * chunk_bytes;
  TOB_ASSERT(start < message_bytes);
  return std::min(chunk_bytes, message_bytes - start);
}

namespace {

bool params_ok(std::span<const IcMessage> messages, const IcFrameParams& p) {
  if (p.chunk_bytes == 0 || p.frame_bytes_max < kIcFrameOverheadBytes ||
      p.chunk_bytes > p.frame_bytes_max - kIcFrameOverheadBytes || p.chunk_bytes > kMaxSectionBody - kIcChunkHeaderBytes ||
      p.sender >= kMaxNodes)
    return false;
  for (const IcMessage& m : messages)
    if (m.bytes.empty() || m.bytes.size() > UINT32_MAX || ic_chunk_count(m.bytes.size(), p.chunk_bytes) > 0xFFFF)
      return false;
  return true;
}

// The one packing rule, shared by counting and encoding: chunks in order, a new frame when the
// next section does not fit the current one.
template <class OnChunk, class OnFrame>
size_t pack(std::span<const IcMessage> messages, const IcFrameParams& p, OnChunk on_chunk, OnFrame on_frame) {
  size_t frames = 0;
  size_t used = 0;  // bytes of the current frame, header and trailer included; 0: none open
  for (const IcMessage& m : messages) {
    const size_t chunks = ic_chunk_count(m.bytes.size(), p.chunk_bytes);
    for (size_t k = 0; k < chunks; ++k) {
      const size_t section = kSectionHeaderBytes + kIcChunkHeaderBytes + ic_chunk_length(m.bytes.size(), p.chunk_bytes, k);
      if (used == 0 || used + section > p.frame_bytes_max) {
        if (used != 0 && !on_frame(frames - 1)) return 0;
        ++frames;
        used = kHeaderBytes + kTrailerBytes;
      }
      if (!on_chunk(frames - 1, m, k)) return 0;
      used += section;
    }
  }
  if (used != 0 && !on_frame(frames - 1)) return 0;
  return frames;
}

}  // namespace

size_t ic_frame_count(std::span<const IcMessage> messages, const IcFrameParams& p) {
  if (!params_ok(messages, p)) return 0;
  return pack(messages, p, [](size_t, const IcMessage&, size_t) { return true; }, [](size_t) { return true; });
}

size_t encode_ic_frames(std::span<const IcMessage> messages, const IcFrameParams& p, std::span<uint8_t> out,
                        std::span<size_t> lengths) {
  const size_t count = ic_frame_count(messages, p);
  if (count == 0 || count > 0xFFFF || lengths.size() < count || out.size() / p.frame_bytes_max < count) return 0;
  FrameHeader h;
  h.kind = FrameKind::ic;
  h.cluster_id = p.cluster_id;
  h.sender = p.sender;
  h.flags = p.flags;
  h.cycle = p.cycle;
  h.segment_count = static_cast<uint16_t>(count);
  h.view_vector = 0;
  h.stage = Stage::inactive;
  h.suspected = kNoNode;
  FrameWriter w(out.first(p.frame_bytes_max));
  size_t open = SIZE_MAX;
  const auto on_chunk = [&](size_t frame, const IcMessage& m, size_t k) {
    if (frame != open) {
      w = FrameWriter(out.subspan(frame * p.frame_bytes_max, p.frame_bytes_max));
      h.segment_index = static_cast<uint16_t>(frame);
      if (!w.begin(h)) return false;
      open = frame;
    }
    const size_t len = ic_chunk_length(m.bytes.size(), p.chunk_bytes, k);
    std::span<uint8_t> body = w.open_section(SectionType::ic_round, 0, kIcChunkHeaderBytes + len);
    if (w.failed()) return false;
    store_be64(body.data(), m.instance);
    body[8] = m.round;
    body[9] = 0;
    store_be16(body.data() + 10, static_cast<uint16_t>(k));
    store_be32(body.data() + 12, static_cast<uint32_t>(m.bytes.size()));
    std::memcpy(body.data() + kIcChunkHeaderBytes, m.bytes.data() + k * p.chunk_bytes, len);
    w.close_section(kIcChunkHeaderBytes + len);
    return true;
  };
  const auto on_frame = [&](size_t frame) {
    lengths[frame] = w.finish();
    return lengths[frame] > 0;
  };
  const size_t written = pack(messages, p, on_chunk, on_frame);
  TOB_ASSERT(written == 0 || written == count);
  return written;
}

size_t emit_ic_copies(std::span<const IcMessage> messages, IcFrameParams p, int copies, size_t frames_max, int64_t tx_ns,
                      std::span<uint8_t> buffer, std::span<size_t> lengths, std::vector<TxFrame>& out) {
  size_t frames = 0;
  for (int copy = 0; copy < copies; ++copy) {
    p.flags = static_cast<uint8_t>((p.flags & ~kFlagSecondCopy) | (copy > 0 ? kFlagSecondCopy : 0));
    const size_t base = static_cast<size_t>(copy) * frames_max * p.frame_bytes_max;
    if (buffer.size() < base + frames_max * p.frame_bytes_max) return 0;
    frames = encode_ic_frames(messages, p, buffer.subspan(base, frames_max * p.frame_bytes_max), lengths);
    if (frames == 0) return 0;
    for (size_t k = 0; k < frames; ++k)
      out.push_back({tx_ns, static_cast<int64_t>(p.cycle), static_cast<uint8_t>(copy),
                     std::span<const uint8_t>(buffer.data() + base + k * p.frame_bytes_max, lengths[k])});
  }
  return frames;
}

}  // namespace tob::core
