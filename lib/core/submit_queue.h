// Bounded FIFO of application messages waiting for the node's slot. Fixed memory from
// configuration; a full queue refuses the submission (backpressure), it never drops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/batch.h"

namespace tob::core {

enum class SubmitStatus : uint8_t { ok = 0, backpressure, too_large };
const char* to_string(SubmitStatus s);

class SubmitQueue {
 public:
  SubmitQueue(size_t msgs_max, size_t bytes_max, size_t payload_bytes_max);

  SubmitStatus push(uint16_t client, std::span<const uint8_t> payload, int64_t submit_ns,
                    uint64_t msg_id);
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  size_t payload_bytes() const { return payload_bytes_; }
  // Oldest message; its payload stays valid until pop().
  AppMessage front() const;
  // The k-th oldest message (k < size()).
  AppMessage at(size_t k) const;
  void pop();

  // Send cursor: messages stay queued while in flight, so a batch whose fate is decided
  // later can be acknowledged (delivered) or sent again (rewind), keeping FIFO order.
  bool has_unsent() const { return in_flight_ < count_; }
  AppMessage next_unsent() const;
  void mark_sent() { ++in_flight_; }
  size_t in_flight() const { return in_flight_; }
  void ack_in_flight(size_t n);  // the oldest n in-flight messages are done: pop them
  void rewind() { in_flight_ = 0; }

 private:
  struct Entry {
    uint64_t msg_id;
    int64_t submit_ns;
    uint32_t offset;
    uint16_t length;
    uint16_t client;
  };
  std::vector<Entry> entries_;
  std::vector<uint8_t> bytes_;
  size_t payload_bytes_max_;
  size_t head_ = 0;   // index of the oldest entry
  size_t count_ = 0;
  size_t in_flight_ = 0;  // the oldest in_flight_ messages have been sent
  size_t write_ = 0;  // next byte offset to write
  bool wrapped_ = false;  // write_ has wrapped to the start, behind the oldest payload
  size_t payload_bytes_ = 0;
};

}  // namespace tob::core
