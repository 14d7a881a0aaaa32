// The control lcore's side of the clients' submit rings (shm/submit_ring.h): each step it goes
// round the slots that are attached (or leaving, until drained), hands each record to the engine
// (one copy, into its queue) and publishes each ring's head once. A record the engine refuses
// for backpressure stays at the head of its ring (FIFO per client) and that ring waits for the
// next step; a step takes at most its budget of messages, so that frames and time come first.
#pragma once

#include <cstdint>
#include <vector>

#include "core/engine.h"
#include "dataplane/shm/shm_layout.h"

namespace tob::dataplane {

struct IntakeCounts {
  unsigned taken = 0;          // records handed to the engine (accepted or too large)
  unsigned too_large = 0;      // refused by the engine as too large (the library checks first)
  unsigned backpressure = 0;   // rings left waiting because the engine's queue was full
};

class SubmitIntake {
 public:
  // bytes: the tob_sub memzone, slots x ring_bytes.
  void init(Shm* shm, uint8_t* bytes, uint64_t ring_bytes, int slots);
  // A client attached in `slot`: its ring starts empty (positions 0).
  void reset(int slot);
  // Up to `budget` messages from the attached and leaving slots into the engine.
  IntakeCounts take(core::Engine& node, unsigned budget);
  // Nothing left in the slot's ring (a leaving slot may be freed).
  bool drained(int slot);

 private:
  Shm* shm_ = nullptr;
  uint8_t* bytes_ = nullptr;
  uint64_t ring_bytes_ = 0;
  std::vector<SubmitRingConsumer> rings_;
  int next_ = 0;  // round robin: the slot served first next step
};

}  // namespace tob::dataplane
