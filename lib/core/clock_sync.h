// In-band clock synchronisation on the TDMA substrate (issue 19; docs/architecture.md "Time and
// schedule", docs/simulator.md "Clock synchronisation"). A pure state machine: the driver reads
// its local clock (the TSC, or a simulated oscillator) and hands the readings in; this class
// keeps the node's map from local to global time and corrects it once per cycle.
//
//   ClockSync s = ClockSync::create(config).value();
//   s.on_time(local_now);                      closes the rounds whose cycle is over
//   s.on_frame(sender, cycle, local_rx);       the first copy of a peer's slot frame arrived
//   int64_t g = s.global_ns(local_now);        global time, monotone in local time
//   int64_t l = s.local_ns(global_deadline);   when a global instant comes, on the local clock
//   if (!s.may_send()) ...                     self-checking: out by more than the precision
//
// Round c collects, for each sender, the deviation of its frame of cycle c: the arrival read on
// this node's global clock, minus the instant the schedule gives the frame, minus the configured
// one-way delay. A positive deviation means this node is ahead of the sender. When this node's
// global clock passes the end of cycle c, the round closes: its own deviation (0) and the peers'
// are sorted, the f largest and the f smallest dropped and the midpoint of the rest taken
// (Welch-Lynch's fault-tolerant midpoint, the fault-tolerant average of TTP and FlexRay cited in
// seed 000 §3): with N >= 3f + 1 and at most f faulty clocks, the midpoint lies within the range
// of the correct nodes' deviations, whatever values the faulty ones show.
//
// The correction (minus the midpoint, at most step_max_ns) is slewed into the map over the
// first slew_ns of the next cycle, a window in which no frame is due (the drivers choose it
// inside the first slot's decision margin), so the map stays continuous and increasing: global
// time never goes back. The corrections of a window of rounds, summed, estimate the rate error
// that the rate correction takes out (at most rate_max_ppm), so a constant drift needs no
// corrections once learnt. A window's sum counts less the part the nodes' sums share: every
// node sends its latest window's sum (window(), section 14) and takes the fault-tolerant midpoint
// of its own and its peers' for the same window (on_peer_window). A common error in the
// configured delay makes every node correct by it every round; unremoved, that common part drove
// every rate estimate to its bound, where none could learn its drift. (Per round, the common part
// is skewed: a round's midpoint drops its own 0 among peers all read ahead; over a window's sum
// it is not.) A node whose midpoint exceeds `precision_ns` does not send until
// a round brings it back within (seed 000's self-checking rule: a node that knows it is faulty
// stays silent rather than send at the wrong instant).
//
// Integration (TTP's): a node starts integrating. The first round in which it hears 2f + 1 peers
// (frames of any cycle: its clock may be off by cycles) sets its map at once to the
// fault-tolerant midpoint of their deviations, a jump either way; the driver starts its engine
// only then (integrated()), or after hearing nobody for a while (end_integration(): a cold
// start on its own clock). Peers heard, but fewer than 2f + 1 for integrate_wait_rounds rounds:
// a cold start too (f liars are outvoted by 2f + 1 values only; its own clock is no vote). All
// values but f must lie within deviation_max_ns of the midpoint, else the round does not count
// (integrations_disagreed): a frame sent late reads as an offset of its lateness.
// From then on global time is monotone and corrections bounded.
//
// lib/core rules: no clock read here, no allocation after create().
#pragma once

#include <array>
#include <cstdint>

#include "core/result.h"
#include "core/schedule.h"
#include "core/wire.h"

namespace tob::core {

struct ClockSyncConfig {
  ScheduleConfig schedule;
  NodeId self = 0;
  int faults_tolerated = 0;        // f: N >= 3f + 1
  int64_t delay_ns = 0;            // configured one-way delay: the mean of transmit -> receive stamp
  int64_t step_max_ns = 0;         // largest correction per round (0: slew_ns / 2)
  int64_t slew_ns = 0;             // a correction is spread over this much of the next cycle
                                   // (0: the decision margin)
  int64_t precision_ns = 0;        // self-check threshold on |midpoint| (0: the schedule's precision)
  int64_t deviation_max_ns = 0;    // readings beyond this are not clock readings (0: cycle / 4)
  double rate_max_ppm = 200;       // |rate correction| at most this
  // The rate correction: windows of rate_window_rounds rounds, aligned on round numbers. For a
  // window that carries no clipped offset in or out (the round before it and its last round
  // corrected whole; clipped rounds inside it are made up within it), none of whose midpoints
  // was beyond 2 x step_max_ns (an offset, not a rate), and whose common part is
  // known (the sums of at
  // least 2f + 1 nodes, this one's and at least one peer's, two rounds after it ended), its sum
  // less that common part, over the window's length, is this node's rate error against the
  // ensemble (one round's
  // residual is mostly reading noise: microseconds of jitter against nanoseconds of drift, so a
  // per-round integral term swings from bound to bound). rate_gain of it is taken, and the
  // correction loses rate_leak: the ensemble's common rate is not observable in band (every
  // reading is relative), so without a leak it wanders by the noise to the bound.
  // Integrating, a round with fewer than 2f + 1 peers heard does not count; after
  // integrate_wait_rounds such rounds the node starts on its own clock (a cold start).
  int integrate_wait_rounds = 3;
  int rate_window_rounds = 128;
  double rate_gain = 0.5;
  double rate_leak = 1.0 / 8;

