// Hex literals for the byte-exact codec tests (test_wire, test_otfp_wire, test_ic_wire).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tob::test {

// Bytes of a hex literal; spaces and separators between the digits are skipped.
inline std::vector<uint8_t> from_hex(std::string_view hex) {
  std::vector<uint8_t> out;
  int nibbles = 0;
  uint8_t cur = 0;
  for (char ch : hex) {
    int v;
    if (ch >= '0' && ch <= '9') v = ch - '0';
    else if (ch >= 'a' && ch <= 'f') v = ch - 'a' + 10;
    else if (ch >= 'A' && ch <= 'F') v = ch - 'A' + 10;
    else continue;
    cur = static_cast<uint8_t>((cur << 4) | v);
    if (++nibbles % 2 == 0) out.push_back(cur);
  }
  REQUIRE(nibbles % 2 == 0);
  return out;
}

inline std::string to_hex(std::span<const uint8_t> b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b) {
    s.push_back(digits[x >> 4]);
    s.push_back(digits[x & 15]);
  }
  return s;
}

}  // namespace tob::test
