// The arithmetic of the two byte rings shared with applications (delivery_ring.h, submit_ring.h):
// records of a header and a payload, 8-byte aligned, written at ever-growing 64-bit positions
// into a power-of-two buffer (the offset is position & (capacity - 1)). A record never wraps:
// when the rest of a lap is shorter than the record, the writer skips it, marking the skip with
// kWrapMarker in the record's first 4 bytes when those fit; a reader skips a lap's end that is
// shorter than a header or starts with the marker. Every header starts with its u32 length.
// Plain code, no DPDK: the daemon, the client library and the tests share it.
#pragma once

#include <cstdint>
#include <cstring>

namespace tob::dataplane::byte_ring {

inline constexpr uint32_t kWrapMarker = 0xFFFFFFFFu;

constexpr uint64_t align8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

constexpr bool is_pow2(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

// Bytes left in the lap that `pos` falls in.
constexpr uint64_t lap_left(uint64_t pos, uint64_t capacity) { return capacity - (pos & (capacity - 1)); }

// Where a record of `need` bytes goes when the writer stands at `pos`: `pos`, or the next lap's
// start, after marking the skipped end (writer side).
inline uint64_t place(uint8_t* base, uint64_t capacity, uint64_t pos, uint64_t need) {
  const uint64_t left = lap_left(pos, capacity);
  if (left >= need) return pos;
  if (left >= sizeof(uint32_t)) std::memcpy(base + (pos & (capacity - 1)), &kWrapMarker, sizeof kWrapMarker);
  return pos + left;
}

// Where the next record is when a reader stands at `pos` (reader side): `pos`, or the next lap's
// start when the rest of this lap holds no header of `header_bytes`.
inline uint64_t next_record(const uint8_t* base, uint64_t capacity, uint64_t pos, uint64_t header_bytes) {
  const uint64_t left = lap_left(pos, capacity);
  if (left < header_bytes) return pos + left;
  uint32_t length = 0;
  std::memcpy(&length, base + (pos & (capacity - 1)), sizeof length);
  return length == kWrapMarker ? pos + left : pos;
}

}  // namespace tob::dataplane::byte_ring
