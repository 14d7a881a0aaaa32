// The delivery ring (ABI 3, docs/client-api.md "How deliveries reach a client"): one byte ring
// in shared memory that the control lcore writes every delivery into once, and that every
// attached application reads from its own cursor. It is also the history that a client resuming
// after a seq is served from. Records are a DeliveryRecord and the payload (byte_ring.h).
//
// The writer publishes its end position once per burst of deliveries (one release store); a
// reader loads it once per tob_poll (one acquire load), returns pointers into the ring and
// publishes its cursor, the first record it still holds, at its next poll. No mbuf, no
// reference count, no atomic read-modify-write per message.
#pragma once

#include <cstdint>
#include <cstring>

#include "dataplane/shm/byte_ring.h"

namespace tob::dataplane {

struct DeliveryRecord {
  uint32_t length;  // payload bytes; first, as byte_ring.h asks (kWrapMarker: end of a lap)
  uint16_t sender;
  uint16_t client;
  uint64_t seq;
  int64_t cycle;
  uint64_t msg_id;
  int64_t submit_ns;
  int64_t deliver_ns;
  int64_t release_ns;
};
static_assert(sizeof(DeliveryRecord) == 56);

// Bytes a delivery of `payload_bytes` takes in the ring.
constexpr uint64_t delivery_record_bytes(uint64_t payload_bytes) {
  return byte_ring::align8(sizeof(DeliveryRecord) + payload_bytes);
}

// Reader side: the record at or after `pos` (skipping the end of a lap), or nullptr when `pos`
// reached `end`; `pos` then points at the record and next_delivery_pos() moves past it.
inline const DeliveryRecord* delivery_at(const uint8_t* base, uint64_t capacity, uint64_t& pos, uint64_t end) {
  if (pos >= end) return nullptr;
  pos = byte_ring::next_record(base, capacity, pos, sizeof(DeliveryRecord));
  if (pos >= end) return nullptr;
  return reinterpret_cast<const DeliveryRecord*>(base + (pos & (capacity - 1)));
}
inline uint64_t next_delivery_pos(uint64_t pos, const DeliveryRecord& r) { return pos + delivery_record_bytes(r.length); }

// Writer side, the control lcore's private state over the shared bytes.
class DeliveryRingWriter {
 public:
  // capacity: a power of two, at least two of the largest records.
  void init(uint8_t* base, uint64_t capacity) {
    base_ = base;
    capacity_ = capacity;
  }
  // The ring's end once a delivery of payload_bytes is written: every byte before
  // end_after(...) - capacity() is then overwritten (a reader holding one is overrun).
  uint64_t end_after(uint64_t payload_bytes) const {
    const uint64_t need = delivery_record_bytes(payload_bytes);
    const uint64_t left = byte_ring::lap_left(end_, capacity_);
    return (left >= need ? end_ : end_ + left) + need;
  }
  // Writes one delivery; the oldest whole record moves on past what it overwrites.
  void write(const DeliveryRecord& r, const uint8_t* payload) {
    const uint64_t need = delivery_record_bytes(r.length);
    const uint64_t new_end = end_after(r.length);
    if (new_end > capacity_) forget_before(new_end - capacity_);
    const uint64_t at = byte_ring::place(base_, capacity_, end_, need);
    uint8_t* p = base_ + (at & (capacity_ - 1));
    std::memcpy(p, &r, sizeof r);
    if (r.length > 0) std::memcpy(p + sizeof r, payload, r.length);
    end_ = at + need;
    ++count_;
  }
  // First record at or after the oldest with seq > after, and its number (count() at the end).
  struct Found {
    uint64_t pos;
    uint64_t index;
  };
  Found find_after(uint64_t after) const {
    uint64_t pos = oldest_;
    uint64_t index = oldest_index_;
    while (const DeliveryRecord* r = delivery_at(base_, capacity_, pos, end_)) {
      if (r->seq > after) return {pos, index};
      pos = next_delivery_pos(pos, *r);
      ++index;
    }
    return {end_, count_};
  }
  // The oldest record still whole, or nullptr when the ring holds none.
  const DeliveryRecord* oldest_record() const {
    uint64_t pos = oldest_;
    return delivery_at(base_, capacity_, pos, end_);
  }
  uint64_t end() const { return end_; }
  uint64_t oldest() const { return oldest_; }
  uint64_t count() const { return count_; }  // records written
  uint64_t capacity() const { return capacity_; }

 private:
  void forget_before(uint64_t keep_from) {
    while (oldest_ < end_ && oldest_ < keep_from) {
      const uint64_t at = byte_ring::next_record(base_, capacity_, oldest_, sizeof(DeliveryRecord));
      if (at != oldest_) {
        oldest_ = at;
        continue;
      }
      DeliveryRecord r;
      std::memcpy(&r, base_ + (at & (capacity_ - 1)), sizeof r);
      oldest_ = next_delivery_pos(at, r);
      ++oldest_index_;
    }
  }

  uint8_t* base_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t end_ = 0;
  uint64_t count_ = 0;
  uint64_t oldest_ = 0;
  uint64_t oldest_index_ = 0;
};

}  // namespace tob::dataplane
