#include "core/proposal_queue.h"

#include <algorithm>

#include "core/result.h"

namespace tob::core {

ProposalQueue::ProposalQueue(size_t msgs_max, size_t bytes_max, size_t payload_bytes_max)
    : queue_(msgs_max, bytes_max, payload_bytes_max), state_(msgs_max, kUnsent) {}

SubmitStatus ProposalQueue::push(uint16_t client, std::span<const uint8_t> payload, int64_t submit_ns,
                                 uint64_t msg_id) {
  const size_t at = index(queue_.size());
  const SubmitStatus s = queue_.push(client, payload, submit_ns, msg_id);
  if (s == SubmitStatus::ok) {
    state_[at] = kUnsent;
    ++unsent_;
  }
  return s;
}

uint16_t ProposalQueue::fill(BatchWriter& batch, int64_t instance, size_t max_msgs) {
  TOB_ASSERT(instance >= 0);
  uint16_t taken = 0;
  size_t k = unsent_from_;  // a slot's batch in several segments fills from where the last one stopped
  for (; k < queue_.size() && taken < max_msgs; ++k) {
    int64_t& st = state_[index(k)];
    if (st != kUnsent) continue;
    if (!batch.add(queue_.at(k))) break;  // keeps the order: nothing younger jumps ahead
    st = instance;
    ++taken;
    ++in_flight_;
    --unsent_;
  }
  unsent_from_ = k;
  return taken;
}

void ProposalQueue::decided(int64_t instance, bool included) {
  TOB_ASSERT(instance >= 0);  // -1 and -2 are the markers for unsent and done
  for (size_t k = 0; k < queue_.size(); ++k) {
    int64_t& st = state_[index(k)];
    if (st != instance) continue;
    st = included ? kDone : kUnsent;
    --in_flight_;
    if (!included) {
      ++unsent_;
      unsent_from_ = std::min(unsent_from_, k);
    }
  }
  drop_done_head();
}

void ProposalQueue::resend_all() {
  for (size_t k = 0; k < queue_.size(); ++k) {
    int64_t& st = state_[index(k)];
    if (st >= 0) st = kUnsent;
  }
  unsent_ += in_flight_;
  in_flight_ = 0;
  unsent_from_ = 0;
}

void ProposalQueue::abandon_before(int64_t instance) {
  for (size_t k = 0; k < queue_.size(); ++k) {
    int64_t& st = state_[index(k)];
    if (st < 0 || st >= instance) continue;
    st = kUnsent;
    --in_flight_;
    ++unsent_;
    unsent_from_ = std::min(unsent_from_, k);
  }
}

void ProposalQueue::drop_done_head() {
  while (!queue_.empty() && state_[head_] == kDone) {
    queue_.pop();
    head_ = (head_ + 1) % state_.size();
    unsent_from_ = unsent_from_ > 0 ? unsent_from_ - 1 : 0;
  }
}

}  // namespace tob::core
