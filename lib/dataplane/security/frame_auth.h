// Sealing and checking one slot frame (docs/wire-format.md "Authenticated frames"): the sender
// marks the frame authenticated, appends the trailer and the GMAC tag under its sending key; a
// receiver checks the tag under the key the trailer names, before the frame goes anywhere near
// the core. No allocation, lock or system call: the keys come prepared (key_set.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/wire.h"
#include "dataplane/security/key_set.h"

namespace tob::dataplane::security {

// frame: the encoded frame in its first frame_bytes, with kAuthTrailerBytes of room after it.
// Returns the authenticated frame's length (frame_bytes + kAuthTrailerBytes), 0 when OpenSSL failed.
size_t seal_frame(std::span<uint8_t> frame, size_t frame_bytes, uint8_t copy, KeySet& keys);

enum class AuthVerdict : uint8_t {
  ok,       // the tag verifies under a key this node holds
  missing,  // no authenticated flag: the sender has no key (or is not a member of this cluster)
  failed,   // trailer cut or malformed, a key this node does not hold, or a wrong tag
};

struct AuthResult {
  AuthVerdict verdict = AuthVerdict::failed;
  uint8_t copy = 0;  // from the trailer, when ok
};

// payload: the TOB payload as decode_frame saw it; view: what it decoded.
AuthResult verify_frame(std::span<const uint8_t> payload, const core::FrameView& view, KeySet& keys);

}  // namespace tob::dataplane::security
