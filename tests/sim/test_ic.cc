// Interactive consistency and the key-value store in the simulator (docs/protocol-ic.md): random
// seeds with up to f liars, omitters, crashers and corrupters for N = 4 (f = 1) and N = 7 (f = 2)
// keep every property; f + 1 colluding liars break them (so the checks can fail); and the checker
// catches hand-made violations of each property. TOB_SIM_IC_SEEDS overrides the seed count per
// size.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "sim/ic_checker.h"
#include "sim/ic_simulator.h"

using namespace tob;
using namespace tob::sim;

namespace {

struct IcRun {
  IcRecords rec;
  IcCheckReport report;
  std::string violations() const {
    std::string out;
    for (const Violation& v : report.violations) out += v.property + ": " + v.detail + "\n";
    return out;
  }
  bool violated(const std::string& property) const {
    for (const Violation& v : report.violations)
      if (v.property == property) return true;
    return false;
  }
};

IcRun run_ic(const IcScenario& s) {
  auto sim = IcSimulator::create(s);
  REQUIRE(sim.ok());
  sim.value().run();
  IcRun r;
  r.rec = sim.value().records();
  r.report = check_ic(r.rec);
  return r;
}

long seeds_from_env(long fallback) {
  const char* env = std::getenv("TOB_SIM_IC_SEEDS");
  return env != nullptr ? std::strtol(env, nullptr, 10) : fallback;
}

// A random mix of at most `f` faulty nodes of every kind, a random period and retention.
IcScenario random_scenario(int nodes, uint64_t seed) {
  Rng rng(seed * 7919);
  IcScenario s;
  s.seed = seed;
  s.nodes = nodes;
  s.periods = 10;
  s.period_cycles = static_cast<int>(rng.range(1, 3));
  // Small chunks cut round data over many sections and frames.
  const size_t chunks[] = {1440, 300, 64};
  s.chunk_bytes = chunks[rng.range(0, 2)];
  s.keys = static_cast<int>(rng.range(1, 6));
  s.versions_per_key = static_cast<size_t>(rng.range(1, 4));
  const int f = (nodes - 1) / 3;
  // Mostly the full f; sometimes fewer (a failure-free run included).
  int budget = rng.chance(0.75) ? f : static_cast<int>(rng.range(0, f));
  int* kinds[] = {&s.liars, &s.omitters, &s.crashers, &s.corrupters};
  while (budget-- > 0) ++*kinds[rng.range(0, 3)];
  return s;
}

std::string replay(const IcScenario& s) {
  return "tob-sim --ic --nodes " + std::to_string(s.nodes) + " --liars " + std::to_string(s.liars) + " --omitters " +
         std::to_string(s.omitters) + " --crashers " + std::to_string(s.crashers) + " --corrupters " +
         std::to_string(s.corrupters) + " --periods " + std::to_string(s.periods) + " --ic-period " +
         std::to_string(s.period_cycles) + " --keys " + std::to_string(s.keys) + " --versions " +
         std::to_string(s.versions_per_key) + " --chunk-bytes " + std::to_string(s.chunk_bytes) + " --seed " +
         std::to_string(s.seed);
}

void sweep(int nodes, long seeds) {
  long failed = 0;
  uint64_t faulty = 0;
  uint64_t publications = 0;
  uint64_t reads_ok = 0;
  uint64_t lied = 0;
  uint64_t defaults = 0;
  for (long k = 0; k < seeds; ++k) {
    const IcScenario s = random_scenario(nodes, static_cast<uint64_t>(k) + 1);
    const IcRun r = run_ic(s);
    if (!r.report.ok()) {
      ++failed;
      FAIL_CHECK("seed " << s.seed << ": " << r.violations() << "replay: " << replay(s));
    }
    faulty += static_cast<uint64_t>(s.liars + s.omitters + s.crashers + s.corrupters);
    publications += r.report.stats.publications_ok;
    reads_ok += r.report.stats.reads_ok;
    lied += r.rec.frames_lied;
    defaults += r.rec.totals.messages_default;
  }
  CHECK(failed == 0);
  // The sweep must have exercised faults and produced values.
  CHECK(faulty > static_cast<uint64_t>(seeds) / 2);
  CHECK(lied > 0);
  CHECK(defaults > 0);
  CHECK(publications > static_cast<uint64_t>(seeds) * 10);
  CHECK(reads_ok > static_cast<uint64_t>(seeds) * 10);
  WARN("N = " << nodes << ", " << seeds << " seeds: " << faulty << " faulty nodes, " << lied << " lying frames, " << defaults
              << " default round messages, " << publications << " values published, " << reads_ok << " reads answered");
}

}  // namespace

TEST_CASE("IC: random seeds with up to f = 1 Byzantine, omitting or crashed nodes of N = 4 keep every property",
          "[ic][sweep]") {
  sweep(4, seeds_from_env(1000));
}

TEST_CASE("IC: random seeds with up to f = 2 Byzantine, omitting or crashed nodes of N = 7 keep every property",
          "[ic][sweep]") {
  sweep(7, seeds_from_env(1000));
}

