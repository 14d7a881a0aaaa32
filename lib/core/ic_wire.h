// Interactive-consistency round data on the wire (docs/wire-format.md, section type 6;
// docs/protocol-ic.md "Frames"). IC data travels in frames of their own, kind 2 (ic), that a node
// sends in its own slot after the ordering engine's copies; the engines never see them. The
// header fields of the membership (view vector, stage, suspect) are zero / 0xFF in ic frames.
//
// A round message (one EIG level, up to megabytes) is cut into chunks of `chunk_bytes` at fixed
// boundaries, chunk k covering [k * chunk_bytes, ...). Each chunk is one ic_round section:
//
//   off len
//     0   8 instance (IC instance number)
//     8   1 round (1..R)
//     9   1 reserved (0)
//    10   2 chunk index
//    12   4 message bytes (the whole round message)
//    16   . chunk data: min(chunk_bytes, message bytes - index * chunk_bytes) bytes
//
// Sections are packed in order into as few frames as fit `frame_bytes_max`; a frame may hold
// chunks of several instances in flight (pipelining). Segment index/count in the header number
// the ic frames of the slot. chunk_bytes is a cluster-wide constant like f and the period.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/engine.h"
#include "core/wire.h"

namespace tob::core {

inline constexpr size_t kIcChunkHeaderBytes = 16;
// Frame header, section header, chunk header and trailer around one chunk.
inline constexpr size_t kIcFrameOverheadBytes = kHeaderBytes + kSectionHeaderBytes + kIcChunkHeaderBytes + kTrailerBytes;

struct IcChunk {
  uint64_t instance = 0;
  uint8_t round = 0;
  uint16_t index = 0;
  uint32_t message_bytes = 0;
  std::span<const uint8_t> data;
};

// Structural parse of an ic_round section body: false when shorter than the chunk header or the
// reserved byte is set. Whether the chunk fits the receiver's instance is the IC node's check.
bool parse_ic_chunk(std::span<const uint8_t> body, IcChunk& out);

// Chunks of a message of `message_bytes` (>= 1), and the length of chunk `index`.
size_t ic_chunk_count(size_t message_bytes, size_t chunk_bytes);
size_t ic_chunk_length(size_t message_bytes, size_t chunk_bytes, size_t index);

struct IcMessage {
  uint64_t instance = 0;
  uint8_t round = 0;
  std::span<const uint8_t> bytes;
};

struct IcFrameParams {
  uint16_t cluster_id = 1;
  NodeId sender = 0;
  uint64_t cycle = 0;
  uint8_t flags = 0;
  size_t chunk_bytes = 1440;
  size_t frame_bytes_max = 1500;
};

// Frames needed for `messages`.
size_t ic_frame_count(std::span<const IcMessage> messages, const IcFrameParams& p);
// Encodes them: frame k at out[k * frame_bytes_max ...], its length in lengths[k]. Returns the
// frame count; 0 when `out` or `lengths` is too small or a parameter is out of range.
size_t encode_ic_frames(std::span<const IcMessage> messages, const IcFrameParams& p, std::span<uint8_t> out,
                        std::span<size_t> lengths);

// Every copy of one slot's round data: `copies` times the frames encode_ic_frames makes (the
// second and later copies flagged), into `buffer` (copies x frames_max frames of
// p.frame_bytes_max bytes) and `lengths` (frames_max), appended to `out` to leave at tx_ns.
// Returns the frames per copy (0: the buffers are too small).
size_t emit_ic_copies(std::span<const IcMessage> messages, IcFrameParams p, int copies, size_t frames_max, int64_t tx_ns,
                      std::span<uint8_t> buffer, std::span<size_t> lengths, std::vector<TxFrame>& out);

}  // namespace tob::core
