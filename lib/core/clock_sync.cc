#include "core/clock_sync.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace tob::core {
namespace {

int64_t floor_ld(long double x) { return static_cast<int64_t>(std::floor(x)); }

}  // namespace

Result<ClockSyncConfig> ClockSyncConfig::resolved() const {
  ClockSyncConfig c = *this;
  auto sched = Schedule::create(c.schedule);
  if (!sched) return sched.error();
  const int n = sched.value().node_count();
  if (c.self >= n) return Error{"clock sync: node " + std::to_string(c.self) + " is not in the schedule"};
  if (c.faults_tolerated < 0 || n < 3 * c.faults_tolerated + 1)
    return Error{"clock sync: " + std::to_string(c.faults_tolerated) + " faulty clocks need at least " +
                 std::to_string(3 * c.faults_tolerated + 1) + " nodes (N >= 3f + 1), the schedule has " +
                 std::to_string(n)};
  if (c.delay_ns < 0) return Error{"clock sync: the one-way delay must not be negative"};
  if (c.slew_ns == 0) c.slew_ns = c.schedule.decision_margin_ns;
  if (c.slew_ns <= 0 || c.slew_ns > c.schedule.cycle_ns / 2)
    return Error{"clock sync: the slew window (" + std::to_string(c.slew_ns) +
                 " ns) must be positive and at most half a cycle (it defaults to the decision margin)"};
  if (c.step_max_ns == 0) c.step_max_ns = c.slew_ns / 2;
  // Global time must not go back: the slew's slope 1 + rate + step / slew stays above 1/4.
  if (c.step_max_ns <= 0 || c.step_max_ns > c.slew_ns / 2)
    return Error{"clock sync: the largest correction per round (" + std::to_string(c.step_max_ns) +
                 " ns) must be positive and at most half the slew window (" + std::to_string(c.slew_ns) + " ns)"};
  if (c.precision_ns == 0) c.precision_ns = c.schedule.precision_ns;
  if (c.precision_ns <= 0) return Error{"clock sync: the self-check precision must be positive"};
  if (c.deviation_max_ns == 0) c.deviation_max_ns = c.schedule.cycle_ns / 4;
  if (c.deviation_max_ns <= 0) return Error{"clock sync: deviation_max_ns must be positive"};
  if (!(c.rate_max_ppm >= 0 && c.rate_max_ppm <= 1000))
    return Error{"clock sync: the rate correction bound must be within 0..1000 ppm"};
  if (!(c.rate_gain > 0 && c.rate_gain <= 1)) return Error{"clock sync: the rate gain must be within (0, 1]"};
  if (c.rate_window_rounds < 1) return Error{"clock sync: the rate window needs at least one round"};
  if (c.integrate_wait_rounds < 1) return Error{"clock sync: integrate_wait_rounds must be at least 1"};
  if (!(c.rate_leak >= 0 && c.rate_leak < 1)) return Error{"clock sync: the rate leak must be within [0, 1)"};
  return c;
}

int64_t ClockMap::global_ns(int64_t local_ns) const {
  const auto d = static_cast<long double>(local_ns - l0);
  if (d <= 0) return g0 + floor_ld(d * (1.0L + static_cast<long double>(rate)));
  const long double slewed = std::min(d, static_cast<long double>(slew_ns)) * static_cast<long double>(step_ns) /
                             static_cast<long double>(slew_ns);
  return g0 + floor_ld(d * (1.0L + static_cast<long double>(rate)) + slewed);
}

int64_t ClockMap::local_ns(int64_t global) const {
  const long double one = 1.0L + static_cast<long double>(rate);
  int64_t l;
  if (global <= g0) {
    l = l0 + floor_ld(static_cast<long double>(global - g0) / one);
  } else {
    const int64_t knee = global_ns(l0 + slew_ns);
    if (global <= knee) {
      const long double slope = one + static_cast<long double>(step_ns) / static_cast<long double>(slew_ns);
      l = l0 + floor_ld(static_cast<long double>(global - g0) / slope);
    } else {
      l = l0 + slew_ns + floor_ld(static_cast<long double>(global - knee) / one);
    }
  }
  // The slope is at least 1/4: a few steps at most.
  while (global_ns(l) < global) ++l;
  while (global_ns(l - 1) >= global) --l;
  return l;
}

int64_t ClockMap::pending_ns(int64_t local_ns) const {
  const int64_t d = local_ns - l0;
  if (d <= 0) return step_ns;
  if (d >= slew_ns) return 0;
  return step_ns - floor_ld(static_cast<long double>(d) * static_cast<long double>(step_ns) /
                            static_cast<long double>(slew_ns));
}

Result<ClockSync> ClockSync::create(const ClockSyncConfig& config) {
  auto c = config.resolved();
  if (!c) return c.error();
  auto sched = Schedule::create(c.value().schedule);
  if (!sched) return sched.error();
  return ClockSync(c.value(), std::move(sched.value()));
}

