#include "sim/otfp_mix.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "sim/rng.h"

namespace tob::sim {

const char* to_string(OtfpMix m) {
  switch (m) {
    case OtfpMix::hard: return "hard";
    case OtfpMix::liveness: return "liveness";
    case OtfpMix::chaos: return "chaos";
    case OtfpMix::segments: return "segments";
    case OtfpMix::durations: return "durations";
  }
  return "unknown";
}

bool parse_otfp_mix(std::string_view name, OtfpMix* out) {
  for (OtfpMix m : {OtfpMix::hard, OtfpMix::liveness, OtfpMix::chaos, OtfpMix::segments, OtfpMix::durations})
    if (name == to_string(m)) {
      *out = m;
      return true;
    }
  return false;
}

namespace {

double between(Rng& r, double lo, double hi) { return lo + (hi - lo) * r.uniform(); }
int quorum(int n) { return 2 * n / 3 + 1; }

}  // namespace

Scenario otfp_mix(OtfpMix mix, uint64_t seed) {
  Rng r(seed ^ 0x6D69780000000000ull);
  Scenario s;
  s.seed = seed;
  s.order = core::Order::otfp;
  s.nodes = mix != OtfpMix::liveness ? static_cast<int>(r.range(3, 7)) : static_cast<int>(r.range(4, 7));
  s.cycle_ns = s.nodes * 250'000;
  s.cycles = 200;
  s.drain_cycles = 80;
  s.node_template.kappa = static_cast<int>(r.range(1, 3));
  s.load = between(r, 0.5, 4);
  s.clock_offset_ns_max = r.range(0, 20'000);
  s.start_stagger_ns = r.range(0, 2 * s.cycle_ns);
  s.crash_down_max = s.nodes - quorum(s.nodes);
  s.restart_cycles_min = 1;
  s.restart_cycles_max = 15;
  s.torn_tail = 0.5;
  switch (mix) {
    case OtfpMix::segments:
      s.node_template.frame_bytes_max = static_cast<size_t>(r.range(700, 1500));
      s.node_template.payload_bytes_max = 120;
      s.node_template.rate_mbps = 1000;
      s.load = between(r, 15, 50);
      [[fallthrough]];
    case OtfpMix::durations:
    case OtfpMix::hard:
      s.loss = between(r, 0, mix == OtfpMix::hard ? 0.30 : 0.15);
      if (r.chance(0.5)) s.burst = between(r, 0, 0.5);
      s.dup = between(r, 0, 0.05);
      s.corrupt = between(r, 0, 0.01);
      s.crash_rate = between(r, 0.005, 0.05);
      s.crash_permanent = 0.1;
      s.fsync_ns_max = static_cast<int64_t>(between(r, 0, 0.6) * static_cast<double>(s.cycle_ns));
      s.stall_rate = between(r, 0, 0.01);
      s.stall_cycles_max = 20;
      s.drift_ppm_max = between(r, 0, 100);
      if (mix == OtfpMix::durations) {
        s.node_template.otfp_heard_ns = 20'000'000;  // the daemon's defaults (docs/configuration.md)
        s.node_template.otfp_recovery_ns = 20'000'000;
        s.node_template.otfp_retry_ns = 4'000'000;
        s.stall_cycles_max = 13'000'000 / s.cycle_ns + 1;  // the host's longest stall
        s.cycles = 300;
        s.drain_cycles = 200;
      }
      break;
    case OtfpMix::liveness:
      s.loss = between(r, 0, 0.10);
      s.dup = between(r, 0, 0.02);
      s.crash_rate = between(r, 0.005, 0.03);
      s.crash_permanent = 0.1;
      s.fsync_ns_max = static_cast<int64_t>(between(r, 0, 0.25) * static_cast<double>(s.cycle_ns));
      s.drift_ppm_max = between(r, 0, 20);
      break;
    case OtfpMix::chaos:
      s.crash_down_max = s.nodes - 1;
      s.loss = between(r, 0, 0.40);
      s.burst = between(r, 0, 0.5);
      s.dup = between(r, 0, 0.1);
      s.corrupt = between(r, 0, 0.02);
      s.crash_rate = between(r, 0.01, 0.08);
      s.fsync_ns_max = static_cast<int64_t>(between(r, 0, 1.0) * static_cast<double>(s.cycle_ns));
      s.stall_rate = between(r, 0, 0.03);
      s.stall_cycles_max = 20;
      s.drift_ppm_max = between(r, 0, 200);
      break;
  }
  s.fsync_ns_min = s.fsync_ns_max / 4;
  return s;
}

OtfpCheckParams otfp_mix_params(OtfpMix mix, const Scenario& s) {
  OtfpCheckParams p;
  p.kappa = s.node_template.kappa;
  p.drained = s.drain_cycles > 0;
  p.tolerance_ns = 2 * s.clock_offset_ns_max + s.delay_ns + s.jitter_ns;
  if (mix == OtfpMix::liveness) p.liveness_cycles = kOtfpLivenessCycles;
  return p;
}

std::string describe(const Scenario& s) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%d nodes, %" PRId64 "+%" PRId64 " cycles of %" PRId64 " ns, kappa %d, load %.2f; loss %.3f burst %.2f dup %.3f "
                "corrupt %.4f; crashes %.4f/node/cycle, <= %d down, restart %" PRId64 "-%" PRId64 " cycles (never %.2f); "
                "fsync %" PRId64 "-%" PRId64 " ns, torn %.2f; stalls %.4f up to %" PRId64 " cycles; drift %.1f ppm, offset %" PRId64
                " ns; frame %zu bytes at %" PRId64 " Mbit/s; timeouts %" PRId64 "/%" PRId64 "/%" PRId64 " ns",
                s.nodes, s.cycles, s.drain_cycles, s.cycle_ns, s.node_template.kappa, s.load, s.loss, s.burst, s.dup, s.corrupt,
                s.crash_rate, s.crash_down_max, s.restart_cycles_min, s.restart_cycles_max, s.crash_permanent,
                s.fsync_ns_min, s.fsync_ns_max, s.torn_tail, s.stall_rate, s.stall_cycles_max, s.drift_ppm_max,
                s.clock_offset_ns_max, s.node_template.frame_bytes_max, s.node_template.rate_mbps,
                s.node_template.otfp_heard_ns, s.node_template.otfp_recovery_ns, s.node_template.otfp_retry_ns);
  return buf;
}

}  // namespace tob::sim
