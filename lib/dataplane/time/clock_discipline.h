// The daemon's in-band clock synchronisation (issue 19; docs/architecture.md "Time and schedule",
// docs/operations.md "The clock: /tob/clock"): the control lcore's driver of core::ClockSync.
//
// The RX role measures: for the first copy (segment 0) of every authentic slot frame, the local
// instant it arrived (the middle of the poll interval in which it was found, on the TSC fit and
// the test knobs: TscClock::to_local_ns), whatever its reception window said, on the clock ring.
// A frame found after a poll gap longer than `gap_max_ns` is no clock reading (the stamp's error
// is the gap) and is only counted. The control lcore drains the ring into ClockSync, closes the
// rounds once the RX role has passed their end (its watermark), and with [timing] sync = inband
// or both publishes the new local -> global map to the lcores (TscClock) and to applications.
//
// Modes ([timing] sync, dataplane/config/cluster_config.h):
//   off       nothing runs.
//   external  ClockSync runs as an observer: its map follows the ensemble but is never applied;
//             the node's offset to the ensemble (local - the observer's global) is reported, and
//             the engine starts at once, sends whatever the estimate says.
//   inband,   the map is applied: the engine starts once the clock has integrated (or after
//   both      kColdStartRounds rounds in which nobody was heard: a cold start on its own clock),
//             and the node withholds its frames while the self-check fails (may_send()).
//
// Hot path: no allocation, no locks, no system calls (ClockSync allocates nothing after create).
#pragma once

#include <rte_ring.h>

#include <array>
#include <cstdint>
#include <optional>

#include "core/clock_sync.h"
#include "core/result.h"
#include "core/wire.h"
#include "dataplane/config/cluster_config.h"
#include "dataplane/time/release_monitor.h"
#include "dataplane/time/tsc_clock.h"

namespace tob::dataplane {

// One clock reading on its way from the RX role to the control role, with the sender's wake-up
// samples when its frame carried section 7 (time/release_monitor.h) and its rate window when it
// carried section 14.
struct ClockReading {  // 104 bytes: an rte_ring element
  static constexpr uint16_t kWakeMalformed = 0xFFFF;
  int64_t local_ns;    // the frame's arrival on this node's local clock
  int64_t cycle;       // the cycle its header names
  uint16_t sender;
  uint16_t wake_count;  // samples in wake (0: none; kWakeMalformed: a section 7 that did not decode)
  bool timed;           // local_ns is a clock reading (false: the poll gap was too long; only wake)
  bool has_window;      // window holds the sender's rate window
  uint8_t pad[2];
  core::WakeSample wake[core::kWakeSamplesMax];
  core::ClockWindow window;
};
static_assert(sizeof(ClockReading) == 104);

// What /tob/clock shows (a snapshot the control lcore publishes once per round).
struct ClockStatus {
  uint8_t mode = 0;              // ClockSyncMode
  uint8_t applied = 0;           // the map corrects global time (inband, both)
  uint8_t integrated = 0;
  uint8_t may_send = 1;          // the self-check passes
  uint8_t cold_start = 0;        // started on its own clock: nobody heard, or fewer than 2f + 1
  int64_t offset_ns = 0;         // this node ahead of the ensemble (> 0) by this much
  int64_t correction_ns = 0;     // the last round's correction (slewed into the map)
  int64_t map_offset_ns = 0;     // global - local now: all that the corrections moved this clock
  double rate_ppm = 0;           // the rate correction now
  int64_t precision_ns = 0;      // the self-check threshold
  int64_t spread_ns = 0;         // the last round's readings and 0: max - min after dropping f each side
  int64_t spread_max_ns = 0;     // largest spread since the engine started (the precision estimate)
  int64_t offset_max_ns = 0;     // largest |offset| of a counted round since the engine started
  int64_t delay_error_ns = 0;    // mean deviation of the readings (ewma): with clocks in step, how
                                 // far [timing] delay_ns is from the real delay
  int64_t common_step_ns = 0;    // the part of the corrections all nodes share, per round, over the
                                 // last rate window counted (section 14): minus the error in
                                 // delay_ns as the midpoints see it
  uint64_t rate_windows = 0;     // rate windows counted for the rate correction
  uint64_t rate_windows_unknown = 0;  // whole windows left out: too few peers' sums known
  uint64_t rate_windows_inexact = 0;  // own windows not exact (clipped offsets carried in or out)
  uint64_t rounds = 0;
  uint64_t rounds_short = 0;
  uint64_t rounds_clipped = 0;
  uint64_t rounds_out = 0;
  uint64_t readings = 0;
  uint64_t readings_ignored = 0;
  uint64_t integrations = 0;
  uint64_t integrations_disagreed = 0;  // integrating rounds whose 2f + 1 readings did not agree
};

class ClockDiscipline {
 public:
  static constexpr uint64_t kColdStartRounds = 3;

