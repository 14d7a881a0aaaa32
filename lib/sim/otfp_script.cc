#include "sim/otfp_script.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "core/otfp_log.h"
#include "sim/format.h"
#include "sim/script_args.h"
#include "core/otfp_node.h"
#include "sim/simulator.h"

namespace tob::sim {
namespace {

using core::NodeId;
using core::OtfpNode;
using core::OtfpValue;

constexpr int64_t kDelayNs = 20'000;  // every frame arrives this long after it left



using script::Failure;
using script::fail;
using script::to_int;

// A value's senders as a scenario writes them: "empty", "2", "0,1,3".
std::string senders(uint64_t mask) {
  if (mask == 0) return "empty";
  std::string s;
  for (int k = 0; k < 64; ++k)
    if ((mask >> k & 1u) != 0) s += (s.empty() ? "" : ",") + std::to_string(k);
  return s;
}


const std::map<std::string, core::SectionType>& section_names() {
  using T = core::SectionType;
  static const std::map<std::string, T> m = {
      {"state", T::otfp_state}, {"batch", T::app_batch}, {"vote", T::otfp_vote},  {"2a", T::otfp_phase2a},
      {"request", T::retransmit_request}, {"data", T::retransmit_data}, {"1a", T::otfp_phase1a}, {"1b", T::otfp_phase1b},
      {"any", T::otfp_any}, {"decided", T::otfp_decided}};
  return m;
}

struct Delivered {
  NodeId sender;
  uint64_t msg_id;
  int64_t instance;
};

struct Held {
  int64_t tx_ns;
  size_t needs;  // log bytes that must be durable before it leaves
  std::vector<uint8_t> bytes;
};

struct ScriptNode {
  std::unique_ptr<OtfpNode> engine;
  std::vector<uint8_t> log;
  size_t log_base = 0;
  size_t durable = 0;
  bool hold = false;
  int64_t sync_ns = 0;        // `sync NODE delay=C`: a sync completes this long after it starts
  bool syncing = false;       // a delayed sync is under way
  bool alive = false;
  int incarnation = -1;
  uint64_t next_msg = 0;
  uint64_t timer_gen = 0;
  int64_t timer_at = INT64_MAX;
  std::vector<Held> held;
  std::vector<std::vector<Delivered>> deliveries;  // per incarnation
};

struct Rule {
  int from = -1;  // -1: any
  int to = -1;
  int64_t lo = INT64_MIN;
  int64_t hi = INT64_MAX;
  bool any_section = true;
  core::SectionType section{};
  int64_t count = -1;  // slot frames (sender, cycle) it may still take; -1 unlimited
  int segment = -1;    // only the slot frame carrying this segment (never an aux frame); -1 any
  std::set<std::pair<int, int64_t>> taken;
};

class Script final : private core::OtfpObserver {
 public:
  explicit Script(bool verbose) : verbose_(verbose) {}
  ScriptResult run(const std::string& text);

 private:
  enum class EvType : uint8_t { timer, leave, arrive, synced };
  struct Ev {
    int64_t t;
    uint64_t seq;
    EvType type;
    int node;        // timer: the node; leave: the sender; arrive: the receiver
    int incarnation;
    uint64_t gen;    // timer generation; synced: the log bytes the sync covers
    uint32_t frame;  // leave/arrive: index in frames_
    bool operator>(const Ev& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };

  void decided(NodeId node, int64_t instance, uint32_t ballot, const OtfpValue& value) override;
  void round_started(NodeId node, uint32_t ballot, int64_t low) override {
    if (verbose_) output_ += fmt("  node %d starts round %08x (phase 1a from instance %" PRId64 ")\n", node, ballot, low);
  }
  void activated(NodeId node, uint32_t ballot, int64_t activation) override {
    if (verbose_) output_ += fmt("  node %d activates %08x from instance %" PRId64 "\n", node, ballot, activation);
  }
  void step(const std::vector<std::string>& w);
  void cluster(const std::vector<std::string>& w);
  void start(int k);
  void after_call(int k);
  void collect(int k);
  void send(int k, int64_t tx_ns, std::vector<uint8_t> bytes, size_t needs = 0);  // needs: log bytes durable first
  void make_durable(int k, size_t upto = SIZE_MAX);
  void advance_to(int64_t target);
  void on_leave(const Ev& e);
  void on_arrive(const Ev& e);
  void push(Ev e) {
    e.seq = seq_++;
    queue_.push(e);
  }
  bool dropped(int from, int to, const core::FrameView& v);
  void check_invariants();
  void expect(const std::vector<std::string>& w);
  std::string show(int k) const;

