#include "dataplane/time/global_clock.h"

#include <fcntl.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <thread>

namespace tob::dataplane {
namespace {

// linux/ptp_clock_kernel.h: dynamic POSIX clock ids of character devices.
clockid_t fd_to_clockid(int fd) { return static_cast<clockid_t>((~static_cast<unsigned>(fd) << 3) | 3u); }

}  // namespace

core::Result<GlobalClockSource> GlobalClockSource::open(ClockSource kind, const std::string& dev) {
  switch (kind) {
    case ClockSource::tai: return GlobalClockSource(CLOCK_TAI, -1, kind);
    case ClockSource::monotonic: return GlobalClockSource(CLOCK_MONOTONIC, -1, kind);
    case ClockSource::ptp: {
      const int fd = ::open(dev.c_str(), O_RDONLY);
      if (fd < 0) return core::Error{"clock ptp:" + dev + ": cannot open: " + std::strerror(errno)};
      const clockid_t id = fd_to_clockid(fd);
      timespec ts{};
      if (clock_gettime(id, &ts) != 0) {
        const std::string why = std::strerror(errno);
        ::close(fd);
        return core::Error{"clock ptp:" + dev + ": not a PTP hardware clock (" + why + ")"};
      }
      return GlobalClockSource(id, fd, kind);
    }
  }
  return core::Error{"unknown clock source"};
}

GlobalClockSource::~GlobalClockSource() {
  if (fd_ >= 0) ::close(fd_);
}

const char* GlobalClockSource::name() const {
  switch (kind_) {
    case ClockSource::tai: return "CLOCK_TAI";
    case ClockSource::monotonic: return "CLOCK_MONOTONIC";
    case ClockSource::ptp: return "PTP hardware clock";
  }
  return "unknown";
}

int64_t GlobalClockSource::now_ns() const {
  timespec ts{};
  clock_gettime(id_, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

Calibrator::Calibrator(Sampler sample, const void* arg, TscClock& out, int64_t refit_interval_ns,
                       int64_t step_threshold_ns)
    : sample_(sample), arg_(arg), out_(out), refit_interval_ns_(refit_interval_ns), step_threshold_ns_(step_threshold_ns) {}

Calibrator::Calibrator(const GlobalClockSource& source, TscClock& out, int64_t refit_interval_ns,
                       int64_t step_threshold_ns)
    : Calibrator([](const void* src) { return sample_clock(static_cast<const GlobalClockSource*>(src)->id()); },
                 &source, out, refit_interval_ns, step_threshold_ns) {}

void Calibrator::add(const ClockSample& s) {
  window_[next_] = s;
  next_ = (next_ + 1) % kWindow;
  if (filled_ < kWindow) ++filled_;
  ++stats_.samples;
}

bool Calibrator::fit_window(TscFit& out) const {
  std::array<ClockSample, kWindow> ordered{};  // oldest first; the fit centres on the newest
  for (size_t i = 0; i < filled_; ++i) ordered[i] = window_[(next_ + kWindow - filled_ + i) % kWindow];
  return fit_samples(std::span<const ClockSample>(ordered.data(), filled_), out);
}

bool Calibrator::initial_fit(int count, int64_t gap_ns) {
  for (int i = 0; i < count; ++i) {
    add(sample_(arg_));
    if (i + 1 < count) std::this_thread::sleep_for(std::chrono::nanoseconds(gap_ns));
  }
  TscFit fit;
  if (!fit_window(fit)) return false;
  nominal_ns_per_tick_ = fit.ns_per_tick;
  stats_.tsc_hz = 1e9 / fit.ns_per_tick;
  refit_interval_ticks_ = static_cast<uint64_t>(static_cast<double>(refit_interval_ns_) / fit.ns_per_tick);
  next_tsc_ = __rdtsc() + refit_interval_ticks_;
  out_.publish(fit);
  return true;
}

bool Calibrator::poll(uint64_t now_tsc) {
  if (now_tsc < next_tsc_) return false;
  next_tsc_ = now_tsc + refit_interval_ticks_;
  const ClockSample s = sample_(arg_);
  const TscFit old = out_.fit();
  const double predicted =
      static_cast<double>(old.ns0) + static_cast<double>(static_cast<int64_t>(s.tsc - old.tsc0)) * old.ns_per_tick;
  const auto residual = static_cast<int64_t>(std::llround(static_cast<double>(s.ns) - predicted));
  stats_.residual_ns_last = residual;
  if (std::llabs(residual) > step_threshold_ns_) {
    // The source jumped: restart the window from this sample and keep the slope.
    ++stats_.steps;
    filled_ = 0;
    next_ = 0;
    add(s);
    out_.publish({s.tsc, s.ns, old.ns_per_tick});
    return true;
  }
  if (std::llabs(residual) > stats_.residual_ns_max) stats_.residual_ns_max = std::llabs(residual);
  add(s);
  TscFit fit;
  if (!fit_window(fit)) return false;
  out_.publish(fit);
  stats_.drift_ppm = (fit.ns_per_tick / nominal_ns_per_tick_ - 1.0) * 1e6;
  return true;
}

}  // namespace tob::dataplane
