// The otfp acceptor log's record format (docs/protocol-otfp.md "Durability"): what an acceptor
// must remember across a crash, as the engine emits it (Actions::persist) and replays it.
//
//   record  = kind u8 | length u16 | body (length bytes) | CRC32C u32 over kind..body
//   format  (4)  magic "OTFP" u32 | version u16        first record of every log
//   promise (1)  ballot u32                            phase 1b promise
//   vote    (2)  Vote (otfp_wire.h, 28 bytes)          phase 2b, before it leaves the node
//   batch   (3)  instance u64 | sender u8 | index u16 | count u16 | body
//                segment `index` of `count` of a batch a vote names (one record per segment)
//
// A torn or corrupt tail ends the log at the last good record: nothing after it was acted on,
// because the node acts on a record only once the driver reported it durable (Engine::on_durable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"

namespace tob::core {

enum class OtfpRecord : uint8_t { promise = 1, vote = 2, batch = 3, format = 4 };

inline constexpr uint32_t kOtfpLogMagic = 0x4F544650;  // "OTFP"
// 3: batch records hold one segment each (2 held whole one-frame batches).
// 2: ballots are round << 7 | coordinator << 1 | classic (1 had round << 8 | classic << 7 | coordinator).
inline constexpr uint16_t kOtfpLogVersion = 3;
inline constexpr size_t kOtfpRecordHeader = 3;   // kind u8, length u16
inline constexpr size_t kOtfpRecordTrailer = 4;  // CRC32C
inline constexpr size_t kOtfpFormatBytes = 6;
inline constexpr size_t kOtfpBatchRecordHead = 13;  // instance u64, sender u8, index u16, count u16

// Bytes of `log` up to the first torn or corrupt record (length or CRC32C wrong): what replay
// uses. A node truncates its log file to this before appending again, so that records written
// after a restart are never hidden behind an old damaged tail.
size_t otfp_log_valid_bytes(std::span<const uint8_t> log);

// Appends one record (head then tail as its body) to `out`. Returns its size in bytes.
size_t otfp_log_append(std::vector<uint8_t>& out, OtfpRecord kind, std::span<const uint8_t> head,
                       std::span<const uint8_t> tail = {});
size_t otfp_log_append_format(std::vector<uint8_t>& out);

// The valid records of a log, in order. A log that is not empty must start with a format
// record of this version: an older log is refused with a message a person can act on.
class OtfpLogReader {
 public:
  static Result<OtfpLogReader> open(std::span<const uint8_t> log);
  bool next(OtfpRecord& kind, std::span<const uint8_t>& body);

 private:
  explicit OtfpLogReader(std::span<const uint8_t> valid) : log_(valid) {}
  std::span<const uint8_t> log_;
  size_t off_ = 0;
};

}  // namespace tob::core
