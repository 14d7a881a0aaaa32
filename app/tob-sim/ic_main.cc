// tob-sim --ic: interactive consistency and the key-value store in the simulator
// (docs/protocol-ic.md, docs/simulator.md). Exit 0 only when every property held on every seed.
#include "ic_main.h"

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli.h"
#include "core/ic_reduce.h"
#include "sim/ic_checker.h"
#include "sim/ic_simulator.h"

namespace {

using tob::simcli::parse_int;
using tob::simcli::usage_error;

using tob::sim::IcScenario;

const char* kIcUsage = R"(usage: tob-sim --ic [options]

Runs RT-EIGByz interactive consistency and the time-aware key-value store on an N-node cluster
in the deterministic simulator, with Byzantine nodes, and checks: termination, agreement and
integrity of the decision vectors among correct nodes, identical publications, validity of the
reductions, refusal of late writes, agreement and semantics of reads (docs/protocol-ic.md).

cluster
  --nodes N               cluster size, 1..64 (default 4)
  --f F                   faults tolerated, N > 3f (default (N - 1) / 3)
  --ic-period C           an IC instance every C cycles (default 1)
  --periods P             instances to run and check (default 20)
  --cycle-ns NS           cycle length (default N x 250000)
  --chunk-bytes B         round data per section (default 1440)
  --seed S                random seed (default 1)
  --seeds K               run K seeds S, S+1, ... and report each failing one (default 1)
faults (each names distinct nodes, chosen from the seed; more than f breaks the guarantees)
  --liars K               tell each receiver another story in every round (colluding)
  --omitters K            send nothing, part of the round data, or late, per receiver
  --crashers K            stop for good at a random instant
  --corrupters K          send garbage entries, wrong lengths, wrong instances
network
  --delay-ns NS           one-way delay (default 20000)
  --jitter-ns NS          uniform extra delay 0..NS (default 10000)
workload
  --keys K                keys every node writes per period (default 6), over the classes
                          k/ (majority), med/ (median-f64), mid/ (midpoint-f64),
                          imed/ (median-i64), imid/ (midpoint-i64)
  --versions V            versions kept per key in the store (default 4)
output
  --published FILE        every publication of a correct node as `period node key value`:
                          value in hex (0x..) for majority keys, decimal for numeric ones,
                          `-` for a failed reduction (tests/sim/check_published.py)
  --quiet                 only the summary and result lines
  --help                  this text
)";

struct Options {
  IcScenario s;
  uint64_t seeds = 1;
  std::string published;
  bool quiet = false;
};

Options parse(int argc, char** argv) {
  Options o;
  IcScenario& s = o.s;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--ic") continue;
    if (flag == "--help" || flag == "-h") {
      std::fputs(kIcUsage, stdout);
      std::exit(0);
    }
    if (flag == "--quiet") {
      o.quiet = true;
      continue;
    }
    if (flag.rfind("--", 0) != 0) usage_error("unexpected argument '" + flag + "'");
    if (i + 1 >= argc) usage_error(flag + " needs a value");
    const char* v = argv[++i];
    const char* f = flag.c_str();
    if (flag == "--nodes") s.nodes = static_cast<int>(parse_int(f, v, 1, 64));
    else if (flag == "--f") s.f = static_cast<int>(parse_int(f, v, 0, 21));
    else if (flag == "--ic-period") s.period_cycles = static_cast<int>(parse_int(f, v, 1, 1'000'000));
    else if (flag == "--periods") s.periods = parse_int(f, v, 1, 1'000'000);
    else if (flag == "--cycle-ns") s.cycle_ns = parse_int(f, v, 1000, 10'000'000'000);
    else if (flag == "--chunk-bytes") s.chunk_bytes = static_cast<size_t>(parse_int(f, v, 1, 65000));
    else if (flag == "--seed") s.seed = static_cast<uint64_t>(parse_int(f, v, 0, INT64_MAX));
    else if (flag == "--seeds") o.seeds = static_cast<uint64_t>(parse_int(f, v, 1, 100'000'000));
    else if (flag == "--liars") s.liars = static_cast<int>(parse_int(f, v, 0, 64));
    else if (flag == "--omitters") s.omitters = static_cast<int>(parse_int(f, v, 0, 64));
    else if (flag == "--crashers") s.crashers = static_cast<int>(parse_int(f, v, 0, 64));
    else if (flag == "--corrupters") s.corrupters = static_cast<int>(parse_int(f, v, 0, 64));
    else if (flag == "--delay-ns") s.delay_ns = parse_int(f, v, 0, 1'000'000'000);
    else if (flag == "--jitter-ns") s.jitter_ns = parse_int(f, v, 0, 1'000'000'000);
    else if (flag == "--keys") s.keys = static_cast<int>(parse_int(f, v, 0, 1000));
    else if (flag == "--versions") s.versions_per_key = static_cast<size_t>(parse_int(f, v, 1, 1024));
    else if (flag == "--published") o.published = v;
    else usage_error("unknown flag '" + flag + "' (with --ic)");
  }
  if (o.seeds > 1 && !o.published.empty()) usage_error("--published needs a single seed (drop --seeds)");
  return o;
}

std::string format_value(const tob::sim::IcPublicationRecord& p) {
  if (!p.ok) return "-";
  char buf[64];
  switch (p.reduction) {
    case tob::core::Reduction::median_f64:
    case tob::core::Reduction::midpoint_f64: {
      double d = 0;
      if (tob::core::decode_f64(p.value, d)) {
        std::snprintf(buf, sizeof buf, "%.17g", d);
        return buf;
      }
      break;
    }
    case tob::core::Reduction::median_i64:
    case tob::core::Reduction::midpoint_i64: {
      int64_t x = 0;
      if (tob::core::decode_i64(p.value, x)) {
        std::snprintf(buf, sizeof buf, "%" PRId64, x);
        return buf;
      }
      break;
    }
    case tob::core::Reduction::majority: break;
  }
  std::string s = "0x";
  static const char* d = "0123456789abcdef";
  for (uint8_t b : p.value) {
    s.push_back(d[b >> 4]);
    s.push_back(d[b & 15]);
  }
  return s;
}

void write_published(const std::string& path, const tob::sim::IcRecords& rec) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) usage_error("cannot write " + path + ": " + std::strerror(errno));
  std::fprintf(f, "# correct nodes:");
  for (size_t i = 0; i < rec.roles.size(); ++i)
    if (rec.roles[i] == tob::sim::IcRole::correct) std::fprintf(f, " %zu", i);
  std::fprintf(f, "\n# periods: %" PRId64 "\n", rec.periods);
  for (const auto& p : rec.publications)
    if (rec.roles[p.node] == tob::sim::IcRole::correct)
      std::fprintf(f, "%" PRIu64 " %d %s %s\n", p.instance, p.node, p.key.c_str(), format_value(p).c_str());
  if (std::fclose(f) != 0) usage_error("cannot write " + path + ": " + std::strerror(errno));
}

