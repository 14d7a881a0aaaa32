// Random seeds with faults inside the fault hypothesis (one failure in two cycles at most):
// crashes with restarts, send and receive omissions, corruption, late frames, plus masked
// single-copy losses, duplicates, clock offsets and staggered starts. Every property must hold
// on every seed. TOB_SIM_SEEDS overrides the count (meson option sim_seeds sets it).
#include <algorithm>
#include <cstdlib>

#include "sim_test_util.h"

using namespace tob::sim;
using namespace tob::sim::test;

TEST_CASE("random seeds inside the fault hypothesis keep every property") {
  const char* env = std::getenv("TOB_SIM_SEEDS");
  const long seeds = env != nullptr ? std::strtol(env, nullptr, 10) : 1000;
  REQUIRE(seeds > 0);
  uint64_t failures_checked = 0;
  uint64_t delivered = 0;
  uint64_t shutdowns = 0;
  uint64_t faults = 0;
  long failed = 0;
  for (long k = 0; k < seeds; ++k) {
    const int nodes = 4 + static_cast<int>(k % 4);  // 4..7
    Scenario s = quiet_scenario(nodes, 150);
    s.seed = static_cast<uint64_t>(k) + 1;
    s.fault_rate = 0.15;
    s.clock_offset_ns_max = 2000;
    s.single_copy_loss = 0.05;
    s.dup = 0.02;
    s.start_stagger_ns = 2 * s.cycle_ns;
    const Run r = run(s);
    if (!r.report.ok()) {
      ++failed;
      FAIL_CHECK("seed " << s.seed << " nodes " << nodes << ": " << r.violations()
                         << "replay: tob-sim --nodes " << nodes
                         << " --cycles 150 --load 3 --fault-rate 0.15 --clock-offset-ns 2000"
                            " --single-copy-loss 0.05 --dup 0.02 --stagger-ns "
                         << s.start_stagger_ns << " --seed " << s.seed);
    }
    failures_checked += static_cast<uint64_t>(r.report.stats.failures_checked);
    delivered += r.report.stats.messages_delivered;
    shutdowns += r.report.stats.self_shutdowns;
    faults += r.rec().faults.size();
  }
  CHECK(failed == 0);
  // The sweep must have exercised something: faults, detections, deliveries.
  CHECK(faults > static_cast<uint64_t>(seeds));
  CHECK(failures_checked > static_cast<uint64_t>(seeds) / 2);
  CHECK(shutdowns > 0);
  CHECK(delivered > static_cast<uint64_t>(seeds) * 100);
  WARN("seeds " << seeds << ": " << faults << " faults, " << failures_checked << " detection checks, "
                << shutdowns << " self-shutdowns, " << delivered << " messages delivered");
}

TEST_CASE("random outages beyond the hypothesis: safety on every seed, and the membership forms again") {
  // Issue 17: a host stall made every node shut down at once, and the membership took 2,430
  // cycles to form again (tests/sim/testdata/mars/total_outage_reform.txt). Here outages (the
  // links into every node, or into a random set of nodes, down for 1-4 cycles each) come on top
  // of the faults above. Safety must hold whatever happens; after a 40-cycle drain without faults
  // every node must be a member of all (membership-reformed). Before the fix 24-34% of such seeds
  // ended without a membership (docs/simulator.md); none broke safety.
  const char* env = std::getenv("TOB_SIM_SEEDS");
  const long seeds = std::max(1L, (env != nullptr ? std::strtol(env, nullptr, 10) : 1000) / 2);
  uint64_t outages = 0;
  uint64_t shutdowns = 0;
  long failed = 0;
  for (long k = 0; k < seeds; ++k) {
    const int nodes = 4 + static_cast<int>(k % 4);  // 4..7
    Scenario s = quiet_scenario(nodes, 300);
    s.seed = static_cast<uint64_t>(k) + 1;
    s.drain_cycles = 40;
    s.outage_rate = 0.02;
    s.outage_cycles_max = 4;
    s.fault_rate = 0.15;
    s.clock_offset_ns_max = 2000;
    s.single_copy_loss = 0.05;
    s.dup = 0.02;
    s.start_stagger_ns = 2 * s.cycle_ns;
    Run r = run(s);
    std::vector<const tob::core::Engine*> at_end;
    for (int i = 0; i < nodes; ++i) at_end.push_back(r.sim->node(i));
    check_reformed(at_end, r.report);
    if (!r.report.ok()) {
      ++failed;
      FAIL_CHECK("seed " << s.seed << " nodes " << nodes << ": " << r.violations()
                         << "replay: tob-sim --nodes " << nodes
                         << " --cycles 300 --drain 40 --outage-rate 0.02 --outage-cycles 4 --load 3 --fault-rate 0.15"
                            " --clock-offset-ns 2000 --single-copy-loss 0.05 --dup 0.02 --stagger-ns "
                         << s.start_stagger_ns << " --seed " << s.seed);
    }
    for (const InjectedFault& f : r.rec().faults) outages += f.fault.kind == FaultKind::link_down;
    shutdowns += r.report.stats.self_shutdowns;
  }
  CHECK(failed == 0);
  CHECK(outages > static_cast<uint64_t>(seeds) * 10);  // links, several outages per seed
  CHECK(shutdowns > static_cast<uint64_t>(seeds));
  WARN("outage seeds " << seeds << ": " << outages << " links taken down, " << shutdowns << " self-shutdowns");
}

TEST_CASE("multi-frame slots: batches in several segments keep every property under faults and loss") {
  // 256-byte frames at 1 Gbit/s: a 250 us slot carries up to 44 frames per copy, and 12 messages
  // of 16-64 bytes per node and cycle need about four. A segment lost at a receiver (both
  // copies) makes the whole batch that receiver's omission; nobody may deliver a part of it.
  const char* env = std::getenv("TOB_SIM_SEEDS");
  const long seeds = std::max(1L, (env != nullptr ? std::strtol(env, nullptr, 10) : 1000) / 5);
  uint64_t frames = 0;
  uint64_t turns = 0;
  uint64_t delivered = 0;
  long failed = 0;
  for (long k = 0; k < seeds; ++k) {
    const int nodes = 4 + static_cast<int>(k % 3);
    Scenario s = quiet_scenario(nodes, 120);
    s.seed = static_cast<uint64_t>(k) + 1;
    s.node_template.frame_bytes_max = 256;
    s.node_template.payload_bytes_max = 120;
    s.node_template.rate_mbps = 1000;
    s.load = 12;
    s.fault_rate = 0.15;
    s.single_copy_loss = 0.05;
    s.dup = 0.02;
    s.clock_offset_ns_max = 2000;
    const Run r = run(s);
    if (!r.report.ok()) {
      ++failed;
      FAIL_CHECK("seed " << s.seed << " nodes " << nodes << ": " << r.violations()
                         << "replay: tob-sim --nodes " << nodes
                         << " --cycles 120 --frame 256 --rate-mbps 1000 --load 12 --fault-rate 0.15"
                            " --single-copy-loss 0.05 --dup 0.02 --clock-offset-ns 2000 --seed " << s.seed);
    }
    frames += r.rec().frames_sent;
    turns += static_cast<uint64_t>(nodes) * 120;
    delivered += r.report.stats.messages_delivered;
  }
  CHECK(failed == 0);
  // Batches really travelled in several frames: more than two segments per turn on average
  // (two copies each).
  CHECK(frames > 4 * turns);
  CHECK(delivered > static_cast<uint64_t>(seeds) * 1000);
  WARN("multi-frame seeds " << seeds << ": " << frames << " frames in " << turns << " turns, " << delivered
                            << " messages delivered");
}
