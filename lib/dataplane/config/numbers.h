// Integers from text, as configuration files and options write them: decimal, or hexadecimal
// with 0x. A leading zero is decimal (strtoll's base 0 would read "010" as 8).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>

namespace tob::dataplane {

inline bool parse_int64(const char* s, int64_t& out) {
  if (s == nullptr || *s == '\0') return false;
  const char* p = s;
  if (*p == '-' || *p == '+') ++p;
  const bool hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, hex ? 16 : 10);
  if (errno != 0 || end == s || *end != '\0') return false;
  out = v;
  return true;
}

}  // namespace tob::dataplane
