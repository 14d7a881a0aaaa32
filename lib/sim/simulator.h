// Deterministic cluster simulator (docs/simulator.md): N core::Engine instances (mars or otfp) in one thread on
// virtual time, driven by one seed. The network model, faults and workload come from a
// Scenario; everything observed goes to Records, which the checkers judge.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "core/clock_sync.h"
#include "core/engine.h"
#include "core/otfp_node.h"
#include "core/result.h"
#include "sim/oscillator.h"
#include "sim/records.h"
#include "sim/rng.h"
#include "sim/scenario.h"

namespace tob::sim {

class Simulator : private core::OtfpObserver {
 public:
  static core::Result<Simulator> create(const Scenario& scenario);

  void run();
  const Records& records() const { return records_; }
  const core::Schedule& schedule() const { return schedule_; }
  const Scenario& scenario() const { return scenario_; }
  // Every trace line goes here when set (tob-sim --trace); the last lines are kept anyway.
  void set_trace_sink(std::FILE* f) { trace_file_ = f; }
  std::vector<std::string> recent_trace() const;
  // Inspect a node after the run (nullptr when crashed).
  const core::Engine* node(int i) const;
  // The engines call the simulator back (decisions): it must not move while it runs.

 private:
  enum class EvType : uint8_t { timer, transmit, arrive, submit, crash, restart, fault_tick, synced, freeze, thaw, clock_sample };
  struct Ev {
    int64_t t;
    uint64_t order;
    EvType type;
    uint8_t node;
    uint8_t peer;
    int incarnation;
    uint32_t frame;
    uint64_t gen;
    bool operator>(const Ev& o) const { return t != o.t ? t > o.t : order > o.order; }
  };
  struct HeldFrame {               // a frame waiting for the records emitted before it
    int64_t tx_ns;                 // virtual time it was due
    size_t needs;                  // log bytes that must be durable first
    uint32_t frame;
    uint8_t copy;
  };
  struct SimNode {
    std::unique_ptr<core::Engine> node;
    std::vector<uint8_t> log;      // otfp: the acceptor log file, survives crashes
    size_t log_base = 0;           // log bytes before this incarnation's first record
    size_t log_durable = 0;        // log bytes on stable storage
    bool syncing = false;
    std::vector<HeldFrame> held;
    bool alive = false;
    int incarnation = 0;
    Oscillator osc;                // its hardware clock
    std::optional<core::ClockSync> sync;  // clock sync on: this incarnation's
    bool byzantine_clock = false;
    int64_t clock_shift_ns = 0;    // a Byzantine clock: its engine runs this far ahead
    int64_t judged_from_ns = INT64_MAX;  // in the precision samples from here (engine running)
    bool clock_apart = false;      // its clock stands apart (NodeLife::clock_apart)
    bool rejoin_ok = false;        // apart: every sample of this cycle found it within Pi
    struct MapEpoch {              // the sync map from an instant on, for release instants
      int incarnation;
      core::ClockMap map;
    };
    std::vector<MapEpoch> maps;
    int64_t frozen_until = INT64_MIN;
    std::vector<uint32_t> backlog; // frames received while frozen, in order
    uint64_t next_msg_id = 0;
    uint64_t timer_gen = 0;
    int64_t timer_at = INT64_MAX;
    int64_t last_turn_seq = -1;
    int ordinal = 0;
    bool down_planned = false;     // a crash is scheduled or it is down (crash process)
    bool burst[core::kMaxNodes] = {};
  };

  Simulator(const Scenario& scenario, core::Schedule schedule);
  void decided(core::NodeId node, int64_t instance, uint32_t ballot, const core::OtfpValue& value) override;
  void round_started(core::NodeId node, uint32_t ballot, int64_t low) override;
  void activated(core::NodeId node, uint32_t ballot, int64_t activation) override;
  void push(Ev e);
  void start_node(int i, int64_t now);
  void after_call(int i, int64_t now);
  void handle_actions(int i, int64_t now);
  void hold_or_send(int i, const core::TxFrame& tx, uint32_t frame);
  void start_sync(int i, int64_t now);
  void on_synced(const Ev& e);
  void on_timer(const Ev& e);
  void on_transmit(const Ev& e);
  void on_arrive(const Ev& e);
  void on_submit(const Ev& e);
  void on_crash(const Ev& e);
  void on_freeze(const Ev& e);
  void on_thaw(const Ev& e);
  void on_fault_tick(const Ev& e);
  void random_mars_fault(int64_t cycle, int64_t now);
  void random_crashes(int64_t cycle, int64_t now);
  void random_stalls(int64_t cycle, int64_t now);
  void random_outage(int64_t cycle, int64_t now);
  void schedule_submit(int i, int64_t now);
  void inject(const Fault& f, int64_t now);
  bool frozen(const SimNode& sn, int64_t t) const { return t < sn.frozen_until; }
  bool draining(int64_t t) const { return t >= records_.faults_end_ns; }
  // The time a node's engine reads at virtual instant t, and the first virtual instant at which
  // it reads `node_ns` (its oscillator, through its sync map when clock sync is on).
  int64_t node_time_ns(const SimNode& sn, int64_t t) const;
  int64_t virtual_ns(const SimNode& sn, int64_t node_ns) const;
  void start_engine(int i, int64_t now);
  bool tick_clock(int i, int64_t now);
  void record_clock_round(int i, ClockRoundKind kind, int64_t cycle);
  void arm_timer(int i, int64_t now);
  void on_clock_sample(const Ev& e);
  void finish_clocks();
  core::ClockSyncConfig clock_sync_config(int i) const;
  bool copy_lost(int from, int to);
  uint32_t store_frame(std::span<const uint8_t> bytes);
  void release_frame(uint32_t idx);
  void trace(const std::string& line);
  void add_counters(const core::NodeCounters& c);
  core::NodeConfig node_config(int i) const;

  Scenario scenario_;
  core::Schedule schedule_;
  Rng rng_;
  Rng net_rng_;
  Rng load_rng_;
  Rng fault_rng_;
  Rng clock_rng_;                  // wander and Byzantine clocks: other streams unchanged
  core::PrecisionBound bound_;
  int64_t byz_early_ns_ = 0;
  int64_t byz_late_ns_ = 0;
  PrecisionSample cycle_sample_{};
  std::priority_queue<Ev, std::vector<Ev>, std::greater<>> queue_;
  uint64_t order_ = 0;
  std::vector<SimNode> nodes_;
  std::vector<std::vector<uint8_t>> pool_;
  std::vector<int> pool_refs_;
  std::vector<uint32_t> pool_free_;
  std::vector<Fault> frame_faults_;
  int64_t last_fault_cycle_ = -1000;
  Records records_;
  std::FILE* trace_file_ = nullptr;
  std::vector<std::string> trace_ring_;
  size_t trace_next_ = 0;
};

// The precision clock sync keeps in this scenario (core::clock_precision_bound: its jitter,
// delay, drift, the rate correction the simulator allows (twice the drift) and one round a cycle).
core::PrecisionBound precision_bound(const Scenario& s);
// The cycle from which precision samples are judged (the warm-up before it): the staggered
// starts, a cold start's listening rounds, the three cycles before a node is sampled, and the
// rounds that bounded steps take to correct the initial offsets.
int64_t clock_judged_from_cycle(const Scenario& s);

// Payload a simulated application submits as message `msg_id` of `sender`.
void fill_payload(std::span<uint8_t> out, core::NodeId sender, uint64_t msg_id);
bool payload_matches(std::span<const uint8_t> p, core::NodeId sender, uint64_t msg_id);

}  // namespace tob::sim
