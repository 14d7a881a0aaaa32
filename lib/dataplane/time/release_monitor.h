// The daemon's side of the release-skew telemetry (issue 19; docs/operations.md "Release skew:
// /tob/release"; the estimator is core/release_skew.h).
//
// At every step the control lcore reads its clients' new wake-ups (each slot's WakeRing,
// shm/shm_layout.h: 16 loads when nothing is new) and keeps this node's wake-up for its latest
// release instants (the latest of its clients for each: the node acts when its last waiter has);
// the control role appends them as section 7 (core/wire.h) to the first copy of segment 0 of its
// slot frames when they fit. The clock discipline passes each peer's samples with its offset to
// that peer (time/clock_discipline.h), so that every node's wake-up lands on this node's clock.
// Instants old enough are closed into two histograms that telemetry reads lock-free: the skew
// (spread over the nodes that reported the instant) and this node's own lateness.
//
// Hot path: no allocation, lock or system call; bounded work per step (16 slots) and per cycle
// (64 instants).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "core/release_skew.h"
#include "core/schedule.h"
#include "core/wire.h"
#include "dataplane/observe/histogram.h"
#include "dataplane/shm/seqlock.h"
#include "dataplane/shm/shm_layout.h"

namespace tob::dataplane {

struct ReleaseCounts {
  uint64_t client_wakeups = 0;       // wake-ups read from this node's clients
  uint64_t client_wakeups_lost = 0;  // overwritten in a client's ring before the control lcore read them
  uint64_t peer_samples = 0;         // wake-ups of peers received (section 7) with an offset to place them
  uint64_t peer_samples_malformed = 0;
  uint64_t implausible = 0;          // own or peers' samples more than 10 s from now: set aside
  uint64_t own_sent = 0;             // frames that carried this node's section 7
  uint64_t own_no_room = 0;          // frames it did not fit in
  core::ReleaseSkewStats skew;
  int64_t close_after_ns = 0;        // an instant is closed this long after it
  uint8_t estimating = 0;            // peers are placed on this clock ([timing] sync != off)
};

// What telemetry reads (DaemonContext::release).
struct ReleaseTelemetry {
  Histogram skew;      // per instant that two nodes or more reported: the spread of their wake-ups
  Histogram own_late;  // per instant this node's clients waited for: its wake-up minus the instant
  Seqlock<ReleaseCounts> counts;
};

class ReleaseMonitor {
 public:
  ReleaseMonitor(const core::Schedule& schedule, core::NodeId self, bool estimating, ReleaseTelemetry& out);

  // Control lcore, every step: reads the clients; closes instants and publishes once per cycle.
  void tick(ClientSlot* slots, int64_t now_ns);
  // A peer's section 7, with offset_ns = this node's global clock minus the peer's.
  void on_peer(core::NodeId sender, std::span<const core::WakeSample> samples, int64_t offset_ns);
  void note_malformed() { ++counts_.peer_samples_malformed; }
  // The section 7 body to send now (empty: no recent wake-up), and what became of it.
  std::span<const uint8_t> section() const { return {body_.data(), body_bytes_}; }
  void note_sent(bool fitted) { ++(fitted ? counts_.own_sent : counts_.own_no_room); }

 private:
  static constexpr int64_t kPlausibleNs = 10'000'000'000;  // 10 s either way of now
  bool plausible(const core::WakeSample& s) const;
  void read_clients(ClientSlot* slots);
  void take_own(int64_t release_ns, int64_t late_ns);
  void encode_own();

  const core::Schedule& schedule_;
  core::NodeId self_;
  ReleaseTelemetry& out_;
  core::ReleaseSkew skew_;
  int64_t cycle_ = INT64_MIN;
  int64_t now_ns_ = INT64_MIN;  // as of the last tick
  std::array<uint64_t, kClientSlots> seen_{};
  std::array<core::WakeSample, core::kWakeSamplesMax> own_{};  // by release instant, oldest first
  size_t own_count_ = 0;
  std::array<uint8_t, core::kWakeSamplesMax * core::kWakeSampleBytes> body_{};
  size_t body_bytes_ = 0;
  ReleaseCounts counts_;
};

}  // namespace tob::dataplane
