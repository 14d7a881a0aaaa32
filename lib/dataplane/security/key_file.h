// The cluster key file of [security] key_file (docs/configuration.md "[security]"): the key
// frames are sent with, as 64 hexadecimal characters on the first line, and optionally a second
// key, also accepted but never sent with, on the second line (a rotation in progress:
// docs/operations.md "Rotating the cluster key"). Read at start (a bad file is refused with exit
// status 2) and again, on a control thread, on every rotation.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"
#include "dataplane/security/gmac.h"

namespace tob::dataplane::security {

inline constexpr size_t kKeysMax = 2;  // the key sent with, and one more accepted

struct ClusterKey {
  Key bytes{};
  // Names the key on the wire (the authentication trailer) without revealing it: the first two
  // bytes of SHA-256 over "dpdk-tob key id" and the key.
  uint16_t id = 0;
};

struct KeyFile {
  std::array<ClusterKey, kKeysMax> keys{};  // keys[0] seals; all `count` verify
  size_t count = 0;
};

uint16_t key_id(const Key& key);

// Parses the file's text; errors name `path` and the reason (and the line).
core::Result<KeyFile> parse_key_file(std::string_view text, const std::string& path);
// Reads and parses the file; errors name the file and the reason (missing, unreadable, ...).
core::Result<KeyFile> read_key_file(const std::string& path);

}  // namespace tob::dataplane::security
