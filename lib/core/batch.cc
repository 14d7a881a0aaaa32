#include "core/batch.h"

#include <cstring>

#include "core/bytes.h"
#include "core/result.h"

namespace tob::core {

bool BatchWriter::add(const AppMessage& m) {
  if (count_ == UINT16_MAX || !fits(m.payload.size()) || m.payload.size() > UINT16_MAX) return false;
  uint8_t* p = body_.data() + pos();
  store_be64(p, m.msg_id);
  store_be64(p + 8, static_cast<uint64_t>(m.submit_ns));
  store_be16(p + 16, m.client);
  store_be16(p + 18, static_cast<uint16_t>(m.payload.size()));
  if (!m.payload.empty()) std::memcpy(p + kBatchEntryHeaderBytes, m.payload.data(), m.payload.size());
  used_ += kBatchEntryHeaderBytes + m.payload.size();
  ++count_;
  return true;
}

size_t BatchWriter::finish() {
  if (body_.size() < kBatchHeaderBytes) return 0;
  store_be16(body_.data(), count_);
  store_be16(body_.data() + 2, 0);
  return pos();
}

bool validate_batch(std::span<const uint8_t> body, uint16_t* count_out, size_t payload_max) {
  if (body.size() < kBatchHeaderBytes) return false;
  const uint16_t count = load_be16(body.data());
  size_t off = kBatchHeaderBytes;
  for (uint16_t i = 0; i < count; ++i) {
    if (body.size() - off < kBatchEntryHeaderBytes) return false;
    const size_t len = load_be16(body.data() + off + 18);
    off += kBatchEntryHeaderBytes;
    if (body.size() - off < len || len > payload_max) return false;
    off += len;
  }
  if (off != body.size()) return false;  // trailing bytes: not a batch we wrote
  if (count_out != nullptr) *count_out = count;
  return true;
}

bool BatchReader::next(AppMessage& out) {
  if (off_ + kBatchEntryHeaderBytes > body_.size()) return false;
  const uint8_t* p = body_.data() + off_;
  out.msg_id = load_be64(p);
  out.submit_ns = static_cast<int64_t>(load_be64(p + 8));
  out.client = load_be16(p + 16);
  const size_t len = load_be16(p + 18);
  TOB_ASSERT(off_ + kBatchEntryHeaderBytes + len <= body_.size());  // validated before
  out.payload = body_.subspan(off_ + kBatchEntryHeaderBytes, len);
  off_ += kBatchEntryHeaderBytes + len;
  return true;
}

}  // namespace tob::core
