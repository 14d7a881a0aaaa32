// Global time (docs/architecture.md "Time and schedule") for the daemon: the clock source
// (CLOCK_TAI, CLOCK_MONOTONIC or a PTP hardware clock device) and its calibration against the TSC.
// The control lcore samples the source every `refit_interval_ns`, re-fits TSC -> global time over a
// sliding window of samples and publishes the fit to the other lcores (TscClock). A source that
// steps (phc2sys stepping CLOCK_TAI, an operator setting the clock) is detected by its residual and
// the fit restarts from the new reading, keeping the old slope.
#pragma once

#include <array>
#include <cstdint>
#include <ctime>
#include <string>

#include "core/result.h"
#include "dataplane/config/cluster_config.h"
#include "dataplane/time/tsc_clock.h"

namespace tob::dataplane {

class GlobalClockSource {
 public:
  static core::Result<GlobalClockSource> open(ClockSource kind, const std::string& ptp_device);
  GlobalClockSource(GlobalClockSource&& o) noexcept : id_(o.id_), fd_(o.fd_), kind_(o.kind_) { o.fd_ = -1; }
  GlobalClockSource& operator=(GlobalClockSource&&) = delete;
  GlobalClockSource(const GlobalClockSource&) = delete;
  ~GlobalClockSource();

  clockid_t id() const { return id_; }
  ClockSource kind() const { return kind_; }
  const char* name() const;
  int64_t now_ns() const;

 private:
  GlobalClockSource(clockid_t id, int fd, ClockSource kind) : id_(id), fd_(fd), kind_(kind) {}
  clockid_t id_;
  int fd_;
  ClockSource kind_;
};

struct CalibrationStats {
  uint64_t samples = 0;
  uint64_t steps = 0;            // source jumps that restarted the fit
  int64_t residual_ns_last = 0;  // last sample minus the fit's prediction
  int64_t residual_ns_max = 0;   // largest |residual| not counted as a step
  double tsc_hz = 0;
  double drift_ppm = 0;          // fitted TSC rate vs its nominal rate (last refit)
};

// Fits TSC -> a clock. The clock is read through `sample` (a (TSC, clock) pair): the global
// time source, or a NIC's clock for launch-time offload.
class Calibrator {
 public:
  static constexpr size_t kWindow = 16;
  using Sampler = ClockSample (*)(const void* arg);
  Calibrator(Sampler sample, const void* arg, TscClock& out, int64_t refit_interval_ns, int64_t step_threshold_ns);
  // Calibrates against a global time source.
  Calibrator(const GlobalClockSource& source, TscClock& out, int64_t refit_interval_ns, int64_t step_threshold_ns);

  // Blocking, at start-up only: `count` samples `gap_ns` apart, then the first fit.
  bool initial_fit(int count, int64_t gap_ns);
  // Non-blocking, on the control lcore: one sample and a re-fit when the interval is due.
  // True when a new fit was published.
  bool poll(uint64_t now_tsc);
  const CalibrationStats& stats() const { return stats_; }

 private:
  void add(const ClockSample& s);
  bool fit_window(TscFit& out) const;
  Sampler sample_;
  const void* arg_;
  TscClock& out_;
  int64_t refit_interval_ns_;
  int64_t step_threshold_ns_;
  uint64_t refit_interval_ticks_ = 0;
  uint64_t next_tsc_ = 0;
  double nominal_ns_per_tick_ = 0;
  std::array<ClockSample, kWindow> window_{};
  size_t filled_ = 0;
  size_t next_ = 0;
  CalibrationStats stats_;
};

}  // namespace tob::dataplane