  // Defaults filled in, or an error naming what is wrong.
  Result<ClockSyncConfig> resolved() const;
};

// The local -> global map since the last round closed (continuous with the one before):
//   global(l) = g0 + floor((l - l0) * (1 + rate) + min(l - l0, slew_ns) * step_ns / slew_ns)
// Strictly increasing in l when |rate| < 1/4 and |step_ns| <= slew_ns / 2 (slope >= 1/4).
// Before l0 it extrapolates with the slope 1 + rate (readings stamped before the last close).
struct ClockMap {
  int64_t l0 = 0;
  int64_t g0 = 0;
  double rate = 0;
  int64_t step_ns = 0;
  int64_t slew_ns = 1;

  int64_t global_ns(int64_t local_ns) const;
  // The first local instant whose global reading is at least g (g >= g0: on this segment).
  int64_t local_ns(int64_t global_ns) const;
  // The part of step_ns not yet applied at local_ns.
  int64_t pending_ns(int64_t local_ns) const;
};

struct ClockSyncStats {
  uint64_t rounds = 0;              // rounds closed
  uint64_t rounds_short = 0;        // closed with fewer than 2f + 1 values: no correction
  uint64_t integrations = 0;        // the map set at once from the peers (integration)
  uint64_t cold_starts = 0;         // integration ended on its own clock: peers heard, but fewer
                                    // than 2f + 1 that agree for integrate_wait_rounds rounds
  uint64_t integrations_disagreed = 0;  // integrating rounds with 2f + 1 peers heard, more than f
                                        // of them beyond deviation_max_ns of the midpoint
  uint64_t rounds_clipped = 0;      // the midpoint exceeded step_max_ns
  uint64_t rounds_out = 0;          // the midpoint exceeded the precision: not sending
  uint64_t readings = 0;            // deviations taken
  uint64_t readings_ignored = 0;    // a closed or distant round, a repeat, or beyond deviation_max_ns
  int64_t offset_ns_last = 0;       // the last midpoint (this node ahead of the ensemble: > 0)
  int64_t correction_ns_last = 0;
  int64_t offset_ns_max = 0;        // largest |midpoint| of a round that counted
  double rate_ppm = 0;              // the rate correction now
  uint64_t rate_windows = 0;        // windows counted for the rate correction
  uint64_t rate_windows_unknown = 0;  // whole windows left out: too few peers' sums known
  uint64_t rate_windows_inexact = 0;  // own windows of rounds all closed here but not exact: a
                                      // clipped offset carried in or out, or a midpoint beyond
                                      // 2 x step_max_ns (sent as kNoSum, never counted)
  int64_t common_step_ns_last = 0;  // the common part of the last window counted, per round (the
                                    // delay's error as the midpoints see it, negated)
  // The last round closed (or the integration): its cycle and the peers whose readings it took
  // (bit s: node s). What the simulator judges the fault hypothesis of a round from.
  int64_t round_last = -1;
  uint64_t senders_last = 0;
};

class ClockSync {
 public:
  static Result<ClockSync> create(const ClockSyncConfig& config);

  // Local time passed: closes every round whose cycle ended by local_ns (the first call only
  // starts the round of the current cycle). True when the map changed.
  bool on_time(int64_t local_ns);
  // The first copy (segment 0, no aux) of `sender`'s slot frame of `cycle` arrived at local_ns.
  void on_frame(NodeId sender, int64_t cycle, int64_t local_ns);
  // `sender`'s latest rate window (its frame's section 14): any frame, repeats allowed.
  void on_peer_window(NodeId sender, const ClockWindow& w);
  // This node's latest completed window, for its frames.
  ClockWindow window() const { return last_window_; }
  // Local instant at which on_time must be called next (INT64_MAX before the first on_time).
  int64_t next_deadline_local_ns() const;

  int64_t global_ns(int64_t local_ns) const { return map_.global_ns(local_ns); }
  int64_t local_ns(int64_t global_ns) const { return map_.local_ns(global_ns); }
  const ClockMap& map() const { return map_; }

  // Integration over: the map is continuous and global time monotone from here on.
  bool integrated() const { return !integrating_; }
  // A cold start: stop waiting for peers and keep the local clock as it is.
  void end_integration();

