#include "sim/ic_simulator.h"

#include <algorithm>
#include <cstring>

#include "core/bytes.h"
#include "core/ic_fault.h"
#include "core/wire.h"

namespace tob::sim {
namespace {

using core::mix64;
uint64_t hash(uint64_t a, uint64_t b, uint64_t c = 0, uint64_t d = 0) { return mix64(mix64(mix64(mix64(a) ^ b) ^ c) ^ d); }

std::span<const uint8_t> bytes_of(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

// Key classes of the workload: the reduction follows the prefix (core::IcKeyClass).
constexpr int kKeyKinds = 5;
const char* kKeyPrefix[kKeyKinds] = {"k/", "med/", "mid/", "imed/", "imid/"};
const core::Reduction kKeyReduction[kKeyKinds] = {core::Reduction::majority, core::Reduction::median_f64,
                                                  core::Reduction::midpoint_f64, core::Reduction::median_i64,
                                                  core::Reduction::midpoint_i64};

}  // namespace

const char* to_string(IcRole r) {
  switch (r) {
    case IcRole::correct: return "correct";
    case IcRole::liar: return "liar";
    case IcRole::omitter: return "omitter";
    case IcRole::crasher: return "crasher";
    case IcRole::corrupter: return "corrupter";
  }
  return "unknown";
}

core::Result<IcSimulator> IcSimulator::create(const IcScenario& s) {
  if (s.nodes < 1 || s.nodes > core::kMaxNodes) return core::Error{"--nodes must be 1..64 (got " + std::to_string(s.nodes) + ")"};
  const int f = s.f < 0 ? (s.nodes - 1) / 3 : s.f;
  if (s.liars < 0 || s.omitters < 0 || s.crashers < 0 || s.corrupters < 0 ||
      s.liars + s.omitters + s.crashers + s.corrupters > s.nodes)
    return core::Error{"--liars, --omitters, --crashers and --corrupters must be non-negative and name at most " +
                       std::to_string(s.nodes) + " nodes"};
  if (s.periods < 1 || s.periods > 1'000'000) return core::Error{"--periods must be 1..1000000"};
  if (s.keys < 0 || s.keys > 1000) return core::Error{"--keys must be 0..1000"};
  if (s.delay_ns < 0 || s.jitter_ns < 0) return core::Error{"delay and jitter must not be negative"};
  const int64_t cycle_ns = s.cycle_ns > 0 ? s.cycle_ns : s.nodes * 250'000;
  core::NodeConfig nc;
  nc.schedule = core::ScheduleConfig::equal_slots(s.nodes, cycle_ns);
  nc.frame_bytes_max = s.frame_bytes_max;
  nc.payload_bytes_max = std::min<size_t>(nc.payload_bytes_max, s.frame_bytes_max / 2);
  auto sched = core::Schedule::create(nc.schedule);
  if (!sched) return sched.error();
  // Correct nodes must be able to meet every window: a frame sent at the IC instant arrives
  // within delay + jitter, before its sender's slot ends.
  for (int i = 0; i < s.nodes; ++i) {
    const auto id = static_cast<core::NodeId>(i);
    const int64_t room = sched.value().slot_end_ns(0, id) - sched.value().transmit_ns(0, id, sched.value().sends_per_slot());
    if (s.delay_ns + s.jitter_ns >= room)
      return core::Error{"delay + jitter (" + std::to_string(s.delay_ns + s.jitter_ns) + " ns) do not fit the " +
                         std::to_string(room) + " ns between the IC transmit instant and the slot end: a longer cycle"};
  }
  core::IcConfig ic;
  ic.f = f;
  ic.period_cycles = s.period_cycles;
  ic.keys_per_period_max = static_cast<size_t>(std::max(1, s.keys + 1));  // + the write that must be refused
  ic.key_bytes_max = 16;
  ic.value_bytes_max = 16;
  ic.store_keys_max = static_cast<size_t>(s.keys + 1);
  ic.versions_per_key = s.versions_per_key;
  ic.chunk_bytes = s.chunk_bytes;
  for (int k = 1; k < kKeyKinds; ++k) ic.key_classes.push_back({kKeyPrefix[k], kKeyReduction[k]});
  // Nodes differ only in their id: one probe validates the configuration for all.
  auto probe = core::IcNode::create(nc, ic);
  if (!probe) return probe.error();
  IcSimulator sim(s, std::move(sched.value()), ic);
  sim.scenario_.cycle_ns = cycle_ns;
  for (int k = 0; k < s.keys; ++k) sim.keys_.push_back(kKeyPrefix[k % kKeyKinds] + std::to_string(k));
  return sim;
}

IcSimulator::IcSimulator(const IcScenario& s, core::Schedule schedule, core::IcConfig ic)
    : scenario_(s),
      schedule_(std::move(schedule)),
      ic_(std::move(ic)),
      rng_(s.seed),
      net_rng_(s.seed ^ 0x69636E6574000000ull) {}

void IcSimulator::push(Ev e) {
  e.order = order_++;
  queue_.push(e);
}

uint32_t IcSimulator::store_frame(std::span<const uint8_t> bytes) {
  uint32_t idx;
  if (!pool_free_.empty()) {
    idx = pool_free_.back();
    pool_free_.pop_back();
  } else {
    idx = static_cast<uint32_t>(pool_.size());
    pool_.emplace_back();
  }
  pool_[idx].assign(bytes.begin(), bytes.end());
  return idx;
}

void IcSimulator::run() {
  const IcScenario& s = scenario_;
  const int n = s.nodes;
  nodes_.clear();
  nodes_.resize(static_cast<size_t>(n));
  records_ = IcRecords{};
  records_.nodes = n;
  records_.f = ic_.f;
  records_.rounds = ic_.f + 1;
  records_.period_cycles = ic_.period_cycles;
  records_.cycle_ns = s.cycle_ns;
  records_.periods = s.periods;
  records_.versions_per_key = ic_.versions_per_key;
  records_.limits = ic_.limits();
  records_.roles.assign(static_cast<size_t>(n), IcRole::correct);
  records_.crash_ns.assign(static_cast<size_t>(n), INT64_MAX);

  // Roles on a random permutation of the nodes.
  std::vector<int> order(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  for (int i = n - 1; i > 0; --i) std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(rng_.range(0, i))]);
  size_t at = 0;
  const auto assign = [&](int count, IcRole role) {
    for (int k = 0; k < count; ++k) records_.roles[static_cast<size_t>(order[at++])] = role;
  };
  assign(s.liars, IcRole::liar);
  assign(s.omitters, IcRole::omitter);
  assign(s.crashers, IcRole::crasher);
  assign(s.corrupters, IcRole::corrupter);

