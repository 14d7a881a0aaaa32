#include "sim/mars_script.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <vector>

#include "sim/checker.h"
#include "sim/clock_checker.h"
#include "sim/format.h"
#include "sim/script_args.h"
#include "sim/simulator.h"

namespace tob::sim {
namespace {

using core::EventKind;
using core::NodeId;
using core::Reason;


using script::Failure;
using script::fail;
using script::to_int;


// Names as scenario files write them: the engine's names with dashes for spaces.
std::string dashed(const char* s) {
  std::string out(s);
  for (char& c : out)
    if (c == ' ') c = '-';
  return out;
}

std::string set_of(uint64_t mask) {
  std::string s = "{";
  for (int k = 0; k < 64; ++k)
    if ((mask >> k & 1u) != 0) s += (s.size() > 1 ? "," : "") + std::to_string(k);
  return s + "}";
}

bool changes_membership(EventKind k) {
  return k == EventKind::membership_created || k == EventKind::admitted || k == EventKind::removed ||
         k == EventKind::self_shutdown || k == EventKind::rejoin_started;
}

struct Expect {
  int line;
  std::vector<std::string> words;
};

class MarsScript {
 public:
  explicit MarsScript(bool verbose) : verbose_(verbose) {}
  ScriptResult run(const std::string& text);

 private:
  void step(const std::vector<std::string>& w);
  void cluster(const std::vector<std::string>& w);
  void simulate();
  void expect(const std::vector<std::string>& w);
  void expect_event(const std::map<std::string, std::string>& o, const std::string& kind);
  void expect_formed(const std::map<std::string, std::string>& o);
  void expect_rates(const std::map<std::string, std::string>& o);
  std::string describe(const EventRecord& e) const;
  int64_t cycle_arg(const std::map<std::string, std::string>& o, const char* key) const;
  int node_arg(const std::string& v) const { return script::node_arg(v, scenario_.nodes); }
  std::vector<int> nodes_arg(const std::string& v) const { return script::nodes_arg(v, scenario_.nodes); }
  static std::map<std::string, std::string> options(const std::vector<std::string>& w, size_t from) {
    return script::options(w, from);
  }

