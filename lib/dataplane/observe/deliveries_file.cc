#include "dataplane/observe/deliveries_file.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace tob::dataplane {

namespace {

// Little-endian, whatever the host (x86 is; the format says so).
template <class T>
void put_le(char* p, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xFF);
}

constexpr size_t kTextLineMax = 3 + 1 + 20 + 1 + 3 + 1 + 20 + 1;  // node cycle sender msg_id\n

}  // namespace

bool parse_deliveries_format(std::string_view s, DeliveriesFormat* out) {
  if (s == "text") *out = DeliveriesFormat::text;
  else if (s == "bin") *out = DeliveriesFormat::bin;
  else return false;
  return true;
}

DeliveriesWriter::DeliveriesWriter(DeliveriesFormat format, unsigned node, size_t burst)
    : format_(format), node_(node), buf_(kDeliveriesHeaderBytes + burst * std::max(kTextLineMax, kDeliveryRecordBytes)) {}

char* DeliveriesWriter::room(size_t n) {
  if (buf_.size() - used_ < n) buf_.resize(std::max(buf_.size() * 2, used_ + n));  // beyond the reserved burst only
  return buf_.data() + used_;
}

void DeliveriesWriter::header() {
  if (format_ != DeliveriesFormat::bin) return;
  char* p = room(kDeliveriesHeaderBytes);
  std::memcpy(p, kDeliveriesMagic, sizeof kDeliveriesMagic);
  put_le<uint16_t>(p + 8, static_cast<uint16_t>(node_));
  std::memset(p + 10, 0, 6);
  used_ += kDeliveriesHeaderBytes;
}

void DeliveriesWriter::add(const LogRecord& r) {
  if (format_ == DeliveriesFormat::bin) {
    char* p = room(kDeliveryRecordBytes);
    put_le<int64_t>(p, r.cycle);
    put_le<uint64_t>(p + 8, r.msg_id);
    put_le<int64_t>(p + 16, r.at_ns);
    put_le<uint16_t>(p + 24, r.node);
    put_le<uint16_t>(p + 26, r.client);
    put_le<uint16_t>(p + 28, r.payload_bytes);
    put_le<uint16_t>(p + 30, 0);
    used_ += kDeliveryRecordBytes;
    return;
  }
  char* const start = room(kTextLineMax);
  char* const end = start + kTextLineMax;
  char* p = std::to_chars(start, end, node_).ptr;
  *p++ = ' ';
  p = std::to_chars(p, end, r.cycle).ptr;
  *p++ = ' ';
  p = std::to_chars(p, end, static_cast<unsigned>(r.node)).ptr;
  *p++ = ' ';
  p = std::to_chars(p, end, r.msg_id).ptr;
  *p++ = '\n';
  used_ += static_cast<size_t>(p - start);
}

bool DeliveriesWriter::flush(std::FILE* f) {
  if (used_ == 0) return true;
  const bool ok = std::fwrite(buf_.data(), 1, used_, f) == used_ && std::fflush(f) == 0;
  used_ = 0;
  return ok;
}

}  // namespace tob::dataplane
