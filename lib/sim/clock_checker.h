// Clock properties of a run with clock sync on (docs/simulator.md "Clocks and their
// synchronisation"), judged from the records alone:
//   clock-precision        each cycle's largest spread of the judged nodes' global clocks (mid-slot
//                          samples) is within the derived bound, from the warm-up on: Pi, or after
//                          a round beyond the fault hypothesis the larger bound that round allows
//                          (docs/simulator.md "Rounds beyond the hypothesis")
//   clock-self-check       no node with a correct clock had its frames withheld by the self-check
//                          while the bound stood at Pi
//   release-instant        every node that delivered a message computed the same release instant
//   release-skew           the virtual instants at which correct nodes' clocks reached it differ by
//                          at most that cycle's bound (seed 001's WRITE_WAIT: the same instant
//                          everywhere)
//   no-removal-by-clock    (fault-free mars runs) the membership of all forms, and from then on
//                          nobody is removed and nobody shuts down: clocks alone never cost a
//                          correct node its membership
// Judged for the release: every node but the Byzantine clocks and the clocks standing apart (a
// crash or a mars shutdown does not touch the clock), for releases from `settled_ns` after its
// incarnation's engine started.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/checker.h"
#include "sim/records.h"

namespace tob::sim {

struct ClockCheckParams {
  int64_t precision_ns = 0;      // the derived bound (Records::precision_bound_ns)
  int64_t judged_from_cycle = 0;  // precision samples before this cycle are the warm-up
  bool fault_free = false;       // judge no-removal-by-clock
  int64_t settled_ns = 0;        // a (re)started node's releases are judged this long after its start
};

const std::vector<std::string>& clock_property_names();

// Adds its violations and figures (CheckStats::clock_*) to `report`.
void check_clock(const Records& records, const ClockCheckParams& params, CheckReport& report);

// The rate corrections at the end of a run (docs/simulator.md "Clocks and their
// synchronisation"): over the correct clocks (not Byzantine) up at the end, the range and mean of
// their corrections and the mean of their drifts at the start; the windows summed over every
// correct clock's lives.
struct RateSummary {
  int clocks = 0;
  double rate_lo = 0, rate_hi = 0, rate_mean = 0, drift_mean = 0;
  uint64_t windows = 0, windows_unknown = 0, windows_inexact = 0;
};
bool rate_judged(const Records& records, size_t node);  // a correct clock, up at the end
RateSummary summarize_rates(const Records& records);

}  // namespace tob::sim