  bool verbose_;
  Scenario scenario_;
  bool have_cluster_ = false;
  std::vector<Expect> expects_;
  std::optional<Simulator> sim_;
  std::string output_;
  int expectations_ = 0;
};




int64_t MarsScript::cycle_arg(const std::map<std::string, std::string>& o, const char* key) const {
  const auto it = o.find(key);
  if (it == o.end()) fail(std::string("needs ") + key + "=CYCLE");
  const int64_t c = to_int(it->second, key);
  if (c < 0 || c >= scenario_.cycles) fail(std::string(key) + " must be inside the run (0.." + std::to_string(scenario_.cycles - 1) + ")");
  return c;
}

void MarsScript::cluster(const std::vector<std::string>& w) {
  if (have_cluster_) fail("one cluster per scenario");
  auto o = options(w, 1);
  const auto get = [&](const char* k, int64_t def) { return o.count(k) ? to_int(o[k], k) : def; };
  scenario_.nodes = static_cast<int>(get("nodes", 4));
  if (scenario_.nodes < 3 || scenario_.nodes > 16) fail("nodes must be 3..16");
  scenario_.cycles = get("cycles", 60);
  if (scenario_.cycles < 4) fail("cycles must be 4 or more");
  scenario_.cycle_ns = scenario_.nodes * 250'000;
  scenario_.order = core::Order::mars;
  scenario_.seed = static_cast<uint64_t>(get("seed", 1));
  scenario_.load = static_cast<double>(get("load", 3));
  scenario_.node_template.rejoin_silence_cycles = static_cast<int>(get("silence", 2));
  scenario_.node_template.two_member_wait_cycles = static_cast<int>(get("two-member-wait", 8));
  scenario_.jitter_ns = get("jitter", scenario_.jitter_ns);
  if (scenario_.jitter_ns < 0) fail("jitter must not be negative");
  if (o.count("clock-sync")) {
    if (o["clock-sync"] != "on" && o["clock-sync"] != "off") fail("clock-sync=on or clock-sync=off");
    scenario_.clock_sync = o["clock-sync"] == "on";
  }
  scenario_.clock_delay_error_ns = get("delay-error", 0);
  scenario_.drift_ppm.assign(static_cast<size_t>(scenario_.nodes), 0.0);
  scenario_.clock_offset_ns.assign(static_cast<size_t>(scenario_.nodes), 0);
  for (const auto& [k, v] : o)
    if (k != "nodes" && k != "cycles" && k != "seed" && k != "load" && k != "silence" && k != "two-member-wait" &&
        k != "jitter" && k != "clock-sync" && k != "delay-error")
      fail("unknown cluster option '" + k + "'");
  have_cluster_ = true;
}

void MarsScript::step(const std::vector<std::string>& w) {
  const std::string& cmd = w[0];
  if (cmd == "mars") return cluster(w);
  if (!have_cluster_) fail("the first line must be `mars nodes=N cycles=C`");
  if (cmd == "expect") fail("internal: expectations are judged after the run");
  if (w.size() < 2) fail("'" + cmd + "' needs a node");
  if (cmd == "link-down") {
    const size_t arrow = w[1].find("->");
    if (arrow == std::string::npos) fail("link-down needs FROM->TO, got '" + w[1] + "'");
    const auto from = nodes_arg(w[1].substr(0, arrow));
    const auto to = nodes_arg(w[1].substr(arrow + 2));
    auto o = options(w, 2);
    const int64_t cycle = cycle_arg(o, "cycle");
    const int64_t cycles = o.count("cycles") ? to_int(o["cycles"], "cycles") : 1;
    if (cycles < 1) fail("cycles must be positive");
    for (int f : from)
      for (int t : to) {
        if (f == t) continue;
        Fault x{FaultKind::link_down, cycle, static_cast<NodeId>(t), static_cast<NodeId>(f)};
        x.cycles = cycles;
        scenario_.faults.push_back(x);
      }
    return;
  }
  const int node = node_arg(w[1]);
  auto o = options(w, 2);
  if (cmd == "clock") {
    if (!o.count("drift")) fail("clock needs drift=PPM");
    const double ppm = std::strtod(o["drift"].c_str(), nullptr);
    if (!(ppm >= -1000 && ppm <= 1000)) fail("drift must be within -1000..1000 ppm");
    scenario_.drift_ppm[static_cast<size_t>(node)] = ppm;
    if (o.count("offset")) scenario_.clock_offset_ns[static_cast<size_t>(node)] = to_int(o["offset"], "offset");
    return;
  }
  if (cmd == "byzantine-clock") {
    scenario_.byzantine_clock_nodes |= uint64_t{1} << node;
    return;
  }
  const int64_t cycle = cycle_arg(o, "cycle");
  Fault x{FaultKind::send_omission, cycle, static_cast<NodeId>(node)};
  if (cmd == "send-omission") {
  } else if (cmd == "receive-omission" || cmd == "late-frame") {
    if (!o.count("from")) fail(cmd + " needs from=PEER");
    x.kind = cmd == "late-frame" ? FaultKind::late_frame : FaultKind::receive_omission;
    x.peer = static_cast<NodeId>(node_arg(o["from"]));
    if (x.peer == x.node) fail("a node does not receive its own frame");
  } else if (cmd == "crash") {
    x.kind = FaultKind::crash;
    x.restart_after_cycles = o.count("restart") ? to_int(o["restart"], "restart") : 0;
  } else {
    fail("unknown step '" + cmd + "'");
  }
  scenario_.faults.push_back(x);
}

std::string MarsScript::describe(const EventRecord& e) const {
  const core::MembershipEvent& m = e.event;
  std::string s = fmt("cycle %" PRId64 ".%d node %d: %s node %d", m.cycle,
                      static_cast<int>(m.turn_seq % scenario_.nodes), e.node, core::to_string(m.kind), m.node);
  if (m.reason != Reason::none) s += std::string(" (") + dashed(core::to_string(m.reason)) + ")";
  return s + " members " + set_of(m.members_after);
}

void MarsScript::simulate() {
  auto sim = Simulator::create(scenario_);
  if (!sim.ok()) fail("the cluster cannot be simulated");
  sim_.emplace(std::move(sim.value()));
  sim_->run();
  if (verbose_)
    for (const EventRecord& e : sim_->records().events)
      if (e.event.kind != EventKind::suspicion_cleared) output_ += "  " + describe(e) + "\n";
  CheckReport report = check(sim_->schedule(), sim_->records());
  if (scenario_.clock_sync) {
    ClockCheckParams p;
    p.precision_ns = sim_->records().precision_bound_ns;
    p.judged_from_cycle = clock_judged_from_cycle(scenario_);
    p.settled_ns = 3 * scenario_.cycle_ns;
    p.fault_free = scenario_.faults.empty();
    check_clock(sim_->records(), p, report);
    if (verbose_) {
      int64_t spread = 0;
      for (const PrecisionSample& x : sim_->records().precision) spread = std::max(spread, x.spread_ns);
      output_ += fmt("  clocks: precision bound %" PRId64 " ns, worst spread %" PRId64 " ns, worst release skew %" PRId64 " ns\n",
                     sim_->records().precision_bound_ns, spread, report.stats.release_skew_ns_max);
    }
  }
  if (!report.ok()) {
    std::string v;
    for (const Violation& x : report.violations) v += "\n  " + x.property + ": " + x.detail;
    fail(fmt("%" PRIu64 " property violations:", report.violation_count) + v);
  }
}

void MarsScript::expect_event(const std::map<std::string, std::string>& o, const std::string& kind) {
  if (!o.count("on")) fail("expect event needs on=NODES");
  const int64_t cycle = cycle_arg(o, "cycle");
  const int subject = o.count("node") ? node_arg(o.at("node")) : -1;
  const std::string reason = o.count("reason") ? o.at("reason") : "";
  for (const auto& [k, v] : o)
    if (k != "on" && k != "cycle" && k != "node" && k != "reason") fail("unknown option '" + k + "'");
  for (int observer : nodes_arg(o.at("on"))) {
    bool found = false;
    std::string seen;
    for (const EventRecord& e : sim_->records().events) {
      if (e.node != observer || e.event.cycle != cycle) continue;
      seen += "\n  " + describe(e);
      found |= dashed(core::to_string(e.event.kind)) == kind && (subject < 0 || e.event.node == subject) &&
               (reason.empty() || dashed(core::to_string(e.event.reason)) == reason);
    }
    if (!found)
      fail(fmt("node %d records no %s", observer, kind.c_str()) + (subject >= 0 ? " of node " + std::to_string(subject) : "") +
           (reason.empty() ? "" : " (" + reason + ")") + " in cycle " + std::to_string(cycle) +
           (seen.empty() ? "; no event in that cycle" : "; it records:" + seen));
  }
}

void MarsScript::expect_formed(const std::map<std::string, std::string>& o) {
  if (!o.count("members")) fail("expect formed needs members=NODES");
  const int64_t by = cycle_arg(o, "by");
  for (const auto& [k, v] : o)
    if (k != "members" && k != "by") fail("unknown option '" + k + "'");
  uint64_t mask = 0;
  for (int k : nodes_arg(o.at("members"))) mask |= uint64_t{1} << k;
  // The last membership change of any node, and each node's state at the end.
  const EventRecord* last = nullptr;
  for (const EventRecord& e : sim_->records().events)
    if (changes_membership(e.event.kind) && (last == nullptr || e.event.turn_seq >= last->event.turn_seq)) last = &e;
  std::string end;
  bool formed = true;
  for (int k = 0; k < scenario_.nodes; ++k) {
    if ((mask >> k & 1u) == 0) continue;
    const core::Engine* n = sim_->node(k);
    if (n == nullptr) {
      end += fmt("\n  node %d: down", k);
      formed = false;
      continue;
    }
    end += fmt("\n  node %d: %s, members %s", k, core::to_string(n->self_state()), set_of(n->members()).c_str());
    formed &= n->self_state() == core::SelfState::member && n->members() == mask;
  }
  const int64_t end_cycle = scenario_.cycles - 1;
  if (!formed)
    fail(fmt("the membership %s never formed in the %" PRId64 " cycles run (last change: %s); at the end:",
             set_of(mask).c_str(), scenario_.cycles, last != nullptr ? describe(*last).c_str() : "none") +
         end);
  const int64_t since = last != nullptr ? last->event.cycle : 0;
  if (since > by)
    fail(fmt("the membership %s formed in cycle %" PRId64 ", not by cycle %" PRId64 " (%" PRId64
             " cycles late; last change: %s)",
             set_of(mask).c_str(), since, by, since - by, describe(*last).c_str()));
  output_ += fmt("formed: %s at every node from cycle %" PRId64 " to the end (cycle %" PRId64 ")\n", set_of(mask).c_str(),
                 since, end_cycle);
}

void MarsScript::expect(const std::vector<std::string>& w) {
  if (w.size() < 2) fail("expect what?");
  ++expectations_;
  if (w[1] == "formed") return expect_formed(options(w, 2));
  if (w[1] == "event") {  // the one word without `=` is the kind
    std::vector<std::string> rest;
    std::string kind;
    for (size_t i = 2; i < w.size(); ++i) {
      if (w[i].find('=') != std::string::npos) {
        rest.push_back(w[i]);
      } else if (kind.empty()) {
        kind = w[i];
      } else {
        fail("expect event takes one KIND, got '" + kind + "' and '" + w[i] + "'");
      }
    }
    if (kind.empty()) fail("expect event needs a KIND");
    return expect_event(options(rest, 0), kind);
  }
  if (w[1] == "rates") {
    if (w.size() < 3 || w[2] != "centred") fail("expect rates centred within=PPM [tracking=PPM]");
    return expect_rates(options(w, 3));
  }
  fail("unknown expectation '" + w[1] + "'");
}

// Every correct clock (not Byzantine, up at the end) counted rate windows, its rate correction
// is off its bound, and their mean is within `within` ppm of 0: an error common to all nodes (a
// wrong delay_ns) must not move the ensemble's rate (core::ClockSync). With `tracking`, each
// one also took out its own drift against the correct clocks' mean, within that many ppm.
void MarsScript::expect_rates(const std::map<std::string, std::string>& o) {
  if (!scenario_.clock_sync) fail("expect rates needs clock-sync=on");
  if (!o.count("within")) fail("expect rates centred needs within=PPM");
  for (const auto& [k, v] : o)
    if (k != "within" && k != "tracking") fail("unknown option '" + k + "'");
  const int64_t within = to_int(o.at("within"), "within");
  const int64_t tracking = o.count("tracking") ? to_int(o.at("tracking"), "tracking") : -1;
  const Records& rec = sim_->records();
  const RateSummary rates = summarize_rates(rec);
  std::vector<int> correct;
  std::string seen;
  for (int k = 0; k < scenario_.nodes; ++k) {
    const ClockLife& cl = rec.clocks[static_cast<size_t>(k)];
    if (!rate_judged(rec, static_cast<size_t>(k))) continue;
    correct.push_back(k);
    seen += fmt("\n  node %d: drift %+.1f ppm, rate correction %+.1f ppm (bound %.0f), %" PRIu64
                " windows counted, %" PRIu64 " left out, %" PRIu64 " inexact; %" PRIu64 " rounds, %" PRIu64 " clipped",
                k, cl.drift_ppm_start, cl.rate_ppm_end, cl.rate_max_ppm, cl.rate_windows, cl.rate_windows_unknown,
                cl.rate_windows_inexact, cl.rounds, cl.rounds_clipped);
  }
  if (correct.empty()) fail("expect rates: no correct clock is up at the end");
  for (int k : correct) {
    const ClockLife& cl = rec.clocks[static_cast<size_t>(k)];
    if (cl.rate_windows == 0) fail(fmt("node %d counted no rate window:", k) + seen);
    if (std::abs(cl.rate_ppm_end) >= cl.rate_max_ppm) fail(fmt("node %d's rate correction is at its bound:", k) + seen);
    const double error = cl.rate_ppm_end + cl.drift_ppm_start - rates.drift_mean;
    if (tracking >= 0 && std::abs(error) > static_cast<double>(tracking))
      fail(fmt("node %d's rate correction is %+.1f ppm off its drift against the mean, beyond %" PRId64 ":", k, error,
               tracking) + seen);
  }
  if (std::abs(rates.rate_mean) > static_cast<double>(within))
    fail(fmt("the correct clocks' rate corrections average %+.1f ppm, beyond %" PRId64 ":", rates.rate_mean, within) + seen);
  output_ += fmt("rates centred: mean %+.1f ppm over %zu correct clocks", rates.rate_mean, correct.size()) + seen + "\n";
}

ScriptResult MarsScript::run(const std::string& text) {
  ScriptResult result;
  std::stringstream in(text);
  int line_no = 0;
  int last_step = 0;
  try {
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      const std::vector<std::string> words = script::words_of(line);
      if (words.empty()) continue;
      if (verbose_) output_ += fmt("%3d  %s\n", line_no, line.c_str());
      if (words[0] == "expect") {
        expects_.push_back({line_no, words});
      } else {
        step(words);
        last_step = line_no;
      }
      ++result.steps;
    }
    if (!have_cluster_) fail("an empty scenario");
    line_no = last_step;
    simulate();
    for (const Expect& e : expects_) {
      line_no = e.line;
      expect(e.words);
    }
  } catch (const Failure& f) {
    result.line = line_no;
    result.message = f.message;
    result.output = output_;
    result.expectations = expectations_;
    return result;
  }
  result.ok = true;
  result.output = output_;
  result.expectations = expectations_;
  return result;
}

}  // namespace

ScriptResult run_mars_script(const std::string& text, bool verbose) { return MarsScript(verbose).run(text); }

bool is_mars_script(const std::string& text) {
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::stringstream ws(line);
    std::string first;
    if (ws >> first) return first == "mars";
  }
  return false;
}

}  // namespace tob::sim
