#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cinttypes>
#include <cstring>

#include "core/batch.h"
#include "core/otfp_log.h"
#include "core/wire.h"

namespace tob::sim {
namespace {

constexpr size_t kTraceRing = 256;

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
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
  return sim;
}

Simulator::Simulator(const Scenario& scenario, core::Schedule schedule)
    : scenario_(scenario),
      schedule_(std::move(schedule)),
      rng_(scenario.seed),
      net_rng_(scenario.seed ^ 0x6E65740000000000ull),
      load_rng_(scenario.seed ^ 0x6C6F616400000000ull) {}

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

void Simulator::start_node(int i, int64_t now) {
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  core::NodeConfig c = node_config(i);
  c.first_msg_id = sn.next_msg_id;
  // Like the daemon, cut a torn tail off before appending: later records must not hide behind it.
  sn.log.resize(core::otfp_log_valid_bytes(sn.log));
  sn.log_sent_upto = std::min(sn.log_sent_upto, sn.log.size());
  sn.persisted = 0;
  sn.durable = 0;
  auto node = core::make_engine(scenario_.order, c, sn.log);
  TOB_ASSERT(node.ok());  // validated in create(); the log is ours
  sn.node = std::move(node.value());
  sn.alive = true;
  sn.last_turn_seq = -1;
  std::fill(std::begin(sn.burst), std::end(sn.burst), false);
  trace(fmt("%" PRId64 " node %d start incarnation %d", now, i, sn.incarnation));
  sn.node->on_time(now + sn.offset_ns);
  after_call(i, now);
}

void Simulator::after_call(int i, int64_t now) {
  handle_actions(i, now);
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  if (!sn.alive) return;
  // The records are durable as soon as they are written: the engine hears so at once.
  while (sn.durable < sn.persisted) {
    sn.durable = sn.persisted;
    sn.node->on_durable(sn.durable);
    handle_actions(i, now);
  }
  const int64_t at = sn.node->next_deadline_ns() - sn.offset_ns;
  if (at != sn.timer_at) {
    sn.timer_at = at;
    push({std::max(at, now), 0, EvType::timer, static_cast<uint8_t>(i), 0, sn.incarnation, 0,
          ++sn.timer_gen});
  }
}

void Simulator::handle_actions(int i, int64_t now) {
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  const core::Actions& a = sn.node->take_actions();
  const auto id = static_cast<core::NodeId>(i);
  // The log first: records reach stable storage before the frames that depend on them leave.
  sn.log.insert(sn.log.end(), a.persist.begin(), a.persist.end());
  sn.persisted += a.persist.size();
  for (const core::TxFrame& tx : a.tx) {
    const uint32_t f = store_frame(tx.bytes);
    push({tx.tx_ns - sn.offset_ns, 0, EvType::transmit, id, tx.copy, sn.incarnation, f, sn.log.size()});
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
                                   d.msg_id, now, payload_matches(d.payload, d.sender, d.msg_id)});
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

void Simulator::on_transmit(const Ev& e) {
  SimNode& sender = nodes_[e.node];
  if (!sender.alive || sender.incarnation != e.incarnation) {  // crashed before the instant
    release_frame(e.frame);
    return;
  }
  sender.log_sent_upto = std::max(sender.log_sent_upto, static_cast<size_t>(e.gen));
  ++records_.frames_sent;
  const std::vector<uint8_t> bytes = pool_[e.frame];
  release_frame(e.frame);
  const core::DecodeResult d = core::decode_frame(bytes);
  TOB_ASSERT(d.ok());
  const auto cycle = static_cast<int64_t>(d.view.header.cycle);
  const int last_copy = schedule_.sends_per_slot() - 1;
  // Exactly one copy of the pair lost to everybody (masked by send-twice).
  const bool drop_this_copy =
      scenario_.single_copy_loss > 0 &&
      net_rng_.chance(scenario_.single_copy_loss) && e.peer == (cycle % 2 == 0 ? 0 : last_copy);

  for (int to = 0; to < scenario_.nodes; ++to) {
    if (to == e.node) continue;
    bool lost = drop_this_copy || copy_lost(e.node, to);
    bool corrupt = net_rng_.chance(scenario_.corrupt);
    int64_t arrive = e.t + scenario_.delay_ns +
                     (scenario_.jitter_ns > 0 ? net_rng_.range(0, scenario_.jitter_ns) : 0);
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
    const int copies = net_rng_.chance(scenario_.dup) ? 2 : 1;
    if (copies == 2) ++records_.copies_duplicated;
    for (int k = 0; k < copies; ++k) {
      uint32_t f = store_frame(bytes);
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
  const core::DecodeResult d = core::decode_frame(pool_[e.frame]);
  if (!d.ok()) {
    ++records_.frames_rejected_crc;
    release_frame(e.frame);
    return;
  }
  sn.node->on_frame(d.view, e.t + sn.offset_ns);
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
  schedule_submit(e.node, e.t);
  if (!sn.alive) return;
  uint8_t payload[65535];
  const auto len = static_cast<size_t>(load_rng_.range(scenario_.payload_min, scenario_.payload_max));
  fill_payload({payload, len}, e.node, sn.next_msg_id);
  const core::SubmitResult r = sn.node->submit(0, {payload, len}, e.t + sn.offset_ns);
  NodeLife& life = records_.lives[e.node];
  if (r.status == core::SubmitStatus::ok) {
    TOB_ASSERT(r.msg_id == sn.next_msg_id);
    ++sn.next_msg_id;
    ++life.submitted;
  } else {
    ++life.refused;
  }
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
  inject(f, e.t);
  // One failure in two cycles; a crash's restart (a join) is spaced like a failure too.
  last_fault_cycle_ = f.cycle + (f.kind == FaultKind::crash ? f.restart_after_cycles + 1 : 0);
}

void Simulator::run() {
  const Scenario& s = scenario_;
  nodes_.clear();
  nodes_.resize(static_cast<size_t>(s.nodes));
  records_ = Records{};
  records_.lives.assign(static_cast<size_t>(s.nodes), NodeLife{});
  for (int i = 0; i < s.nodes; ++i) {
    SimNode& sn = nodes_[static_cast<size_t>(i)];
    sn.offset_ns = s.clock_offset_ns_max > 0 ? rng_.range(-s.clock_offset_ns_max, s.clock_offset_ns_max) : 0;
    const int64_t start = s.start_stagger_ns > 0 ? rng_.range(0, s.start_stagger_ns) : 0;
    push({start, 0, EvType::restart, static_cast<uint8_t>(i), 0, 0, 0, 0});
    schedule_submit(i, start);
  }
  for (const Fault& f : s.faults) inject(f, 0);
  if (s.fault_rate > 0) push({0, 0, EvType::fault_tick, 0, 0, 0, 0, 0});

  const int64_t end_ns = schedule_.cycle_start_ns(s.cycles);
  while (!queue_.empty() && queue_.top().t <= end_ns) {
    const Ev e = queue_.top();
    queue_.pop();
    SimNode& sn = nodes_[e.node];
    switch (e.type) {
      case EvType::timer:
        if (!sn.alive || e.incarnation != sn.incarnation || e.gen != sn.timer_gen) break;
        sn.timer_at = INT64_MAX;
        sn.node->on_time(e.t + sn.offset_ns);
        after_call(e.node, e.t);
        break;
      case EvType::transmit: on_transmit(e); break;
      case EvType::arrive: on_arrive(e); break;
      case EvType::submit: on_submit(e); break;
      case EvType::fault_tick: on_fault_tick(e); break;
      case EvType::crash: {
        if (!sn.alive) break;
        sn.alive = false;
        add_counters(sn.node->counters());
        sn.node.reset();
        // A torn write loses what no transmitted frame depended on (the rest was synced).
        if (s.torn_tail > 0 && sn.log.size() > sn.log_sent_upto && rng_.chance(s.torn_tail)) {
          sn.log.resize(static_cast<size_t>(rng_.range(static_cast<int64_t>(sn.log_sent_upto),
                                                       static_cast<int64_t>(sn.log.size()) - 1)));
          ++records_.torn_tails;
        }
        NodeLife& life = records_.lives[e.node];
        life.crashed = true;
        life.crash_ns.push_back(e.t);
        trace(fmt("%" PRId64 " node %d crash", e.t, e.node));
        if (e.gen > 0)
          push({e.t + static_cast<int64_t>(e.gen) * s.cycle_ns, 0, EvType::restart, e.node, 0, 0, 0, 0});
        break;
      }
      case EvType::restart:
        if (sn.alive) break;
        if (sn.node != nullptr || records_.lives[e.node].crashed) {
          ++sn.incarnation;
          ++records_.lives[e.node].incarnations;
        }
        start_node(e.node, e.t);
        break;
    }
  }
  records_.end_ns = end_ns;
  records_.final_turn_seq = schedule_.next_turn_after(end_ns).seq - 1;
  for (const SimNode& sn : nodes_)
    if (sn.alive && sn.node != nullptr) add_counters(sn.node->counters());
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
}

}  // namespace tob::sim