ClockSync::ClockSync(const ClockSyncConfig& config, Schedule schedule)
    : config_(config), schedule_(std::move(schedule)), nodes_(schedule_.node_count()) {
  map_.slew_ns = config_.slew_ns;
}

int64_t ClockSync::fault_tolerant_midpoint(int64_t* values, int count, int f) {
  TOB_ASSERT(f >= 0 && count >= 2 * f + 1);
  std::sort(values, values + count);
  const int64_t lo = values[f];
  const int64_t hi = values[count - 1 - f];
  TOB_ASSERT(lo <= hi);
  return lo + (hi - lo) / 2;
}

bool ClockSync::on_time(int64_t local_ns) {
  if (!started_) {
    started_ = true;
    map_.l0 = local_ns;
    map_.g0 = local_ns;  // the local clock is all a node knows before its first round
    round_ = schedule_.cycle_of(local_ns);
    return false;
  }
  bool changed = false;
  while (map_.global_ns(local_ns) >= schedule_.cycle_start_ns(round_ + 1)) {
    close_round(local_ns);
    changed = true;
  }
  return changed;
}

int64_t ClockSync::next_deadline_local_ns() const {
  if (!started_) return INT64_MAX;
  return map_.local_ns(schedule_.cycle_start_ns(round_ + 1));
}

void ClockSync::on_frame(NodeId sender, int64_t cycle, int64_t local_ns) {
  if (!started_ || sender == config_.self || sender >= nodes_ ||
      (!integrating_ && cycle != round_ && cycle != round_ + 1)) {
    ++stats_.readings_ignored;
    return;
  }
  // Integrating, the local clock may be off by cycles: every frame counts for the open round.
  Reading& r = readings_[static_cast<size_t>((integrating_ ? round_ : cycle) & 1)][sender];
  if (r.seen) {
    ++stats_.readings_ignored;
    return;
  }
  // Where this node's clock will stand against the sender's once its own correction in
  // progress is whole (the slew of the last close), so that rounds do not count it twice.
  const int64_t deviation_ns = map_.global_ns(local_ns) + map_.pending_ns(local_ns) -
                               schedule_.transmit_ns(cycle, sender, 0) - config_.delay_ns;
  if (!integrating_ && std::llabs(deviation_ns) > config_.deviation_max_ns) {  // a stall's stamp
    ++stats_.readings_ignored;
    return;
  }
  r = {deviation_ns, true};
  ++stats_.readings;
}

void ClockSync::end_integration() { integrating_ = false; }

bool ClockSync::integrate(int64_t local_ns) {
  // The peers' deviations only: its own clock is what is in question.
  std::array<int64_t, kMaxNodes> values{};
  int count = 0;
  uint64_t senders = 0;
  auto& round = readings_[static_cast<size_t>(round_ & 1)];
  for (size_t s = 0; s < round.size(); ++s) {
    Reading& r = round[s];
    if (r.seen) {
      values[static_cast<size_t>(count++)] = r.deviation_ns;
      senders |= uint64_t{1} << s;
    }
    r.seen = false;
  }
  ++integrate_rounds_;
  // f liars need 2f + 1 peers to be outvoted: wait for that many (a node started mid-cycle hears
  // part of a round). After integrate_wait_rounds with fewer, none included (the cluster is
  // starting: the others integrate too and are silent; or the readings are too rare: a daemon whose
  // RX lcore sleeps takes few at 1 ms cycles, and one that heard a peer once and then none waited
  // for ever), a cold start on its own clock. Fewer than 2f + 1 peers cannot
  // outvote f liars: a lone peer may be the liar (with f shrunk to what the values outvote, one
  // two-faced clock heard alone set every starting node apart by up to half its reach: sim seeds
  // 17 and 123 of the otfp clock sweep), and its own clock is no vote (a restarted node's is
  // unsynchronised). The bounded corrections bring it in from where it stands.
  const int f = config_.faults_tolerated;
  // The midpoint must be one the readings agree on: all but f of them within deviation_max_ns of
  // it, as correct peers' are (within the hypothesis the midpoint lies among theirs). A frame sent
  // late (otfp sends one that missed its instant up to a cycle late) or stamped after a stall reads
  // as an offset of its lateness: two such among three peers made the midpoint theirs (a daemon at
  // 1 ms cycles jumped 3.8 ms and stayed alone), and a jump then cannot be taken back.
  int64_t m = 0;
  bool agreed = false;
  if (count >= 2 * f + 1) {
    m = fault_tolerant_midpoint(values.data(), count, f);
    int near = 0;
    for (int k = 0; k < count; ++k) near += std::llabs(values[static_cast<size_t>(k)] - m) <= config_.deviation_max_ns ? 1 : 0;
    agreed = near >= count - f;
    if (!agreed) ++stats_.integrations_disagreed;
  }
  if (!agreed) {
    if (integrate_rounds_ < config_.integrate_wait_rounds) return false;
    stats_.senders_last = senders;
    stats_.round_last = round_;
    ++stats_.cold_starts;
    end_integration();
    ++round_;
    return true;
  }
  map_ = ClockMap{local_ns, map_.global_ns(local_ns) - m, 0, 0, config_.slew_ns};
  for (Reading& r : readings_[static_cast<size_t>((round_ + 1) & 1)]) r.seen = false;
  integrating_ = false;
  within_precision_ = true;
  stats_.senders_last = senders;
  stats_.round_last = round_;
  round_ = schedule_.cycle_of(map_.g0);
  stats_.offset_ns_last = m;
  ++stats_.integrations;
  return true;
}