TEST_CASE("IC: f faulty nodes of each kind at once, with longer runs", "[ic]") {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    IcScenario s;
    s.seed = seed;
    s.nodes = 7;
    s.periods = 30;
    s.keys = 10;
    s.liars = seed % 2 == 0 ? 2 : 1;
    s.corrupters = seed % 2 == 0 ? 0 : 1;
    const IcRun r = run_ic(s);
    INFO("replay: " << replay(s));
    CHECK(r.report.ok());
    CHECK(r.report.stats.reductions_failed == 0);  // every key is written by every correct node
    if (!r.report.ok()) FAIL_CHECK(r.violations());
  }
}

TEST_CASE("IC: f + 1 colluding liars break the properties, and the checker says so", "[ic][negative]") {
  int caught = 0;
  bool agreement_or_integrity = false;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    IcScenario s;
    s.seed = seed;
    s.nodes = 4;
    s.f = 1;
    s.liars = 2;
    s.periods = 6;
    s.keys = 5;
    const IcRun r = run_ic(s);
    if (!r.report.ok()) ++caught;
    agreement_or_integrity = agreement_or_integrity || r.violated("ic-agreement") || r.violated("ic-integrity");
  }
  CHECK(caught >= 5);
  CHECK(agreement_or_integrity);
}

TEST_CASE("IC: with N <= 3f tolerated faults refused, the simulator names the bound", "[ic]") {
  IcScenario s;
  s.nodes = 6;
  s.f = 2;
  auto sim = IcSimulator::create(s);
  REQUIRE_FALSE(sim.ok());
  CHECK(sim.error().message.find("N > 3f") != std::string::npos);
}

TEST_CASE("IC checker catches a doctored record of every property", "[ic][checker]") {
  IcScenario s;
  s.seed = 5;
  s.nodes = 4;
  s.periods = 5;
  s.keys = 5;
  s.versions_per_key = 2;
  const IcRun good = run_ic(s);
  REQUIRE(good.report.ok());
  const auto doctor = [&](auto change) {
    IcRecords rec = good.rec;
    change(rec);
    return IcRun{rec, check_ic(rec)};
  };
  SECTION("one node's decision vector differs in one byte") {
    const IcRun r = doctor([](IcRecords& rec) { rec.decisions[3].entries[2] ^= 1; });
    CHECK(r.violated("ic-agreement"));
  }
  SECTION("a node lost its decision") {
    const IcRun r = doctor([](IcRecords& rec) { rec.decisions.erase(rec.decisions.begin() + 2); });
    CHECK(r.violated("ic-termination"));
  }
  SECTION("every node holds another value for node 1") {
    const IcRun r = doctor([](IcRecords& rec) {
      for (IcRootRecord& root : rec.roots)
        if (root.node == 1 && root.instance == 2) root.entry[root.entry.size() - 1] ^= 0xFF, root.entry[4] ^= 1;
    });
    CHECK(r.violated("ic-integrity"));
  }
  SECTION("one node published another value") {
    const IcRun r = doctor([](IcRecords& rec) {
      for (IcPublicationRecord& p : rec.publications)
        if (p.node == 2 && p.ok) {
          p.value[0] ^= 1;
          break;
        }
    });
    CHECK(r.violated("ic-publication-agreement"));
  }
  SECTION("a reduction failed where every correct node wrote the key") {
    const IcRun r = doctor([](IcRecords& rec) {
      for (IcPublicationRecord& p : rec.publications)
        if (p.ok) p.ok = false, p.value.clear();
    });
    CHECK(r.violated("ic-validity"));
  }
  SECTION("a late write accepted") {
    const IcRun r = doctor([](IcRecords& rec) {
      for (IcWriteRecord& w : rec.writes)
        if (w.key == "late") {
          w.status = core::KvWriteStatus::ok;
          break;
        }
    });
    CHECK(r.violated("ic-write-admission"));
  }
  SECTION("two nodes read different values at the same instant") {
    const IcRun r = doctor([](IcRecords& rec) {
      for (IcReadRecord& x : rec.reads)
        if (x.node == 1 && x.status == core::KvStatus::ok) {
          x.value[0] ^= 1;
          break;
        }
    });
    CHECK(r.violated("ic-read-agreement"));
    CHECK(r.violated("ic-read-semantics"));
  }
  SECTION("a read saw a value before its publishing time") {
    const IcRun r = doctor([](IcRecords& rec) {
      for (IcReadRecord& x : rec.reads)
        if (x.status == core::KvStatus::ok && x.t_min_ns == x.now_ns) {
          // Every node "reads" it half a cycle early.
          for (IcReadRecord& y : rec.reads)
            if (y.key == x.key && y.now_ns == x.now_ns - rec.cycle_ns / 2 && y.t_min_ns == y.now_ns) {
              y.status = core::KvStatus::ok;
              y.t_pub_ns = x.t_pub_ns;
              y.value = x.value;
            }
          break;
        }
    });
    CHECK(r.violated("ic-read-semantics"));
  }
}