  core::NodeConfig nc;
  nc.schedule = schedule_.config();
  nc.frame_bytes_max = s.frame_bytes_max;
  nc.payload_bytes_max = std::min<size_t>(nc.payload_bytes_max, s.frame_bytes_max / 2);
  for (int i = 0; i < n; ++i) {
    nc.self = static_cast<core::NodeId>(i);
    auto node = core::IcNode::create(nc, ic_);
    TOB_ASSERT(node.ok());  // probed in create()
    SimNode& sn = nodes_[static_cast<size_t>(i)];
    sn.ic.emplace(std::move(node.value()));
    sn.alive = true;
  }
  const core::IcNode& any = *nodes_[0].ic;
  records_.entry_bytes = any.entry_bytes();
  for (int64_t p = 0; p < s.periods; ++p) records_.finish_ns.push_back(any.finish_ns(static_cast<uint64_t>(p)));
  const int64_t end_ns = records_.finish_ns.back() + s.cycle_ns;
  records_.end_ns = end_ns;
  scratch_.assign(any.frames_per_slot_max() * s.frame_bytes_max, 0);
  frames_.assign(any.frames_per_slot_max() * s.frame_bytes_max, 0);
  lengths_.assign(any.frames_per_slot_max(), 0);

  const int64_t period_ns = s.cycle_ns * ic_.period_cycles;
  for (int i = 0; i < n; ++i) {
    push({0, 0, EvType::timer, static_cast<uint8_t>(i), 0, 0});
    // One write event per node and period, at a random instant inside the period.
    for (int64_t p = 0; p < s.periods; ++p)
      push({p * period_ns + rng_.range(0, period_ns - 1), 0, EvType::write, static_cast<uint8_t>(i), 0,
            static_cast<uint64_t>(p)});
    if (records_.roles[static_cast<size_t>(i)] == IcRole::crasher)
      push({rng_.range(0, end_ns - 1), 0, EvType::crash, static_cast<uint8_t>(i), 0, 0});
  }
  // Reads on every node at every cycle boundary and half cycle: the publishing times of the
  // workload fall on these instants, so visibility exactly at t_pub is observed.
  for (int64_t t = 0; t <= end_ns; t += s.cycle_ns / 2) push({t, 0, EvType::read, 0, 0, 0});

