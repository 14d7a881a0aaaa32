#include "sim/clock_checker.h"

#include <algorithm>
#include <bit>
#include <map>
#include <set>
#include <cinttypes>
#include <unordered_map>

namespace tob::sim {

const std::vector<std::string>& clock_property_names() {
  static const std::vector<std::string> names = {"clock-precision", "clock-self-check", "release-instant",
                                                 "release-skew", "no-removal-by-clock"};
  return names;
}

namespace {

// Did this node incarnation's clock stand apart in `cycle` (NodeLife::clock_apart)?
bool apart(const Records& rec, core::NodeId node, int incarnation, int64_t cycle) {
  if (node >= rec.lives.size()) return false;
  for (const NodeLife::ClockApart& a : rec.lives[node].clock_apart)
    if (a.incarnation == incarnation && cycle >= a.from_cycle && cycle < a.until_cycle) return true;
  return false;
}

bool byzantine(const Records& rec, core::NodeId node) { return node < rec.clocks.size() && rec.clocks[node].byzantine; }

// The bound each cycle's clocks are judged against (docs/simulator.md "Rounds beyond the
// hypothesis"): Pi from the warm-up on; after each round, core::clock_bound_after_round of what
// that round's readings allowed among the correct nodes K (not Byzantine, not apart, the round
// closed on an integrated clock):
//   contracting  every pair in K shares the readings of 2f + 1 nodes of K (its own counts), and
//                no node of K took more than f readings from outside K; no node integrated
//   bounded      no node of K took more than f readings from outside K
//   unbounded    otherwise, or a node compared in the next cycle's samples (or one that went on
//                closing rounds) did not record this one
class ClockBounds {
 public:
  ClockBounds(const Records& rec, const ClockCheckParams& p, CheckStats& st) : first_(p.judged_from_cycle) {
    core::PrecisionBound b = rec.clock_bound;
    b.precision_ns = p.precision_ns;
    const int f = rec.clock_faults;
    int64_t last = first_;
    std::map<int64_t, std::vector<const ClockRoundRecord*>> rounds;
    std::set<int64_t> integrated, missing;
    std::map<std::pair<core::NodeId, int>, int64_t> previous;  // a node incarnation's last round
    for (const ClockRoundRecord& r : rec.clock_rounds) {
      last = std::max(last, r.cycle + 1);
      if (byzantine(rec, r.node) || apart(rec, r.node, r.incarnation, r.cycle)) continue;
      if (r.kind == ClockRoundKind::integration) integrated.insert(r.cycle);
      if (r.kind != ClockRoundKind::round) continue;
      rounds[r.cycle].push_back(&r);
      auto [it, fresh] = previous.try_emplace({r.node, r.incarnation}, r.cycle);
      if (!fresh) {
        for (int64_t c = it->second + 1; c < r.cycle; ++c) missing.insert(c);  // closed, not recorded
        it->second = r.cycle;
      }
    }
    // A clock judged again from cycle c + 1 joins the others in round c, like an integration.
    std::map<int64_t, uint64_t> rejoined;
    for (size_t i = 0; i < rec.lives.size(); ++i)
      for (const NodeLife::ClockApart& a : rec.lives[i].clock_apart)
        if (a.until_cycle != INT64_MAX) {
          rejoined[a.until_cycle - 1] |= uint64_t{1} << i;
          integrated.insert(a.until_cycle - 1);
        }
    std::map<int64_t, uint64_t> judged;
    std::map<int64_t, int64_t> hull;
    for (const PrecisionSample& s : rec.precision) {
      judged[s.cycle] |= s.judged;
      hull[s.cycle] = std::max(hull[s.cycle], s.hull_ns);
      last = std::max(last, s.cycle);
    }
    bound_.assign(static_cast<size_t>(std::max<int64_t>(0, last - first_ + 1)), b.precision_ns);
    for (int64_t c = first_; c < last; ++c) {
      core::RoundHypothesis h = core::RoundHypothesis::contracting;
      if (rec.clock_step_max_ns > 0) {  // hand-made records without the terms: Pi throughout
        h = hypothesis(rounds[c], judged[c + 1] & ~rejoined[c], f);
        if (missing.count(c) != 0) h = core::RoundHypothesis::unbounded;
        if (h == core::RoundHypothesis::contracting && integrated.count(c) != 0) h = core::RoundHypothesis::bounded;
      }
      if (h != core::RoundHypothesis::contracting) ++st.clock_rounds_beyond;
      const size_t k = static_cast<size_t>(c - first_);
      // The round starts from the spread at its close: at most the bound, and at most the
      // cycle's measured spread of every synchronised clock plus their drift until the close
      // (no correction comes between a mid-slot sample and the close). A clock judged again
      // from c + 1 was within Pi of them.
      int64_t start_ns = bound_[k];
      if (auto it = hull.find(c); it != hull.end() && rec.clock_step_max_ns > 0) {
        int64_t measured_ns = it->second + 2 * b.drift_round_ns;
        if (rejoined[c] != 0) measured_ns = std::max(measured_ns, b.precision_ns + 2 * b.drift_round_ns);
        start_ns = std::max(b.precision_ns, std::min(start_ns, measured_ns));
      }
      bound_[k + 1] = rec.clock_step_max_ns > 0 ? core::clock_bound_after_round(b, rec.clock_step_max_ns, start_ns, h)
                                                : b.precision_ns;
    }
    for (int64_t v : bound_) st.clock_bound_ns_max = std::max(st.clock_bound_ns_max, v);
    precision_ns_ = b.precision_ns;
  }