  // A discipline in mode off does nothing and says yes to everything.
  static core::Result<ClockDiscipline> create(const ClusterConfig& cfg, const core::ScheduleConfig& schedule,
                                              core::NodeId self, TscClock& clock);
  ClockDiscipline(ClockDiscipline&&) = default;

  ClockSyncMode mode() const { return mode_; }
  bool active() const { return mode_ != ClockSyncMode::off; }
  bool applied() const { return mode_ == ClockSyncMode::inband || mode_ == ClockSyncMode::both; }
  // The RX role's readings older than this gap between polls are not clock readings.
  int64_t gap_max_ns() const { return gap_max_ns_; }

  // Control lcore: the readings on `ring`, then every round that ended by upto_tsc (the RX role
  // has passed it: every reading stamped before is on the ring; 0: not yet). True when the
  // applied map changed (it is published to TscClock; the caller gives map() to applications).
  bool step(rte_ring* ring, uint64_t upto_tsc);
  // When step must run again (TSC; UINT64_MAX: inactive).
  uint64_t next_due_tsc() const;

  bool engine_may_start() const { return !applied() || sync_->integrated(); }
  bool may_send() const { return !applied() || sync_->may_send(); }
  core::ClockMap map() const { return sync_ ? sync_->map() : core::ClockMap{}; }
  // This node's latest rate window for its frames (section 14), when the map is applied and
  // integrated: false otherwise (an observer's corrections are no part of the ensemble's).
  bool window(core::ClockWindow& out) const {
    if (!applied() || !sync_->integrated()) return false;
    out = sync_->window();
    return true;
  }
  uint64_t rounds() const { return sync_ ? sync_->stats().rounds : 0; }
  // The release-skew monitor that gets the peers' wake-up samples with this node's offset to
  // them (the control role's; nullptr: none).
  void set_release_monitor(ReleaseMonitor* m) { release_ = m; }
  ClockStatus status(uint64_t now_tsc) const;

 private:
  ClockDiscipline(ClockSyncMode mode, TscClock& clock) : mode_(mode), clock_(&clock) {}
  void take(const ClockReading& r);
  void close_spread();
  void note_sender_deviation(core::NodeId sender, int64_t dev);
  void place_wake_samples(const ClockReading& r);
  int64_t deviation_ns(const ClockReading& r) const;

  ClockSyncMode mode_;
  TscClock* clock_;
  std::optional<core::ClockSync> sync_;
  std::optional<core::Schedule> schedule_;  // the transmit instants, for the spread
  int faults_ = 0;
  int64_t delay_ns_ = 0;
  int64_t gap_max_ns_ = 0;
  bool cold_start_ = false;
  // The spread of one round (the readings of cycle spread_cycle_) and the running figures.
  int64_t spread_cycle_ = INT64_MIN;
  std::array<int64_t, core::kMaxNodes> spread_values_{};
  int spread_count_ = 0;
  int64_t spread_ns_ = 0;
  int64_t spread_max_ns_ = 0;
  double delay_error_ns_ = 0;
  bool delay_error_seen_ = false;
  // Per sender, the mean deviation of its readings (ewma, each step clipped to wake_clip_ns_):
  // this clock minus the sender's, plus the delay error (note_sender_deviation).
  std::array<double, core::kMaxNodes> sender_dev_ns_{};
  std::array<bool, core::kMaxNodes> sender_dev_seen_{};
  double wake_clip_ns_ = 0;
  ReleaseMonitor* release_ = nullptr;
};

}  // namespace tob::dataplane
