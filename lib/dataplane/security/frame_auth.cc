#include "dataplane/security/frame_auth.h"

#include <algorithm>

#include "core/result.h"
#include "dataplane/security/auth_trailer.h"

namespace tob::dataplane::security {

size_t seal_frame(std::span<uint8_t> frame, size_t frame_bytes, uint8_t copy, KeySet& keys) {
  TOB_ASSERT(frame_bytes >= core::kMinFrameBytes && frame.size() >= frame_bytes + kAuthTrailerBytes);
  TOB_ASSERT(keys.count() >= 1 && copy <= kCopyMax);
  // The engines mark their frames when they encode them (NodeConfig::frame_flags): no reseal then.
  core::FrameHeader h = core::peek_header(frame.first(frame_bytes));
  if ((h.flags & core::kFlagAuthenticated) == 0) {
    core::mark_authenticated(frame.first(frame_bytes));
    h.flags = static_cast<uint8_t>(h.flags | core::kFlagAuthenticated);
  }
  const std::span<uint8_t> trailer = frame.subspan(frame_bytes, kAuthTrailerBytes);
  write_trailer_prefix(trailer, copy, keys.send_id());
  Tag tag;
  if (!keys.sender().tag(make_iv(identity_of(h, copy)), frame.first(frame_bytes - core::kTrailerBytes),
                         trailer.first(kTrailerPrefixBytes), tag))
    return 0;
  std::copy(tag.begin(), tag.end(), trailer.begin() + kTrailerPrefixBytes);
  return frame_bytes + kAuthTrailerBytes;
}

AuthResult verify_frame(std::span<const uint8_t> payload, const core::FrameView& view, KeySet& keys) {
  if ((view.header.flags & core::kFlagAuthenticated) == 0) return {AuthVerdict::missing, 0};
  const auto t = parse_trailer(payload, view.frame_bytes);
  if (!t) return {AuthVerdict::failed, 0};
  Gmac* mac = keys.find(t->key_id);
  if (mac == nullptr) return {AuthVerdict::failed, 0};
  const bool ok = mac->verify(make_iv(identity_of(view.header, t->copy)),
                              payload.first(view.frame_bytes - core::kTrailerBytes), t->prefix, t->tag);
  return {ok ? AuthVerdict::ok : AuthVerdict::failed, t->copy};
}

}  // namespace tob::dataplane::security
