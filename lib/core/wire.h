// Wire codec for slot frames: header, section framing and CRC32C trailer (docs/wire-format.md,
// docs/wire-format.md). The codec covers the TOB payload of an Ethernet frame; the dataplane
// adds the Ethernet (and 802.1Q) header.
//
// off len field
//   0   2 magic 0x70B1            20   8 view vector
//   2   1 version (2)             28   1 stage
//   3   1 kind (1 slot, 2 ic)     29   1 suspected node (0xFF none)
//   4   2 cluster id              30   2 section count
//   6   1 sender node id          32   4 section bytes
//   7   1 flags                   36   . sections: type u8, flags u8, length u16, body
//   8   8 cycle number             .   4 CRC32C over everything before it
//  16   2 segment index
//  18   2 segment count
//
// The encoder writes into a caller-provided buffer; the decoder returns a view into the
// caller's bytes or a typed error. It is total: no input makes it read past the buffer.
// Bytes after the trailer are ignored (Ethernet pads short frames to 60 bytes).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/schedule.h"

namespace tob::core {

inline constexpr uint16_t kFrameMagic = 0x70B1;
// 2: otfp slots in several frames (a batch cut into segments, retransmissions in aux frames
// with segment numbers in their data sections); 1 had one frame per slot and copy.
inline constexpr uint8_t kWireVersion = 2;
inline constexpr uint16_t kEtherType = 0x88B5;
inline constexpr size_t kHeaderBytes = 36;
inline constexpr size_t kSectionHeaderBytes = 4;
inline constexpr size_t kTrailerBytes = 4;
inline constexpr size_t kMinFrameBytes = kHeaderBytes + kTrailerBytes;
inline constexpr size_t kMaxSectionBody = 0xFFFF;
inline constexpr size_t kMembershipBodyBytes = 8;  // section 8: members u64
inline constexpr size_t kMaxFrameBytes = 9000;      // the TOB payload of a jumbo frame
static_assert(kMinFrameBytes == kHeaderBytes + kTrailerBytes, "a frame is a header, sections and a CRC");
static_assert(kMaxFrameBytes - kMinFrameBytes - kSectionHeaderBytes <= kMaxSectionBody,
              "one section can fill the largest frame: its length field never overflows");

// slot: the ordering engine's frames (mars, otfp). ic: interactive-consistency round data
// (core/ic_wire.h), sent in the same slot in frames of their own; drivers hand each kind to its
// own component, so neither sees the other's frames.
enum class FrameKind : uint8_t { slot = 1, ic = 2 };

// Stage of a node in the MARS membership (seed 000 §6.1, table 6.2).
enum class Stage : uint8_t { inactive = 0, active = 1, member = 2 };

// second copy: the same frame sent again (send-twice); aux: a frame of the slot besides its
// copies (otfp retransmissions), numbered among the slot's aux frames, never a batch segment;
// authenticated: an authentication trailer follows the CRC (docs/wire-format.md "Authenticated
// frames"; the engines set the flag from NodeConfig::frame_flags, the dataplane writes and checks
// the trailer, the core never sees it).
enum FrameFlags : uint8_t { kFlagSecondCopy = 1u << 0, kFlagAux = 1u << 1, kFlagAuthenticated = 1u << 2 };

enum class SectionType : uint8_t {
  app_batch = 1,
  otfp_vote = 2,
  otfp_phase2a = 3,
  retransmit_request = 4,
  retransmit_data = 5,
  ic_round = 6,
  clock_sync = 7,
  membership = 8,  // join/state transfer: the sender's member set
  otfp_phase1a = 9,
  otfp_phase1b = 10,
  otfp_any = 11,
  otfp_state = 12,
  otfp_decided = 13,
  clock_window = 14,  // the sender's rate window (appended by the daemon, like section 7)
};

struct FrameHeader {
  FrameKind kind = FrameKind::slot;
  uint16_t cluster_id = 0;
  NodeId sender = 0;
  uint8_t flags = 0;
  uint64_t cycle = 0;
  uint16_t segment_index = 0;
  uint16_t segment_count = 1;
  uint64_t view_vector = 0;
  Stage stage = Stage::inactive;
  NodeId suspected = kNoNode;
};

struct SectionView {
  SectionType type;
  uint8_t flags;
  std::span<const uint8_t> body;
};

enum class DecodeError : uint8_t {
  none = 0,
  too_short,
  bad_magic,
  bad_version,
  bad_kind,
  bad_sender,
  bad_segment,
  bad_stage,
  bad_suspect,
  bad_length,       // section bytes beyond the buffer
  bad_crc,
  section_overrun,  // a section's length runs past the section area
  section_count,    // count in the header disagrees with the sections found
};
inline constexpr int kDecodeErrorCount = 13;
const char* to_string(DecodeError e);

// A decoded frame: the header and a view of its (already validated) section area.
class FrameView {
 public:
  FrameHeader header;
  uint16_t section_count = 0;
  std::span<const uint8_t> sections;  // the section area, validated
  size_t frame_bytes = 0;             // header + sections + trailer