  // Self-check (seed 000): false while the last counted round put this node further from the
  // ensemble than the precision. True before any round counted (nothing to compare with).
  bool may_send() const { return within_precision_; }
  const ClockSyncStats& stats() const { return stats_; }
  const ClockSyncConfig& config() const { return config_; }

  // The fault-tolerant midpoint of values[0..count) (sorted in place): drop the f largest and
  // the f smallest, the midpoint of the rest. count >= 2f + 1.
  static int64_t fault_tolerant_midpoint(int64_t* values, int count, int f);

 private:
  struct Reading {
    int64_t deviation_ns;
    bool seen;
  };
  ClockSync(const ClockSyncConfig& config, Schedule schedule);
  static constexpr int kWindowsKept = 4;  // the peers' sums of the windows about to be counted
  static constexpr int kWindowWaitRounds = 2;  // a window counts this many rounds after its end
  void close_round(int64_t local_ns);
  bool integrate(int64_t local_ns);
  void add_to_window(int64_t round, int64_t step_ns, int64_t offset_ns);
  double count_window(double rate);


  ClockSyncConfig config_;
  Schedule schedule_;
  int nodes_ = 0;
  ClockMap map_;
  bool started_ = false;
  bool integrating_ = true;
  int integrate_rounds_ = 0;        // integrating: rounds so far
  int64_t round_ = 0;               // the oldest open round (cycle); round_ + 1 collects too
  std::array<std::array<Reading, kMaxNodes>, 2> readings_{};  // [cycle % 2][sender]
  bool within_precision_ = true;
  int64_t window_ = -1;             // the window the rounds now closing fall in
  int64_t window_sum_ns_ = 0;       // its corrections so far
  int window_rounds_ = 0;           // its rounds closed so far
  bool window_carry_in_ = true;     // the round before it was clipped, or was none
  bool window_wild_ = false;        // a midpoint beyond 2 x step_max_ns in it
  bool last_whole_ = false;         // the round before corrected whole (false before the first:
                                    // after integration every round closes here, in order)
  ClockWindow last_window_;         // the latest completed (sent in section 14)
  std::array<ClockWindow, kWindowsKept> own_windows_{};  // [window % 4]: completed, to be counted
  std::array<std::array<ClockWindow, kMaxNodes>, kWindowsKept> peer_windows_{};  // [window % 4][sender]
  ClockSyncStats stats_;
};

// The precision the synchronisation keeps among correct nodes (docs/simulator.md "Clock
// synchronisation" derives it): the spread of their global clocks at the close of every round,
// and at every instant outside the slew windows, once the initial offsets are corrected,
//   reading error    eps  = jitter / 2 + rho' * (delay + jitter) + 2 ns (rounding)
//   residual rate    rho' = drift + rate_max (oscillator error and a wrong rate correction)
//   precision        Pi   = 4 * eps + 12 * rho' * round
// for N >= 3f + 1 with at most f faulty clocks, while the corrections stay within step_max.
// A correct node's midpoint is at most Pi + eps + 2 rho' round: the self-check threshold.
struct PrecisionBoundInput {
  int64_t jitter_ns = 0;            // the one-way delay varies within [delay, delay + jitter]
  int64_t delay_ns = 0;
  double drift_ppm = 0;             // |oscillator rate error| of a correct node
  double rate_max_ppm = 0;          // |rate correction| allowed
  int64_t round_ns = 0;             // one round per cycle
};
struct PrecisionBound {
  int64_t reading_error_ns = 0;     // eps
  int64_t drift_round_ns = 0;       // rho' round: how far a correct clock drifts in a round
  int64_t precision_ns = 0;         // Pi
  int64_t self_check_ns = 0;        // Pi + eps + 2 rho' round
};
PrecisionBound clock_precision_bound(const PrecisionBoundInput& in);

// Beyond the hypothesis (docs/simulator.md "Rounds beyond the hypothesis"): what a round's
// readings allow, from the correct, synchronised nodes' point of view.
enum class RoundHypothesis {
  contracting,  // every pair of them shares the readings of 2f + 1 of them, and none counts more
                // than f other values: Welch-Lynch's halving
  bounded,      // none counts more than f other values: each moves within their range
  unbounded,    // more: each moves by at most step_max
};
// The bound on the spread after one more round, from the bound `before_ns` (>= Pi) before it:
//   contracting  max(B / 2 + Pi / 2, B - step_max + eps' + 2 rho' R)    (Pi stays Pi)
//   bounded      B + 2 eps' + 2 rho' R
//   unbounded    B + 2 step_max + 2 rho' R
// with eps' = eps + 2 rho' R. step_max > eps' + 2 rho' R, or contraction from far is not shown.
int64_t clock_bound_after_round(const PrecisionBound& b, int64_t step_max_ns, int64_t before_ns, RoundHypothesis h);

}  // namespace tob::core