  // The bound on the spread during `cycle` (Pi in the warm-up).
  int64_t at(int64_t cycle) const {
    if (cycle < first_ || bound_.empty()) return precision_ns_;
    const auto k = static_cast<size_t>(std::min<int64_t>(cycle - first_, static_cast<int64_t>(bound_.size()) - 1));
    return bound_[k];
  }

 private:
  static core::RoundHypothesis hypothesis(const std::vector<const ClockRoundRecord*>& round, uint64_t judged_next, int f) {
    uint64_t k_mask = 0;
    for (const ClockRoundRecord* r : round) k_mask |= uint64_t{1} << r->node;
    if ((judged_next & ~k_mask) != 0) return core::RoundHypothesis::unbounded;
    for (const ClockRoundRecord* r : round)
      if (std::popcount(r->senders & ~k_mask) > f) return core::RoundHypothesis::unbounded;
    for (size_t a = 0; a < round.size(); ++a)
      for (size_t b = a + 1; b < round.size(); ++b) {
        const uint64_t pa = round[a]->senders | uint64_t{1} << round[a]->node;
        const uint64_t pb = round[b]->senders | uint64_t{1} << round[b]->node;
        if (std::popcount(k_mask & pa & pb) < 2 * f + 1) return core::RoundHypothesis::bounded;
      }
    return core::RoundHypothesis::contracting;
  }

