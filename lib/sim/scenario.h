// What a simulation run is made of: cluster, network model, faults and workload.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine.h"

namespace tob::sim {

enum class FaultKind : uint8_t {
  crash,            // node stops at the given instant; restarts later if restart_after_cycles > 0
  send_omission,    // every copy of node's frame in that cycle is lost, to every receiver
  receive_omission, // every copy of peer's frame in that cycle is lost at node
  corrupt,          // every copy of peer's frame in that cycle reaches node corrupted
  late_frame,       // every copy of peer's frame in that cycle reaches node after the window
  link_down,        // peer -> node loses everything for `cycles` cycles (beyond the hypothesis)
};
const char* to_string(FaultKind k);

// A fault at a cycle. For crash: at `offset_ns` into the cycle. For frame faults: the frame
// of the sending node (`node` for send_omission, `peer` otherwise) in that cycle.
struct Fault {
  FaultKind kind;
  int64_t cycle;
  core::NodeId node;
  core::NodeId peer = core::kNoNode;
  int64_t offset_ns = 0;
  int64_t restart_after_cycles = 0;  // crash only; 0: stays down
  int64_t cycles = 1;                // link_down only
};

struct Scenario {
  uint64_t seed = 1;
  int nodes = 4;
  int64_t cycles = 200;
  int64_t cycle_ns = 1'000'000;
  core::Order order = core::Order::mars;
  core::NodeConfig node_template;  // schedule and self are filled in per node

  // Network: one-way delay, uniform jitter, per-copy loss (Gilbert-Elliott bursts),
  // duplication and corruption, independently per link and frame copy.
  int64_t delay_ns = 20'000;
  int64_t jitter_ns = 10'000;
  double loss = 0;         // probability a copy is lost (good state)
  double burst = 0;        // probability a loss starts a burst (bad state)
  double burst_loss = 0.5; // loss probability in the bad state
  double burst_exit = 0.3; // probability to leave the bad state per copy
  double dup = 0;
  double corrupt = 0;
  double single_copy_loss = 0;  // lose exactly one copy of a pair: masked by send-twice
  int64_t clock_offset_ns_max = 0;  // per node offset, uniform in [-max, max]
  int64_t start_stagger_ns = 0;     // node start instants uniform in [0, stagger]

  // Random faults inside the fault hypothesis: at most one failure in two cycles.
  double fault_rate = 0;            // per cycle
  bool crashes = true;
  int64_t fault_spacing_cycles = 3;
  std::vector<Fault> faults;        // explicit faults (scenario tests)

  // otfp's fault model, beyond the mars hypothesis (docs/simulator.md "otfp fault model").
  // Crashes: per live node and cycle, a crash at a random instant of the next cycle (half of them
  // right after the node's own turn began: between its log write and its frame), while fewer
  // than `crash_down_max` nodes are down; back after restart_cycles_min..max cycles, or never
  // with probability crash_permanent.
  double crash_rate = 0;
  int crash_down_max = 1;
  int64_t restart_cycles_min = 1;
  int64_t restart_cycles_max = 12;
  double crash_permanent = 0;
  // The acceptor log: each sync takes fsync_ns_min..max; a frame leaves only once the records
  // emitted before it are durable, and the engine hears of durability when the sync completes.
  int64_t fsync_ns_min = 0;
  int64_t fsync_ns_max = 0;
  double torn_tail = 0;             // a crash keeps a random prefix of the unsynced records (else none)
  // Driver stalls: per live node and cycle, its whole loop (engine, TX, RX, disk completions)
  // freezes for 1..stall_cycles_max cycles; frames that arrive meanwhile wait in its RX ring.
  double stall_rate = 0;
  int64_t stall_cycles_max = 20;
  // Outages, beyond the mars hypothesis (a host stall, a switch reboot): per cycle, with
  // probability outage_rate, the links into every node (half the outages) or into a random set of
  // nodes go down, each receiver's for 1..outage_cycles_max cycles of its own, from the next cycle.
  double outage_rate = 0;
  int64_t outage_cycles_max = 4;
  // Clocks (docs/simulator.md "Clocks and their synchronisation"): per node rate error uniform in
  // [-drift_ppm_max, drift_ppm_max] (besides the offset), moving by up to drift_wander_ppm at
  // every cycle start (a random walk kept within the bound), or the rates drift_ppm names.
  double drift_ppm_max = 0;
  double drift_wander_ppm = 0;
  std::vector<double> drift_ppm;    // explicit per node rate errors in ppm (tests); overrides the draw
  std::vector<int64_t> clock_offset_ns;  // explicit per node offsets (scenario files); overrides the draw
  // In-band synchronisation (core::ClockSync) on every node: its engine runs on the synchronised
  // global time, starts once its clock integrated (or after two silent rounds: a cold start), and
  // its frames are withheld while the self-check says its clock is out.
  bool clock_sync = false;
  // What every node's configured delay ([timing] delay_ns) is off by: it configures the true mean
  // (delay_ns + jitter_ns / 2) plus this. Readings are relative, so an error all nodes share
  // moves the ensemble, not one node against another; the rate corrections must not count it as
  // a rate error (core::ClockSync's window sums, docs/simulator.md).
  int64_t clock_delay_error_ns = 0;
  // Byzantine clocks: this many nodes whose frames leave up to byzantine_early_ns early and reach
  // each receiver anywhere from that early to byzantine_late_ns late, differently per receiver
  // and frame (-1: the engine's default, docs/simulator.md). Their engines are correct.
  int byzantine_clocks = 0;
  uint64_t byzantine_clock_nodes = 0;  // which ones (scenario files); 0: byzantine_clocks drawn
  int64_t byzantine_early_ns = -1;
  int64_t byzantine_late_ns = -1;
  // Drain: after `cycles`, this many more without new faults, loss or submissions, so that what
  // is not yet delivered gets the time to be (the checker then judges every instance).
  int64_t drain_cycles = 0;

  // Workload: each node submits Poisson-ish `load` messages per cycle.
  double load = 2.0;
  int payload_min = 16;
  int payload_max = 64;
};

}  // namespace tob::sim
