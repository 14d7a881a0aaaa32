// CRC32C (Castagnoli), the frame trailer of docs/wire-format.md. Uses the SSE4.2 instruction when the
// CPU has it and a slicing-by-8 table otherwise; both give identical results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tob::core {

uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t crc = 0);
// The portable implementation, exposed so tests can compare it with the hardware one.
uint32_t crc32c_portable(std::span<const uint8_t> bytes, uint32_t crc = 0);

}  // namespace tob::core
