#include "core/submit_queue.h"

#include <cstring>

#include "core/result.h"

namespace tob::core {

const char* to_string(SubmitStatus s) {
  switch (s) {
    case SubmitStatus::ok: return "ok";
    case SubmitStatus::backpressure: return "queue full (backpressure)";
    case SubmitStatus::too_large: return "payload larger than the configured maximum";
  }
  return "unknown";
}

SubmitQueue::SubmitQueue(size_t msgs_max, size_t bytes_max, size_t payload_bytes_max)
    : entries_(msgs_max), bytes_(bytes_max), payload_bytes_max_(payload_bytes_max) {
  TOB_ASSERT(msgs_max > 0);
  TOB_ASSERT(payload_bytes_max <= UINT16_MAX);
  TOB_ASSERT(bytes_max >= payload_bytes_max);
  TOB_ASSERT(bytes_max <= UINT32_MAX);
}

SubmitStatus SubmitQueue::push(uint16_t client, std::span<const uint8_t> payload, int64_t submit_ns,
                               uint64_t msg_id) {
  const size_t len = payload.size();
  if (len > payload_bytes_max_) return SubmitStatus::too_large;
  if (count_ == entries_.size()) return SubmitStatus::backpressure;
  // Payloads are contiguous in a byte ring. Unwrapped, the live bytes are [read, write) and a
  // payload that does not fit before the end starts again at 0 if it fits before `read`.
  // Wrapped, the free bytes are [write, read).
  size_t at = write_;
  if (count_ > 0) {
    const size_t read = entries_[head_].offset;
    if (!wrapped_) {
      if (bytes_.size() - write_ < len) {
        if (len > read) return SubmitStatus::backpressure;
        at = 0;
        wrapped_ = true;
      }
    } else if (read - write_ < len) {
      return SubmitStatus::backpressure;
    }
  }
  if (len > 0) std::memcpy(bytes_.data() + at, payload.data(), len);
  const size_t tail = (head_ + count_) % entries_.size();
  entries_[tail] = {msg_id, submit_ns, static_cast<uint32_t>(at), static_cast<uint16_t>(len), client};
  ++count_;
  write_ = at + len;
  payload_bytes_ += len;
  return SubmitStatus::ok;
}

AppMessage SubmitQueue::next_unsent() const { return at(in_flight_); }

void SubmitQueue::ack_in_flight(size_t n) {
  TOB_ASSERT(n <= in_flight_);
  for (size_t k = 0; k < n; ++k) pop();
}

AppMessage SubmitQueue::front() const { return at(0); }

AppMessage SubmitQueue::at(size_t k) const {
  TOB_ASSERT(k < count_);
  const Entry& e = entries_[(head_ + k) % entries_.size()];
  return {e.msg_id, e.submit_ns, e.client, std::span<const uint8_t>(bytes_.data() + e.offset, e.length)};
}

void SubmitQueue::pop() {
  TOB_ASSERT(count_ > 0);
  if (in_flight_ > 0) --in_flight_;
  payload_bytes_ -= entries_[head_].length;
  const size_t old_read = entries_[head_].offset;
  head_ = (head_ + 1) % entries_.size();
  --count_;
  if (count_ == 0) {
    write_ = 0;
    wrapped_ = false;
  } else if (entries_[head_].offset < old_read) {
    wrapped_ = false;  // the read side followed the write side back to the start
  }
}

}  // namespace tob::core
