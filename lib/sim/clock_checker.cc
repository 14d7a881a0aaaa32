#include "sim/clock_checker.h"

#include <algorithm>
#include <cinttypes>
#include <unordered_map>

namespace tob::sim {

const std::vector<std::string>& clock_property_names() {
  static const std::vector<std::string> names = {"clock-precision", "clock-self-check", "release-instant",
                                                 "release-skew", "no-removal-by-clock"};
  return names;
}

void check_clock(const Records& rec, const ClockCheckParams& p, CheckReport& report) {
  Reporter<CheckReport> fail{report};
  CheckStats& st = report.stats;
  const size_t n = rec.lives.size();

  // The bound (core::clock_precision_bound, derived in docs/simulator.md "Clocks and their
  // synchronisation"): Pi = 4 eps + 12 rho' R, with eps = J/2 + rho' (d + J) the reading error,
  // rho' = P + r_max the residual rate error of a correct clock and R one cycle, for N >= 3f + 1
  // and at most f faulty readings a round; sampled mid-slot, outside the slew windows.
  for (const PrecisionSample& s : rec.precision) {
    if (s.cycle < p.judged_from_cycle) continue;
    ++st.clock_samples;
    if (s.spread_ns > st.clock_spread_ns_max) {
      st.clock_spread_ns_max = s.spread_ns;
      st.clock_spread_cycle = s.cycle;
    }
    if (s.spread_ns > p.precision_ns)
      fail("clock-precision", "cycle %" PRId64 ": node %d's global clock is %" PRId64 " ns ahead of node %d's (bound %" PRId64 " ns)",
           s.cycle, s.ahead, s.spread_ns, s.behind, p.precision_ns);
  }

  for (size_t i = 0; i < n && i < rec.clocks.size(); ++i) {
    const ClockLife& c = rec.clocks[i];
    st.clock_rounds_out += c.rounds_out;
    if (!c.byzantine && c.rounds_out > 0)
      fail("clock-self-check", "node %zu (drift %.1f ppm at start) withheld its frames for %" PRIu64
           " rounds: its clock was out by more than the precision", i, c.drift_ppm_start, c.rounds_out);
  }

  std::vector<bool> judged(n);
  for (size_t i = 0; i < n; ++i) judged[i] = !(i < rec.clocks.size() && rec.clocks[i].byzantine);
  struct Release {
    int64_t global_ns;
    core::NodeId global_node;
    int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;
    core::NodeId first_node = 0, last_node = 0;
  };
  std::unordered_map<uint64_t, Release> releases;
  for (const DeliveryRecord& d : rec.deliveries) {
    const uint64_t key = (uint64_t{d.sender} << 56) | d.msg_id;
    auto [it, fresh] = releases.try_emplace(key, Release{d.release_ns, d.node});
    Release& r = it->second;
    if (!fresh && r.global_ns != d.release_ns)
      fail("release-instant", "message %d/%" PRIu64 ": node %d releases it at %" PRId64 " ns, node %d at %" PRId64 " ns",
           d.sender, d.msg_id, r.global_node, r.global_ns, d.node, d.release_ns);
    if (!judged[d.node] || d.release_virtual_ns == DeliveryRecord::kNotReleased) continue;
    const std::vector<int64_t>& starts = rec.lives[d.node].engine_start_ns;
    const auto inc = static_cast<size_t>(d.incarnation);
    if (inc >= starts.size() || d.release_virtual_ns < starts[inc] + p.settled_ns) continue;
    if (d.release_virtual_ns < r.first_ns) {
      r.first_ns = d.release_virtual_ns;
      r.first_node = d.node;
    }
    if (d.release_virtual_ns > r.last_ns) {
      r.last_ns = d.release_virtual_ns;
      r.last_node = d.node;
    }
  }
  for (const auto& [key, r] : releases) {
    if (r.last_ns == INT64_MIN || r.first_ns == r.last_ns) {
      if (r.last_ns != INT64_MIN) ++st.releases_judged;
      continue;
    }
    ++st.releases_judged;
    const int64_t skew = r.last_ns - r.first_ns;
    st.release_skew_ns_max = std::max(st.release_skew_ns_max, skew);
    if (skew > p.precision_ns)
      fail("release-skew", "message %d/%" PRIu64 ": node %d released it at %" PRId64 " ns, node %d %" PRId64
           " ns later (bound %" PRId64 " ns)", static_cast<int>(key >> 56), key & ((uint64_t{1} << 56) - 1),
           r.first_node, r.first_ns, r.last_node, skew, p.precision_ns);
  }

  if (p.fault_free) {
    // From the first cycle in which every node is a member: the start-up's races are mars's.
    const uint64_t all = n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
    int64_t formed_cycle = -1;
    for (const EventRecord& e : rec.events)
      if (e.event.members_after == all) {
        formed_cycle = e.event.cycle;
        break;
      }
    if (formed_cycle < 0) fail("no-removal-by-clock", "the membership of all %zu nodes never formed", n);
    for (const EventRecord& e : rec.events)
      if ((e.event.kind == core::EventKind::removed || e.event.kind == core::EventKind::self_shutdown) &&
          formed_cycle >= 0 && e.event.cycle > formed_cycle) {
        fail("no-removal-by-clock", "node %d: %s of node %d at %" PRId64 " ns (%s) in a run whose only faults are clocks",
             e.node, core::to_string(e.event.kind), e.event.node, e.virtual_ns, core::to_string(e.event.reason));
        break;
      }
  }
}

}  // namespace tob::sim