void ClockSync::close_round(int64_t local_ns) {
  ++stats_.rounds;
  if (integrating_) {
    if (!integrate(local_ns)) {
      ++stats_.rounds_short;
      ++round_;
    }
    return;
  }
  std::array<int64_t, kMaxNodes> values{};
  int count = 0;
  values[static_cast<size_t>(count++)] = 0;  // its own clock: no deviation from itself
  uint64_t senders = 0;
  auto& round = readings_[static_cast<size_t>(round_ & 1)];
  for (int s = 0; s < nodes_; ++s) {
    Reading& r = round[static_cast<size_t>(s)];
    if (r.seen) {
      values[static_cast<size_t>(count++)] = r.deviation_ns;
      senders |= uint64_t{1} << s;
    }
    r.seen = false;
  }
  stats_.senders_last = senders;
  stats_.round_last = round_;
  const int f = config_.faults_tolerated;
  int64_t step_ns = 0;
  // At least one peer, and enough values that f liars cannot pick the midpoint.
  if (count >= std::max(2, 2 * f + 1)) {
    const int64_t m = fault_tolerant_midpoint(values.data(), count, f);
    stats_.offset_ns_last = m;
    stats_.offset_ns_max = std::max<int64_t>(stats_.offset_ns_max, std::llabs(m));
    step_ns = std::clamp(-m, -config_.step_max_ns, config_.step_max_ns);
    const bool whole = std::llabs(m) <= config_.step_max_ns;
    if (!whole) ++stats_.rounds_clipped;
    add_to_window(round_, step_ns, std::llabs(m));
    within_precision_ = std::llabs(m) <= config_.precision_ns;
    if (!within_precision_) ++stats_.rounds_out;
  } else {
    ++stats_.rounds_short;
    add_to_window(round_, 0, 0);  // no correction: a sum short of one round's (a common part of
                                  // 25 us in a 12.8 s window: 2 ppm), not a window lost
  }
  const double rate = count_window(map_.rate);
  stats_.correction_ns_last = step_ns;
  stats_.rate_ppm = rate * 1e6;
  const int64_t g = map_.global_ns(local_ns);
  map_ = ClockMap{local_ns, g, rate, step_ns, config_.slew_ns};
  // Readings of the next round taken before this correction: as if taken after it.
  for (Reading& r : readings_[static_cast<size_t>((round_ + 1) & 1)])
    if (r.seen) r.deviation_ns += step_ns;
  ++round_;
  TOB_ASSERT(map_.global_ns(local_ns) == g);  // continuous: global time never jumps
}

// A round's correction `step_ns` (its midpoint `offset_ns` away, clipped to step_max_ns) into
// the window it falls in; the window's sum once its last round closed.
void ClockSync::add_to_window(int64_t round, int64_t step_ns, int64_t offset_ns) {
  if (round < 0) return;
  const int w = config_.rate_window_rounds;
  const bool whole = offset_ns <= config_.step_max_ns;
  if (round / w != window_) {
    window_ = round / w;
    window_sum_ns_ = 0;
    window_rounds_ = 0;
    window_wild_ = false;
    // A clipped correction leaves the rest of the offset to the next rounds: one clipped just
    // before the window would add an offset that is not a rate to its sum.
    window_carry_in_ = !last_whole_;
  }
  window_sum_ns_ += step_ns;
  ++window_rounds_;
  window_wild_ |= offset_ns > 2 * config_.step_max_ns;
  last_whole_ = whole;
  if (round % w != w - 1) return;
  // Exact: every round of it closed here (one started mid-window, after integration, is not),
  // none far off, and no clipped offset carried in or out. A round clipped inside it is made up
  // by the next ones within it, so its sum is still the offset the rate made: a delay error
  // common to all nodes near step_max_ns clips some rounds on every node, and lost for that it
  // left no window to learn from (tests/sim/testdata/mars/clock_common_delay_error.txt). A
  // midpoint beyond twice the largest step is an offset, not a rate: a group of nodes heard
  // again after a cold start apart.
  const bool exact = window_rounds_ == w && !window_carry_in_ && !window_wild_ && whole;
  if (window_rounds_ == w && !exact) ++stats_.rate_windows_inexact;
  last_window_ = {window_, exact ? window_sum_ns_ : kNoSum};
  own_windows_[static_cast<size_t>(window_ % kWindowsKept)] = last_window_;
}

