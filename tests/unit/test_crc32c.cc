// CRC32C (Castagnoli) of the frame trailer (docs/wire-format.md): known vectors, the hardware path
// agrees with the portable table, and the running CRC composes over concatenation.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "core/crc32c.h"

namespace {

using tob::core::crc32c;
using tob::core::crc32c_portable;

std::span<const uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

TEST_CASE("crc32c matches the published check values", "[crc32c]") {
  // RFC 3720 appendix B.4 and the CRC catalogue check value.
  const std::vector<uint8_t> zeros(32, 0x00);
  const std::vector<uint8_t> ones(32, 0xFF);
  std::vector<uint8_t> ascending(32);
  std::vector<uint8_t> descending(32);
  for (size_t i = 0; i < 32; ++i) {
    ascending[i] = static_cast<uint8_t>(i);
    descending[i] = static_cast<uint8_t>(31 - i);
  }
  struct Vector {
    std::span<const uint8_t> bytes;
    uint32_t crc;
  };
  const Vector vectors[] = {
      {bytes_of("123456789"), 0xE3069283u},
      {zeros, 0x8A9136AAu},
      {ones, 0x62A8AB43u},
      {ascending, 0x46DD794Eu},
      {descending, 0x113FDB5Cu},
      {bytes_of(""), 0x00000000u},
      {bytes_of("a"), 0xC1D04330u},
  };
  for (const Vector& v : vectors) {
    INFO("length " << v.bytes.size());
    CHECK(crc32c(v.bytes) == v.crc);
    CHECK(crc32c_portable(v.bytes) == v.crc);
  }
}

TEST_CASE("crc32c hardware and portable paths agree on every length 0..300", "[crc32c]") {
  std::mt19937_64 rng(0x70B1);
  std::vector<uint8_t> buf(300 + 8);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t len = 0; len <= 300; ++len) {
    // Also at an odd start address so the 8-byte loops see unaligned words.
    for (size_t start : {size_t{0}, size_t{3}}) {
      const std::span<const uint8_t> s(buf.data() + start, len);
      const auto seed = static_cast<uint32_t>(rng());
      INFO("length " << len << " start " << start);
      REQUIRE(crc32c(s) == crc32c_portable(s));
      REQUIRE(crc32c(s, seed) == crc32c_portable(s, seed));
    }
  }
}

TEST_CASE("crc32c of a concatenation equals the crc continued from the first part", "[crc32c]") {
  std::mt19937_64 rng(42);
  std::vector<uint8_t> buf(257);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  const std::span<const uint8_t> all(buf);
  const uint32_t whole = crc32c(all);
  for (size_t split = 0; split <= buf.size(); ++split) {
    INFO("split at " << split);
    REQUIRE(crc32c(all.subspan(split), crc32c(all.first(split))) == whole);
    REQUIRE(crc32c_portable(all.subspan(split), crc32c_portable(all.first(split))) == whole);
  }
}

TEST_CASE("crc32c detects every single-bit change of a short message", "[crc32c]") {
  std::vector<uint8_t> buf(64);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 7 + 1);
  const uint32_t good = crc32c(buf);
  for (size_t bit = 0; bit < buf.size() * 8; ++bit) {
    buf[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    REQUIRE(crc32c(buf) != good);
    buf[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
}
