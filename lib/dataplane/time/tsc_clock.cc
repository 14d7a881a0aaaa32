#include "dataplane/time/tsc_clock.h"

#include <x86intrin.h>

#include <cmath>

namespace tob::dataplane {

bool fit_samples(std::span<const ClockSample> samples, TscFit& out) {
  if (samples.size() < 2) return false;
  const ClockSample& ref = samples.back();
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const ClockSample& s : samples) {
    const double x = static_cast<double>(static_cast<int64_t>(s.tsc - ref.tsc));
    const double y = static_cast<double>(s.ns - ref.ns);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double n = static_cast<double>(samples.size());
  const double den = n * sxx - sx * sx;
  if (den <= 0) return false;
  const double slope = (n * sxy - sx * sy) / den;
  if (!(slope > 0)) return false;
  const double intercept = (sy - slope * sx) / n;  // ns at x = 0 (the last sample's TSC)
  out.tsc0 = ref.tsc;
  out.ns0 = ref.ns + static_cast<int64_t>(std::llround(intercept));
  out.ns_per_tick = slope;
  return true;
}

int64_t tsc_to_ns(const TscFit& f, const ClockKnobs& k, uint64_t tsc) {
  const double dt = static_cast<double>(static_cast<int64_t>(tsc - f.tsc0)) * f.ns_per_tick;
  const int64_t true_ns = f.ns0 + static_cast<int64_t>(std::llround(dt));
  if (k.drift_ppm == 0) return true_ns + k.offset_ns;
  const double drift = k.drift_ppm * static_cast<double>(true_ns - k.drift_ref_ns) / 1e6;
  return true_ns + k.offset_ns + static_cast<int64_t>(std::llround(drift));
}

uint64_t ns_to_tsc(const TscFit& f, const ClockKnobs& k, int64_t ns) {
  // Invert the knobs first: believed - ref = (true - ref) * (1 + d) + offset.
  const double scale = 1.0 + k.drift_ppm / 1e6;
  const double true_from_ref = static_cast<double>(ns - k.offset_ns - k.drift_ref_ns) / scale;
  const double true_rel = true_from_ref + static_cast<double>(k.drift_ref_ns - f.ns0);
  const double ticks = true_rel / f.ns_per_tick;
  return f.tsc0 + static_cast<uint64_t>(static_cast<int64_t>(std::llround(ticks)));
}

int64_t tsc_to_global_ns(const TscFit& f, const ClockKnobs& k, const core::ClockMap* map, uint64_t tsc) {
  const int64_t local = tsc_to_ns(f, k, tsc);
  return map != nullptr ? map->global_ns(local) : local;
}

uint64_t global_ns_to_tsc(const TscFit& f, const ClockKnobs& k, const core::ClockMap* map, int64_t ns) {
  // "Never" (INT64_MAX, INT64_MIN as deadlines) stays as it is: the map is for instants.
  constexpr int64_t kFar = INT64_MAX / 4;
  return ns_to_tsc(f, k, map != nullptr && ns > -kFar && ns < kFar ? map->local_ns(ns) : ns);
}

int64_t TscClock::to_ns(uint64_t tsc) const {
  if (!mapped_ || !map_.published()) return tsc_to_ns(fit_.read(), knobs_, tsc);
  const core::ClockMap m = map_.read();
  return tsc_to_global_ns(fit_.read(), knobs_, &m, tsc);
}

uint64_t TscClock::to_tsc(int64_t ns) const {
  if (!mapped_ || !map_.published()) return ns_to_tsc(fit_.read(), knobs_, ns);
  const core::ClockMap m = map_.read();
  return global_ns_to_tsc(fit_.read(), knobs_, &m, ns);
}

ClockSample sample_clock(clockid_t clock, int tries) {
  ClockSample best{0, 0};
  uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < tries; ++i) {
    timespec ts{};
    const uint64_t a = __rdtsc();
    clock_gettime(clock, &ts);
    const uint64_t b = __rdtsc();
    if (b - a < best_width) {
      best_width = b - a;
      best = {a + (b - a) / 2, static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec};
    }
  }
  return best;
}

}  // namespace tob::dataplane