  int64_t first_;
  int64_t precision_ns_ = 0;
  std::vector<int64_t> bound_;  // [cycle - first_]
};

}  // namespace

void check_clock(const Records& rec, const ClockCheckParams& p, CheckReport& report) {
  Reporter<CheckReport> fail{report};
  CheckStats& st = report.stats;
  const size_t n = rec.lives.size();
  const ClockBounds bounds(rec, p, st);

  // The bound (core::clock_precision_bound, derived in docs/simulator.md "Clocks and their
  // synchronisation"): Pi = 4 eps + 12 rho' R, with eps = J/2 + rho' (d + J) the reading error,
  // rho' = P + r_max the residual rate error of a correct clock and R one cycle, for N >= 3f + 1
  // and at most f faulty readings a round; sampled mid-slot, outside the slew windows. After
  // rounds beyond that hypothesis, the larger bound of ClockBounds.
  for (const PrecisionSample& s : rec.precision) {
    if (s.cycle < p.judged_from_cycle || s.nodes < 2) continue;
    ++st.clock_samples;
    if (s.spread_ns > st.clock_spread_ns_max) {
      st.clock_spread_ns_max = s.spread_ns;
      st.clock_spread_cycle = s.cycle;
    }
    const int64_t bound = bounds.at(s.cycle);
    if (s.spread_ns > bound)
      fail("clock-precision", "cycle %" PRId64 ": node %d's global clock is %" PRId64 " ns ahead of node %d's (bound %" PRId64
           " ns, Pi %" PRId64 " ns)", s.cycle, s.ahead, s.spread_ns, s.behind, bound, p.precision_ns);
  }

  // A correct node may find itself out only where the bound has grown past Pi.
  std::vector<uint64_t> out_rounds(n);
  std::vector<int64_t> out_cycle(n, -1);
  for (const ClockRoundRecord& r : rec.clock_rounds) {
    if (!r.out) continue;
    ++st.clock_rounds_out;
    if (r.node >= n || byzantine(rec, r.node) || apart(rec, r.node, r.incarnation, r.cycle) || bounds.at(r.cycle) > p.precision_ns)
      continue;
    if (out_rounds[r.node]++ == 0) out_cycle[r.node] = r.cycle;
  }
  for (size_t i = 0; i < n; ++i)
    if (out_rounds[i] > 0)
      fail("clock-self-check", "node %zu (drift %.1f ppm at start) withheld its frames for %" PRIu64
           " rounds, the first in cycle %" PRId64 ", with the bound at Pi: its clock was out by more than the precision",
           i, i < rec.clocks.size() ? rec.clocks[i].drift_ppm_start : 0.0, out_rounds[i], out_cycle[i]);

  std::vector<bool> judged(n);
  for (size_t i = 0; i < n; ++i) judged[i] = !byzantine(rec, static_cast<core::NodeId>(i));
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
    // Released at a cycle start, before the slew of the round that brought a clock back within.
    const int64_t release_cycle = rec.clock_cycle_ns > 0 ? d.release_ns / rec.clock_cycle_ns : 0;
    if (!judged[d.node] || apart(rec, d.node, d.incarnation, release_cycle - 1) ||
        d.release_virtual_ns == DeliveryRecord::kNotReleased)
      continue;
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
    // At a cycle start, before the slews: the end of the cycle before, or the start of this one.
    const int64_t cycle = rec.clock_cycle_ns > 0 ? r.global_ns / rec.clock_cycle_ns : 0;
    const int64_t bound = std::max(bounds.at(cycle - 1), bounds.at(cycle));
    if (skew > bound)
      fail("release-skew", "message %d/%" PRIu64 ": node %d released it at %" PRId64 " ns, node %d %" PRId64
           " ns later (bound %" PRId64 " ns)", static_cast<int>(key >> 56), key & ((uint64_t{1} << 56) - 1),
           r.first_node, r.first_ns, r.last_node, skew, bound);
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

bool rate_judged(const Records& records, size_t node) {
  return !records.clocks[node].byzantine && node < records.final_state.size() && records.final_state[node].alive;
}

RateSummary summarize_rates(const Records& records) {
  RateSummary r;
  for (size_t i = 0; i < records.clocks.size(); ++i) {
    const ClockLife& c = records.clocks[i];
    if (c.byzantine) continue;
    r.windows += c.rate_windows;
    r.windows_unknown += c.rate_windows_unknown;
    r.windows_inexact += c.rate_windows_inexact;
    if (!rate_judged(records, i)) continue;
    r.rate_lo = r.clocks == 0 ? c.rate_ppm_end : std::min(r.rate_lo, c.rate_ppm_end);
    r.rate_hi = r.clocks == 0 ? c.rate_ppm_end : std::max(r.rate_hi, c.rate_ppm_end);
    r.rate_mean += c.rate_ppm_end;
    r.drift_mean += c.drift_ppm_start;
    ++r.clocks;
  }
  if (r.clocks > 0) {
    r.rate_mean /= r.clocks;
    r.drift_mean /= r.clocks;
  }
  return r;
}

}  // namespace tob::sim
