// TSC <-> global time: the fit, the round trip and the offset/drift test knobs, on synthetic
// samples (no wall-clock assertions: the machine is shared).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <vector>

#include "dataplane/time/tsc_clock.h"

using namespace tob::dataplane;

namespace {

// A 2.5 GHz TSC: 0.4 ns per tick, time starting at 1e18 ns (TAI-like magnitudes).
std::vector<ClockSample> line(int n, int64_t noise_ns = 0) {
  std::vector<ClockSample> s;
  uint64_t seed = 1;
  for (int i = 0; i < n; ++i) {
    const uint64_t tsc = 5'000'000'000ull + static_cast<uint64_t>(i) * 250'000'000ull;  // 0.1 s apart
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t jitter = noise_ns == 0 ? 0 : static_cast<int64_t>(seed >> 40) % (2 * noise_ns + 1) - noise_ns;
    s.push_back({tsc, 1'000'000'000'000'000'000 + static_cast<int64_t>(i) * 100'000'000 + jitter});
  }
  return s;
}

}  // namespace

TEST_CASE("fit recovers slope and offset of a TSC line") {
  TscFit f;
  const auto s = line(10);
  REQUIRE(fit_samples(s, f));
  CHECK(f.ns_per_tick == Approx(0.4).epsilon(1e-12));
  TscClock c;
  c.publish(f);
  REQUIRE(c.calibrated());
  for (const ClockSample& x : s) CHECK(std::llabs(c.to_ns(x.tsc) - x.ns) <= 1);
}

TEST_CASE("noisy samples give a fit within the noise, and to_tsc inverts to_ns") {
  TscFit f;
  REQUIRE(fit_samples(line(50, 200), f));
  CHECK(f.ns_per_tick == Approx(0.4).epsilon(1e-8));
  TscClock c;
  c.publish(f);
  const uint64_t tsc = 5'000'000'000ull + 3'000'000'000ull;
  const int64_t ns = c.to_ns(tsc);
  CHECK(std::llabs(static_cast<int64_t>(c.to_tsc(ns) - tsc)) <= 3);  // within a tick or two
}

TEST_CASE("fit refuses degenerate samples") {
  TscFit f;
  CHECK_FALSE(fit_samples(std::vector<ClockSample>{{1, 1}}, f));
  CHECK_FALSE(fit_samples(std::vector<ClockSample>{{7, 1}, {7, 2}}, f));
  CHECK_FALSE(fit_samples(std::vector<ClockSample>{{1, 10}, {2, 5}}, f));  // time going back
}

TEST_CASE("offset and drift knobs shift the believed time, and to_tsc honours them") {
  TscFit f;
  REQUIRE(fit_samples(line(10), f));
  TscClock plain;
  plain.publish(f);
  TscClock skewed;
  skewed.publish(f);
  skewed.set_knobs(5'000, 100.0);  // +5 us, +100 ppm
  const uint64_t one_s_later = f.tsc0 + 2'500'000'000ull;
  const int64_t diff = skewed.to_ns(one_s_later) - plain.to_ns(one_s_later);
  CHECK(std::llabs(diff - (5'000 + 100'000)) <= 2);  // 100 ppm of 1 s = 100 us
  const int64_t target = skewed.to_ns(one_s_later);
  CHECK(std::llabs(static_cast<int64_t>(skewed.to_tsc(target) - one_s_later)) <= 3);
}

TEST_CASE("a real sample pairs a TSC value with the clock") {
  const ClockSample a = sample_clock(CLOCK_MONOTONIC);
  const ClockSample b = sample_clock(CLOCK_MONOTONIC);
  CHECK(b.tsc > a.tsc);  // invariant TSC on this platform (docs/architecture.md "Facts of this machine")
  CHECK(b.ns >= a.ns);
}

TEST_CASE("drift accumulates from the first fit and survives re-fits without a jump") {
  TscFit f;
  REQUIRE(fit_samples(line(10), f));
  TscClock skewed;
  skewed.set_knobs(0, 100.0);
  skewed.publish(f);
  const uint64_t later = f.tsc0 + 2'500'000'000ull;  // about 1 s on the synthetic 2.5 GHz line
  const int64_t before = skewed.to_ns(later);
  // A re-fit centred on a later point of the same line: the believed time must not move.
  TscFit refit = f;
  refit.tsc0 = later;
  refit.ns0 = f.ns0 + static_cast<int64_t>(std::llround(2'500'000'000.0 * f.ns_per_tick));
  skewed.publish(refit);
  CHECK(std::llabs(skewed.to_ns(later) - before) <= 2);
  CHECK(std::llabs(static_cast<int64_t>(skewed.to_tsc(before) - later)) <= 3);
  CHECK(skewed.knobs().drift_ref_ns == f.ns0);
}

TEST_CASE("an applied correction map turns local time into global time, and to_tsc inverts it") {
  TscFit f;
  REQUIRE(fit_samples(line(10), f));
  TscClock c;
  c.set_knobs(0, 50);  // a drifting node: local time is the fit and the knobs
  c.publish(f);
  const uint64_t tsc = 5'000'000'000ull + 1'000'000'000ull;
  const int64_t local = c.to_local_ns(tsc);
  // Not applied: global time is local time, whatever map is published.
  tob::core::ClockMap m{local - 1'000'000, local - 1'000'000 - 40'000, -50e-6, 20'000, 100'000};
  c.publish_map(m);
  CHECK(c.to_ns(tsc) == local);
  CHECK_FALSE(c.mapped());
  // Applied: through the map, continuous and increasing, and back to the TSC within a tick.
  c.apply_map();
  CHECK(c.to_ns(tsc) == m.global_ns(local));
  CHECK(c.to_ns(tsc) != local);
  for (int64_t dt : {-3'000'000, -1, 0, 50'000, 99'999, 100'000, 10'000'000}) {
    const uint64_t t = tsc + static_cast<uint64_t>(dt * 5 / 2);
    const int64_t g = c.to_ns(t);
    CHECK(std::llabs(static_cast<int64_t>(c.to_tsc(g) - t)) <= 3);
    CHECK(c.to_ns(t + 250) > g);  // 100 ns later: later on the global clock too
  }
  CHECK(c.to_local_ns(tsc) == local);  // what the synchronisation measures is untouched
  // Deadlines of "never" pass the map unchanged (no overflow in its inversion).
  CHECK(c.to_tsc(INT64_MAX) == ns_to_tsc(c.fit(), c.knobs(), INT64_MAX));
}
