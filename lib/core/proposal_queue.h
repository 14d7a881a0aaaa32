// A proposer's messages under On-Time Fast Paxos (docs/protocol-otfp.md): kept from submission
// until the node delivers them. Each message is unsent, or in flight in the batch of one
// instance; an instance decided without that batch makes its messages unsent again (proposed
// anew in a later slot), one decided with it makes them done. Done messages leave from the head.
// Fixed memory from configuration; a full queue refuses submissions (backpressure).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/batch.h"
#include "core/submit_queue.h"

namespace tob::core {

class ProposalQueue {
 public:
  ProposalQueue(size_t msgs_max, size_t bytes_max, size_t payload_bytes_max);

  SubmitStatus push(uint16_t client, std::span<const uint8_t> payload, int64_t submit_ns, uint64_t msg_id);
  size_t size() const { return queue_.size(); }
  bool empty() const { return queue_.empty(); }

  // Fills a batch for `instance` with unsent messages, oldest first, while they fit and at most
  // `max_msgs`. Returns how many were taken; they are in flight for `instance` from now on.
  uint16_t fill(BatchWriter& batch, int64_t instance, size_t max_msgs);
  // The outcome of `instance` for this proposer's batch.
  void decided(int64_t instance, bool included);
  // Everything in flight is unsent again (the node restarted its participation).
  void resend_all();
  // Messages in flight in instances below `instance` are unsent again: the node skipped those
  // instances without learning their outcome (a gap; they may be delivered twice elsewhere).
  void abandon_before(int64_t instance);
  size_t in_flight() const { return in_flight_; }
  bool has_unsent() const { return unsent_ > 0; }

 private:
  static constexpr int64_t kUnsent = -1;
  static constexpr int64_t kDone = -2;
  size_t index(size_t k) const { return (head_ + k) % state_.size(); }
  void drop_done_head();

  SubmitQueue queue_;             // payload storage and FIFO order (its own send cursor unused)
  std::vector<int64_t> state_;    // per entry, same ring positions as the queue: instance or kUnsent/kDone
  size_t head_ = 0;               // ring position of the queue's oldest entry
  size_t unsent_from_ = 0;        // no entry before this one (from the head) is unsent: fill starts here
  size_t in_flight_ = 0;
  size_t unsent_ = 0;
};

}  // namespace tob::core