  while (!queue_.empty() && queue_.top().t <= end_ns) {
    const Ev e = queue_.top();
    queue_.pop();
    SimNode& sn = nodes_[e.node];
    switch (e.type) {
      case EvType::timer:
        if (!sn.alive || e.gen != sn.timer_gen) break;
        sn.timer_at = INT64_MAX;
        sn.ic->on_time(e.t);
        after_call(e.node, e.t);
        break;
      case EvType::arrive: on_arrive(e); break;
      case EvType::write: on_write(e); break;
      case EvType::read: on_read(e); break;
      case EvType::crash: crash(e.node, e.t); break;
    }
  }
  for (SimNode& sn : nodes_)
    if (sn.alive) add_totals(sn.ic->counters());
}

void IcSimulator::crash(int i, int64_t now) {
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  if (!sn.alive) return;
  add_totals(sn.ic->counters());
  sn.alive = false;
  sn.ic.reset();
  records_.crash_ns[static_cast<size_t>(i)] = now;
}

void IcSimulator::after_call(int i, int64_t now) {
  handle_actions(i, now);
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  const int64_t at = sn.ic->next_deadline_ns();
  if (at != sn.timer_at) {
    sn.timer_at = at;
    push({std::max(at, now), 0, EvType::timer, static_cast<uint8_t>(i), 0, ++sn.timer_gen});
  }
}

void IcSimulator::handle_actions(int i, int64_t now) {
  SimNode& sn = nodes_[static_cast<size_t>(i)];
  const core::IcActions& a = sn.ic->take_actions();
  const auto id = static_cast<core::NodeId>(i);
  for (const core::IcRoundData& r : a.rounds)
    if (r.round == 1) records_.roots.push_back({id, r.instance, {r.message.begin(), r.message.end()}});
  for (const core::IcDecision& d : a.decisions) {
    records_.decisions.push_back({id, d.instance, d.finish_ns, {d.entries.begin(), d.entries.end()}});
    for (const core::IcPublication& p : d.publications)
      records_.publications.push_back({id, p.instance, d.finish_ns, std::string(p.key.begin(), p.key.end()), p.t_pub_ns,
                                       p.reduction, p.status == core::ReduceStatus::ok, p.stored, p.copies,
                                       {p.value.begin(), p.value.end()}});
  }
  (void)now;
  const IcRole role = records_.roles[static_cast<size_t>(i)];
  if (role == IcRole::liar || role == IcRole::corrupter) {
    send_rewritten(i, a);
  } else {
    for (const core::TxFrame& tx : a.tx) send_honest(i, tx);
  }
}

// One frame to every other live node; an omitter decides per receiver and cycle.
void IcSimulator::send_honest(int i, const core::TxFrame& tx) {
  const bool omitter = records_.roles[static_cast<size_t>(i)] == IcRole::omitter;
  for (int to = 0; to < scenario_.nodes; ++to) {
    if (to == i) continue;
    bool late = false;
    if (omitter) {
      const uint64_t h = hash(scenario_.seed, static_cast<uint64_t>(i), static_cast<uint64_t>(to),
                              static_cast<uint64_t>(tx.cycle));
      switch (h % 4) {
        case 0:  // nothing to this receiver this cycle
          ++records_.frames_omitted;
          continue;
        case 1:  // some frames only: incomplete round data
          if (net_rng_.chance(0.5)) {
            ++records_.frames_omitted;
            continue;
          }
          break;
        case 2: late = true; break;
        default: break;
      }
    }
    deliver(i, to, tx.bytes, tx.tx_ns, tx.cycle, late);
  }
}

// Liars and corrupters: the node's honest round data, rewritten for each receiver on its own.
void IcSimulator::send_rewritten(int i, const core::IcActions& a) {
  if (a.rounds.empty()) return;
  const IcRole role = records_.roles[static_cast<size_t>(i)];
  const size_t eb = records_.entry_bytes;
  const int64_t cycle = a.rounds.front().cycle;
  const int64_t tx_ns = a.rounds.front().tx_ns;
  for (int to = 0; to < scenario_.nodes; ++to) {
    if (to == i) continue;
    core::IcMessage msgs[core::kEigRoundsMax];
    size_t count = 0;
    size_t used = 0;
    for (const core::IcRoundData& r : a.rounds) {
      std::span<uint8_t> copy(scratch_.data() + used, r.message.size());
      std::memcpy(copy.data(), r.message.data(), copy.size());
      used += copy.size();
      uint64_t instance = r.instance;
      const uint64_t style = hash(scenario_.seed, static_cast<uint64_t>(i), r.instance) % 10;
      if (role == IcRole::liar) {
        // Mostly colluding: the story depends on the receiver and instance only, so every liar
        // tells a receiver the same thing in every round. Otherwise a lie of its own, or the
        // truth to some receivers (equivocation).
        uint64_t seed = hash(scenario_.seed, 0x11A5, static_cast<uint64_t>(to), r.instance);
        if (style >= 6 && style < 8) seed = hash(scenario_.seed, static_cast<uint64_t>(i), static_cast<uint64_t>(to), r.instance ^ (static_cast<uint64_t>(r.round) << 40));
        const bool honest_here = style >= 8 && (hash(scenario_.seed, static_cast<uint64_t>(to), r.instance) & 1) != 0;
        if (!honest_here) core::ic_lie(copy, eb, records_.limits, seed);
      } else {
        const uint64_t h = hash(scenario_.seed, static_cast<uint64_t>(i), static_cast<uint64_t>(to),
                                r.instance ^ (static_cast<uint64_t>(r.round) << 40));
        core::ic_garble(copy, eb, h);
        if (h % 7 == 0 && copy.size() > 1) copy = copy.first(copy.size() - 1 - (h >> 8) % std::min<size_t>(copy.size() - 1, 64));
        if (h % 11 == 0) ++instance;  // round data for another instance
      }
      msgs[count++] = {instance, static_cast<uint8_t>(r.round), copy};
    }
    core::IcFrameParams p;
    p.cluster_id = 1;
    p.sender = static_cast<core::NodeId>(i);
    p.cycle = static_cast<uint64_t>(cycle);
    p.chunk_bytes = ic_.chunk_bytes;
    p.frame_bytes_max = scenario_.frame_bytes_max;
    const size_t frames = core::encode_ic_frames({msgs, count}, p, frames_, lengths_);
    TOB_ASSERT(frames > 0);  // a rewritten message is never longer than the honest one
    for (size_t k = 0; k < frames; ++k) {
      ++records_.frames_lied;
      deliver(i, to, {frames_.data() + k * p.frame_bytes_max, lengths_[k]}, tx_ns, cycle, false);
    }
  }
}

void IcSimulator::deliver(int from, int to, std::span<const uint8_t> bytes, int64_t tx_ns, int64_t cycle, bool late) {
  if (!nodes_[static_cast<size_t>(to)].alive) return;
  ++records_.frames_sent;
  int64_t arrive = tx_ns + scenario_.delay_ns + (scenario_.jitter_ns > 0 ? net_rng_.range(0, scenario_.jitter_ns) : 0);
  if (late) {
    arrive = schedule_.slot_end_ns(cycle, static_cast<core::NodeId>(from)) + scenario_.delay_ns;
    ++records_.frames_late;
  }
  push({arrive, 0, EvType::arrive, static_cast<uint8_t>(to), store_frame(bytes), 0});
}

void IcSimulator::on_arrive(const Ev& e) {
  SimNode& sn = nodes_[e.node];
  if (sn.alive) {
    const core::DecodeResult d = core::decode_frame(pool_[e.frame]);
    TOB_ASSERT(d.ok());  // frames are encoded by the nodes and the fault injectors, never damaged
    sn.ic->on_frame(d.view, e.t);
    after_call(e.node, e.t);
  }
  pool_free_.push_back(e.frame);
}

// The replicated application: every node writes the same keys each period. Correct replicas
// agree exactly on majority keys and differ slightly on sensor-like numeric keys; faulty ones
// write what they like.
std::vector<uint8_t> IcSimulator::value_for(int node, int64_t period, int key, core::Reduction r) {
  const bool faulty = records_.roles[static_cast<size_t>(node)] != IcRole::correct;
  const uint64_t base = hash(scenario_.seed, static_cast<uint64_t>(period), static_cast<uint64_t>(key));
  const uint64_t own = hash(scenario_.seed, static_cast<uint64_t>(period), static_cast<uint64_t>(key), static_cast<uint64_t>(node) + 1);
  const bool wild = faulty && (own & 3) != 0;
  std::vector<uint8_t> v(8);
  switch (r) {
    case core::Reduction::majority: {
      v.resize(1 + base % 16);
      for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<uint8_t>(mix64(base + k) >> 13);
      if (wild) v[0] ^= 0x5A;
      break;
    }
    case core::Reduction::median_f64:
    case core::Reduction::midpoint_f64: {
      double x = static_cast<double>(base % 100000) / 100.0 + static_cast<double>(own % 100) / 10000.0;
      if (wild) x = (own & 4) != 0 ? 35.33 : -1e9;
      core::encode_f64(x, v);
      break;
    }
    case core::Reduction::median_i64:
    case core::Reduction::midpoint_i64: {
      int64_t x = static_cast<int64_t>(base % 1'000'000) - 500'000 + static_cast<int64_t>(own % 5);
      if (wild) x = (own & 4) != 0 ? INT64_MAX : INT64_MIN;
      core::encode_i64(x, v);
      break;
    }
  }
  return v;
}

void IcSimulator::on_write(const Ev& e) {
  SimNode& sn = nodes_[e.node];
  if (!sn.alive) return;
  const auto period = static_cast<int64_t>(e.gen);
  const int64_t finish = records_.finish_ns[static_cast<size_t>(period)];
  const auto write = [&](const std::string& key, int64_t t_pub, std::vector<uint8_t> value) {
    const core::KvWriteResult r = sn.ic->kv_write(bytes_of(key), t_pub, value, e.t);
    records_.writes.push_back({e.node, key, t_pub, std::move(value), e.t, r.status, r.instance, r.finish_ns});
  };
  for (int k = 0; k < static_cast<int>(keys_.size()); ++k) {
    const core::Reduction r = core::reduction_for(bytes_of(keys_[static_cast<size_t>(k)]), ic_.key_classes, ic_.default_reduction);
    // Publishing time common to the replicas: the finish or up to one cycle later.
    const int64_t t_pub = finish + static_cast<int64_t>(hash(scenario_.seed, static_cast<uint64_t>(period), static_cast<uint64_t>(k)) % 3) *
                                       (scenario_.cycle_ns / 2);
    write(keys_[static_cast<size_t>(k)], t_pub, value_for(e.node, period, k, r));
  }
  // A write that cannot make it: refused at once, never published.
  write("late", finish - 1, {1});
  after_call(e.node, e.t);
}

void IcSimulator::on_read(const Ev& e) {
  for (int i = 0; i < scenario_.nodes; ++i) {
    SimNode& sn = nodes_[static_cast<size_t>(i)];
    if (!sn.alive) continue;
    for (const std::string& key : keys_) {
      // Freshness "now" (exactly the version published at this instant) and two cycles back.
      for (const int64_t t_min : {e.t, e.t - 2 * scenario_.cycle_ns}) {
        const core::KvRead r = sn.ic->kv_read(bytes_of(key), t_min, e.t);
        records_.reads.push_back({static_cast<core::NodeId>(i), key, t_min, e.t, r.status, r.t_pub_ns,
                                  {r.value.begin(), r.value.end()}});
      }
    }
    after_call(i, e.t);
  }
}

void IcSimulator::add_totals(const core::IcCounters& c) {
  core::IcCounters& t = records_.totals;
  t.instances_started += c.instances_started;
  t.instances_finished += c.instances_finished;
  t.frames_tx += c.frames_tx;
  for (int v = 0; v < core::kIcFrameVerdictCount; ++v) t.frames_rx[v] += c.frames_rx[v];
  t.chunks_rx += c.chunks_rx;
  t.chunks_duplicate += c.chunks_duplicate;
  t.chunks_malformed += c.chunks_malformed;
  t.messages_default += c.messages_default;
  t.rounds_missed += c.rounds_missed;
  t.decisions_bottom += c.decisions_bottom;
  t.batches_malformed += c.batches_malformed;
  t.groups_ignored += c.groups_ignored;
  t.publications_ok += c.publications_ok;
  t.publications_failed += c.publications_failed;
  t.publications_conflict += c.publications_conflict;
  t.publications_dropped += c.publications_dropped;
  t.writes_accepted += c.writes_accepted;
  t.writes_refused += c.writes_refused;
  t.decisions_dropped += c.decisions_dropped;
}

}  // namespace tob::sim
