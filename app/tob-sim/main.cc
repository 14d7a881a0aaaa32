// tob-sim: runs a whole dpdk-tob cluster in one thread on virtual time from a seed and checks
// the protocol's properties. Exit 0 only when every property held on every seed run.
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli.h"
#include "ic_main.h"
#include "sim/checker.h"
#include "sim/otfp_checker.h"
#include "sim/simulator.h"

namespace {

using tob::simcli::parse_int;
using tob::simcli::usage_error;
using tob::simcli::parse_nonneg;
using tob::simcli::parse_prob;

using tob::sim::Fault;
using tob::sim::FaultKind;
using tob::sim::Scenario;

const char* kUsage = R"(usage: tob-sim [options]

Runs an N-node dpdk-tob cluster in the deterministic simulator (virtual time, one seed) and
checks its properties. mars: validity, uniform agreement, integrity, total order, FIFO,
membership agreement, failure detection within two cycles and delivery within one cycle.
otfp: validity, integrity, total order, agreement, exactly-once, and (failure-free runs)
delivery within kappa + 1 cycles.

cluster
  --order ENGINE          ordering engine: mars (default) or otfp
  --kappa K               otfp: votes of instance i in cycle i + K (default 2)
  --window W              otfp: undecided instances before proposers hold back (default 32)
  --torn-tail P           otfp: a crash loses the log records no sent frame used, with
                          probability P (a torn write; default 0)
  --nodes N               cluster size, 3..64 (default 4)
  --cycles C              cycles to simulate (default 200)
  --cycle-ns NS           cycle length (default N x 250000)
  --seed S                random seed (default 1)
  --seeds K               run K seeds S, S+1, ... and report each failing one (default 1)
  --batch N               messages per slot (default 64)
  --two-member-wait C     cycles a two-member membership waits (default 8)
network (per link and frame copy)
  --delay-ns NS           one-way delay (default 20000)
  --jitter-ns NS          uniform extra delay 0..NS (default 10000)
  --loss P                copy loss probability (default 0); both copies lost = omission
  --burst P               probability that a loss starts a burst (default 0)
  --dup P                 duplication probability (default 0)
  --corrupt P             corruption probability, caught by the CRC (default 0)
  --single-copy-loss P    lose exactly one copy of a pair, masked by send-twice (default 0)
  --clock-offset-ns NS    per-node clock offset uniform in [-NS, NS] (default 0)
  --stagger-ns NS         node start instants uniform in [0, NS] (default 0)
faults
  --fault-rate R          random faults inside the fault hypothesis (one per two cycles at
                          most): crash+restart, send/receive omission, corruption, late frame;
                          R = probability per cycle (default 0)
  --no-crashes            random faults without crashes
  --fault-spacing C       at least C cycles between random faults (default 3: the mars fault
                          hypothesis; 1 lets two crashes come within two cycles)
  --crash N@C[+R]         crash node N at the start of cycle C, restart R cycles later
  --fault KIND:N[:P]@C    explicit fault in cycle C: send-omission:N, receive-omission:N:P
                          (N misses P's frame), corrupt:N:P, late-frame:N:P, link-down:N:P
                          (P -> N dead from cycle C on, for --link-down-cycles)
  --link-down-cycles K    length of link-down faults (default 1000000)
workload
  --load M                messages per node per cycle, Poisson (default 2)
  --payload MIN-MAX       payload bytes (default 16-64)
interactive consistency
  --ic                    RT-EIGByz and the key-value store with Byzantine nodes instead of an
                          ordering engine; its own flags: tob-sim --ic --help
output
  --deliveries FILE       every delivery as one line `node cycle sender msg_id` (cycle: the
                          sender's transmit cycle; msg_id counts up per sender in submit order)
  --trace FILE            full event trace
  --quiet                 only the result line
  --help                  this text
)";

Fault parse_crash(const char* v) {
  int node = 0;
  long long cycle = 0;
  long long restart = 0;
  int used = 0;
  if (std::sscanf(v, "%d@%lld%n", &node, &cycle, &used) < 2)
    usage_error(std::string("--crash needs N@C[+R], got '") + v + "'");
  if (v[used] == '+' && std::sscanf(v + used, "+%lld", &restart) != 1)
    usage_error(std::string("--crash needs N@C[+R], got '") + v + "'");
  if (node < 0 || node > 63 || cycle < 0 || restart < 0)
    usage_error(std::string("--crash: node must be 0..63 and cycles non-negative, got '") + v + "'");
  Fault f{FaultKind::crash, cycle, static_cast<tob::core::NodeId>(node)};
  f.restart_after_cycles = restart;
  return f;
}

Fault parse_fault(const char* v, int64_t link_down_cycles) {
  const std::string s(v);
  const size_t colon = s.find(':');
  const size_t at = s.find('@');
  if (colon == std::string::npos || at == std::string::npos || at < colon)
    usage_error("--fault needs KIND:N[:P]@C, got '" + s + "'");
  const std::string kind = s.substr(0, colon);
  Fault f{};
  if (kind == "send-omission") f.kind = FaultKind::send_omission;
  else if (kind == "receive-omission") f.kind = FaultKind::receive_omission;
  else if (kind == "corrupt") f.kind = FaultKind::corrupt;
  else if (kind == "late-frame") f.kind = FaultKind::late_frame;
  else if (kind == "link-down") f.kind = FaultKind::link_down;
  else usage_error("--fault: unknown kind '" + kind + "'");
  int node = -1;
  int peer = -1;
  long long cycle = -1;
  const std::string rest = s.substr(colon + 1);
  const int got = std::sscanf(rest.c_str(), "%d:%d@%lld", &node, &peer, &cycle);
  if (got != 3) {
    peer = -1;
    if (std::sscanf(rest.c_str(), "%d@%lld", &node, &cycle) != 2)
      usage_error("--fault needs KIND:N[:P]@C, got '" + s + "'");
  }
  if (node < 0 || node > 63 || cycle < 0 || (peer != -1 && (peer < 0 || peer > 63)))
    usage_error("--fault: node ids 0..63 and a non-negative cycle, got '" + s + "'");
  if (f.kind != FaultKind::send_omission && peer < 0)
    usage_error("--fault " + kind + " needs a peer: " + kind + ":N:P@C");
  f.node = static_cast<tob::core::NodeId>(node);
  f.peer = peer < 0 ? tob::core::kNoNode : static_cast<tob::core::NodeId>(peer);
  f.cycle = cycle;
  f.cycles = link_down_cycles;
  return f;
}

struct Options {
  Scenario scenario;
  uint64_t seeds = 1;
  bool cycle_ns_set = false;
  std::string deliveries;
  std::string trace;
  bool quiet = false;
  std::vector<std::string> fault_args;
};

Options parse(int argc, char** argv) {
  Options o;
  Scenario& s = o.scenario;
  s.node_template.batch_msgs_max = 64;
  int64_t link_down_cycles = 1'000'000;
  std::vector<const char*> faults;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (flag == "--quiet") {
      o.quiet = true;
      continue;
    }
    if (flag == "--no-crashes") {
      s.crashes = false;
      continue;
    }
    if (flag.rfind("--", 0) != 0) usage_error("unexpected argument '" + flag + "'");
    if (i + 1 >= argc) usage_error(flag + " needs a value");
    const char* v = argv[++i];
    const char* f = flag.c_str();
    if (flag == "--order") {
      if (std::strcmp(v, "mars") == 0) s.order = tob::core::Order::mars;
      else if (std::strcmp(v, "otfp") == 0) s.order = tob::core::Order::otfp;
      else usage_error(std::string("--order: unknown ordering engine '") + v + "' (available: mars, otfp)");
    } else if (flag == "--kappa") s.node_template.kappa = static_cast<int>(parse_int(f, v, 1, 16));
    else if (flag == "--window") s.node_template.otfp_window = static_cast<int>(parse_int(f, v, 4, 64));
    else if (flag == "--torn-tail") s.torn_tail = parse_prob(f, v);
    else if (flag == "--nodes") s.nodes = static_cast<int>(parse_int(f, v, 3, 64));
    else if (flag == "--cycles") s.cycles = parse_int(f, v, 1, 100'000'000);
    else if (flag == "--cycle-ns") { s.cycle_ns = parse_int(f, v, 1000, 10'000'000'000); o.cycle_ns_set = true; }
    else if (flag == "--seed") s.seed = static_cast<uint64_t>(parse_int(f, v, 0, INT64_MAX));
    else if (flag == "--seeds") o.seeds = static_cast<uint64_t>(parse_int(f, v, 1, 100'000'000));
    else if (flag == "--batch") s.node_template.batch_msgs_max = static_cast<size_t>(parse_int(f, v, 1, 4096));
    else if (flag == "--two-member-wait") s.node_template.two_member_wait_cycles = static_cast<int>(parse_int(f, v, 1, 1'000'000));
    else if (flag == "--delay-ns") s.delay_ns = parse_int(f, v, 0, 1'000'000'000);
    else if (flag == "--jitter-ns") s.jitter_ns = parse_int(f, v, 0, 1'000'000'000);
    else if (flag == "--loss") s.loss = parse_prob(f, v);
    else if (flag == "--burst") s.burst = parse_prob(f, v);
    else if (flag == "--dup") s.dup = parse_prob(f, v);
    else if (flag == "--corrupt") s.corrupt = parse_prob(f, v);
    else if (flag == "--single-copy-loss") s.single_copy_loss = parse_prob(f, v);
    else if (flag == "--clock-offset-ns") s.clock_offset_ns_max = parse_int(f, v, 0, 1'000'000'000);
    else if (flag == "--stagger-ns") s.start_stagger_ns = parse_int(f, v, 0, 100'000'000'000);
    else if (flag == "--fault-rate") s.fault_rate = parse_prob(f, v);
    else if (flag == "--fault-spacing") s.fault_spacing_cycles = parse_int(f, v, 1, 1'000'000);
    else if (flag == "--crash") s.faults.push_back(parse_crash(v));
    else if (flag == "--fault") faults.push_back(v);
    else if (flag == "--link-down-cycles") link_down_cycles = parse_int(f, v, 1, INT64_MAX / 2);
    else if (flag == "--load") s.load = parse_nonneg(f, v);
    else if (flag == "--payload") {
      int lo = 0;
      int hi = 0;
      if (std::sscanf(v, "%d-%d", &lo, &hi) != 2 || lo < 0 || hi < lo || hi > 1024)
        usage_error(std::string("--payload needs MIN-MAX within 0-1024, got '") + v + "'");
      s.payload_min = lo;
      s.payload_max = hi;
    } else if (flag == "--deliveries") o.deliveries = v;
    else if (flag == "--trace") o.trace = v;
    else usage_error("unknown flag '" + flag + "'");
  }
  for (const char* v : faults) s.faults.push_back(parse_fault(v, link_down_cycles));
  if (!o.cycle_ns_set) s.cycle_ns = static_cast<int64_t>(s.nodes) * 250'000;
  for (const Fault& f : s.faults)
    if (f.node >= s.nodes || (f.peer != tob::core::kNoNode && f.peer >= s.nodes))
      usage_error("a fault names node " + std::to_string(f.node) + " or " + std::to_string(f.peer) +
                  ", outside the " + std::to_string(s.nodes) + "-node cluster");
  if (o.seeds > 1 && (!o.deliveries.empty() || !o.trace.empty()))
    usage_error("--deliveries and --trace need a single seed (drop --seeds)");
  return o;
}

void write_deliveries(const std::string& path, const tob::sim::Records& rec) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "tob-sim: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    std::exit(2);
  }
  for (const auto& d : rec.deliveries)
    std::fprintf(f, "%d %" PRId64 " %d %" PRIu64 "\n", d.node, d.cycle, d.sender, d.msg_id);
  if (std::fclose(f) != 0) {
    std::fprintf(stderr, "tob-sim: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    std::exit(2);
  }
}

std::string replay_command(int argc, char** argv, uint64_t seed) {
  std::string cmd = "tob-sim";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seed" || a == "--seeds" || a == "--trace") {
      ++i;
      continue;
    }
    if (a == "--quiet") continue;
    cmd += " " + a;
  }
  return cmd + " --seed " + std::to_string(seed) + " --trace trace.txt";
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--ic") == 0) return run_ic_main(argc, argv);
  Options o = parse(argc, argv);
  Scenario& s = o.scenario;
  const uint64_t first_seed = s.seed;
  uint64_t failed = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t k = 0; k < o.seeds; ++k) {
    s.seed = first_seed + k;
    auto sim = tob::sim::Simulator::create(s);
    if (!sim) usage_error(sim.error().message);
    std::FILE* trace = nullptr;
    if (!o.trace.empty()) {
      trace = std::fopen(o.trace.c_str(), "w");
      if (trace == nullptr) usage_error("cannot write " + o.trace + ": " + std::strerror(errno));
      sim.value().set_trace_sink(trace);
    }
    sim.value().run();
    if (trace != nullptr) std::fclose(trace);
    const tob::sim::Records& rec = sim.value().records();
    const bool otfp = s.order == tob::core::Order::otfp;
    tob::sim::OtfpCheckParams op;
    op.kappa = s.node_template.kappa;
    op.tolerance_ns = 2 * s.clock_offset_ns_max + s.delay_ns + s.jitter_ns;
    op.failure_free = s.loss == 0 && s.burst == 0 && s.fault_rate == 0 && s.faults.empty() && s.corrupt == 0;
    const auto report = otfp ? tob::sim::check_otfp(sim.value().schedule(), rec, op)
                             : tob::sim::check(sim.value().schedule(), rec, 2 * s.clock_offset_ns_max);
    if (!o.deliveries.empty()) write_deliveries(o.deliveries, rec);

    if (o.seeds > 1) {
      if (!report.ok()) {
        ++failed;
        std::printf("seed %" PRIu64 ": FAIL %s: %s\n  replay: %s\n", s.seed,
                    report.violations[0].property.c_str(), report.violations[0].detail.c_str(),
                    replay_command(argc, argv, s.seed).c_str());
      }
      if (!o.quiet && (k + 1) % 100 == 0)
        std::fprintf(stderr, "\rtob-sim: %" PRIu64 "/%" PRIu64 " seeds, %" PRIu64 " failed", k + 1, o.seeds, failed);
      continue;
    }
    const auto& st = report.stats;
    if (!o.quiet) {
      uint64_t shutdowns_by_reason[16] = {};
      for (const auto& e : rec.events)
        if (e.event.kind == tob::core::EventKind::self_shutdown) ++shutdowns_by_reason[static_cast<int>(e.event.reason)];
      std::printf("tob-sim: %s, %d nodes, %" PRId64 " cycles of %" PRId64 " ns, seed %" PRIu64 "\n",
                  tob::core::to_string(s.order), s.nodes, s.cycles, s.cycle_ns, s.seed);
      std::printf("network: delay %" PRId64 " ns + jitter %" PRId64 " ns, loss %g, burst %g, dup %g, corrupt %g\n",
                  s.delay_ns, s.jitter_ns, s.loss, s.burst, s.dup, s.corrupt);
      std::printf("frames: %" PRIu64 " sent, %" PRIu64 " copies lost, %" PRIu64 " corrupted (%" PRIu64
                  " rejected by CRC), %" PRIu64 " duplicated\n",
                  rec.frames_sent, rec.copies_lost, rec.copies_corrupted, rec.frames_rejected_crc, rec.copies_duplicated);
      std::printf("faults injected: %zu\n", rec.faults.size());
      uint64_t submitted = 0;
      uint64_t refused = 0;
      for (const auto& l : rec.lives) {
        submitted += l.submitted;
        refused += l.refused;
      }
      std::printf("messages: %" PRIu64 " submitted, %" PRIu64 " refused (backpressure), %" PRIu64 " sent, %" PRIu64
                  " delivered (%" PRIu64 " deliveries), %" PRIu64 " reported undelivered\n",
                  submitted, refused, st.sent, st.messages_delivered, st.deliveries, st.undelivered);
      if (otfp) {
        const auto& t = rec.engine_totals;
        std::printf("otfp: %" PRIu64 " instance decisions (%" PRIu64 " fast, %" PRIu64 " recovered: %.3f%%), %" PRIu64
                    " collisions, %" PRIu64 " activations, %" PRIu64 " retransmissions asked / %" PRIu64
                    " served, %" PRIu64 " tempo holds, window max %" PRIu64 ", %" PRIu64 " gaps, %" PRIu64
                    " torn log tails\n",
                    t.instances_decided, t.instances_fast, t.instances_recovered,
                    t.instances_decided == 0 ? 0.0 : 100.0 * static_cast<double>(t.instances_recovered) /
                                                        static_cast<double>(t.instances_decided),
                    t.collisions, t.activations, t.retransmit_requests, t.retransmit_served, t.tempo_holds,
                    t.window_max, t.gaps, rec.torn_tails);
      }
      std::printf("membership: %" PRIu64 " admissions, %" PRIu64 " removals, %" PRIu64 " self-shutdowns",
                  st.admissions, st.removals, st.self_shutdowns);
      bool first = true;
      for (int r = 0; r < 16; ++r)
        if (shutdowns_by_reason[r] > 0) {
          std::printf("%s%s %" PRIu64, first ? " (" : ", ", tob::core::to_string(static_cast<tob::core::Reason>(r)),
                      shutdowns_by_reason[r]);
          first = false;
        }
      std::printf("%s; correct nodes %d/%d\n", first ? "" : ")", st.correct_nodes, s.nodes);
      if (st.failures_checked > 0)
        std::printf("failure detection: worst %.3f cycles over %d checks\n",
                    static_cast<double>(st.detection_cycles_max_x1000) / 1000.0, st.failures_checked);
      std::printf("properties:\n");
      for (const auto& name : otfp ? tob::sim::otfp_property_names() : tob::sim::property_names()) {
        uint64_t count = 0;
        for (const auto& v : report.violations) count += v.property == name ? 1 : 0;
        std::printf("  %-26s %s\n", name.c_str(), count == 0 ? "ok" : "VIOLATED");
      }
    }
    if (!report.ok()) {
      ++failed;
      std::printf("%" PRIu64 " violations, the first ones:\n", report.violation_count);
      for (const auto& v : report.violations) std::printf("  %s: %s\n", v.property.c_str(), v.detail.c_str());
      std::printf("last trace lines:\n");
      const auto lines = sim.value().recent_trace();
      for (size_t i = lines.size() > 40 ? lines.size() - 40 : 0; i < lines.size(); ++i)
        std::printf("  %s\n", lines[i].c_str());
      std::printf("replay: %s\n", replay_command(argc, argv, s.seed).c_str());
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.seeds > 1 && !o.quiet) std::fprintf(stderr, "\n");
  if (failed == 0) {
    std::printf("result: PASS (%" PRIu64 " seed%s from %" PRIu64 ", %.1f s)\n", o.seeds, o.seeds == 1 ? "" : "s",
                first_seed, secs);
    return 0;
  }
  std::printf("result: FAIL (%" PRIu64 " of %" PRIu64 " seeds from %" PRIu64 ")\n", failed, o.seeds, first_seed);
  return 1;
}