  ScriptNode& node(int k);
  OtfpNode& live(int k);
  std::vector<int> nodes_arg(const std::string& v) const { return script::nodes_arg(v, n_); }
  uint64_t senders_arg(const std::string& v) const;
  int node_arg(const std::string& v) const { return script::node_arg(v, n_); }
  static std::map<std::string, std::string> options(const std::vector<std::string>& w, size_t from) {
    return script::options(w, from);
  }

  bool verbose_;
  int n_ = 0;
  core::NodeConfig config_;
  std::unique_ptr<core::Schedule> sched_;
  int64_t now_ = 0;
  std::vector<ScriptNode> nodes_;
  std::vector<Rule> rules_;
  std::vector<std::vector<uint8_t>> frames_;
  std::priority_queue<Ev, std::vector<Ev>, std::greater<>> queue_;
  uint64_t seq_ = 0;
  std::unordered_map<int64_t, std::pair<OtfpValue, std::string>> decisions_;
  std::string output_;
  int expectations_ = 0;
};

// --- Arguments ------------------------------------------------------------------------------




uint64_t Script::senders_arg(const std::string& v) const {
  if (v == "empty") return 0;
  uint64_t mask = 0;
  for (int k : nodes_arg(v)) mask |= uint64_t{1} << k;
  return mask;
}

ScriptNode& Script::node(int k) { return nodes_[static_cast<size_t>(k)]; }

OtfpNode& Script::live(int k) {
  ScriptNode& sn = node(k);
  if (!sn.alive) fail("node " + std::to_string(k) + " is down");
  return *sn.engine;
}

// --- Nodes and the network --------------------------------------------------------------------

void Script::decided(NodeId node, int64_t instance, uint32_t ballot, const OtfpValue& value) {
  const std::string who = fmt("node %d/%d (ballot %08x)", node, nodes_[node].incarnation, ballot);
  auto [it, added] = decisions_.emplace(instance, std::make_pair(value, who));
  if (!added && !(it->second.first == value))
    fail(fmt("instance %" PRId64 " decided twice differently: %s decided %s, %s decided %s", instance,
             it->second.second.c_str(), senders(it->second.first.mask).c_str(), who.c_str(), senders(value.mask).c_str()));
  if (verbose_)
    output_ += fmt("  node %d decides instance %" PRId64 ": %s (%s ballot %08x)\n", node, instance, senders(value.mask).c_str(),
                   core::ballot_classic(ballot) ? "classic" : "fast", ballot);
}

void Script::cluster(const std::vector<std::string>& w) {
  if (n_ != 0) fail("one cluster per scenario");
  auto o = options(w, 1);
  n_ = static_cast<int>(to_int(o.count("nodes") ? o["nodes"] : "4", "nodes"));
  if (n_ < 3 || n_ > 16) fail("nodes must be 3..16");
  config_.schedule = core::ScheduleConfig::equal_slots(n_, n_ * 250'000);
  if (o.count("kappa")) config_.kappa = static_cast<int>(to_int(o["kappa"], "kappa"));
  if (o.count("frame")) config_.frame_bytes_max = static_cast<size_t>(to_int(o["frame"], "frame"));
  if (o.count("window")) config_.otfp_window = static_cast<int>(to_int(o["window"], "window"));
  if (o.count("rate")) config_.rate_mbps = to_int(o["rate"], "rate");
  // Timeouts in cycles (the daemon's durations at a 1 ms cycle: heard=20 recovery=20 retry=4).
  const int64_t cycle_ns = config_.schedule.cycle_ns;
  auto cycles = [&](const char* key) {
    const int64_t c = to_int(o[key], key);
    if (c < 1 || c > 100) fail(std::string(key) + " must be 1..100 cycles");
    return c * cycle_ns;
  };
  if (o.count("heard")) config_.otfp_heard_ns = cycles("heard");
  if (o.count("recovery")) config_.otfp_recovery_ns = cycles("recovery");
  if (o.count("retry")) config_.otfp_retry_ns = cycles("retry");
  config_.payload_bytes_max = 64;
  static const std::set<std::string> known = {"nodes", "kappa", "frame", "window", "rate", "heard", "recovery", "retry"};
  for (const auto& [key, value] : o)
    if (!known.count(key)) fail("unknown cluster option '" + key + "'");
  auto sched = core::Schedule::create(config_.schedule);
  if (!sched) fail(sched.error().message);
  sched_ = std::make_unique<core::Schedule>(std::move(sched.value()));
  nodes_.resize(static_cast<size_t>(n_));
  for (int k = 0; k < n_; ++k) start(k);
}

void Script::start(int k) {
  ScriptNode& sn = node(k);
  core::NodeConfig c = config_;
  c.self = static_cast<NodeId>(k);
  c.first_msg_id = sn.next_msg;
  sn.log.resize(core::otfp_log_valid_bytes(sn.log));  // a torn tail is cut off, as the daemon does
  auto e = OtfpNode::create(c, sn.log);
  if (!e) fail("node " + std::to_string(k) + " does not start: " + e.error().message);
  sn.engine = std::move(e.value());
  sn.engine->set_observer(this);
  sn.log_base = sn.log.size();
  sn.durable = sn.log.size();
  sn.alive = true;
  ++sn.incarnation;
  sn.deliveries.emplace_back();
  sn.held.clear();
  sn.timer_at = INT64_MAX;
  sn.engine->on_time(now_);
  after_call(k);
}

void Script::after_call(int k) {
  collect(k);
  ScriptNode& sn = node(k);
  if (!sn.alive) return;
  const int64_t at = std::max(sn.engine->next_deadline_ns(), now_);
  if (at != sn.timer_at) {
    sn.timer_at = at;
    push({at, 0, EvType::timer, k, sn.incarnation, ++sn.timer_gen, 0});
  }
}

void Script::collect(int k) {
  ScriptNode& sn = node(k);
  for (;;) {
    const core::Actions& a = sn.engine->take_actions();
    sn.log.insert(sn.log.end(), a.persist.begin(), a.persist.end());
    for (const core::TxFrame& tx : a.tx)
      send(k, tx.tx_ns, {tx.bytes.begin(), tx.bytes.end()}, sn.log_base + tx.records_needed(sn.log.size() - sn.log_base));
    for (const core::Delivery& d : a.deliveries) sn.deliveries.back().push_back({d.sender, d.msg_id, d.cycle});
    if (sn.hold || sn.durable == sn.log.size()) return;
    if (sn.sync_ns > 0) {
      // A sync of what is there now, done sync_ns later (group commit: what comes meanwhile
      // waits for the next one).
      if (!sn.syncing) push({now_ + sn.sync_ns, 0, EvType::synced, k, sn.incarnation, sn.log.size(), 0});
      sn.syncing = true;
      return;
    }
    make_durable(k);  // sync at once: the engine hears so, and may act on it
  }
}

void Script::send(int k, int64_t tx_ns, std::vector<uint8_t> bytes, size_t needs) {
  ScriptNode& sn = node(k);
  if (sn.durable < needs) {
    sn.held.push_back({tx_ns, needs, std::move(bytes)});
    return;
  }
  frames_.push_back(std::move(bytes));
  push({std::max(tx_ns, now_), 0, EvType::leave, k, sn.incarnation, 0, static_cast<uint32_t>(frames_.size() - 1)});
}

void Script::make_durable(int k, size_t upto) {
  ScriptNode& sn = node(k);
  sn.durable = std::max(sn.durable, std::min(upto, sn.log.size()));
  std::vector<Held> held;
  held.swap(sn.held);
  for (Held& h : held) send(k, h.tx_ns, std::move(h.bytes), h.needs);
  sn.engine->on_durable(sn.durable - sn.log_base);
}

bool Script::dropped(int from, int to, const core::FrameView& v) {
  const auto cycle = static_cast<int64_t>(v.header.cycle);
  for (Rule& r : rules_) {
    if ((r.from >= 0 && r.from != from) || (r.to >= 0 && r.to != to) || cycle < r.lo || cycle > r.hi) continue;
    if (r.segment >= 0 && ((v.header.flags & core::kFlagAux) != 0 || v.header.segment_index != r.segment)) continue;
    core::SectionView s;
    if (!r.any_section && !v.find_section(r.section, s)) continue;
    const std::pair<int, int64_t> slot{from, cycle};
    if (r.count >= 0 && r.taken.count(slot) == 0) {
      if (static_cast<int64_t>(r.taken.size()) >= r.count) continue;
      r.taken.insert(slot);
    }
    if (verbose_) output_ += fmt("  frame %d->%d of cycle %" PRId64 " lost\n", from, to, cycle);
    return true;
  }
  return false;
}

void Script::on_leave(const Ev& e) {
  const ScriptNode& sn = node(e.node);
  if (!sn.alive || sn.incarnation != e.incarnation) return;  // crashed before the instant
  const core::DecodeResult d = core::decode_frame(frames_[e.frame]);
  if (!d.ok()) fail("a node sent a frame that does not decode");
  for (int to = 0; to < n_; ++to)
    if (to != e.node && !dropped(e.node, to, d.view)) push({e.t + kDelayNs, 0, EvType::arrive, to, 0, 0, e.frame});
}

void Script::on_arrive(const Ev& e) {
  ScriptNode& sn = node(e.node);
  if (!sn.alive) return;
  const core::DecodeResult d = core::decode_frame(frames_[e.frame]);
  sn.engine->on_frame(d.view, e.t);
  after_call(e.node);
}

void Script::advance_to(int64_t target) {
  while (!queue_.empty() && queue_.top().t < target) {
    const Ev e = queue_.top();
    queue_.pop();
    now_ = std::max(now_, e.t);
    switch (e.type) {
      case EvType::timer: {
        ScriptNode& sn = node(e.node);
        if (!sn.alive || sn.incarnation != e.incarnation || sn.timer_gen != e.gen) break;
        sn.timer_at = INT64_MAX;
        sn.engine->on_time(e.t);
        after_call(e.node);
        break;
      }
      case EvType::leave: on_leave(e); break;
      case EvType::arrive: on_arrive(e); break;
      case EvType::synced: {
        ScriptNode& sn = node(e.node);
        if (!sn.alive || sn.incarnation != e.incarnation) break;
        sn.syncing = false;
        if (!sn.hold) make_durable(e.node, static_cast<size_t>(e.gen));
        after_call(e.node);
        break;
      }
    }
  }
  now_ = std::max(now_, target);
}

// --- Invariants -----------------------------------------------------------------------------------

void Script::check_invariants() {
  // Decisions agree by construction of decided(); a node that heard a different one counts it.
  for (int k = 0; k < n_; ++k)
    if (node(k).alive && node(k).engine->counters().decision_conflicts > 0)
      fail(fmt("node %d heard a decision that differs from its own", k));
  // Deliveries: no incarnation delivers a message twice; any two deliver common ones in one order.
  std::vector<std::pair<std::string, const std::vector<Delivered>*>> seqs;
  for (int k = 0; k < n_; ++k)
    for (size_t inc = 0; inc < node(k).deliveries.size(); ++inc)
      seqs.push_back({fmt("node %d/%zu", k, inc), &node(k).deliveries[inc]});
  const auto key = [](const Delivered& d) { return uint64_t{d.sender} << 56 | d.msg_id; };
  std::vector<std::unordered_map<uint64_t, size_t>> pos(seqs.size());
  for (size_t a = 0; a < seqs.size(); ++a)
    for (size_t i = 0; i < seqs[a].second->size(); ++i)
      if (!pos[a].emplace(key((*seqs[a].second)[i]), i).second)
        fail(seqs[a].first + " delivered a message twice");
  for (size_t a = 0; a < seqs.size(); ++a)
    for (size_t b = a + 1; b < seqs.size(); ++b) {
      size_t last = 0;
      bool any = false;
      for (const Delivered& d : *seqs[b].second) {
        const auto it = pos[a].find(key(d));
        if (it == pos[a].end()) continue;
        if (any && it->second < last)
          fail(fmt("%s and %s deliver %d/%" PRIu64 " in different orders", seqs[a].first.c_str(), seqs[b].first.c_str(),
                   d.sender, d.msg_id));
        last = it->second;
        any = true;
      }
    }
}

// --- Steps ----------------------------------------------------------------------------------

void Script::step(const std::vector<std::string>& w) {
  const std::string& cmd = w[0];
  if (cmd == "cluster") return cluster(w);
  if (n_ == 0) fail("the first step must be `cluster nodes=N`");
  const int64_t cycle_ns = sched_->cycle_ns();
  if (cmd == "run") {
    if (w.size() == 2) return advance_to(now_ + to_int(w[1], "cycles") * cycle_ns);
    if (w.size() != 3 || w[1] != "to") fail("run CYCLES, or run to C[.K]");
    const size_t dot = w[2].find('.');
    const int64_t c = to_int(w[2].substr(0, dot), "a cycle");
    const int64_t target = dot == std::string::npos
                               ? sched_->cycle_start_ns(c)
                               : sched_->slot_end_ns(c, static_cast<NodeId>(node_arg(w[2].substr(dot + 1))));
    if (target < now_) fail("time does not go back: it is already past " + w[2]);
    return advance_to(target);
  }
  if (cmd == "submit") {
    if (w.size() < 2 || w.size() > 3) fail("submit NODE [COUNT]");
    const int k = node_arg(w[1]);
    const int64_t count = w.size() == 3 ? to_int(w[2], "count") : 1;
    for (int64_t i = 0; i < count; ++i) {
      ScriptNode& sn = node(k);
      uint8_t payload[32];
      fill_payload(payload, static_cast<NodeId>(k), sn.next_msg);
      const core::SubmitResult r = live(k).submit(0, payload, now_);
      if (r.status != core::SubmitStatus::ok) fail("node " + w[1] + " refused a message");
      ++sn.next_msg;
    }
    return;
  }
  if (cmd == "drop") {
    if (w.size() < 2) fail("drop FROM->TO [cycles=A[..B]] [only=SECTION] [count=N] [segment=J]");
    const size_t arrow = w[1].find("->");
    if (arrow == std::string::npos) fail("drop needs FROM->TO, got '" + w[1] + "'");
    Rule r;
    const std::string from = w[1].substr(0, arrow);
    const std::string to = w[1].substr(arrow + 2);
    r.from = from == "*" ? -1 : node_arg(from);
    r.to = to == "*" ? -1 : node_arg(to);
    for (const auto& [k, v] : options(w, 2)) {
      if (k == "cycles") {
        const size_t dots = v.find("..");
        r.lo = to_int(v.substr(0, dots), "a cycle");
        r.hi = dots == std::string::npos ? r.lo : to_int(v.substr(dots + 2), "a cycle");
      } else if (k == "only") {
        const auto it = section_names().find(v);
        if (it == section_names().end()) fail("unknown section '" + v + "'");
        r.any_section = false;
        r.section = it->second;
      } else if (k == "count") {
        r.count = to_int(v, "count");
      } else if (k == "segment") {
        r.segment = static_cast<int>(to_int(v, "segment"));
      } else {
        fail("unknown drop option '" + k + "'");
      }
    }
    rules_.push_back(std::move(r));
    return;
  }
  if (cmd == "heal") {
    rules_.clear();
    return;
  }
  if (cmd == "crash") {
    if (w.size() < 2) fail("crash NODE [torn=BYTES]");
    const int k = node_arg(w[1]);
    live(k);
    ScriptNode& sn = node(k);
    size_t keep = sn.durable;
    for (const auto& [key, v] : options(w, 2)) {
      if (key != "torn") fail("unknown crash option '" + key + "'");
      keep = std::min(sn.log.size(), sn.durable + static_cast<size_t>(to_int(v, "bytes")));
    }
    sn.log.resize(keep);
    sn.engine.reset();
    sn.alive = false;
    sn.held.clear();
    sn.hold = false;
    sn.syncing = false;
    return;
  }
  if (cmd == "restart") {
    if (w.size() != 2) fail("restart NODE");
    const int k = node_arg(w[1]);
    if (node(k).alive) fail("node " + w[1] + " is up");
    return start(k);
  }
  if (cmd == "sync") {
    if (w.size() != 3) fail("sync NODE hold|now|auto|delay=CYCLES");
    const int k = node_arg(w[1]);
    live(k);
    if (w[2].rfind("delay=", 0) == 0) {
      // Every sync takes this many cycles (a slow disk); 0: at once again.
      char* end = nullptr;
      const double c = std::strtod(w[2].c_str() + 6, &end);
      if (end == w[2].c_str() + 6 || *end != '\0' || !(c >= 0 && c <= 1000)) fail("sync NODE delay=CYCLES: 0..1000 cycles");
      node(k).sync_ns = static_cast<int64_t>(c * static_cast<double>(sched_->cycle_ns()));
      return;
    }
    if (w[2] == "hold") {
      node(k).hold = true;
    } else if (w[2] == "now" || w[2] == "auto") {
      node(k).hold = w[2] == "now" ? node(k).hold : false;
      make_durable(k);
      after_call(k);
    } else {
      fail("sync NODE hold|now|auto|delay=CYCLES");
    }
    return;
  }
  if (cmd == "expect") return expect(w);
  if (cmd == "show") {
    if (w.size() == 1) {
      for (int k = 0; k < n_; ++k) output_ += show(k);
    } else {
      output_ += show(node_arg(w[1]));
    }
    return;
  }
  fail("unknown step '" + cmd + "'");
}

void Script::expect(const std::vector<std::string>& w) {
  ++expectations_;
  if (w.size() < 2) fail("expect what?");
  const std::string& what = w[1];
  const bool instance_first = what == "decided" || what == "undecided" || what == "voted";
  if (instance_first && w.size() < 3) fail("expect " + what + " INSTANCE on=NODES ...");
  const int64_t instance = instance_first ? to_int(w[2], "an instance") : 0;
  auto o = options(w, instance_first || what == "coordinator" || what == "low" ? 3 : 2);
  if (o.count("on") == 0) fail("expect ... on=NODES");
  for (int k : nodes_arg(o["on"])) {
    OtfpNode& e = live(k);
    const std::string who = fmt("node %d", k);
    if (what == "decided") {
      OtfpValue v;
      uint32_t b = 0;
      if (!e.decided(instance, &v, &b)) fail(fmt("%s has not decided instance %" PRId64, who.c_str(), instance));
      if (o.count("value") && v.mask != senders_arg(o["value"]))
        fail(fmt("%s decided instance %" PRId64 " as %s, not %s", who.c_str(), instance, senders(v.mask).c_str(),
                 o["value"].c_str()));
      if (o.count("ballot") && (o["ballot"] == "classic") != core::ballot_classic(b))
        fail(fmt("%s decided instance %" PRId64 " in ballot %08x, not a %s one", who.c_str(), instance, b, o["ballot"].c_str()));
    } else if (what == "undecided") {
      if (e.decided(instance)) fail(fmt("%s decided instance %" PRId64, who.c_str(), instance));
    } else if (what == "voted") {
      OtfpValue v;
      uint32_t b = 0;
      const bool voted = e.voted(instance, &b, &v);
      if (o.count("value") && o["value"] == "none") {
        if (voted) fail(fmt("%s voted in instance %" PRId64 " (ballot %08x)", who.c_str(), instance, b));
        continue;
      }
      if (!voted) fail(fmt("%s has not voted in instance %" PRId64, who.c_str(), instance));
      if (o.count("value") && v.mask != senders_arg(o["value"]))
        fail(fmt("%s voted %s in instance %" PRId64 ", not %s", who.c_str(), senders(v.mask).c_str(), instance,
                 o["value"].c_str()));
    } else if (what == "coordinator") {
      if (w.size() < 3) fail("expect coordinator NODE on=NODES");
      const int c = node_arg(w[2]);
      if (e.coordinator() != c) fail(fmt("%s takes node %d for the coordinator", who.c_str(), e.coordinator()));
    } else if (what == "activating" || what == "active") {
      // The coordinator's round: still collecting phase 1b reports, or fast mode activated.
      if (!e.coordinating()) fail(fmt("%s coordinates no round", who.c_str()));
      if (e.activating() != (what == "activating"))
        fail(fmt("%s is %s", who.c_str(), e.activating() ? "still activating" : "already active"));
    } else if (what == "low") {
      if (w.size() < 3) fail("expect low I on=NODES");
      if (e.lowest_undelivered() != to_int(w[2], "an instance"))
        fail(fmt("%s waits at instance %" PRId64 ", not %s", who.c_str(), e.lowest_undelivered(), w[2].c_str()));
    } else if (what == "delivered") {
      const std::vector<Delivered>& got = node(k).deliveries.back();
      if (o.count("count") && static_cast<int64_t>(got.size()) != to_int(o["count"], "count"))
        fail(fmt("%s delivered %zu messages, not %s", who.c_str(), got.size(), o["count"].c_str()));
      if (o.count("message")) {
        const size_t slash = o["message"].find('/');
        if (slash == std::string::npos) fail("message=SENDER/ID");
        const int s = node_arg(o["message"].substr(0, slash));
        const auto id = static_cast<uint64_t>(to_int(o["message"].substr(slash + 1), "a message id"));
        const bool found = std::any_of(got.begin(), got.end(), [&](const Delivered& d) { return d.sender == s && d.msg_id == id; });
        if (!found) fail(fmt("%s has not delivered %s", who.c_str(), o["message"].c_str()));
      }
    } else {
      fail("unknown expectation '" + what + "'");
    }
  }
}

std::string Script::show(int k) const {
  const ScriptNode& sn = nodes_[static_cast<size_t>(k)];
  if (!sn.alive) return fmt("node %d: down\n", k);
  const OtfpNode& e = *sn.engine;
  std::string s = fmt("node %d/%d: cycle %" PRId64 " low %" PRId64 " floor %" PRId64 " coordinator %d%s promised %08x fast %08x"
                      " from %" PRId64 " log %zu bytes (%zu unsynced, %zu frames waiting), %zu delivered\n",
                      k, sn.incarnation, e.current_cycle(), e.lowest_undelivered(), e.floor(), e.coordinator(),
                      e.activating() ? " (activating)" : "", e.promised(), e.fast_ballot(),
                      e.activation() == INT64_MAX ? -1 : e.activation(), sn.log.size(), sn.log.size() - sn.durable,
                      sn.held.size(), sn.deliveries.back().size());
  for (int64_t i = std::max<int64_t>(0, e.current_cycle() - 12); i <= e.current_cycle(); ++i) {
    OtfpValue v;
    uint32_t b = 0;
    OtfpValue vv;
    uint32_t vb = 0;
    const bool d = e.decided(i, &v, &b);
    const bool voted = e.voted(i, &vb, &vv);
    if (!d && !voted) continue;
    s += fmt("  instance %" PRId64 ":", i);
    if (voted) s += fmt(" voted %s in %08x", senders(vv.mask).c_str(), vb);
    if (d) s += fmt(" decided %s in %08x", senders(v.mask).c_str(), b);
    s += "\n";
  }
  return s;
}

ScriptResult Script::run(const std::string& text) {
  ScriptResult result;
  std::stringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const std::vector<std::string> words = script::words_of(line);
    if (words.empty()) continue;
    try {
      if (verbose_) output_ += fmt("%3d  %s\n", line_no, line.c_str());
      step(words);
      check_invariants();
      ++result.steps;
    } catch (const Failure& f) {
      result.line = line_no;
      result.message = f.message;
      result.output = output_;
      result.expectations = expectations_;
      return result;
    }
  }
  result.ok = result.steps > 0;
  if (!result.ok) result.message = "an empty scenario";
  result.output = output_;
  result.expectations = expectations_;
  return result;
}

}  // namespace

ScriptResult run_otfp_script(const std::string& text, bool verbose) { return Script(verbose).run(text); }

}  // namespace tob::sim
