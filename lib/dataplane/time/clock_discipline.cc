#include "dataplane/time/clock_discipline.h"

#include <algorithm>
#include <cstdlib>

namespace tob::dataplane {

namespace {
constexpr unsigned kReadingsPerBurst = 32;
constexpr int kBurstsPerStep = 8;        // bounded work per step: 256 readings
constexpr double kDelayErrorGain = 1.0 / 64;
constexpr double kSenderDevGain = 1.0 / 16;  // per sender: about one reading a cycle
}  // namespace

core::Result<ClockDiscipline> ClockDiscipline::create(const ClusterConfig& cfg, const core::ScheduleConfig& schedule,
                                                      core::NodeId self, TscClock& clock) {
  ClockDiscipline d(cfg.sync, clock);
  if (cfg.sync == ClockSyncMode::off) return d;
  core::ClockSyncConfig c;
  c.schedule = schedule;
  c.self = self;
  c.faults_tolerated = (static_cast<int>(schedule.slots.size()) - 1) / 3;
  c.delay_ns = cfg.delay_ns;
  // Room for the oscillators' drift and for the ensemble's common rate, which follows the error in
  // delay_ns (docs/operations.md "Clock synchronisation in band"): 100 ppm per 10 us at 100 ms.
  c.rate_max_ppm = static_cast<double>(cfg.sync_rate_max_ppm);
  // A reading further out than this is a stall's or a faulty clock's, never a correct node's: a
  // late frame of a sender that the hypervisor held (1-13 ms here) must not move the clock.
  // Correct nodes stay within the precision of each other; four times it leaves room for the
  // reading error. Beyond the slot the frame would not be in its window anyway.
  int64_t slot_ns = INT64_MAX;
  for (const core::SlotConfig& sl : schedule.slots) slot_ns = std::min(slot_ns, sl.length_ns);
  c.deviation_max_ns = std::min({schedule.cycle_ns / 4, slot_ns - schedule.decision_margin_ns - cfg.delay_ns,
                                 4 * std::max<int64_t>(schedule.precision_ns, 1)});
  auto sync = core::ClockSync::create(c);
  if (!sync) return core::Error{"[timing] sync = " + std::string(to_string(cfg.sync)) + ": " + sync.error().message};
  auto sched = core::Schedule::create(schedule);
  if (!sched) return sched.error();
  d.sync_.emplace(std::move(sync.value()));
  d.schedule_.emplace(std::move(sched.value()));
  d.faults_ = c.faults_tolerated;
  d.delay_ns_ = cfg.delay_ns;
  // The poll-interval stamp's error is the interval: a quarter of the precision at most (so a
  // reading's error stays well inside what the self-check allows), 20..500 us.
  d.gap_max_ns_ = std::clamp<int64_t>(schedule.precision_ns / 4, 20'000, 500'000);
  d.wake_clip_ns_ = static_cast<double>(4 * d.gap_max_ns_);
  return d;
}

bool ClockDiscipline::step(rte_ring* ring, uint64_t upto_tsc) {
  if (!active()) return false;
  TOB_ASSERT(sync_.has_value() && ring != nullptr);
  ClockReading batch[kReadingsPerBurst];
  for (int b = 0; b < kBurstsPerStep; ++b) {
    const unsigned n = rte_ring_dequeue_burst_elem(ring, batch, sizeof(ClockReading), kReadingsPerBurst, nullptr);
    for (unsigned i = 0; i < n; ++i) take(batch[i]);
    if (n < kReadingsPerBurst) break;
  }
  if (upto_tsc == 0) return false;  // the RX role has not polled yet
  const bool changed = sync_->on_time(clock_->to_local_ns(upto_tsc));
  if (!sync_->integrated() && sync_->stats().rounds >= kColdStartRounds && sync_->stats().readings == 0) {
    sync_->end_integration();  // nobody heard: a cold start on its own clock
    cold_start_ = true;
  }
  if (!changed || !applied()) return false;
  clock_->publish_map(sync_->map());
  return true;
}

uint64_t ClockDiscipline::next_due_tsc() const {
  if (!active()) return UINT64_MAX;
  const int64_t l = sync_->next_deadline_local_ns();
  return l == INT64_MAX ? UINT64_MAX : clock_->local_to_tsc(l);
}

int64_t ClockDiscipline::deviation_ns(const ClockReading& r) const {
  // This node's clock as it stands (applied: through the map; external: the source itself).
  const int64_t mine = applied() ? sync_->global_ns(r.local_ns) : r.local_ns;
  return mine - schedule_->transmit_ns(r.cycle, r.sender, 0) - delay_ns_;
}

void ClockDiscipline::take(const ClockReading& r) {
  if (r.sender >= schedule_->node_count()) return;
  if (r.has_window) sync_->on_peer_window(r.sender, r.window);
  if (!r.timed) {  // only the sender's wake-ups
    place_wake_samples(r);
    return;
  }
  sync_->on_frame(r.sender, r.cycle, r.local_ns);
  const int64_t dev = deviation_ns(r);
  note_sender_deviation(r.sender, dev);
  place_wake_samples(r);
  if (!sync_->integrated()) return;
  if (std::llabs(dev) > sync_->config().deviation_max_ns) return;  // no clock reading (ClockSync agrees)
  delay_error_ns_ = delay_error_seen_ ? delay_error_ns_ + kDelayErrorGain * (static_cast<double>(dev) - delay_error_ns_)
                                      : static_cast<double>(dev);
  delay_error_seen_ = true;
  if (r.cycle < spread_cycle_) return;
  if (r.cycle > spread_cycle_) {
    close_spread();
    spread_cycle_ = r.cycle;
  }
  if (spread_count_ < core::kMaxNodes - 1) spread_values_[static_cast<size_t>(spread_count_++)] = dev;
}

// Telemetry (time/release_monitor.h): places the sender's wake-ups for release instants on this
// node's clock. Its offset to the sender is the sender's mean deviation less the mean of all
// senders' (the part they share: the error in [timing] delay_ns), so the peers' average is taken
// to be this clock. The mean takes every reading within a quarter cycle, not only the clock
// readings (whose bound at short slots is below the poll-time stamps' error), each moving it by
// at most wake_clip_ns_ / 16: the odd frame of a stalled sender hardly moves it.
void ClockDiscipline::note_sender_deviation(core::NodeId sender, int64_t dev) {
  if (std::llabs(dev) > schedule_->cycle_ns() / 4) return;
  double& mean = sender_dev_ns_[sender];
  const auto d = static_cast<double>(dev);
  mean = sender_dev_seen_[sender] ? mean + kSenderDevGain * std::clamp(d - mean, -wake_clip_ns_, wake_clip_ns_) : d;
  sender_dev_seen_[sender] = true;
}

void ClockDiscipline::place_wake_samples(const ClockReading& r) {
  if (release_ == nullptr || r.wake_count == 0 || !sender_dev_seen_[r.sender]) return;
  if (r.wake_count == ClockReading::kWakeMalformed) {
    release_->note_malformed();
    return;
  }
  double sum = 0;
  int seen = 0;
  for (int k = 0; k < schedule_->node_count(); ++k) {
    if (!sender_dev_seen_[static_cast<size_t>(k)]) continue;
    sum += sender_dev_ns_[static_cast<size_t>(k)];
    ++seen;
  }
  const auto offset = static_cast<int64_t>(sender_dev_ns_[r.sender] - sum / seen);
  release_->on_peer(r.sender, std::span<const core::WakeSample>(r.wake, std::min<size_t>(r.wake_count, core::kWakeSamplesMax)),
                    offset);
}

void ClockDiscipline::close_spread() {
  if (spread_count_ == 0) return;
  TOB_ASSERT(spread_count_ < core::kMaxNodes);  // take() leaves room for its own 0
  spread_values_[static_cast<size_t>(spread_count_++)] = 0;  // its own clock
  const int f = std::min(faults_, (spread_count_ - 1) / 2);
  std::sort(spread_values_.begin(), spread_values_.begin() + spread_count_);
  spread_ns_ = spread_values_[static_cast<size_t>(spread_count_ - 1 - f)] - spread_values_[static_cast<size_t>(f)];
  spread_max_ns_ = std::max(spread_max_ns_, spread_ns_);
  spread_count_ = 0;
}

ClockStatus ClockDiscipline::status(uint64_t now_tsc) const {
  ClockStatus s;
  s.mode = static_cast<uint8_t>(mode_);
  if (!active()) return s;
  const core::ClockSyncStats& st = sync_->stats();
  const int64_t local = clock_->to_local_ns(now_tsc);
  s.applied = applied() ? 1 : 0;
  s.integrated = sync_->integrated() ? 1 : 0;
  s.may_send = may_send() ? 1 : 0;
  s.cold_start = cold_start_ || st.cold_starts > 0 ? 1 : 0;
  // Applied: the last round's midpoint (what the next correction takes out). External: how far
  // the source stands from the ensemble's time that the observer's map follows.
  s.offset_ns = applied() ? st.offset_ns_last : local - sync_->global_ns(local);
  s.correction_ns = st.correction_ns_last;
  s.map_offset_ns = applied() ? sync_->global_ns(local) - local : 0;
  s.rate_ppm = st.rate_ppm;
  s.precision_ns = sync_->config().precision_ns;
  s.spread_ns = spread_ns_;
  s.spread_max_ns = spread_max_ns_;
  s.offset_max_ns = st.offset_ns_max;
  s.delay_error_ns = static_cast<int64_t>(delay_error_ns_);
  s.rounds = st.rounds;
  s.rounds_short = st.rounds_short;
  s.rounds_clipped = st.rounds_clipped;
  s.rounds_out = st.rounds_out;
  s.readings = st.readings;
  s.readings_ignored = st.readings_ignored;
  s.integrations = st.integrations;
  s.integrations_disagreed = st.integrations_disagreed;
  s.common_step_ns = st.common_step_ns_last;
  s.rate_windows = st.rate_windows;
  s.rate_windows_unknown = st.rate_windows_unknown;
  s.rate_windows_inexact = st.rate_windows_inexact;
  return s;
}

}  // namespace tob::dataplane
