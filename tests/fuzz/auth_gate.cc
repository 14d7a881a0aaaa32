#include "auth_gate.h"

#include <algorithm>

#include "core/bytes.h"
#include "core/crc32c.h"
#include "dataplane/security/auth_trailer.h"
#include "dataplane/security/frame_auth.h"
#include "fuzz_node.h"

namespace tob::fuzz {

namespace sec = dataplane::security;

namespace {

sec::KeyFile cluster_key() {
  sec::KeyFile f;
  for (size_t i = 0; i < f.keys[0].bytes.size(); ++i) f.keys[0].bytes[i] = static_cast<uint8_t>(0x21 + i);
  f.keys[0].id = sec::key_id(f.keys[0].bytes);
  f.count = 1;
  return f;
}

// One set for every cluster of the process: the GMAC contexts are made once, not per input.
sec::KeySet& cluster_keys() {
  static sec::KeySet keys(cluster_key());
  return keys;
}

}  // namespace

AuthGate::AuthGate() : buf_(core::kMaxFrameBytes + sec::kAuthTrailerBytes) {}

void reseal_crc(std::span<uint8_t> frame) {
  const size_t end = frame.size() - core::kTrailerBytes;
  core::store_be32(frame.data() + end, core::crc32c(frame.first(end)));
}

bool AuthGate::pass(std::span<const uint8_t> frame, uint8_t copy,
                    const std::function<void(const core::FrameView&)>& deliver) {
  if (frame.size() < core::kMinFrameBytes || frame.size() > core::kMaxFrameBytes) return false;
  std::copy(frame.begin(), frame.end(), buf_.begin());
  const size_t len = sec::seal_frame(buf_, frame.size(), static_cast<uint8_t>(copy % (sec::kCopyMax + 1)), cluster_keys());
  check(len == frame.size() + sec::kAuthTrailerBytes, "sealing a frame succeeds");
  const std::span<const uint8_t> payload(buf_.data(), len);
  const core::DecodeResult d = core::decode_frame(payload);
  if (!d.ok()) return false;
  if (sec::verify_frame(payload, d.view, cluster_keys()).verdict != sec::AuthVerdict::ok) return false;
  ++passed_;
  deliver(d.view);
  return true;
}

}  // namespace tob::fuzz
