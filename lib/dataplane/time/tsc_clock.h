// TSC <-> global time (docs/architecture.md "Time and schedule"). The control lcore samples (TSC,
// clock) pairs and fits a line; lcores convert with the published fit, read lock-free through a
// sequence counter (a seqlock: one writer, readers retry while a write is in progress). Test knobs
// add a fixed offset and a drift in ppm to the global time this node believes in. The fit and the
// knobs give the node's *local* time; with in-band synchronisation applied ([timing] sync =
// inband | both) a correction map (core::ClockMap, lib/core/clock_sync.h) turns local time into
// global time, published by the control lcore once per round, read lock-free like the fit.
#pragma once

#include <cstdint>
#include <ctime>
#include <span>

#include "core/clock_sync.h"
#include "dataplane/shm/seqlock.h"

namespace tob::dataplane {

struct ClockSample {
  uint64_t tsc;
  int64_t ns;
};

struct TscFit {
  uint64_t tsc0 = 0;          // reference point
  int64_t ns0 = 0;
  double ns_per_tick = 0;     // slope
};

// Least-squares line through the samples (at least two with distinct TSC values); false
// otherwise. Centred on the last sample so conversions near "now" lose no precision.
bool fit_samples(std::span<const ClockSample> samples, TscFit& out);

// Test knobs (docs/architecture.md "Time and schedule"): believed time = true time + offset_ns
//                                         + drift_ppm * (true time - drift_ref_ns) / 1e6.
// The drift accumulates from drift_ref_ns (the first fit), so re-fits do not reset it.
struct ClockKnobs {
  int64_t offset_ns = 0;
  double drift_ppm = 0;
  int64_t drift_ref_ns = 0;
};

// The conversions themselves, for TscClock and for applications reading the daemon's fit from
// shared memory (include/tob.h).
int64_t tsc_to_ns(const TscFit& fit, const ClockKnobs& knobs, uint64_t tsc);
uint64_t ns_to_tsc(const TscFit& fit, const ClockKnobs& knobs, int64_t ns);
// The same through a correction map (nullptr: none, global time is local time).
int64_t tsc_to_global_ns(const TscFit& fit, const ClockKnobs& knobs, const core::ClockMap* map, uint64_t tsc);
uint64_t global_ns_to_tsc(const TscFit& fit, const ClockKnobs& knobs, const core::ClockMap* map, int64_t ns);

class TscClock {
 public:
  // Set before the first publish(); the drift then counts from the first fit's reference point.
  void set_knobs(int64_t offset_ns, double drift_ppm) {
    knobs_.offset_ns = offset_ns;
    knobs_.drift_ppm = drift_ppm;
  }
  void publish(const TscFit& fit) {
    if (!fit_.published()) knobs_.drift_ref_ns = fit.ns0;
    fit_.publish(fit);
  }
  // Global time follows the correction map from here on (before the lcores start).
  void apply_map() { mapped_ = true; }
  // The control lcore, once per round (one writer).
  void publish_map(const core::ClockMap& map) { map_.publish(map); }
  bool calibrated() const { return fit_.published(); }
  bool mapped() const { return mapped_; }
  TscFit fit() const { return fit_.read(); }
  core::ClockMap map() const { return mapped_ && map_.published() ? map_.read() : core::ClockMap{}; }
  const ClockKnobs& knobs() const { return knobs_; }
  // Global time (through the map when it applies).
  int64_t to_ns(uint64_t tsc) const;
  uint64_t to_tsc(int64_t ns) const;
  // Local time: the fit and the knobs only (what the in-band synchronisation measures).
  int64_t to_local_ns(uint64_t tsc) const { return tsc_to_ns(fit_.read(), knobs_, tsc); }
  uint64_t local_to_tsc(int64_t local_ns) const { return ns_to_tsc(fit_.read(), knobs_, local_ns); }

 private:
  Seqlock<TscFit> fit_;
  ClockKnobs knobs_;
  bool mapped_ = false;
  Seqlock<core::ClockMap> map_;
};

// One (TSC, clock) pair: the tightest of `tries` readings, TSC taken as the midpoint of the
// reads around clock_gettime. For the control lcore at start and on refits.
ClockSample sample_clock(clockid_t clock, int tries = 5);

}  // namespace tob::dataplane