  // Iterates sections in order. Usage: for (size_t off = 0; v.next_section(off, s);) {...}
  bool next_section(size_t& offset, SectionView& out) const;
  // First section of a type, if any.
  bool find_section(SectionType type, SectionView& out) const;
};

struct DecodeResult {
  DecodeError error = DecodeError::none;
  FrameView view;
  bool ok() const { return error == DecodeError::none; }
};

DecodeResult decode_frame(std::span<const uint8_t> bytes);

// Turns an encoded frame into its second copy of a send-twice pair (seed 000 §5.1): sets the
// flag and reseals the CRC, which covers it.
void mark_second_copy(std::span<uint8_t> frame);
// Marks an encoded frame as followed by an authentication trailer: sets the flag and reseals the
// CRC (the trailer itself lies after the CRC and is the dataplane's, docs/wire-format.md).
void mark_authenticated(std::span<uint8_t> frame);
// The first copy's first frame of a slot (segment 0, no aux): its arrival is the peers' clock
// reading, and the daemon appends its rate window (section 14) and wake-ups (section 7) to it.
inline bool clock_reading_frame(const FrameHeader& h) {
  return h.kind == FrameKind::slot && h.segment_index == 0 && (h.flags & (kFlagSecondCopy | kFlagAux)) == 0;
}
// The header of a frame this node encoded (FrameWriter): read back without any check, for the
// dataplane that authenticates it.
FrameHeader peek_header(std::span<const uint8_t> frame);
// Rewrites an encoded frame's segment numbers and reseals the CRC (frames numbered once the
// slot knows how many it has).
void renumber_segments(std::span<uint8_t> frame, uint16_t index, uint16_t count);

// Section 7, the clock-sync sample (docs/wire-format.md "Section 7: wake-up samples"): a node's
// wake-ups for its latest release instants, telemetry for the cross-node release skew
// (core/release_skew.h). Entries of release_ns i64, late_ns i32, reserved u32; 1..4 of them.
struct WakeSample {
  int64_t release_ns = 0;  // the release instant (global time, the same on every node)
  int64_t late_ns = 0;     // how long after it the node's last waiting client woke, on its clock
};
inline constexpr size_t kWakeSampleBytes = 16;
inline constexpr size_t kWakeSamplesMax = 4;
// The body for `samples` (at most kWakeSamplesMax; late_ns clamped to i32) into `out`; its length.
size_t encode_wake_samples(std::span<const WakeSample> samples, std::span<uint8_t> out);
// The samples of a section 7 body; -1 when the body is not 1..4 whole entries.
int decode_wake_samples(std::span<const uint8_t> body, std::span<WakeSample, kWakeSamplesMax> out);

// Section 14, the sender's rate window (docs/wire-format.md "Section 14: rate windows"): the
// latest window of rate_window_rounds rounds (window k: rounds kW .. kW + W - 1) its in-band
// synchronisation completed, and the sum of its corrections over it. Receivers take the part all
// nodes' sums share (a common error in the configured delay) out of their rate estimates
// (core/clock_sync.h). Body: window i64, sum_ns i64 (kNoSum: a round of it was clipped, or
// closed before integration), 16 bytes.
inline constexpr int64_t kNoSum = INT64_MIN;
struct ClockWindow {
  int64_t window = -1;  // -1: none completed yet
  int64_t sum_ns = kNoSum;
};
inline constexpr size_t kClockWindowBytes = 16;
inline constexpr size_t kClockWindowSectionBytes = kSectionHeaderBytes + kClockWindowBytes;
// The body for `w` into `out` (at least kClockWindowBytes); its length.
size_t encode_clock_window(const ClockWindow& w, std::span<uint8_t> out);
// False when the body is not one entry.
bool decode_clock_window(std::span<const uint8_t> body, ClockWindow& out);

// Appends a section to an encoded frame of `frame_bytes` in `buffer` (header counts and CRC
// rewritten); the new length, or 0 when it does not fit the buffer (the frame is then unchanged).
size_t append_section(std::span<uint8_t> buffer, size_t frame_bytes, SectionType type, uint8_t flags,
                      std::span<const uint8_t> body);

// Builds one frame in a caller buffer. Sections are written in place:
//   FrameWriter w(buf); w.begin(h); auto body = w.open_section(t, 0, max); ...; w.close_section(n);
//   size_t len = w.finish();   // 0 when the buffer was too small at any step
class FrameWriter {
 public:
  explicit FrameWriter(std::span<uint8_t> buffer) : buf_(buffer) {}

  bool begin(const FrameHeader& header);
  // Space for a section body of at most max_body bytes (bounded by the buffer and 0xFFFF);
  // empty span when no room is left.
  std::span<uint8_t> open_section(SectionType type, uint8_t flags, size_t max_body);
  void close_section(size_t body_bytes);
  bool add_section(SectionType type, uint8_t flags, std::span<const uint8_t> body);
  // Remaining room for section bodies, accounting for the next section header and trailer
  // and for what reserve() keeps back.
  size_t room() const;
  // Keeps `bytes` out of room() until reserved again (0 releases it): a section written last
  // that must fit whatever the sections before it take.
  void reserve(size_t bytes) { reserved_ = bytes; }
  // Rewrites the header's segment numbers before finish() (a count known only once the
  // sections are written).
  bool set_segments(uint16_t index, uint16_t count);
  size_t finish();
  bool failed() const { return failed_; }

 private:
  std::span<uint8_t> buf_;
  size_t pos_ = 0;
  size_t reserved_ = 0;
  size_t open_at_ = 0;
  uint16_t sections_ = 0;
  bool open_ = false;
  bool failed_ = false;
};

}  // namespace tob::core
