#include "dataplane/clients/submit_intake.h"

namespace tob::dataplane {

void SubmitIntake::init(Shm* shm, uint8_t* bytes, uint64_t ring_bytes, int slots) {
  shm_ = shm;
  bytes_ = bytes;
  ring_bytes_ = ring_bytes;
  rings_.assign(static_cast<size_t>(slots), SubmitRingConsumer{});
  for (int i = 0; i < slots; ++i) reset(i);
}

void SubmitIntake::reset(int slot) {
  SubmitRingShared& shared = shm_->slots[slot].submit;
  shared.head.store(0, std::memory_order_relaxed);
  shared.tail.store(0, std::memory_order_relaxed);
  rings_[static_cast<size_t>(slot)].init(bytes_ + static_cast<uint64_t>(slot) * ring_bytes_, ring_bytes_, &shared);
}

IntakeCounts SubmitIntake::take(core::Engine& node, unsigned budget) {
  IntakeCounts c;
  const int slots = static_cast<int>(rings_.size());
  for (int k = 0; k < slots && c.taken < budget; ++k) {
    const int i = (next_ + k) % slots;
    const auto state = static_cast<SlotState>(shm_->slots[i].state.load(std::memory_order_acquire));
    if (state != SlotState::attached && state != SlotState::leaving) continue;
    SubmitRingConsumer& ring = rings_[static_cast<size_t>(i)];
    const auto client = static_cast<uint16_t>(kFirstSlotClientId + i);
    unsigned taken_here = 0;
    while (c.taken < budget) {
      const SubmitRecord* r = ring.peek();
      if (r == nullptr) break;
      const auto* payload = reinterpret_cast<const uint8_t*>(r + 1);
      const core::SubmitResult res = node.submit(client, {payload, r->length}, r->submit_ns);
      if (res.status == core::SubmitStatus::backpressure) {
        ++c.backpressure;  // the engine's queue is full for every client: the step ends here
        if (taken_here > 0) ring.publish();
        next_ = i;         // and this ring goes first next time
        return c;
      }
      if (res.status == core::SubmitStatus::too_large) ++c.too_large;
      ring.pop(*r);
      ++c.taken;
      ++taken_here;
    }
    if (taken_here > 0) ring.publish();
  }
  next_ = slots > 0 ? (next_ + 1) % slots : 0;
  return c;
}

bool SubmitIntake::drained(int slot) { return rings_[static_cast<size_t>(slot)].empty(); }

}  // namespace tob::dataplane
