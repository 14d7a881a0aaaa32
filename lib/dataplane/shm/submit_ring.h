// A client's submit ring (ABI 3, docs/client-api.md "How a message reaches the wire"): a
// single-producer single-consumer byte ring in shared memory from one application (the
// producer, tob_submit_burst) to the daemon's control lcore (the consumer, SubmitIntake).
// Records are a SubmitRecord and the payload (byte_ring.h). The producer publishes its tail once
// per burst (one release store), the consumer its head once per step: no pool, no CAS, no atomic
// read-modify-write per message.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "dataplane/shm/byte_ring.h"

namespace tob::dataplane {

struct SubmitRecord {
  uint32_t length;  // payload bytes; first, as byte_ring.h asks
  uint32_t pad;
  int64_t submit_ns;
};
static_assert(sizeof(SubmitRecord) == 16);

constexpr uint64_t submit_record_bytes(uint64_t payload_bytes) {
  return byte_ring::align8(sizeof(SubmitRecord) + payload_bytes);
}

// The positions both sides publish (in the client's slot, each on its own cache line).
struct SubmitRingShared {
  alignas(64) std::atomic<uint64_t> tail{0};  // producer: end of what it wrote
  alignas(64) std::atomic<uint64_t> head{0};  // consumer: end of what it took
};

class SubmitRingProducer {
 public:
  void init(uint8_t* base, uint64_t capacity, SubmitRingShared* shared) {
    base_ = base;
    capacity_ = capacity;
    shared_ = shared;
    tail_ = shared->tail.load(std::memory_order_relaxed);
    head_ = shared->head.load(std::memory_order_acquire);
  }
  // Writes one record; false when the ring has no room for it (nothing written).
  bool put(const void* payload, uint32_t length, int64_t submit_ns) {
    const uint64_t need = submit_record_bytes(length);
    const uint64_t left = byte_ring::lap_left(tail_, capacity_);
    const uint64_t end = (left >= need ? tail_ : tail_ + left) + need;
    if (end - head_ > capacity_) {
      head_ = shared_->head.load(std::memory_order_acquire);
      if (end - head_ > capacity_) return false;
    }
    const uint64_t at = byte_ring::place(base_, capacity_, tail_, need);
    uint8_t* p = base_ + (at & (capacity_ - 1));
    const SubmitRecord r{length, 0, submit_ns};
    std::memcpy(p, &r, sizeof r);
    if (length > 0) std::memcpy(p + sizeof r, payload, length);
    tail_ = end;
    return true;
  }
  void publish() { shared_->tail.store(tail_, std::memory_order_release); }

 private:
  uint8_t* base_ = nullptr;
  uint64_t capacity_ = 0;
  SubmitRingShared* shared_ = nullptr;
  uint64_t tail_ = 0;
  uint64_t head_ = 0;  // the consumer's head as last loaded
};

class SubmitRingConsumer {
 public:
  void init(const uint8_t* base, uint64_t capacity, SubmitRingShared* shared) {
    base_ = base;
    capacity_ = capacity;
    shared_ = shared;
    head_ = shared->head.load(std::memory_order_relaxed);
    tail_ = shared->tail.load(std::memory_order_acquire);
  }
  // The next record (its payload follows it), valid until pop(); nullptr when the ring is empty.
  const SubmitRecord* peek() {
    if (head_ == tail_) {
      tail_ = shared_->tail.load(std::memory_order_acquire);
      if (head_ == tail_) return nullptr;
    }
    head_ = byte_ring::next_record(base_, capacity_, head_, sizeof(SubmitRecord));
    if (head_ >= tail_) return nullptr;  // only a skipped lap's end was left (cannot be: a record follows)
    return reinterpret_cast<const SubmitRecord*>(base_ + (head_ & (capacity_ - 1)));
  }
  void pop(const SubmitRecord& r) { head_ += submit_record_bytes(r.length); }
  void publish() { shared_->head.store(head_, std::memory_order_release); }
  bool empty() {
    tail_ = shared_->tail.load(std::memory_order_acquire);
    return head_ == tail_;
  }

 private:
  const uint8_t* base_ = nullptr;
  uint64_t capacity_ = 0;
  SubmitRingShared* shared_ = nullptr;
  uint64_t head_ = 0;
  uint64_t tail_ = 0;  // the producer's tail as last loaded
};

}  // namespace tob::dataplane
