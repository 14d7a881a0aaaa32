// A simulated node's hardware clock (docs/simulator.md "Clocks"): at virtual instant t it reads
// t + offset + the integral of its rate error, the rate error piecewise constant (it wanders when
// the simulator changes it, at cycle starts). The whole history is kept, so any past instant
// converts both ways (release instants are converted after the run).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/result.h"

namespace tob::sim {

class Oscillator {
 public:
  Oscillator() : Oscillator(0, 0) {}
  Oscillator(int64_t offset_ns, double drift) { segs_.push_back({0, offset_ns, drift}); }

  // What the clock reads at virtual instant t.
  int64_t local_ns(int64_t t) const {
    const Seg& s = seg_at_true(t);
    const int64_t d = t - s.t0;
    // Truncation, as the simulator always did: a constant-drift run replays as before.
    return s.local0 + d + static_cast<int64_t>(static_cast<long double>(d) * s.drift);
  }
  // The first virtual instant at which the clock reads `local` or more.
  int64_t true_ns(int64_t local) const {
    const Seg& s = seg_at_local(local);
    auto t = s.t0 + static_cast<int64_t>(static_cast<long double>(local - s.local0) / (1.0L + s.drift));
    while (local_ns(t) < local) ++t;
    while (local_ns(t - 1) >= local) --t;
    return t;
  }
  // From virtual instant t on (t at or after the last change) the rate error is `drift`.
  void set_drift(int64_t t, double drift) {
    TOB_ASSERT(t >= segs_.back().t0);
    const int64_t l = local_ns(t);
    if (t == segs_.back().t0) {
      segs_.back().drift = drift;
    } else {
      segs_.push_back({t, l, drift});
    }
  }
  double drift() const { return segs_.back().drift; }

 private:
  struct Seg {
    int64_t t0;
    int64_t local0;
    double drift;
  };
  const Seg& seg_at_true(int64_t t) const {
    if (t >= segs_.back().t0) return segs_.back();
    auto it = std::upper_bound(segs_.begin(), segs_.end(), t, [](int64_t v, const Seg& s) { return v < s.t0; });
    return it == segs_.begin() ? segs_.front() : *(it - 1);
  }
  const Seg& seg_at_local(int64_t l) const {
    if (l >= segs_.back().local0) return segs_.back();
    auto it = std::upper_bound(segs_.begin(), segs_.end(), l, [](int64_t v, const Seg& s) { return v < s.local0; });
    return it == segs_.begin() ? segs_.front() : *(it - 1);
  }
  std::vector<Seg> segs_;
};

}  // namespace tob::sim
