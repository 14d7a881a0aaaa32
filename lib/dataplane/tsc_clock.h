// TSC <-> global time (DESIGN §4). The control lcore samples (TSC, clock) pairs and fits a
// line; lcores convert with the published fit, read lock-free through a sequence counter
// (a seqlock: one writer, readers retry while a write is in progress). Test knobs add a fixed
// offset and a drift in ppm to the global time this node believes in.
#pragma once

#include <cstdint>
#include <ctime>
#include <span>

#include "dataplane/seqlock.h"

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

class TscClock {
 public:
  // Test knobs: believed time = true time + offset_ns + drift_ppm * (true time - ns0) / 1e6.
  void set_knobs(int64_t offset_ns, double drift_ppm) {
    offset_ns_ = offset_ns;
    drift_ppm_ = drift_ppm;
  }
  void publish(const TscFit& fit) { fit_.publish(fit); }
  bool calibrated() const { return fit_.published(); }
  TscFit fit() const { return fit_.read(); }
  int64_t to_ns(uint64_t tsc) const;
  uint64_t to_tsc(int64_t ns) const;

 private:
  Seqlock<TscFit> fit_;
  int64_t offset_ns_ = 0;
  double drift_ppm_ = 0;
};

// One (TSC, clock) pair: the tightest of `tries` readings, TSC taken as the midpoint of the
// reads around clock_gettime. For the control lcore at start and on refits.
ClockSample sample_clock(clockid_t clock, int tries = 5);

}  // namespace tob::dataplane