void ClockSync::on_peer_window(NodeId sender, const ClockWindow& pw) {
  if (!started_ || sender == config_.self || sender >= nodes_ || pw.window < 0 || pw.sum_ns == kNoSum) return;
  const int64_t w = config_.rate_window_rounds;
  // Only windows still to be counted (count_window takes one kWindowWaitRounds after its end),
  // and none that ends after the next round (a correct peer is at most a round ahead).
  const int64_t last = (pw.window + 1) * w - 1;
  if (last > round_ + 1 || last + kWindowWaitRounds < round_) return;
  peer_windows_[static_cast<size_t>(pw.window % kWindowsKept)][sender] = pw;
}

// The window that ended kWindowWaitRounds rounds ago into the rate correction (the peers' sums come
// in their frames of the next cycle, or the one after when a frame was built before its sender
// closed the round): its sum less the part the nodes' sums share, the fault-tolerant midpoint of
// this node's and the peers' (within the range of the correct nodes' whatever f liars say). Too
// few sums known: it does not count. The rate correction from `rate`.
double ClockSync::count_window(double rate) {
  const int64_t w = config_.rate_window_rounds;
  const int64_t end = round_ - kWindowWaitRounds;
  if (end < 0 || end % w != w - 1) return rate;
  const int64_t k = end / w;
  const ClockWindow& own = own_windows_[static_cast<size_t>(k % kWindowsKept)];
  if (own.window != k || own.sum_ns == kNoSum) return rate;
  std::array<int64_t, kMaxNodes> values{};
  int count = 0;
  values[static_cast<size_t>(count++)] = own.sum_ns;
  for (const ClockWindow& p : peer_windows_[static_cast<size_t>(k % kWindowsKept)])
    if (p.window == k) values[static_cast<size_t>(count++)] = p.sum_ns;
  const int f = config_.faults_tolerated;
  if (count < std::max(2, 2 * f + 1)) {
    ++stats_.rate_windows_unknown;
    return rate;
  }
  const int64_t common = fault_tolerant_midpoint(values.data(), count, f);
  stats_.common_step_ns_last = common / w;
  ++stats_.rate_windows;
  const double rate_max = config_.rate_max_ppm * 1e-6;
  const double error = static_cast<double>(own.sum_ns - common) /
                       (static_cast<double>(w) * static_cast<double>(schedule_.cycle_ns()));
  return std::clamp(rate * (1 - config_.rate_leak) + config_.rate_gain * error, -rate_max, rate_max);
}

PrecisionBound clock_precision_bound(const PrecisionBoundInput& in) {
  const double rho = (in.drift_ppm + in.rate_max_ppm) * 1e-6;
  PrecisionBound b;
  b.reading_error_ns = in.jitter_ns / 2 + static_cast<int64_t>(std::ceil(rho * static_cast<double>(in.delay_ns + in.jitter_ns))) + 2;
  const auto drift_round_ns = static_cast<int64_t>(std::ceil(rho * static_cast<double>(in.round_ns)));
  b.drift_round_ns = drift_round_ns;
  b.precision_ns = 4 * b.reading_error_ns + 12 * drift_round_ns;
  b.self_check_ns = b.precision_ns + b.reading_error_ns + 2 * drift_round_ns;
  return b;
}

int64_t clock_bound_after_round(const PrecisionBound& b, int64_t step_max_ns, int64_t before_ns, RoundHypothesis h) {
  TOB_ASSERT(before_ns >= b.precision_ns && step_max_ns > 0);
  const int64_t eps_round_ns = b.reading_error_ns + 2 * b.drift_round_ns;  // eps'
  int64_t after_ns = 0;
  switch (h) {
    case RoundHypothesis::contracting:
      // Floors: the spread is a whole number of ns, and the map is monotone in the bound.
      after_ns = std::max((before_ns + b.precision_ns) / 2, before_ns - step_max_ns + eps_round_ns + 2 * b.drift_round_ns);
      break;
    case RoundHypothesis::bounded: after_ns = before_ns + 2 * eps_round_ns + 2 * b.drift_round_ns; break;
    case RoundHypothesis::unbounded: after_ns = before_ns + 2 * step_max_ns + 2 * b.drift_round_ns; break;
  }
  TOB_ASSERT(after_ns >= b.precision_ns);
  return after_ns;
}

}  // namespace tob::core
