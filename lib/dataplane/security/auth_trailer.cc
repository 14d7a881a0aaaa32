#include "dataplane/security/auth_trailer.h"

#include "core/bytes.h"
#include "core/result.h"

namespace tob::dataplane::security {

FrameIdentity identity_of(const core::FrameHeader& h, uint8_t copy) {
  return {h.sender, h.kind, static_cast<uint8_t>(h.flags & (core::kFlagSecondCopy | core::kFlagAux)), copy,
          h.segment_index, h.cycle};
}

Iv make_iv(const FrameIdentity& id) {
  static_assert(core::kMaxNodes <= 256, "the sender fills one byte");
  Iv iv{};
  iv[0] = id.sender;
  iv[1] = static_cast<uint8_t>((static_cast<uint8_t>(id.kind) & 0x3u) << 5 | (id.flags & 0x3u) << 3 | (id.copy & 0x7u));
  core::store_be16(iv.data() + 2, id.segment);
  core::store_be64(iv.data() + 4, id.cycle);
  return iv;
}

void write_trailer_prefix(std::span<uint8_t> out, uint8_t copy, uint16_t key_id) {
  TOB_ASSERT(out.size() >= kAuthTrailerBytes && copy <= kCopyMax);
  out[0] = copy;
  out[1] = 0;
  core::store_be16(out.data() + 2, key_id);
}

std::optional<TrailerView> parse_trailer(std::span<const uint8_t> payload, size_t frame_bytes) {
  if (frame_bytes > payload.size() || payload.size() - frame_bytes < kAuthTrailerBytes) return std::nullopt;
  const std::span<const uint8_t> t = payload.subspan(frame_bytes, kAuthTrailerBytes);
  if (t[0] > kCopyMax || t[1] != 0) return std::nullopt;
  return TrailerView{t[0], core::load_be16(t.data() + 2), t.first(kTrailerPrefixBytes), t.subspan(kTrailerPrefixBytes)};
}

}  // namespace tob::dataplane::security
