#include "core/otfp_log.h"

#include <cstring>
#include <string>

#include "core/bytes.h"
#include "core/crc32c.h"

namespace tob::core {

size_t otfp_log_valid_bytes(std::span<const uint8_t> log) {
  size_t off = 0;
  while (off + kOtfpRecordHeader + kOtfpRecordTrailer <= log.size()) {
    const uint8_t* p = log.data() + off;
    const size_t len = load_be16(p + 1);
    if (off + kOtfpRecordHeader + len + kOtfpRecordTrailer > log.size()) break;            // torn tail
    if (crc32c({p, kOtfpRecordHeader + len}) != load_be32(p + kOtfpRecordHeader + len)) break;  // corrupt tail
    off += kOtfpRecordHeader + len + kOtfpRecordTrailer;
  }
  return off;
}

size_t otfp_log_append(std::vector<uint8_t>& out, OtfpRecord kind, std::span<const uint8_t> head,
                       std::span<const uint8_t> tail) {
  const size_t len = head.size() + tail.size();
  TOB_ASSERT(len <= UINT16_MAX);
  const size_t at = out.size();
  const size_t total = kOtfpRecordHeader + len + kOtfpRecordTrailer;
  out.resize(at + total);
  uint8_t* p = out.data() + at;
  p[0] = static_cast<uint8_t>(kind);
  store_be16(p + 1, static_cast<uint16_t>(len));
  if (!head.empty()) std::memcpy(p + kOtfpRecordHeader, head.data(), head.size());
  if (!tail.empty()) std::memcpy(p + kOtfpRecordHeader + head.size(), tail.data(), tail.size());
  store_be32(p + kOtfpRecordHeader + len, crc32c({p, kOtfpRecordHeader + len}));
  return total;
}

size_t otfp_log_append_format(std::vector<uint8_t>& out) {
  uint8_t body[kOtfpFormatBytes];
  store_be32(body, kOtfpLogMagic);
  store_be16(body + 4, kOtfpLogVersion);
  return otfp_log_append(out, OtfpRecord::format, body);
}

Result<OtfpLogReader> OtfpLogReader::open(std::span<const uint8_t> log) {
  const std::span<const uint8_t> valid = log.first(otfp_log_valid_bytes(log));
  OtfpLogReader r(valid);
  if (valid.empty()) return r;
  OtfpRecord kind{};
  std::span<const uint8_t> body;
  OtfpLogReader first(valid);  // a look at the first record; `r` still yields it
  first.next(kind, body);
  if (kind != OtfpRecord::format || body.size() != kOtfpFormatBytes || load_be32(body.data()) != kOtfpLogMagic)
    return Error{"the acceptor log was written by an older dpdk-tob (no format record; its ballots are "
                 "numbered differently): stop every node of the cluster, remove their acceptor logs, start again"};
  const uint16_t version = load_be16(body.data() + 4);
  if (version != kOtfpLogVersion)
    return Error{"the acceptor log has format " + std::to_string(version) + ", this dpdk-tob reads format " +
                 std::to_string(kOtfpLogVersion) + ": stop every node of the cluster, remove their acceptor logs, start again"};
  return r;
}

bool OtfpLogReader::next(OtfpRecord& kind, std::span<const uint8_t>& body) {
  if (off_ >= log_.size()) return false;
  const uint8_t* p = log_.data() + off_;
  const size_t len = load_be16(p + 1);
  kind = static_cast<OtfpRecord>(p[0]);
  body = {p + kOtfpRecordHeader, len};
  off_ += kOtfpRecordHeader + len + kOtfpRecordTrailer;
  return true;
}

}  // namespace tob::core
