#include "dataplane/time/release_monitor.h"

#include <algorithm>
#include <atomic>

namespace tob::dataplane {

namespace {
// An instant is closed once every node's report of it can have arrived: a client wakes at most a
// few ms late (the hypervisor's stalls), the control lcore reads it within a cycle and sends it in
// the node's next slot. Eight cycles and 50 ms at least, within the estimator's table.
int64_t close_after_ns(const core::Schedule& s) {
  const int64_t cycle = s.cycle_ns();
  const int64_t want = std::max<int64_t>(8 * cycle, 50'000'000);
  return std::min<int64_t>(want, (core::ReleaseSkew::kInstants * 3 / 4) * cycle);
}
}  // namespace

ReleaseMonitor::ReleaseMonitor(const core::Schedule& schedule, core::NodeId self, bool estimating, ReleaseTelemetry& out)
    : schedule_(schedule), self_(self), out_(out), skew_(schedule.node_count(), self, close_after_ns(schedule)) {
  counts_.close_after_ns = skew_.close_after_ns();
  counts_.estimating = estimating ? 1 : 0;
  out_.counts.publish(counts_);
}

void ReleaseMonitor::tick(ClientSlot* slots, int64_t now_ns) {
  now_ns_ = now_ns;
  read_clients(slots);  // every step: a client's ring holds only its last kWakeRing wake-ups
  const int64_t cycle = schedule_.cycle_of(now_ns);
  if (cycle == cycle_) return;
  cycle_ = cycle;
  // Instants older than what the others still wait for are not sent again.
  size_t drop = 0;
  while (drop < own_count_ && own_[drop].release_ns <= now_ns - skew_.close_after_ns()) ++drop;
  if (drop > 0) {
    std::copy(own_.begin() + static_cast<std::ptrdiff_t>(drop), own_.begin() + static_cast<std::ptrdiff_t>(own_count_),
              own_.begin());
    own_count_ -= drop;
    encode_own();
  }
  skew_.close(now_ns, [this](int64_t skew_ns, int reporters, int64_t self_late_ns) {
    if (reporters >= 2) out_.skew.record(skew_ns);
    if (self_late_ns != INT64_MIN) out_.own_late.record(self_late_ns);
  });
  counts_.skew = skew_.stats();
  out_.counts.publish(counts_);
}

void ReleaseMonitor::read_clients(ClientSlot* slots) {
  for (int i = 0; i < kClientSlots; ++i) {
    WakeRing& w = slots[i].wake;
    const uint64_t end = w.count.load(std::memory_order_acquire);
    uint64_t& seen = seen_[static_cast<size_t>(i)];
    if (end < seen) seen = 0;  // the slot was set up anew for another client
    if (end == seen) continue;
    const uint64_t from = std::max(seen, end > kWakeRing ? end - kWakeRing : 0);
    counts_.client_wakeups_lost += from - seen;
    int64_t vals[kWakeRing][2];
    for (uint64_t j = from; j < end; ++j) {
      const WakeRing::Entry& e = w.at[j % kWakeRing];
      vals[j - from][0] = e.release_ns.load(std::memory_order_relaxed);
      vals[j - from][1] = e.late_ns.load(std::memory_order_relaxed);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t after = w.count.load(std::memory_order_relaxed);
    for (uint64_t j = from; j < end; ++j) {
      if (j + kWakeRing <= after) {  // the client may have been writing over it
        ++counts_.client_wakeups_lost;
        continue;
      }
      ++counts_.client_wakeups;
      take_own(vals[j - from][0], vals[j - from][1]);
    }
    seen = end;
  }
}

// A sample whose instant or lateness no correct node could report (a forged frame's, a client's
// made-up delivery): set aside before any arithmetic on it can overflow.
bool ReleaseMonitor::plausible(const core::WakeSample& s) const {
  return now_ns_ != INT64_MIN && s.release_ns > now_ns_ - kPlausibleNs && s.release_ns < now_ns_ + kPlausibleNs &&
         s.late_ns > -kPlausibleNs && s.late_ns < kPlausibleNs;
}

void ReleaseMonitor::take_own(int64_t release_ns, int64_t late_ns) {
  if (!plausible({release_ns, late_ns})) {
    ++counts_.implausible;
    return;
  }
  skew_.add(self_, release_ns, release_ns + late_ns);
  for (size_t i = 0; i < own_count_; ++i) {
    if (own_[i].release_ns != release_ns) continue;
    if (late_ns > own_[i].late_ns) {
      own_[i].late_ns = late_ns;
      encode_own();
    }
    return;
  }
  if (own_count_ == own_.size()) {
    if (release_ns < own_[0].release_ns) return;  // older than every instant it sends
    std::copy(own_.begin() + 1, own_.end(), own_.begin());
    --own_count_;
  }
  size_t at = own_count_;
  while (at > 0 && own_[at - 1].release_ns > release_ns) {
    own_[at] = own_[at - 1];
    --at;
  }
  own_[at] = {release_ns, late_ns};
  ++own_count_;
  encode_own();
}

void ReleaseMonitor::encode_own() {
  body_bytes_ = core::encode_wake_samples(std::span<const core::WakeSample>(own_.data(), own_count_), body_);
}

void ReleaseMonitor::on_peer(core::NodeId sender, std::span<const core::WakeSample> samples, int64_t offset_ns) {
  for (const core::WakeSample& s : samples) {
    if (!plausible(s) || offset_ns <= -kPlausibleNs || offset_ns >= kPlausibleNs) {
      ++counts_.implausible;
      continue;
    }
    ++counts_.peer_samples;
    skew_.add(sender, s.release_ns, s.release_ns + s.late_ns + offset_ns);
  }
}

}  // namespace tob::dataplane
