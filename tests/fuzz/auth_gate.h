// The receive path of an authenticated frame in front of the node under test (docs/fuzzing.md):
// the harness seals every frame it delivers with the cluster key, as a sender holding the key
// would, and the frame then passes the checks a daemon with [security] makes before the core sees
// it (decode_frame with its CRC, verify_frame with the GMAC tag). So a fuzzed frame reaches the
// engine exactly when a member's key could have sent it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/wire.h"

namespace tob::fuzz {

class AuthGate {
 public:
  AuthGate();
  // frame: an encoded frame (valid CRC). Seals a copy under the cluster key (the copy number
  // goes into the trailer), checks it as a receiver does and hands the view to `deliver`.
  // False when the frame does not decode or verify (then `deliver` is not called).
  bool pass(std::span<const uint8_t> frame, uint8_t copy,
            const std::function<void(const core::FrameView&)>& deliver);
  uint64_t passed() const { return passed_; }
  void set_passed(uint64_t n) { passed_ = n; }

 private:
  std::vector<uint8_t> buf_;
  uint64_t passed_ = 0;
};

// Re-computes the CRC32C trailer of a frame whose bytes were changed (its first frame_bytes).
void reseal_crc(std::span<uint8_t> frame);

}  // namespace tob::fuzz
