#include "sim/simulator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdarg>
#include <cinttypes>
#include <cstring>

#include "core/batch.h"
#include "core/engine_factory.h"
#include "core/otfp_log.h"
#include "sim/format.h"
#include "core/wire.h"

namespace tob::sim {
namespace {

constexpr size_t kTraceRing = 256;
constexpr size_t kRxBacklogMax = 2048;  // a frozen node's RX ring (descriptors)
// A (re)started node with clock sync listens this many rounds for peers to integrate its clock
// from, then starts on its own clock (a cold start: the whole cluster starting together).
constexpr uint64_t kColdStartRounds = 2;
// A node is in the precision samples from three cycles after its engine started.
constexpr int64_t kJudgedAfterCycles = 3;

double drift_bound_ppm(const Scenario& s) {
  double d = s.drift_ppm_max;
  for (double x : s.drift_ppm) d = std::max(d, std::abs(x));
  return d;
}

// One incarnation's synchronisation counters, added to its node's life.
void add_clock_stats(ClockLife& cl, const core::ClockSyncStats& cs) {
  cl.rounds += cs.rounds;
  cl.rounds_out += cs.rounds_out;
  cl.rounds_clipped += cs.rounds_clipped;
  cl.integrations += cs.integrations;
  cl.cold_starts += cs.cold_starts;
  cl.offset_ns_max = std::max(cl.offset_ns_max, cs.offset_ns_max);
  cl.rate_windows += cs.rate_windows;
  cl.rate_windows_unknown += cs.rate_windows_unknown;
  cl.rate_windows_inexact += cs.rate_windows_inexact;
}

// The frame with the sender's rate window appended, as the daemon's TX path does.
std::vector<uint8_t> with_clock_window(const std::vector<uint8_t>& frame, const core::ClockWindow& window) {
  std::array<uint8_t, core::kClockWindowBytes> body{};
  core::encode_clock_window(window, body);
  std::vector<uint8_t> out(frame.size() + core::kClockWindowSectionBytes);
  std::copy(frame.begin(), frame.end(), out.begin());
  const size_t n = core::append_section(out, frame.size(), core::SectionType::clock_window, 0, body);
  if (n == 0) return frame;  // the largest frame: no room (the daemon reserves it)
  out.resize(n);
  return out;
}

// What a Byzantine clock says its latest window's corrections summed to: anything within four
// times the bound on every round's.
core::ClockWindow lie_window(Rng& rng, const core::ClockSync& sync) {
  core::ClockWindow w = sync.window();
  const int64_t reach = 4 * sync.config().step_max_ns * sync.config().rate_window_rounds;
  w.sum_ns = rng.range(-reach, reach);
  return w;
}

}  // namespace

const char* to_string(FaultKind k) {
  switch (k) {
    case FaultKind::crash: return "crash";
    case FaultKind::send_omission: return "send-omission";
    case FaultKind::receive_omission: return "receive-omission";
    case FaultKind::corrupt: return "corrupt";
    case FaultKind::late_frame: return "late-frame";
    case FaultKind::link_down: return "link-down";
  }
  return "unknown";
}

void fill_payload(std::span<uint8_t> out, core::NodeId sender, uint64_t msg_id) {
  for (size_t k = 0; k < out.size(); ++k)
    out[k] = static_cast<uint8_t>(sender * 131u + msg_id * 31u + k * 7u);
}

bool payload_matches(std::span<const uint8_t> p, core::NodeId sender, uint64_t msg_id) {
  for (size_t k = 0; k < p.size(); ++k)
    if (p[k] != static_cast<uint8_t>(sender * 131u + msg_id * 31u + k * 7u)) return false;
  return true;
}

core::PrecisionBound precision_bound(const Scenario& s) {
  const double drift = drift_bound_ppm(s);
  return core::clock_precision_bound({s.jitter_ns, s.delay_ns, drift, 2 * drift, s.cycle_ns});
}

int64_t clock_judged_from_cycle(const Scenario& s) {
  const core::ScheduleConfig sc = s.node_template.schedule.slots.empty()
                                      ? core::ScheduleConfig::equal_slots(s.nodes, s.cycle_ns)
                                      : s.node_template.schedule;
  const int64_t step_max_ns = std::max<int64_t>(1, sc.decision_margin_ns / 2);  // ClockSyncConfig's default
  const auto cycles = [&](int64_t ns) { return (ns + s.cycle_ns - 1) / s.cycle_ns; };
  return cycles(s.start_stagger_ns) + static_cast<int64_t>(kColdStartRounds) + kJudgedAfterCycles +
         (2 * s.clock_offset_ns_max + step_max_ns - 1) / step_max_ns + 1;
}

core::Result<Simulator> Simulator::create(const Scenario& s) {
  if (s.nodes < 3 || s.nodes > core::kMaxNodes)
    return core::Error{"--nodes must be 3..64 (got " + std::to_string(s.nodes) + ")"};
  if (s.cycles < 1) return core::Error{"--cycles must be at least 1"};
  if (s.payload_min < 0 || s.payload_max < s.payload_min)
    return core::Error{"payload size range is empty"};
  for (double p : {s.loss, s.burst, s.burst_loss, s.burst_exit, s.dup, s.corrupt, s.single_copy_loss})
    if (p < 0 || p > 1) return core::Error{"probabilities must be within [0, 1]"};
  core::ScheduleConfig sc = core::ScheduleConfig::equal_slots(s.nodes, s.cycle_ns);
  if (!s.node_template.schedule.slots.empty()) sc = s.node_template.schedule;
  auto sched = core::Schedule::create(sc);
  if (!sched) return sched.error();
  Simulator sim(s, std::move(sched.value()));
  sim.scenario_.node_template.schedule = sc;
  for (int i = 0; i < s.nodes; ++i) {
    auto ok = sim.node_config(i).validate();
    if (!ok) return ok.error();
  }
  if (static_cast<size_t>(s.payload_max) > s.node_template.payload_bytes_max)
    return core::Error{"payload size above the node's maximum payload"};
  for (const Fault& f : s.faults)
    if (f.node >= s.nodes || (f.peer != core::kNoNode && f.peer >= s.nodes))
      return core::Error{"fault names a node outside the cluster"};
  if (!s.drift_ppm.empty() && static_cast<int>(s.drift_ppm.size()) != s.nodes)
    return core::Error{"explicit drifts must name every node's"};
  if (!s.clock_offset_ns.empty() && static_cast<int>(s.clock_offset_ns.size()) != s.nodes)
    return core::Error{"explicit clock offsets must name every node's"};
  if (s.nodes < 64 && (s.byzantine_clock_nodes >> s.nodes) != 0) return core::Error{"a Byzantine clock outside the cluster"};
  if (s.drift_ppm_max < 0 || s.drift_wander_ppm < 0 || drift_bound_ppm(s) > 1000)
    return core::Error{"drift must be within 0..1000 ppm"};
  if (s.delay_ns + s.jitter_ns / 2 + s.clock_delay_error_ns < 0)
    return core::Error{"the delay error must leave a configured delay of 0 or more"};
  if (s.byzantine_clocks < 0 || s.byzantine_clocks > s.nodes - 1)
    return core::Error{"--byzantine-clocks must leave at least one correct clock"};
  if (s.clock_sync) {
    auto cs = core::ClockSync::create(sim.clock_sync_config(0));
    if (!cs) return core::Error{cs.error().message};
  }
  return sim;
}

Simulator::Simulator(const Scenario& scenario, core::Schedule schedule)
    : scenario_(scenario),
      schedule_(std::move(schedule)),
      rng_(scenario.seed),
      net_rng_(scenario.seed ^ 0x6E65740000000000ull),
      load_rng_(scenario.seed ^ 0x6C6F616400000000ull),
      fault_rng_(scenario.seed ^ 0x6661756C74000000ull),
      clock_rng_(scenario.seed ^ 0x636C6F636B000000ull),
      bound_(precision_bound(scenario)) {
  // Byzantine clocks' default reach (docs/simulator.md): under mars, frames stay inside their
  // reception windows (mars would treat them as omissions otherwise, a fault of another kind):
  // early by the delay at most (they arrive when they leave), late by half the slot after the
  // margin; under otfp, which uses frames whatever their timing, a quarter cycle either way.
  const core::ScheduleConfig& sc = schedule_.config();
  if (scenario_.order == core::Order::mars) {
    byz_early_ns_ = scenario_.delay_ns;
    byz_late_ns_ = (sc.slots[0].length_ns - sc.decision_margin_ns) / 2;
  } else {
    byz_early_ns_ = sc.cycle_ns / 4;
    byz_late_ns_ = sc.cycle_ns / 4;
  }
  if (scenario_.byzantine_early_ns >= 0) byz_early_ns_ = scenario_.byzantine_early_ns;
  if (scenario_.byzantine_late_ns >= 0) byz_late_ns_ = scenario_.byzantine_late_ns;
}

core::ClockSyncConfig Simulator::clock_sync_config(int i) const {
  core::ClockSyncConfig c;
  c.schedule = scenario_.node_template.schedule;
  c.self = static_cast<core::NodeId>(i);
  c.faults_tolerated = (scenario_.nodes - 1) / 3;
  // The mean of the delays it meets, off by the error every node shares.
  c.delay_ns = scenario_.delay_ns + scenario_.jitter_ns / 2 + scenario_.clock_delay_error_ns;
  c.rate_max_ppm = 2 * drift_bound_ppm(scenario_);
  // A frame that arrives after its reception window closed is a timing failure (mars ignores it,
  // the fault injector's late frames are such): no clock reading either, or it would count as a
  // faulty clock beyond the f that the midpoint outvotes.
  int64_t slot_ns = INT64_MAX;
  for (const core::SlotConfig& sl : c.schedule.slots) slot_ns = std::min(slot_ns, sl.length_ns);
  c.deviation_max_ns = std::min(c.schedule.cycle_ns / 4, slot_ns - c.schedule.decision_margin_ns - c.delay_ns);
  // The self-check: out by more than a correct node can be (the bound), or than the schedule's
  // own precision, whichever is larger (small bounds would silence nodes at a cold start).
  c.precision_ns = std::max(bound_.self_check_ns, c.schedule.precision_ns);
  return c;
}

core::NodeConfig Simulator::node_config(int i) const {
  core::NodeConfig c = scenario_.node_template;
  c.self = static_cast<core::NodeId>(i);
  return c;
}

const core::Engine* Simulator::node(int i) const {
  const SimNode& n = nodes_[static_cast<size_t>(i)];
  return n.alive && n.node ? n.node.get() : nullptr;
}

void Simulator::push(Ev e) {
  e.order = order_++;
  queue_.push(e);
}

void Simulator::trace(const std::string& line) {
  if (trace_file_ != nullptr) std::fprintf(trace_file_, "%s\n", line.c_str());
  if (trace_ring_.size() < kTraceRing) {
    trace_ring_.push_back(line);
  } else {
    trace_ring_[trace_next_] = line;
  }
  trace_next_ = (trace_next_ + 1) % kTraceRing;
}

std::vector<std::string> Simulator::recent_trace() const {
  if (trace_ring_.size() < kTraceRing) return trace_ring_;
  std::vector<std::string> out;
  for (size_t k = 0; k < kTraceRing; ++k) out.push_back(trace_ring_[(trace_next_ + k) % kTraceRing]);
  return out;
}

uint32_t Simulator::store_frame(std::span<const uint8_t> bytes) {
  uint32_t idx;
  if (!pool_free_.empty()) {
    idx = pool_free_.back();
    pool_free_.pop_back();
  } else {
    idx = static_cast<uint32_t>(pool_.size());
    pool_.emplace_back();
    pool_refs_.push_back(0);
  }
  pool_[idx].assign(bytes.begin(), bytes.end());
  pool_refs_[idx] = 1;
  return idx;
}

void Simulator::release_frame(uint32_t idx) {
  if (--pool_refs_[idx] == 0) pool_free_.push_back(idx);
}

// --- Clocks: the oscillator, through the sync map when clock sync is on -------------------

int64_t Simulator::node_time_ns(const SimNode& sn, int64_t t) const {
  const int64_t local = sn.osc.local_ns(t);
  return (sn.sync ? sn.sync->global_ns(local) : local) + sn.clock_shift_ns;
}

int64_t Simulator::virtual_ns(const SimNode& sn, int64_t node_ns) const {
  const int64_t global = node_ns - sn.clock_shift_ns;
  return sn.osc.true_ns(sn.sync ? sn.sync->local_ns(global) : global);
}

// Closes the rounds that are due; a node still integrating starts its engine once integrated,
// or after kColdStartRounds rounds without. True when it started the engine here.
bool Simulator::tick_clock(int i, int64_t now) {
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  if (!sn.sync) return false;
  const bool was_in = sn.sync->may_send();
  const core::ClockSyncStats before = sn.sync->stats();
  const bool changed = sn.sync->on_time(sn.osc.local_ns(now));
  const core::ClockSyncStats& after = sn.sync->stats();
  if (after.integrations != before.integrations) {
    record_clock_round(i, ClockRoundKind::integration, schedule_.cycle_of(sn.sync->global_ns(sn.osc.local_ns(now))));
  } else if (after.cold_starts != before.cold_starts) {
    record_clock_round(i, ClockRoundKind::cold_start, after.round_last + 1);
  } else if (after.rounds != before.rounds && sn.sync->integrated() && after.round_last >= 0) {
    // Several rounds closed at once (a stall): the last one is recorded, the others are missing
    // and the checker takes them as beyond the hypothesis.
    record_clock_round(i, ClockRoundKind::round, after.round_last);
  }
  if (was_in != sn.sync->may_send())
    trace(fmt("%" PRId64 " node %d clock %s: midpoint %" PRId64 " ns (self-check at %" PRId64 " ns)", now, i,
              sn.sync->may_send() ? "back within the precision" : "out: its frames are withheld",
              sn.sync->stats().offset_ns_last, sn.sync->config().precision_ns));
  if (sn.node) {
    if (changed) sn.maps.push_back({sn.incarnation, sn.sync->map()});
    return false;
  }
  if (!sn.sync->integrated()) {
    // A cold start only when nobody is heard: else it waits to integrate (ClockSync).
    if (sn.sync->stats().rounds < kColdStartRounds || sn.sync->stats().readings > 0) return false;
    sn.sync->end_integration();
    ++records_.clocks[static_cast<size_t>(i)].cold_starts;
    record_clock_round(i, ClockRoundKind::cold_start, schedule_.cycle_of(sn.sync->global_ns(sn.osc.local_ns(now))));
  }
  start_engine(i, now);
  return true;
}

// Records a round, and at an integration or cold start whether this incarnation's clock starts
// apart: beyond the fault hypothesis, anywhere (NodeLife::clock_apart). A first start may
// cold-start (the warm-up covers the initial offsets); a restart within the hypothesis hears
// 2f + 1 peers, at most f of them Byzantine or apart.
void Simulator::record_clock_round(int i, ClockRoundKind kind, int64_t cycle) {
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  const core::ClockSyncStats& st = sn.sync->stats();
  // The driver's cold start (nobody heard) took no readings; ClockSync's took too few.
  const bool own_cold_start = kind == ClockRoundKind::cold_start && st.cold_starts == 0;
  const uint64_t senders = own_cold_start ? 0 : st.senders_last;
  records_.clock_rounds.push_back({static_cast<core::NodeId>(i), sn.incarnation, cycle, senders, kind, !sn.sync->may_send()});
  if (kind == ClockRoundKind::round) return;
  const int f = sn.sync->config().faults_tolerated;
  uint64_t unsynced = 0;
  for (size_t k = 0; k < nodes_.size(); ++k)
    if (nodes_[k].byzantine_clock || (nodes_[k].alive && nodes_[k].clock_apart)) unsynced |= uint64_t{1} << k;
  if (kind == ClockRoundKind::cold_start) {
    sn.clock_apart = sn.incarnation > 0;
  } else {
    sn.clock_apart = std::popcount(senders) < 2 * f + 1 || std::popcount(senders & unsynced) > f;
  }
  sn.rejoin_ok = false;
  if (sn.clock_apart) records_.lives[static_cast<size_t>(i)].clock_apart.push_back({sn.incarnation, cycle});
  trace(fmt("node %d incarnation %d: %s from peers %016" PRIx64 "%s", i, sn.incarnation,
            kind == ClockRoundKind::cold_start ? "cold start" : "clock integrated", senders,
            sn.clock_apart ? ": apart (beyond the fault hypothesis)" : ""));
}

void Simulator::arm_timer(int i, int64_t now) {
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  int64_t at = INT64_MAX;
  if (sn.node) at = virtual_ns(sn, sn.node->next_deadline_ns());
  if (sn.sync) {
    const int64_t l = sn.sync->next_deadline_local_ns();
    if (l != INT64_MAX) at = std::min(at, sn.osc.true_ns(l));
  }
  if (at != sn.timer_at) {
    sn.timer_at = at;
    push({std::max(at, now), 0, EvType::timer, static_cast<uint8_t>(i), 0, sn.incarnation, 0, ++sn.timer_gen});
  }
}

// --- Nodes --------------------------------------------------------------------------------

void Simulator::decided(core::NodeId node, int64_t instance, uint32_t ballot, const core::OtfpValue& value) {
  records_.decisions.push_back({node, nodes_[node].incarnation, instance, ballot, value.mask, value.digest});
  if (trace_file_ != nullptr)
    trace(fmt("node %d decides instance %" PRId64 " ballot %08x mask %016" PRIx64, node, instance, ballot, value.mask));
}

void Simulator::round_started(core::NodeId node, uint32_t ballot, int64_t low) {
  if (trace_file_ != nullptr) trace(fmt("node %d starts round %08x from instance %" PRId64, node, ballot, low));
}

void Simulator::activated(core::NodeId node, uint32_t ballot, int64_t activation) {
  if (trace_file_ != nullptr) trace(fmt("node %d activates %08x from instance %" PRId64, node, ballot, activation));
}

void Simulator::start_node(int i, int64_t now) {
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  sn.alive = true;
  sn.frozen_until = INT64_MIN;
  sn.last_turn_seq = -1;
  std::fill(std::begin(sn.burst), std::end(sn.burst), false);
  if (!scenario_.clock_sync) {
    start_engine(i, now);
    return;
  }
  // Its clock first: it listens for its peers' frames to integrate from (a restart keeps no map).
  auto sync = core::ClockSync::create(clock_sync_config(i));
  TOB_ASSERT(sync.ok());  // validated in create()
  sn.sync.emplace(std::move(sync.value()));
  sn.clock_apart = false;
  sn.sync->on_time(sn.osc.local_ns(now));
  sn.node.reset();
  trace(fmt("%" PRId64 " node %d start incarnation %d: integrating its clock", now, i, sn.incarnation));
  arm_timer(i, now);
}

void Simulator::start_engine(int i, int64_t now) {
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  core::NodeConfig c = node_config(i);
  c.first_msg_id = sn.next_msg_id;
  // Like the daemon, cut a torn tail off before appending: later records must not hide behind it.
  sn.log.resize(core::otfp_log_valid_bytes(sn.log));
  sn.log_base = sn.log.size();
  sn.log_durable = sn.log.size();
  sn.syncing = false;
  auto node = core::make_engine(scenario_.order, c, sn.log);
  TOB_ASSERT(node.ok());  // validated in create(); the log is ours
  sn.node = std::move(node.value());
  if (scenario_.order == core::Order::otfp) static_cast<core::OtfpNode*>(sn.node.get())->set_observer(this);
  sn.judged_from_ns = now + kJudgedAfterCycles * scenario_.cycle_ns;
  std::vector<int64_t>& starts = records_.lives[static_cast<size_t>(i)].engine_start_ns;
  starts.resize(static_cast<size_t>(sn.incarnation) + 1, INT64_MAX);
  starts[static_cast<size_t>(sn.incarnation)] = now;
  if (sn.sync) sn.maps.push_back({sn.incarnation, sn.sync->map()});
  trace(fmt("%" PRId64 " node %d start incarnation %d", now, i, sn.incarnation));
  sn.node->on_time(node_time_ns(sn, now));
  after_call(i, now);
}

void Simulator::after_call(int i, int64_t now) {
  handle_actions(i, now);
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  if (!sn.alive) return;
  if (scenario_.fsync_ns_max == 0) {
    // Durable as soon as written: the engine hears so at once.
    while (sn.log_durable < sn.log.size()) {
      sn.log_durable = sn.log.size();
      sn.node->on_durable(sn.log_durable - sn.log_base);
      handle_actions(i, now);
    }
  } else if (!sn.syncing && sn.log_durable < sn.log.size()) {
    start_sync(i, now);
  }
  arm_timer(i, now);
}

void Simulator::handle_actions(int i, int64_t now) {
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  const core::Actions& a = sn.node->take_actions();
  const auto id = static_cast<core::NodeId>(i);
  // The log first: records reach stable storage before the frames that depend on them leave.
  sn.log.insert(sn.log.end(), a.persist.begin(), a.persist.end());
  for (const core::TxFrame& tx : a.tx) {
    hold_or_send(i, tx, store_frame(tx.bytes));
    if (tx.copy != 0) continue;
    // Record the messages that leave in this frame (validity and no-silent-loss checks).
    const core::DecodeResult d = core::decode_frame(tx.bytes);
    TOB_ASSERT(d.ok());
    core::SectionView s;
    if (d.view.find_section(core::SectionType::app_batch, s)) {
      core::BatchReader r(s.body);
      for (core::AppMessage m; r.next(m);)
        records_.sent.push_back({id, sn.incarnation, m.msg_id, tx.cycle});
    }
  }
  for (const core::Delivery& d : a.deliveries) {
    if (d.turn_seq != sn.last_turn_seq) {
      sn.last_turn_seq = d.turn_seq;
      sn.ordinal = 0;
    }
    records_.deliveries.push_back({id, sn.incarnation, d.sender, d.cycle, d.turn_seq, sn.ordinal++,
                                   d.msg_id, now, payload_matches(d.payload, d.sender, d.msg_id), d.release_ns});
    if (trace_file_ != nullptr)
      trace(fmt("%" PRId64 " node %d deliver sender %d cycle %" PRId64 " msg %" PRIu64, now, i,
                d.sender, d.cycle, d.msg_id));
  }
  for (const core::MembershipEvent& e : a.events) {
    records_.events.push_back({id, sn.incarnation, e, now});
    if (e.kind == core::EventKind::self_shutdown) records_.lives[static_cast<size_t>(i)].shut_down = true;
    trace(fmt("%" PRId64 " node %d cycle %" PRId64 " %s node %d%s%s members %016" PRIx64, now, i,
              e.cycle, core::to_string(e.kind), e.node, e.reason == core::Reason::none ? "" : ": ",
              e.reason == core::Reason::none ? "" : core::to_string(e.reason), e.members_after));
  }
  for (const core::Undelivered& u : a.undelivered)
    records_.undelivered.push_back({id, sn.incarnation, u});
}

// --- The acceptor log's storage -------------------------------------------------------------

void Simulator::hold_or_send(int i, const core::TxFrame& tx, uint32_t frame) {
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  const int64_t at = virtual_ns(sn, tx.tx_ns);
  // It waits for the records it names (a batch segment, a retransmission: none).
  const size_t needs = sn.log_base + tx.records_needed(sn.log.size() - sn.log_base);
  if (sn.log_durable >= needs || scenario_.fsync_ns_max == 0) {
    push({at, 0, EvType::transmit, static_cast<uint8_t>(i), tx.copy, sn.incarnation, frame, 0});
    return;
  }
  sn.held.push_back({at, needs, frame, tx.copy});
  ++records_.frames_held_for_log;
}

void Simulator::start_sync(int i, int64_t now) {
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  sn.syncing = true;
  const int64_t took = rng_.range(scenario_.fsync_ns_min, scenario_.fsync_ns_max);
  // gen: the log bytes this sync makes durable (everything written when it started).
  push({now + took, 0, EvType::synced, static_cast<uint8_t>(i), 0, sn.incarnation, 0, sn.log.size()});
}

void Simulator::on_synced(const Ev& e) {
  SimNode& sn = nodes_[e.node];
  if (!sn.alive || e.incarnation != sn.incarnation || !sn.node) return;
  sn.syncing = false;
  ++records_.syncs;
  sn.log_durable = std::max(sn.log_durable, static_cast<size_t>(e.gen));
  // The disk completes even while the node is frozen; the frames and the engine wait for the thaw.
  if (frozen(sn, e.t)) return;
  std::erase_if(sn.held, [&](const HeldFrame& h) {
    if (h.needs > sn.log_durable) return false;
    push({std::max(h.tx_ns, e.t), 0, EvType::transmit, e.node, h.copy, sn.incarnation, h.frame, 0});
    return true;
  });
  sn.node->on_durable(sn.log_durable - sn.log_base);
  after_call(e.node, e.t);
}

// --- Events -------------------------------------------------------------------------------

bool Simulator::copy_lost(int from, int to) {
  const Scenario& s = scenario_;
  if (s.loss == 0 && s.burst == 0) return false;
  bool& bad = nodes_[static_cast<size_t>(to)].burst[from];
  if (bad) {
    if (net_rng_.chance(s.burst_exit)) bad = false;
    return net_rng_.chance(s.burst_loss);
  }
  if (net_rng_.chance(s.loss)) {
    if (net_rng_.chance(s.burst)) bad = true;
    return true;
  }
  return false;
}

void Simulator::on_timer(const Ev& e) {
  SimNode& sn = nodes_[e.node];
  if (!sn.alive || e.incarnation != sn.incarnation || e.gen != sn.timer_gen) return;
  sn.timer_at = INT64_MAX;
  if (frozen(sn, e.t)) return;  // the thaw calls it
  if (tick_clock(e.node, e.t)) return;  // it started the engine, which ran and armed the timer
  if (!sn.node) {
    arm_timer(e.node, e.t);
    return;
  }
  sn.node->on_time(node_time_ns(sn, e.t));
  after_call(e.node, e.t);
}

void Simulator::on_transmit(const Ev& e) {
  SimNode& sender = nodes_[e.node];
  if (!sender.alive || sender.incarnation != e.incarnation) {  // crashed before the instant
    release_frame(e.frame);
    return;
  }
  if (frozen(sender, e.t)) {  // its TX is frozen too: the frame leaves late
    Ev later = e;
    later.t = sender.frozen_until;
    push(later);
    return;
  }
  if (sender.sync && !sender.sync->may_send()) {  // self-checking: its clock is out (seed 000)
    ++records_.frames_withheld_clock;
    release_frame(e.frame);
    return;
  }
  ++records_.frames_sent;
  std::vector<uint8_t> bytes = pool_[e.frame];
  release_frame(e.frame);
  const bool carries_window = sender.sync && sender.sync->integrated() && core::clock_reading_frame(core::peek_header(bytes));
  if (carries_window && !sender.byzantine_clock) bytes = with_clock_window(bytes, sender.sync->window());
  const core::DecodeResult d = core::decode_frame(bytes);
  TOB_ASSERT(d.ok());
  const auto cycle = static_cast<int64_t>(d.view.header.cycle);
  const int last_copy = schedule_.sends_per_slot() - 1;
  const bool quiet = draining(e.t);  // the drain's network loses, corrupts and duplicates nothing
  // Exactly one copy of the pair lost to everybody (masked by send-twice).
  const bool drop_this_copy =
      !quiet && scenario_.single_copy_loss > 0 &&
      net_rng_.chance(scenario_.single_copy_loss) && e.peer == (cycle % 2 == 0 ? 0 : last_copy);

  for (int to = 0; to < scenario_.nodes; ++to) {
    if (to == e.node) continue;
    bool lost = drop_this_copy || (!quiet && copy_lost(e.node, to));
    bool corrupt = !quiet && net_rng_.chance(scenario_.corrupt);
    int64_t arrive = e.t + scenario_.delay_ns +
                     (scenario_.jitter_ns > 0 ? net_rng_.range(0, scenario_.jitter_ns) : 0);
    if (sender.byzantine_clock) {  // it left early; to each receiver as early or as late as it likes
      const int64_t reach = byz_early_ns_ + byz_late_ns_;
      switch (clock_rng_.range(0, 2)) {
        case 0: break;
        case 1: arrive += reach; break;
        default: arrive += clock_rng_.range(0, reach); break;
      }
    }
    for (const Fault& f : frame_faults_) {
      const bool this_frame = f.cycle == cycle;
      switch (f.kind) {
        case FaultKind::send_omission:
          if (this_frame && f.node == e.node) lost = true;
          break;
        case FaultKind::receive_omission:
          if (this_frame && f.peer == e.node && f.node == to) lost = true;
          break;
        case FaultKind::corrupt:
          if (this_frame && f.peer == e.node && f.node == to) corrupt = true;
          break;
        case FaultKind::late_frame:
          if (this_frame && f.peer == e.node && f.node == to)
            arrive = std::max(arrive, schedule_.slot_end_ns(cycle, e.node) + scenario_.delay_ns);
          break;
        case FaultKind::link_down:
          if (f.peer == e.node && f.node == to && cycle >= f.cycle && cycle < f.cycle + f.cycles)
            lost = true;
          break;
        case FaultKind::crash: break;
      }
    }
    if (lost) {
      ++records_.copies_lost;
      continue;
    }
    const int copies = !quiet && net_rng_.chance(scenario_.dup) ? 2 : 1;
    if (copies == 2) ++records_.copies_duplicated;
    // A Byzantine clock says its corrections summed to anything, to each receiver something else.
    std::vector<uint8_t> lied;
    if (carries_window && sender.byzantine_clock) lied = with_clock_window(bytes, lie_window(clock_rng_, *sender.sync));
    const std::vector<uint8_t>& out = lied.empty() ? bytes : lied;
    for (int k = 0; k < copies; ++k) {
      uint32_t f = store_frame(out);
      if (corrupt) {
        std::vector<uint8_t>& b = pool_[f];
        const auto at = static_cast<size_t>(net_rng_.range(0, static_cast<int64_t>(b.size()) - 1));
        b[at] ^= static_cast<uint8_t>(1u << net_rng_.range(0, 7));
        ++records_.copies_corrupted;
      }
      push({arrive + k * 1000, 0, EvType::arrive, static_cast<uint8_t>(to), e.node,
            nodes_[static_cast<size_t>(to)].incarnation, f, 0});
    }
  }
}

void Simulator::on_arrive(const Ev& e) {
  SimNode& sn = nodes_[e.node];
  if (!sn.alive) {
    release_frame(e.frame);
    return;
  }
  if (frozen(sn, e.t)) {  // waits in the RX ring, which holds so many frames
    if (sn.backlog.size() < kRxBacklogMax) {
      sn.backlog.push_back(e.frame);
    } else {
      ++records_.rx_backlog_dropped;
      release_frame(e.frame);
    }
    return;
  }
  const core::DecodeResult d = core::decode_frame(pool_[e.frame]);
  if (!d.ok()) {
    ++records_.frames_rejected_crc;
    release_frame(e.frame);
    return;
  }
  tick_clock(e.node, e.t);
  const core::FrameHeader& h = d.view.header;
  // The first copy's first frame is the clock reading (the others leave after it).
  if (sn.sync && core::clock_reading_frame(h)) {
    sn.sync->on_frame(h.sender, static_cast<int64_t>(h.cycle), sn.osc.local_ns(e.t));
    core::SectionView cs{};
    core::ClockWindow window;
    if (d.view.find_section(core::SectionType::clock_window, cs) && core::decode_clock_window(cs.body, window))
      sn.sync->on_peer_window(h.sender, window);
  }
  if (!sn.node) {  // integrating its clock: the engine has not started
    release_frame(e.frame);
    arm_timer(e.node, e.t);
    return;
  }
  sn.node->on_frame(d.view, node_time_ns(sn, e.t));
  release_frame(e.frame);
  after_call(e.node, e.t);
}

void Simulator::schedule_submit(int i, int64_t now) {
  if (scenario_.load <= 0) return;
  const double mean_ns = static_cast<double>(scenario_.cycle_ns) / scenario_.load;
  const double u = std::max(load_rng_.uniform(), 1e-12);
  const auto gap = static_cast<int64_t>(-std::log(u) * mean_ns) + 1;
  push({now + gap, 0, EvType::submit, static_cast<uint8_t>(i), 0, 0, 0, 0});
}

void Simulator::on_submit(const Ev& e) {
  SimNode& sn = nodes_[e.node];
  if (draining(e.t)) return;  // the drain submits nothing new
  schedule_submit(e.node, e.t);
  if (!sn.alive || frozen(sn, e.t) || !sn.node) return;  // a frozen node's application is frozen too
  uint8_t payload[65535];
  const auto len = static_cast<size_t>(load_rng_.range(scenario_.payload_min, scenario_.payload_max));
  fill_payload({payload, len}, e.node, sn.next_msg_id);
  const core::SubmitResult r = sn.node->submit(0, {payload, len}, node_time_ns(sn, e.t));
  NodeLife& life = records_.lives[e.node];
  if (r.status == core::SubmitStatus::ok) {
    TOB_ASSERT(r.msg_id == sn.next_msg_id);
    records_.submitted.push_back({e.node, sn.incarnation, sn.next_msg_id, e.t});
    if (trace_file_ != nullptr) trace(fmt("%" PRId64 " node %d submit msg %" PRIu64, e.t, e.node, sn.next_msg_id));
    ++sn.next_msg_id;
    ++life.submitted;
  } else {
    ++life.refused;
  }
}

void Simulator::on_crash(const Ev& e) {
  const Scenario& s = scenario_;
  SimNode& sn = nodes_[e.node];
  if (!sn.alive) return;
  sn.alive = false;
  if (sn.node) add_counters(sn.node->counters());
  sn.node.reset();
  if (sn.sync) {
    ClockLife& cl = records_.clocks[e.node];
    add_clock_stats(cl, sn.sync->stats());
    sn.sync.reset();
  }
  for (const HeldFrame& h : sn.held) release_frame(h.frame);  // never left
  sn.held.clear();
  for (uint32_t f : sn.backlog) release_frame(f);
  sn.backlog.clear();
  sn.frozen_until = INT64_MIN;
  // The records not yet synced are lost, or a torn write keeps a random prefix of them.
  if (sn.log.size() > sn.log_durable) {
    size_t keep = sn.log_durable;
    if (s.torn_tail > 0 && rng_.chance(s.torn_tail)) {
      keep = static_cast<size_t>(rng_.range(static_cast<int64_t>(sn.log_durable), static_cast<int64_t>(sn.log.size())));
      ++records_.torn_tails;
    }
    sn.log.resize(keep);
  }
  ++records_.crashes;
  NodeLife& life = records_.lives[e.node];
  life.crashed = true;
  life.crash_ns.push_back(e.t);
  trace(fmt("%" PRId64 " node %d crash", e.t, e.node));
  if (e.gen > 0) {
    push({e.t + static_cast<int64_t>(e.gen) * s.cycle_ns, 0, EvType::restart, e.node, 0, 0, 0, 0});
  } else {
    sn.down_planned = true;  // down for good
  }
}

void Simulator::on_freeze(const Ev& e) {
  SimNode& sn = nodes_[e.node];
  if (!sn.alive || e.incarnation != sn.incarnation || frozen(sn, e.t)) return;
  sn.frozen_until = e.t + static_cast<int64_t>(e.gen);
  ++records_.stalls;
  trace(fmt("%" PRId64 " node %d frozen for %" PRIu64 " ns", e.t, e.node, e.gen));
  push({sn.frozen_until, 0, EvType::thaw, e.node, 0, sn.incarnation, 0, 0});
}

void Simulator::on_thaw(const Ev& e) {
  SimNode& sn = nodes_[e.node];
  if (!sn.alive || e.incarnation != sn.incarnation) return;
  sn.frozen_until = INT64_MIN;
  trace(fmt("%" PRId64 " node %d thaws (%zu frames waiting)", e.t, e.node, sn.backlog.size()));
  // Its loop runs again: the clock first, then what its RX ring holds, then the disk's news.
  tick_clock(e.node, e.t);
  if (!sn.node) {  // still integrating: what it missed is no clock reading
    for (uint32_t f : sn.backlog) release_frame(f);
    sn.backlog.clear();
    arm_timer(e.node, e.t);
    return;
  }
  sn.node->on_time(node_time_ns(sn, e.t));
  handle_actions(e.node, e.t);
  std::vector<uint32_t> backlog;
  backlog.swap(sn.backlog);
  for (uint32_t f : backlog) {
    const core::DecodeResult d = core::decode_frame(pool_[f]);
    if (d.ok()) {
      sn.node->on_frame(d.view, node_time_ns(sn, e.t));
      handle_actions(e.node, e.t);
    } else {
      ++records_.frames_rejected_crc;
    }
    release_frame(f);
    if (!sn.alive) return;
  }
  std::erase_if(sn.held, [&](const HeldFrame& h) {
    if (h.needs > sn.log_durable) return false;
    push({std::max(h.tx_ns, e.t), 0, EvType::transmit, e.node, h.copy, sn.incarnation, h.frame, 0});
    return true;
  });
  if (sn.log_durable > sn.log_base) sn.node->on_durable(sn.log_durable - sn.log_base);
  after_call(e.node, e.t);
}

void Simulator::inject(const Fault& f, int64_t now) {
  records_.faults.push_back({f, now});
  trace(fmt("%" PRId64 " fault %s cycle %" PRId64 " node %d peer %d", now, to_string(f.kind), f.cycle,
            f.node, f.peer == core::kNoNode ? -1 : f.peer));
  if (f.kind == FaultKind::crash) {
    push({schedule_.cycle_start_ns(f.cycle) + f.offset_ns, 0, EvType::crash, f.node, 0, 0, 0,
          static_cast<uint64_t>(f.restart_after_cycles)});
  } else {
    frame_faults_.push_back(f);
  }
}

void Simulator::on_fault_tick(const Ev& e) {
  const int64_t cycle = schedule_.cycle_of(e.t);
  if (cycle + 1 < scenario_.cycles)
    push({schedule_.cycle_start_ns(cycle + 1), 0, EvType::fault_tick, 0, 0, 0, 0, 0});
  // Forget frame faults of past cycles.
  std::erase_if(frame_faults_, [&](const Fault& f) {
    return f.kind != FaultKind::link_down && f.cycle < cycle - 1;
  });
  if (cycle + 1 >= scenario_.cycles) return;  // nothing new in the drain
  random_mars_fault(cycle, e.t);
  random_crashes(cycle, e.t);
  random_stalls(cycle, e.t);
  random_outage(cycle, e.t);
}

void Simulator::random_outage(int64_t cycle, int64_t now) {
  const Scenario& s = scenario_;
  if (s.outage_rate <= 0 || !fault_rng_.chance(s.outage_rate)) return;
  const bool everyone = fault_rng_.chance(0.5);
  uint64_t receivers = 0;
  while (receivers == 0)
    for (int i = 0; i < s.nodes; ++i)
      if (everyone || fault_rng_.chance(0.5)) receivers |= uint64_t{1} << i;
  for (int to = 0; to < s.nodes; ++to) {
    if ((receivers >> to & 1u) == 0) continue;
    Fault f{FaultKind::link_down, cycle + 1, static_cast<core::NodeId>(to)};
    f.cycles = fault_rng_.range(1, s.outage_cycles_max);
    for (int from = 0; from < s.nodes; ++from) {
      if (from == to) continue;
      f.peer = static_cast<core::NodeId>(from);
      inject(f, now);
    }
  }
}

void Simulator::random_mars_fault(int64_t cycle, int64_t now) {
  if (cycle - last_fault_cycle_ < scenario_.fault_spacing_cycles) return;
  if (!rng_.chance(scenario_.fault_rate)) return;
  Fault f{};
  f.cycle = cycle + 1;  // next cycle: every slot of it is still ahead
  f.node = static_cast<core::NodeId>(rng_.range(0, scenario_.nodes - 1));
  do {
    f.peer = static_cast<core::NodeId>(rng_.range(0, scenario_.nodes - 1));
  } while (f.peer == f.node);
  const int kinds = scenario_.crashes ? 5 : 4;
  switch (rng_.range(0, kinds - 1)) {
    case 0: f.kind = FaultKind::send_omission; break;
    case 1: f.kind = FaultKind::receive_omission; break;
    case 2: f.kind = FaultKind::corrupt; break;
    case 3: f.kind = FaultKind::late_frame; break;
    default: {
      if (!nodes_[f.node].alive) return;
      f.kind = FaultKind::crash;
      f.offset_ns = rng_.range(0, scenario_.cycle_ns - 1);
      f.restart_after_cycles = rng_.range(2, 8);
    }
  }
  inject(f, now);
  // One failure in two cycles; a crash's restart (a join) is spaced like a failure too.
  last_fault_cycle_ = f.cycle + (f.kind == FaultKind::crash ? f.restart_after_cycles + 1 : 0);
}

void Simulator::random_crashes(int64_t cycle, int64_t now) {
  const Scenario& s = scenario_;
  if (s.crash_rate <= 0) return;
  int down = 0;
  for (const SimNode& sn : nodes_) down += (!sn.alive || sn.down_planned) ? 1 : 0;
  for (int i = 0; i < s.nodes && down < s.crash_down_max; ++i) {
    SimNode& sn = nodes_[static_cast<size_t>(i)];
    if (!sn.alive || sn.down_planned || !fault_rng_.chance(s.crash_rate)) continue;
    Fault f{FaultKind::crash, cycle + 1, static_cast<core::NodeId>(i)};
    // Half of them right after its own turn began: its records written, its frame not yet out.
    const auto self = static_cast<core::NodeId>(i);
    if (fault_rng_.chance(0.5)) {
      const int64_t turn = schedule_.membership_point_ns(cycle + 1, self) - schedule_.cycle_start_ns(cycle + 1);
      const int64_t margin = schedule_.transmit_ns(cycle + 1, self) - schedule_.membership_point_ns(cycle + 1, self);
      f.offset_ns = turn + fault_rng_.range(0, std::max<int64_t>(margin, 1));
    } else {
      f.offset_ns = fault_rng_.range(0, s.cycle_ns - 1);
    }
    f.restart_after_cycles = fault_rng_.chance(s.crash_permanent) ? 0 : fault_rng_.range(s.restart_cycles_min, s.restart_cycles_max);
    sn.down_planned = true;  // counted as down until it is back
    ++down;
    inject(f, now);
  }
}

void Simulator::random_stalls(int64_t cycle, int64_t now) {
  const Scenario& s = scenario_;
  if (s.stall_rate <= 0) return;
  (void)now;
  for (int i = 0; i < s.nodes; ++i) {
    SimNode& sn = nodes_[static_cast<size_t>(i)];
    if (!sn.alive || !fault_rng_.chance(s.stall_rate)) continue;
    const int64_t at = schedule_.cycle_start_ns(cycle + 1) + fault_rng_.range(0, s.cycle_ns - 1);
    const int64_t len = fault_rng_.range(1, s.stall_cycles_max) * s.cycle_ns - fault_rng_.range(0, s.cycle_ns / 2);
    push({at, 0, EvType::freeze, static_cast<uint8_t>(i), 0, sn.incarnation, 0, static_cast<uint64_t>(len)});
  }
}

void Simulator::run() {
  const Scenario& s = scenario_;
  nodes_.clear();
  nodes_.resize(static_cast<size_t>(s.nodes));
  records_ = Records{};
  records_.lives.assign(static_cast<size_t>(s.nodes), NodeLife{});
  records_.clocks.assign(static_cast<size_t>(s.nodes), ClockLife{});
  records_.faults_end_ns = schedule_.cycle_start_ns(s.cycles);
  records_.precision_bound_ns = s.clock_sync ? bound_.precision_ns : 0;
  if (s.clock_sync) {
    const core::ClockSyncConfig cc = clock_sync_config(0).resolved().value();
    records_.clock_bound = bound_;
    records_.clock_step_max_ns = cc.step_max_ns;
    records_.clock_faults = cc.faults_tolerated;
    records_.clock_cycle_ns = schedule_.cycle_ns();
  }
  cycle_sample_ = PrecisionSample{};
  for (int i = 0; i < s.nodes; ++i)
    if ((s.byzantine_clock_nodes >> i & 1u) != 0) {
      nodes_[static_cast<size_t>(i)].byzantine_clock = true;
      nodes_[static_cast<size_t>(i)].clock_shift_ns = byz_early_ns_;
      records_.clocks[static_cast<size_t>(i)].byzantine = true;
    }
  for (int k = s.byzantine_clock_nodes != 0 ? s.nodes : 0; k < s.byzantine_clocks;) {
    const auto i = static_cast<size_t>(clock_rng_.range(0, s.nodes - 1));
    if (nodes_[i].byzantine_clock) continue;
    nodes_[i].byzantine_clock = true;
    nodes_[i].clock_shift_ns = byz_early_ns_;  // its frames leave this early
    records_.clocks[i].byzantine = true;
    ++k;
  }
  for (int i = 0; i < s.nodes; ++i) {
    SimNode& sn = nodes_[static_cast<size_t>(i)];
    // The draws in the order they always were: a run without the new clock options replays.
    const int64_t offset_ns = s.clock_offset_ns_max > 0 ? rng_.range(-s.clock_offset_ns_max, s.clock_offset_ns_max) : 0;
    double drift = 0;
    if (s.drift_ppm_max > 0) drift = (fault_rng_.uniform() * 2 - 1) * s.drift_ppm_max * 1e-6;
    if (!s.drift_ppm.empty()) drift = s.drift_ppm[static_cast<size_t>(i)] * 1e-6;
    sn.osc = Oscillator(s.clock_offset_ns.empty() ? offset_ns : s.clock_offset_ns[static_cast<size_t>(i)], drift);
    records_.clocks[static_cast<size_t>(i)].drift_ppm_start = drift * 1e6;
    const int64_t start = s.start_stagger_ns > 0 ? rng_.range(0, s.start_stagger_ns) : 0;
    push({start, 0, EvType::restart, static_cast<uint8_t>(i), 0, 0, 0, 0});
    schedule_submit(i, start);
  }
  for (const Fault& f : s.faults) inject(f, 0);
  if (s.fault_rate > 0 || s.crash_rate > 0 || s.stall_rate > 0)
    push({0, 0, EvType::fault_tick, 0, 0, 0, 0, 0});
  if (s.clock_sync || s.drift_wander_ppm > 0) {
    const core::NodeId first = schedule_.node_at(0);
    push({schedule_.membership_point_ns(0, first) + schedule_.config().slots[first].length_ns / 2, 0,
          EvType::clock_sample, 0, 0, 0, 0, 0});
  }

  const int64_t end_ns = schedule_.cycle_start_ns(s.cycles + s.drain_cycles);
  while (!queue_.empty() && queue_.top().t <= end_ns) {
    const Ev e = queue_.top();
    queue_.pop();
    SimNode& sn = nodes_[e.node];
    switch (e.type) {
      case EvType::timer: on_timer(e); break;
      case EvType::transmit: on_transmit(e); break;
      case EvType::arrive: on_arrive(e); break;
      case EvType::submit: on_submit(e); break;
      case EvType::fault_tick: on_fault_tick(e); break;
      case EvType::synced: on_synced(e); break;
      case EvType::freeze: on_freeze(e); break;
      case EvType::thaw: on_thaw(e); break;
      case EvType::clock_sample: on_clock_sample(e); break;
      case EvType::crash: on_crash(e); break;
      case EvType::restart:
        if (sn.alive) break;
        if (sn.node != nullptr || records_.lives[e.node].crashed) {
          ++sn.incarnation;
          ++records_.lives[e.node].incarnations;
        }
        sn.down_planned = false;
        start_node(e.node, e.t);
        break;
    }
  }
  records_.end_ns = end_ns;
  finish_clocks();
  // The turns judged end where the correct nodes' clocks stand, when they lag virtual time: the
  // ensemble's global time moves with the corrections that every node shares (a common error in
  // the configured delay moves it by that much per round: Scenario::clock_delay_error_ns).
  int64_t judged_end_ns = end_ns;
  for (const SimNode& sn : nodes_)
    if (sn.alive && sn.sync && !sn.byzantine_clock) judged_end_ns = std::min(judged_end_ns, node_time_ns(sn, end_ns));
  records_.final_turn_seq = schedule_.next_turn_after(judged_end_ns).seq - 1;
  records_.final_state.assign(static_cast<size_t>(s.nodes), FinalState{});
  for (int i = 0; i < s.nodes; ++i) {
    const SimNode& sn = nodes_[static_cast<size_t>(i)];
    if (!sn.alive || sn.node == nullptr) continue;
    add_counters(sn.node->counters());
    FinalState& f = records_.final_state[static_cast<size_t>(i)];
    f.alive = true;
    f.queued = sn.node->queued();
    if (s.order == core::Order::otfp) f.low = static_cast<const core::OtfpNode*>(sn.node.get())->lowest_undelivered();
  }
}

// At the middle of every slot (outside every slew window): the spread of the judged nodes'
// global clocks; at a cycle's first sample the drifts wander.
void Simulator::on_clock_sample(const Ev& e) {
  const Scenario& s = scenario_;
  const int k = static_cast<int>(e.gen);
  const int64_t cycle = schedule_.cycle_of(e.t);
  if (k == 0 && s.drift_wander_ppm > 0) {
    const double bound = drift_bound_ppm(s) * 1e-6;
    for (SimNode& sn : nodes_) {
      double d = sn.osc.drift() + (clock_rng_.uniform() * 2 - 1) * s.drift_wander_ppm * 1e-6;
      if (d > bound) d = 2 * bound - d;  // reflected: it stays within [-P, P]
      if (d < -bound) d = -2 * bound - d;
      sn.osc.set_drift(e.t, std::clamp(d, -bound, bound));
    }
  }
  if (s.clock_sync) {
    PrecisionSample& p = cycle_sample_;
    p.cycle = cycle;
    int64_t lo = INT64_MAX;
    int64_t hi = INT64_MIN;
    core::NodeId at_lo = 0;
    core::NodeId at_hi = 0;
    int judged = 0;
    int64_t hull_lo = INT64_MAX;
    int64_t hull_hi = INT64_MIN;
    for (int i = 0; i < s.nodes; ++i) {
      const SimNode& sn = nodes_[static_cast<size_t>(i)];
      if (!sn.alive || !sn.node || sn.byzantine_clock || sn.clock_apart) continue;
      const int64_t g = sn.sync->global_ns(sn.osc.local_ns(e.t));
      hull_lo = std::min(hull_lo, g);
      hull_hi = std::max(hull_hi, g);
      if (e.t < sn.judged_from_ns) continue;
      ++judged;
      p.judged |= uint64_t{1} << i;
      if (g < lo) { lo = g; at_lo = static_cast<core::NodeId>(i); }
      if (g > hi) { hi = g; at_hi = static_cast<core::NodeId>(i); }
    }
    if (judged >= 2 && hi - lo >= p.spread_ns) {
      p.spread_ns = hi - lo;
      p.ahead = at_hi;
      p.behind = at_lo;
    }
    p.nodes = std::max(p.nodes, judged);
    if (hull_hi >= hull_lo) p.hull_ns = std::max(p.hull_ns, hull_hi - hull_lo);
    // A clock apart is judged again once a whole cycle's samples find it and the synchronised
    // ones within Pi of each other.
    for (SimNode& sn : nodes_) {
      if (!sn.clock_apart) continue;
      if (k == 0) sn.rejoin_ok = true;
      if (!sn.alive || !sn.node || hull_hi < hull_lo) {
        sn.rejoin_ok = false;
        continue;
      }
      const int64_t g = sn.sync->global_ns(sn.osc.local_ns(e.t));
      if (std::max(hull_hi, g) - std::min(hull_lo, g) > bound_.precision_ns) sn.rejoin_ok = false;
    }
  }
  const int next = (k + 1) % s.nodes;
  if (next == 0) {
    if (s.clock_sync && (cycle_sample_.nodes >= 2 || cycle_sample_.hull_ns > 0)) records_.precision.push_back(cycle_sample_);
    cycle_sample_ = PrecisionSample{};
    for (size_t i = 0; i < nodes_.size(); ++i) {
      SimNode& sn = nodes_[i];
      if (!sn.clock_apart || !sn.rejoin_ok) continue;
      sn.clock_apart = false;
      records_.lives[i].clock_apart.back().until_cycle = cycle + 1;
      trace(fmt("%" PRId64 " node %zu: its clock is within the precision again, judged from cycle %" PRId64, e.t, i, cycle + 1));
    }
  }
  const int64_t next_cycle = next == 0 ? cycle + 1 : cycle;
  const core::NodeId n = schedule_.node_at(next);
  push({schedule_.membership_point_ns(next_cycle, n) + schedule_.config().slots[n].length_ns / 2, 0,
        EvType::clock_sample, 0, 0, 0, 0, static_cast<uint64_t>(next)});
}

// After the run: the synchronisation's counters, and when each delivery's release instant came
// on its node's clock (its sync map history, then its oscillator).
void Simulator::finish_clocks() {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const SimNode& sn = nodes_[i];
    ClockLife& cl = records_.clocks[i];
    cl.rate_ppm_end = sn.sync ? sn.sync->stats().rate_ppm : 0;
    if (!sn.alive || !sn.sync) continue;
    cl.rate_max_ppm = sn.sync->config().rate_max_ppm;
    add_clock_stats(cl, sn.sync->stats());
  }
  for (DeliveryRecord& d : records_.deliveries) {
    const SimNode& sn = nodes_[d.node];
    const int64_t target = d.release_ns - sn.clock_shift_ns;
    int64_t local = target;
    if (scenario_.clock_sync) {
      // The map in force when its global clock reached the target: the last of the incarnation
      // that began at or before it (maps of one incarnation begin in increasing global time).
      const auto key = std::make_pair(d.incarnation, target);
      auto it = std::upper_bound(sn.maps.begin(), sn.maps.end(), key, [](const auto& k, const SimNode::MapEpoch& m) {
        return k < std::make_pair(m.incarnation, m.map.g0);
      });
      if (it == sn.maps.begin() || (it - 1)->incarnation != d.incarnation) continue;
      local = (it - 1)->map.local_ns(target);
    }
    const int64_t v = sn.osc.true_ns(local);
    const NodeLife& life = records_.lives[d.node];
    const bool crashed_first = static_cast<size_t>(d.incarnation) < life.crash_ns.size() &&
                               life.crash_ns[static_cast<size_t>(d.incarnation)] <= v;
    if (v <= records_.end_ns && !crashed_first) d.release_virtual_ns = v;
  }
}

void Simulator::add_counters(const core::NodeCounters& c) {
  core::NodeCounters& t = records_.engine_totals;
  t.instances_decided += c.instances_decided;
  t.instances_fast += c.instances_fast;
  t.instances_recovered += c.instances_recovered;
  t.collisions += c.collisions;
  t.activations += c.activations;
  t.retransmit_requests += c.retransmit_requests;
  t.retransmit_served += c.retransmit_served;
  t.tempo_holds += c.tempo_holds;
  t.duplicates_dropped += c.duplicates_dropped;
  t.window_max = std::max(t.window_max, c.window_max);
  t.gaps += c.gaps;
  t.persist_records += c.persist_records;
  t.msgs_delivered += c.msgs_delivered;
  t.votes_abstained += c.votes_abstained;
  t.votes_not_durable += c.votes_not_durable;
  t.votes_settled += c.votes_settled;
  t.decision_conflicts += c.decision_conflicts;
}

}  // namespace tob::sim
