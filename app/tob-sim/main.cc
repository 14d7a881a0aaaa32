// tob-sim: runs a whole dpdk-tob cluster in one thread on virtual time from a seed and checks
// the protocol's properties. Exit 0 only when every property held on every seed run.
#include <algorithm>
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
#include "sim/clock_checker.h"
#include "sim/otfp_checker.h"
#include "sim/otfp_mix.h"
#include "sim/mars_script.h"
#include "sim/otfp_script.h"
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
  --kappa K               otfp: votes of instance i fixed as cycle i + K starts (default 2)
  --window W              otfp: undecided instances before proposers hold back (default 32)
  --heard-ns, --recovery-ns, --retry-ns NS
                          otfp: its timeouts as durations, each at least its floor in cycles
                          (2, 4, 2; default 0: the floors; the daemon's defaults are 20 ms,
                          20 ms and 4 ms: docs/configuration.md)
  --torn-tail P           otfp: a crash keeps a random prefix of the log records not yet
                          synced, with probability P (a torn write; else none of them;
                          needs --fsync-ns; default 0)
  --fsync-ns MIN-MAX      otfp: each sync of the acceptor log takes MIN..MAX ns; a vote goes
                          into a frame once its record is synced (default 0-0: at once)
  --nodes N               cluster size, 3..64 (default 4)
  --cycles C              cycles to simulate (default 200)
  --cycle-ns NS           cycle length (default N x 250000)
  --seed S                random seed (default 1)
  --seeds K               run K seeds S, S+1, ... and report each failing one (default 1)
  --batch N               messages per slot (default 64)
  --frame BYTES           [limits] frame_bytes, 128..9000 (default 1500); the largest payload
                          becomes frame - 100 when that is below 1024
  --rate-mbps R           the ports' rate: a slot carries as many frames per copy as its
                          airtime allows and mars sends its batch in that many segments
                          (docs/configuration.md "The slot budget"; default 0: one frame)
  --slot-frames F         at most F frames per copy (default 0: the budget's)
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
  --crash-rate R          per live node and cycle, a crash at a random instant of the next
                          cycle (half of them between its log write and its frame; default 0)
  --crash-down-max K      ... while fewer than K nodes are down (default 1)
  --restart-cycles A-B    ... back after A..B cycles (default 1-12)
  --crash-permanent P     ... or never, with probability P (default 0)
  --stall-rate R          per live node and cycle, its loop freezes (default 0)
  --stall-cycles K        ... for 1..K cycles (default 20)
  --outage-rate R         per cycle, an outage from the next cycle: every link into every node
                          (half of them) or into a random set of nodes is down (default 0)
  --outage-cycles K       ... each receiver's for 1..K cycles (default 4)
clocks (docs/simulator.md "Clocks and their synchronisation")
  --drift-ppm P           per node clock rate error uniform in [-P, P] ppm, wandering by up to
                          P/100 ppm a cycle within that bound (default 0); turns clock sync on
  --drift-wander-ppm W    ... by up to W ppm a cycle instead (0: constant rates)
  --clock-sync on|off     in-band synchronisation (lib/core/clock_sync.h) on every node; on by
                          default with --drift-ppm or --byzantine-clocks, off otherwise. On, the
                          run is also judged on clock precision (the derived bound, printed),
                          the self-check and the release instants
  --clock-delay-error-ns E  every node's configured delay is the true mean plus E (negative:
                          less): an error all nodes share, which the rate corrections must not
                          take for a rate (default 0)
  --byzantine-clocks K    K nodes whose frames leave early and reach each receiver as early or
                          as late as they like (mars: inside the reception windows; otfp: up
                          to a quarter cycle either way); K <= (N - 1) / 3 with clock sync
  --drain C               after --cycles, C more cycles without faults, loss or new messages;
                          every instance is then judged; mars: every running node must then
                          be a member of the running nodes (membership-reformed) (default 0)
  --liveness-cycles C     otfp: every message of a correct proposer delivered by every correct
                          node within C cycles of its submission (default: not judged)
  --mix NAME              otfp: draw the whole scenario from each seed: hard, liveness,
                          chaos, segments or durations (docs/simulator.md); other scenario flags
                          are refused
  --script FILE           run a scenario file (docs/simulator.md "Scenario files":
                          tests/sim/testdata/otfp/, or mars/ when its first line is `mars ...`)
                          and print each step (mars: each membership event) with --verbose
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
  bool mix_set = false;
  tob::sim::OtfpMix mix = tob::sim::OtfpMix::hard;
  int64_t liveness_cycles = 0;
  int scenario_flags = 0;  // flags that shape the scenario (refused with --mix)
  bool clocks_set = false;  // --drift-ppm or --byzantine-clocks: clock sync on unless said off
  bool sync_set = false;
  bool wander_set = false;
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
    const bool output = flag == "--seed" || flag == "--seeds" || flag == "--deliveries" || flag == "--trace" ||
                        flag == "--mix" || flag == "--order" || flag == "--liveness-cycles";
    if (!output) ++o.scenario_flags;
    if (flag == "--mix") {
      if (!tob::sim::parse_otfp_mix(v, &o.mix)) usage_error(std::string("--mix: unknown mix '") + v + "' (hard, liveness, chaos, segments, durations)");
      o.mix_set = true;
    } else if (flag == "--crash-rate") s.crash_rate = parse_prob(f, v);
    else if (flag == "--crash-down-max") s.crash_down_max = static_cast<int>(parse_int(f, v, 0, 63));
    else if (flag == "--restart-cycles") tob::simcli::parse_range(f, v, 1, 1'000'000, s.restart_cycles_min, s.restart_cycles_max);
    else if (flag == "--crash-permanent") s.crash_permanent = parse_prob(f, v);
    else if (flag == "--fsync-ns") tob::simcli::parse_range(f, v, 0, 10'000'000'000, s.fsync_ns_min, s.fsync_ns_max);
    else if (flag == "--stall-rate") s.stall_rate = parse_prob(f, v);
    else if (flag == "--stall-cycles") s.stall_cycles_max = parse_int(f, v, 1, 1'000'000);
    else if (flag == "--outage-rate") s.outage_rate = parse_prob(f, v);
    else if (flag == "--outage-cycles") s.outage_cycles_max = parse_int(f, v, 1, 1'000'000);
    else if (flag == "--drift-ppm") {
      s.drift_ppm_max = parse_nonneg(f, v);
      if (s.drift_ppm_max > 1000) usage_error("--drift-ppm must be at most 1000");
      if (!o.wander_set) s.drift_wander_ppm = s.drift_ppm_max / 100;
      o.clocks_set = true;
    } else if (flag == "--drift-wander-ppm") {
      s.drift_wander_ppm = parse_nonneg(f, v);
      o.wander_set = true;
    } else if (flag == "--clock-sync") {
      if (std::strcmp(v, "on") == 0) s.clock_sync = true;
      else if (std::strcmp(v, "off") == 0) s.clock_sync = false;
      else usage_error(std::string("--clock-sync: on or off, got '") + v + "'");
      o.sync_set = true;
    } else if (flag == "--clock-delay-error-ns") {
      s.clock_delay_error_ns = parse_int(f, v, -1'000'000'000, 1'000'000'000);
    } else if (flag == "--byzantine-clocks") {
      s.byzantine_clocks = static_cast<int>(parse_int(f, v, 0, 63));
      o.clocks_set = true;
    }
    else if (flag == "--drain") s.drain_cycles = parse_int(f, v, 0, 100'000'000);
    else if (flag == "--liveness-cycles") o.liveness_cycles = parse_int(f, v, 1, 1'000'000);
    else if (flag == "--order") {
      if (std::strcmp(v, "mars") == 0) s.order = tob::core::Order::mars;
      else if (std::strcmp(v, "otfp") == 0) s.order = tob::core::Order::otfp;
      else usage_error(std::string("--order: unknown ordering engine '") + v + "' (available: mars, otfp)");
    } else if (flag == "--kappa") s.node_template.kappa = static_cast<int>(parse_int(f, v, 1, 16));
    else if (flag == "--window") s.node_template.otfp_window = static_cast<int>(parse_int(f, v, 4, 64));
    else if (flag == "--heard-ns") s.node_template.otfp_heard_ns = parse_int(f, v, 0, 10'000'000'000);
    else if (flag == "--recovery-ns") s.node_template.otfp_recovery_ns = parse_int(f, v, 0, 10'000'000'000);
    else if (flag == "--retry-ns") s.node_template.otfp_retry_ns = parse_int(f, v, 0, 10'000'000'000);
    else if (flag == "--torn-tail") s.torn_tail = parse_prob(f, v);
    else if (flag == "--nodes") s.nodes = static_cast<int>(parse_int(f, v, 3, 64));
    else if (flag == "--cycles") s.cycles = parse_int(f, v, 1, 100'000'000);
    else if (flag == "--cycle-ns") { s.cycle_ns = parse_int(f, v, 1000, 10'000'000'000); o.cycle_ns_set = true; }
    else if (flag == "--seed") s.seed = static_cast<uint64_t>(parse_int(f, v, 0, INT64_MAX));
    else if (flag == "--seeds") o.seeds = static_cast<uint64_t>(parse_int(f, v, 1, 100'000'000));
    else if (flag == "--batch") s.node_template.batch_msgs_max = static_cast<size_t>(parse_int(f, v, 1, 4096));
    else if (flag == "--frame") {
      s.node_template.frame_bytes_max = static_cast<size_t>(parse_int(f, v, 128, 9000));
      s.node_template.payload_bytes_max = std::min<size_t>(1024, s.node_template.frame_bytes_max - 100);
    } else if (flag == "--rate-mbps") s.node_template.rate_mbps = parse_int(f, v, 0, 400'000);
    else if (flag == "--slot-frames") s.node_template.slot_frames_max = static_cast<int>(parse_int(f, v, 0, 4096));
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
  if (o.mix_set && o.scenario_flags > 0)
    usage_error("--mix draws the whole scenario from the seed: drop the other scenario flags");
  if (o.mix_set) s.order = tob::core::Order::otfp;
  if (o.liveness_cycles > 0 && s.order != tob::core::Order::otfp) usage_error("--liveness-cycles is for --order otfp");
  if (o.clocks_set && !o.sync_set) s.clock_sync = true;
  if (s.byzantine_clocks >= s.nodes) usage_error("--byzantine-clocks must leave a correct clock");
  if (s.clock_sync && 3 * s.byzantine_clocks + 1 > s.nodes)
    usage_error("--byzantine-clocks " + std::to_string(s.byzantine_clocks) + " needs at least " +
                std::to_string(3 * s.byzantine_clocks + 1) + " nodes with clock sync (N >= 3f + 1)");
  if (s.torn_tail > 0 && s.fsync_ns_max == 0 && !o.mix_set)
    usage_error("--torn-tail needs --fsync-ns: with syncs that take no time, no record is ever unsynced");
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

// The scenario of one seed: drawn whole from it (--mix), or the flags' with the seed.
Scenario scenario_for(const Options& o, uint64_t seed) {
  if (o.mix_set) return tob::sim::otfp_mix(o.mix, seed);
  Scenario s = o.scenario;
  s.seed = seed;
  return s;
}

tob::sim::CheckReport judge_engine(const Options& o, const Scenario& s, const tob::sim::Simulator& sim) {
  const tob::sim::Records& rec = sim.records();
  if (s.order != tob::core::Order::otfp) {
    auto report = tob::sim::check(sim.schedule(), rec, 2 * s.clock_offset_ns_max);
    if (s.drain_cycles > 0) {  // mars: after the drain the membership has formed again
      std::vector<const tob::core::Engine*> nodes;
      for (int i = 0; i < s.nodes; ++i) nodes.push_back(sim.node(i));
      tob::sim::check_reformed(nodes, report);
    }
    return report;
  }
  tob::sim::OtfpCheckParams p;
  if (o.mix_set) {
    p = tob::sim::otfp_mix_params(o.mix, s);
  } else {
    p.kappa = s.node_template.kappa;
    p.tolerance_ns = 2 * s.clock_offset_ns_max + s.delay_ns + s.jitter_ns;
    p.drained = s.drain_cycles > 0;
    p.failure_free = s.loss == 0 && s.burst == 0 && s.fault_rate == 0 && s.faults.empty() && s.corrupt == 0 &&
                     s.crash_rate == 0 && s.stall_rate == 0 && s.byzantine_clocks == 0;
    p.liveness_cycles = o.liveness_cycles;
  }
  return tob::sim::check_otfp(sim.schedule(), rec, p);
}

bool fault_free(const Scenario& s) {
  return s.loss == 0 && s.burst == 0 && s.fault_rate == 0 && s.faults.empty() && s.corrupt == 0 &&
         s.crash_rate == 0 && s.stall_rate == 0 && s.outage_rate == 0 && s.dup == 0 && s.single_copy_loss == 0;
}

// With clock sync on, the clock properties too (sim/clock_checker.h).
tob::sim::CheckReport judge(const Options& o, const Scenario& s, const tob::sim::Simulator& sim) {
  tob::sim::CheckReport report = judge_engine(o, s, sim);
  if (!s.clock_sync) return report;
  tob::sim::ClockCheckParams p;
  p.precision_ns = sim.records().precision_bound_ns;
  p.judged_from_cycle = tob::sim::clock_judged_from_cycle(s);
  p.settled_ns = 3 * s.cycle_ns;
  // Clocks the only fault: mars must remove nobody (a Byzantine clock inside the windows too).
  p.fault_free = fault_free(s) && s.order == tob::core::Order::mars;
  tob::sim::check_clock(sim.records(), p, report);
  return report;
}

// Sums over the seeds of a sweep: what the runs went through.
struct Totals {
  uint64_t runs = 0, crashes = 0, stalls = 0, torn = 0, decisions = 0, recovered = 0, collisions = 0, activations = 0;
  uint64_t gaps = 0, delivered = 0;
  int64_t spread_max_ns = 0, skew_max_ns = 0, bound_ns = 0;
  uint64_t withheld = 0, shutdowns = 0;
  int64_t latency_max_x1000 = 0;
  uint64_t latency_max_seed = 0;
  void add(uint64_t seed, const tob::sim::Records& rec, const tob::sim::CheckReport& r) {
    if (r.stats.latency_cycles_max_x1000 > latency_max_x1000) latency_max_seed = seed;
    ++runs;
    spread_max_ns = std::max(spread_max_ns, r.stats.clock_spread_ns_max);
    skew_max_ns = std::max(skew_max_ns, r.stats.release_skew_ns_max);
    bound_ns = std::max(bound_ns, rec.precision_bound_ns);
    withheld += rec.frames_withheld_clock;
    shutdowns += r.stats.self_shutdowns;
    crashes += rec.crashes;
    stalls += rec.stalls;
    torn += rec.torn_tails;
    decisions += rec.engine_totals.instances_decided;
    recovered += rec.engine_totals.instances_recovered;
    collisions += rec.engine_totals.collisions;
    activations += rec.engine_totals.activations;
    gaps += rec.engine_totals.gaps;
    delivered += r.stats.messages_delivered;
    latency_max_x1000 = std::max(latency_max_x1000, r.stats.latency_cycles_max_x1000);
  }
};

void print_run(const Scenario& s, const tob::sim::Records& rec, const tob::sim::CheckReport& report, bool mixed) {
  const bool otfp = s.order == tob::core::Order::otfp;
  const auto& st = report.stats;
  uint64_t shutdowns_by_reason[16] = {};
  for (const auto& e : rec.events)
    if (e.event.kind == tob::core::EventKind::self_shutdown) ++shutdowns_by_reason[static_cast<int>(e.event.reason)];
  std::printf("tob-sim: %s, %d nodes, %" PRId64 " cycles of %" PRId64 " ns, seed %" PRIu64 "\n",
              tob::core::to_string(s.order), s.nodes, s.cycles, s.cycle_ns, s.seed);
  if (mixed) std::printf("mix: %s\n", tob::sim::describe(s).c_str());
  std::printf("network: delay %" PRId64 " ns + jitter %" PRId64 " ns, loss %g, burst %g, dup %g, corrupt %g\n",
              s.delay_ns, s.jitter_ns, s.loss, s.burst, s.dup, s.corrupt);
  std::printf("frames: %" PRIu64 " sent, %" PRIu64 " copies lost, %" PRIu64 " corrupted (%" PRIu64
              " rejected by CRC), %" PRIu64 " duplicated\n",
              rec.frames_sent, rec.copies_lost, rec.copies_corrupted, rec.frames_rejected_crc, rec.copies_duplicated);
  std::printf("faults injected: %zu; crashes %" PRIu64 ", stalls %" PRIu64 ", drain %" PRId64 " cycles\n", rec.faults.size(),
              rec.crashes, rec.stalls, s.drain_cycles);
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
                " served, %" PRIu64 " tempo holds, window max %" PRIu64 ", %" PRIu64 " gaps\n",
                t.instances_decided, t.instances_fast, t.instances_recovered,
                t.instances_decided == 0 ? 0.0 : 100.0 * static_cast<double>(t.instances_recovered) /
                                                    static_cast<double>(t.instances_decided),
                t.collisions, t.activations, t.retransmit_requests, t.retransmit_served, t.tempo_holds, t.window_max, t.gaps);
    std::printf("acceptor log: %" PRIu64 " records, %" PRIu64 " syncs, %" PRIu64 " frames waited for them, %" PRIu64
                " torn tails; worst latency %.3f cycles\n",
                t.persist_records, rec.syncs, rec.frames_held_for_log, rec.torn_tails,
                static_cast<double>(st.latency_cycles_max_x1000) / 1000.0);
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
  if (s.clock_sync) {
    std::string byz;
    for (size_t i = 0; i < rec.clocks.size(); ++i)
      if (rec.clocks[i].byzantine) byz += (byz.empty() ? "" : ",") + std::to_string(i);
    uint64_t rounds = 0, clipped = 0, integrations = 0, cold = 0;
    for (const auto& c : rec.clocks) {
      rounds += c.rounds;
      clipped += c.rounds_clipped;
      integrations += c.integrations;
      cold += c.cold_starts;
    }
    std::printf("clocks: drift up to %g ppm (wander %g ppm/cycle), offsets up to %" PRId64 " ns, byzantine [%s]; "
                "%" PRIu64 " rounds (%" PRIu64 " clipped), %" PRIu64 " integrations, %" PRIu64 " cold starts, %" PRIu64
                " rounds out, %" PRIu64 " frames withheld\n",
                s.drift_ppm_max, s.drift_wander_ppm, s.clock_offset_ns_max, byz.c_str(), rounds, clipped, integrations, cold,
                st.clock_rounds_out, rec.frames_withheld_clock);
    const tob::sim::RateSummary rates = tob::sim::summarize_rates(rec);
    std::printf("rates: correct clocks' corrections %+.1f..%+.1f ppm, mean %+.1f ppm; delay error %" PRId64
                " ns; %" PRIu64 " windows counted, %" PRIu64 " left out, %" PRIu64 " inexact\n",
                rates.rate_lo, rates.rate_hi, rates.rate_mean, s.clock_delay_error_ns, rates.windows,
                rates.windows_unknown, rates.windows_inexact);
    uint64_t apart = 0;
    for (const auto& l : rec.lives) apart += l.clock_apart.size();
    std::printf("precision: bound %" PRId64 " ns, worst %" PRId64 " ns (cycle %" PRId64 ", %" PRIu64
                " cycles judged from cycle %" PRId64 "); release skew worst %" PRId64 " ns over %" PRIu64 " messages\n",
                rec.precision_bound_ns, st.clock_spread_ns_max, st.clock_spread_cycle, st.clock_samples,
                tob::sim::clock_judged_from_cycle(s), st.release_skew_ns_max, st.releases_judged);
    std::printf("beyond the hypothesis: %" PRIu64 " rounds (bound up to %" PRId64 " ns), %" PRIu64
                " clocks (re)started apart\n", st.clock_rounds_beyond, st.clock_bound_ns_max, apart);
  }
  std::printf("properties:\n");
  std::vector<std::string> names = otfp ? tob::sim::otfp_property_names() : tob::sim::property_names();
  if (s.clock_sync)
    for (const auto& c : tob::sim::clock_property_names()) names.push_back(c);
  for (const auto& name : names) {
    uint64_t count = 0;
    for (const auto& v : report.violations) count += v.property == name ? 1 : 0;
    std::printf("  %-26s %s\n", name.c_str(), count == 0 ? "ok" : "VIOLATED");
  }
  if (!otfp && s.drain_cycles > 0) {
    uint64_t count = 0;
    for (const auto& v : report.violations) count += v.property == "membership-reformed" ? 1 : 0;
    std::printf("  %-26s %s\n", "membership-reformed", count == 0 ? "ok" : "VIOLATED");
  }
}

}  // namespace

// tob-sim --script FILE [--verbose]: one scenario file over real engines.
int run_script(int argc, char** argv) {
  std::string path;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--script" && i + 1 < argc) {
      path = argv[++i];
    } else if (a == "--verbose") {
      verbose = true;
    } else {
      usage_error("--script takes a file and --verbose, nothing else: '" + a + "'");
    }
  }
  if (path.empty()) usage_error("--script needs a file");
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) usage_error("cannot read " + path + ": " + std::strerror(errno));
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  // A `mars` first line runs the mars engine (tests/sim/testdata/mars/), else otfp's steps.
  const tob::sim::ScriptResult r =
      tob::sim::is_mars_script(text) ? tob::sim::run_mars_script(text, verbose) : tob::sim::run_otfp_script(text, verbose);
  std::fputs(r.output.c_str(), stdout);
  if (!r.ok) {
    std::printf("%s:%d: %s\nresult: FAIL\n", path.c_str(), r.line, r.message.c_str());
    return 1;
  }
  std::printf("result: PASS (%d steps, %d expectations)\n", r.steps, r.expectations);
  return 0;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--ic") == 0) return run_ic_main(argc, argv);
    if (std::strcmp(argv[i], "--script") == 0) return run_script(argc, argv);
  }
  const Options o = parse(argc, argv);
  const uint64_t first_seed = o.scenario.seed;
  uint64_t failed = 0;
  Totals totals;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t k = 0; k < o.seeds; ++k) {
    const Scenario s = scenario_for(o, first_seed + k);
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
    const auto report = judge(o, s, sim.value());
    totals.add(s.seed, rec, report);
    if (!o.deliveries.empty()) write_deliveries(o.deliveries, rec);

    if (o.seeds > 1) {
      if (!report.ok()) {
        ++failed;
        std::printf("seed %" PRIu64 ": FAIL %s: %s\n  replay: %s\n", s.seed,
                    report.violations[0].property.c_str(), report.violations[0].detail.c_str(),
                    replay_command(argc, argv, s.seed).c_str());
        std::fflush(stdout);
      }
      if (!o.quiet && (k + 1) % 100 == 0)
        std::fprintf(stderr, "\rtob-sim: %" PRIu64 "/%" PRIu64 " seeds, %" PRIu64 " failed", k + 1, o.seeds, failed);
      continue;
    }
    if (!o.quiet) print_run(s, rec, report, o.mix_set);
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
  if (o.seeds > 1 && o.scenario.order == tob::core::Order::otfp)
    std::printf("totals: %" PRIu64 " runs, %" PRIu64 " crashes, %" PRIu64 " stalls, %" PRIu64 " torn log tails, %" PRIu64
                " decisions (%" PRIu64 " recovered), %" PRIu64 " collisions, %" PRIu64 " activations, %" PRIu64
                " gaps, %" PRIu64 " messages delivered, worst latency %.3f cycles (seed %" PRIu64 ")\n",
                totals.runs, totals.crashes, totals.stalls, totals.torn, totals.decisions, totals.recovered,
                totals.collisions, totals.activations, totals.gaps, totals.delivered,
                static_cast<double>(totals.latency_max_x1000) / 1000.0, totals.latency_max_seed);
  if (o.seeds > 1 && o.scenario.clock_sync)
    std::printf("clock totals: %" PRIu64 " runs, precision bound %" PRId64 " ns, worst spread %" PRId64
                " ns, worst release skew %" PRId64 " ns, %" PRIu64 " frames withheld, %" PRIu64 " self-shutdowns\n",
                totals.runs, totals.bound_ns, totals.spread_max_ns, totals.skew_max_ns, totals.withheld, totals.shutdowns);
  if (failed == 0) {
    std::printf("result: PASS (%" PRIu64 " seed%s from %" PRIu64 ", %.1f s)\n", o.seeds, o.seeds == 1 ? "" : "s",
                first_seed, secs);
    return 0;
  }
  std::printf("result: FAIL (%" PRIu64 " of %" PRIu64 " seeds from %" PRIu64 ")\n", failed, o.seeds, first_seed);
  return 1;
}
