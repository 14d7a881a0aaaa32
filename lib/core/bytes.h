// Big-endian load/store on raw bytes (wire format, docs/wire-format.md). Callers check bounds first.
#pragma once

#include <cstdint>

namespace tob::core {

inline void store_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void store_be32(uint8_t* p, uint32_t v) {
  store_be16(p, static_cast<uint16_t>(v >> 16));
  store_be16(p + 2, static_cast<uint16_t>(v));
}
inline void store_be64(uint8_t* p, uint64_t v) {
  store_be32(p, static_cast<uint32_t>(v >> 32));
  store_be32(p + 4, static_cast<uint32_t>(v));
}
inline uint16_t load_be16(const uint8_t* p) {
  return static_cast<uint16_t>((static_cast<uint16_t>(p[0]) << 8) | p[1]);
}
inline uint32_t load_be32(const uint8_t* p) {
  return (static_cast<uint32_t>(load_be16(p)) << 16) | load_be16(p + 2);
}
inline uint64_t load_be64(const uint8_t* p) {
  return (static_cast<uint64_t>(load_be32(p)) << 32) | load_be32(p + 4);
}

// splitmix64's finaliser: a cheap, well-mixed 64-bit hash (seeds, digests, fault patterns).
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace tob::core