std::string replay_command(int argc, char** argv, uint64_t seed) {
  std::string cmd = "tob-sim";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seed" || a == "--seeds") {
      ++i;
      continue;
    }
    if (a == "--quiet") continue;
    cmd += " " + a;
  }
  return cmd + " --seed " + std::to_string(seed);
}

}  // namespace

int run_ic_main(int argc, char** argv) {
  tob::simcli::set_help_hint("tob-sim --ic --help");
  Options o = parse(argc, argv);
  IcScenario& s = o.s;
  const uint64_t first_seed = s.seed;
  uint64_t failed = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t k = 0; k < o.seeds; ++k) {
    s.seed = first_seed + k;
    auto sim = tob::sim::IcSimulator::create(s);
    if (!sim) usage_error(sim.error().message);
    sim.value().run();
    const tob::sim::IcRecords& rec = sim.value().records();
    const tob::sim::IcCheckReport report = tob::sim::check_ic(rec);
    if (!o.published.empty()) write_published(o.published, rec);
    const auto& st = report.stats;
    if (!report.ok()) ++failed;
    if (o.seeds > 1) {
      if (!report.ok())
        std::printf("seed %" PRIu64 ": FAIL %s: %s\n  replay: %s\n", s.seed, report.violations[0].property.c_str(),
                    report.violations[0].detail.c_str(), replay_command(argc, argv, s.seed).c_str());
      continue;
    }
    std::printf("ic-summary: seed %" PRIu64 " nodes %d f %d liars %d omitters %d crashers %d corrupters %d periods %" PRId64
                " published %" PRIu64 " reads-ok %" PRIu64 " reads-failed %" PRIu64 " reductions-failed %" PRIu64
                " violations %" PRIu64 "\n",
                s.seed, rec.nodes, rec.f, s.liars, s.omitters, s.crashers, s.corrupters, st.instances, st.publications_ok,
                st.reads_ok, st.reads_failed, st.reductions_failed, report.violation_count);
    if (!o.quiet) {
      const auto& t = rec.totals;
      std::printf("roles:");
      for (size_t i = 0; i < rec.roles.size(); ++i) std::printf(" %zu=%s", i, tob::sim::to_string(rec.roles[i]));
      std::printf("\nschedule: %" PRId64 " ns cycles, period %d cycle%s, R = %d rounds, instance latency %d cycles after its period\n",
                  rec.cycle_ns, rec.period_cycles, rec.period_cycles == 1 ? "" : "s", rec.rounds, rec.rounds);
      std::printf("frames: %" PRIu64 " delivered, %" PRIu64 " rewritten by liars/corrupters, %" PRIu64 " omitted, %" PRIu64
                  " late; chunks %" PRIu64 " taken, %" PRIu64 " malformed; %" PRIu64 " round messages defaulted\n",
                  rec.frames_sent, rec.frames_lied, rec.frames_omitted, rec.frames_late, t.chunks_rx, t.chunks_malformed,
                  t.messages_default);
      std::printf("store: %" PRIu64 " writes accepted, %" PRIu64 " refused; %" PRIu64 " publications, %" PRIu64
                  " failed reductions, %" PRIu64 " (key, t_pub) from faulty nodes ignored, %" PRIu64 " conflicts\n",
                  t.writes_accepted, t.writes_refused, t.publications_ok, t.publications_failed, t.groups_ignored,
                  t.publications_conflict);
      std::printf("properties:\n");
      for (const auto& name : tob::sim::ic_property_names()) {
        uint64_t count = 0;
        for (const auto& v : report.violations) count += v.property == name ? 1 : 0;
        std::printf("  %-26s %s\n", name.c_str(), count == 0 ? "ok" : "VIOLATED");
      }
    }
    if (!report.ok()) {
      std::printf("%" PRIu64 " violations, the first ones:\n", report.violation_count);
      for (const auto& v : report.violations) std::printf("  %s: %s\n", v.property.c_str(), v.detail.c_str());
      std::printf("replay: %s\n", replay_command(argc, argv, s.seed).c_str());
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (failed == 0) {
    std::printf("result: PASS (%" PRIu64 " seed%s from %" PRIu64 ", %.1f s)\n", o.seeds, o.seeds == 1 ? "" : "s", first_seed, secs);
    return 0;
  }
  std::printf("result: FAIL (%" PRIu64 " of %" PRIu64 " seeds from %" PRIu64 ")\n", failed, o.seeds, first_seed);
  return 1;
}
