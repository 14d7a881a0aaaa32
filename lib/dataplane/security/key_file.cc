#include "dataplane/security/key_file.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace tob::dataplane::security {

namespace {

constexpr size_t kHexChars = 2 * kKeyBytes;
constexpr size_t kFileBytesMax = 4096;  // two keys and line ends; anything longer is not a key file
constexpr char kIdDomain[] = "dpdk-tob key id";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

core::Result<Key> parse_key_line(std::string_view line, const std::string& path, int number) {
  const std::string where = path + ": line " + std::to_string(number) + ": ";
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  if (line.empty()) return core::Error{where + "empty: expected the 256-bit key as 64 hexadecimal characters"};
  if (line.size() != kHexChars)
    return core::Error{where + std::to_string(line.size()) + " characters: a 256-bit key is 64 hexadecimal characters"};
  Key k{};
  for (size_t i = 0; i < kKeyBytes; ++i) {
    const int hi = hex_value(line[2 * i]);
    const int lo = hex_value(line[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      const size_t at = hi < 0 ? 2 * i : 2 * i + 1;
      return core::Error{where + "character " + std::to_string(at + 1) + " is not hexadecimal (0-9, a-f)"};
    }
    k[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return k;
}

}  // namespace

uint16_t key_id(const Key& key) {
  uint8_t in[sizeof kIdDomain - 1 + kKeyBytes];
  std::memcpy(in, kIdDomain, sizeof kIdDomain - 1);
  std::memcpy(in + sizeof kIdDomain - 1, key.data(), kKeyBytes);
  uint8_t md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  const int ok = EVP_Digest(in, sizeof in, md, &len, EVP_sha256(), nullptr);
  TOB_ASSERT(ok == 1 && len >= 2);
  return static_cast<uint16_t>(md[0] << 8 | md[1]);
}

core::Result<KeyFile> parse_key_file(std::string_view text, const std::string& path) {
  // Lines: the key sent with, then optionally one more key; nothing else but empty lines at the end.
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  }
  while (!lines.empty() && lines.back().find_first_not_of(" \t\r") == std::string_view::npos) lines.pop_back();
  if (lines.empty()) return core::Error{path + ": empty: expected the 256-bit cluster key as 64 hexadecimal characters"};
  if (lines.size() > kKeysMax)
    return core::Error{path + ": " + std::to_string(lines.size()) +
                       " lines: at most two keys (the key sent with, and one more accepted during a rotation)"};
  KeyFile f;
  for (size_t i = 0; i < lines.size(); ++i) {
    auto k = parse_key_line(lines[i], path, static_cast<int>(i + 1));
    if (!k) return k.error();
    f.keys[i].bytes = k.value();
    f.keys[i].id = key_id(k.value());
  }
  f.count = lines.size();
  if (f.count == 2 && f.keys[0].bytes == f.keys[1].bytes)
    return core::Error{path + ": line 2 repeats the key of line 1"};
  if (f.count == 2 && f.keys[0].id == f.keys[1].id)
    return core::Error{path + ": the two keys have the same key id (a 1 in 65536 chance): generate another new key"};
  return f;
}

core::Result<KeyFile> read_key_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return core::Error{path + ": cannot open the key file: " + std::strerror(errno)};
  char buf[kFileBytesMax + 1];
  const size_t n = std::fread(buf, 1, sizeof buf, f);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) return core::Error{path + ": cannot read the key file: " + std::strerror(err)};
  if (n > kFileBytesMax)
    return core::Error{path + ": longer than " + std::to_string(kFileBytesMax) + " bytes: not a key file"};
  return parse_key_file(std::string_view(buf, n), path);
}

}  // namespace tob::dataplane::security
