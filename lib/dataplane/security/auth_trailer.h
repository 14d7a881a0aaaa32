// The authentication trailer of a slot frame and the GMAC IV of each frame (docs/wire-format.md
// "Authenticated frames"). Plain byte code: the layout is the dataplane's, like the Ethernet
// header's (port/ether.h); the core only knows the header flag that announces it
// (core::kFlagAuthenticated).
//
// A frame with the flag set is followed, right after its CRC32C, by
//   off len
//     0   1 copy: the frame's copy in its slot (0 .. sends_per_slot-1; otfp aux frames:
//           sends_per_slot), which the wire's second-copy flag alone does not tell for 3 or 4
//           copies
//     1   1 reserved (0)
//     2   2 key id (key_file.h: which cluster key the tag is under)
//     4  16 GMAC tag over header and sections (CRC excluded), then trailer bytes 0..3
//
// IV (12 bytes, GCM's J0 as is): unique per key and frame because it is an injective function
// of the frame's identity, and a sender sends each identity once (the argument is in
// docs/wire-format.md "Why the IV is unique"):
//     0   1 sender
//     1   1 kind (2 bits) << 5 | second-copy and aux flags (2 bits) << 3 | copy (3 bits)
//     2   2 segment index
//     4   8 cycle
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "core/wire.h"
#include "dataplane/security/gmac.h"

namespace tob::dataplane::security {

inline constexpr size_t kTrailerPrefixBytes = 4;  // copy, reserved, key id: authenticated too
inline constexpr size_t kAuthTrailerBytes = kTrailerPrefixBytes + kTagBytes;
inline constexpr uint8_t kCopyMax = 7;  // 3 bits in the IV; sends_per_slot is at most 4 (aux: 4)
static_assert(kAuthTrailerBytes == 20, "docs/wire-format.md gives the trailer as 20 bytes");

// What makes a frame unique among everything one sender sends.
struct FrameIdentity {
  core::NodeId sender = 0;
  core::FrameKind kind = core::FrameKind::slot;
  uint8_t flags = 0;  // only second copy and aux count
  uint8_t copy = 0;
  uint16_t segment = 0;
  uint64_t cycle = 0;
};

FrameIdentity identity_of(const core::FrameHeader& h, uint8_t copy);
Iv make_iv(const FrameIdentity& id);

struct TrailerView {
  uint8_t copy = 0;
  uint16_t key_id = 0;
  std::span<const uint8_t> prefix;  // bytes 0..3, authenticated
  std::span<const uint8_t> tag;
};

// Writes bytes 0..3 (the tag is the caller's); out holds at least kAuthTrailerBytes.
void write_trailer_prefix(std::span<uint8_t> out, uint8_t copy, uint16_t key_id);
// The trailer of a decoded frame: `payload` is the TOB payload (as decode_frame saw it),
// `frame_bytes` the decoded frame's length. Nothing when the payload ends before the trailer does,
// or the reserved byte or the copy is out of range.
std::optional<TrailerView> parse_trailer(std::span<const uint8_t> payload, size_t frame_bytes);

}  // namespace tob::dataplane::security
