// Deterministic cluster simulator (DESIGN §3, §11): N core::Node instances in one thread on
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

#include "core/node.h"
#include "core/result.h"
#include "sim/records.h"
#include "sim/rng.h"
#include "sim/scenario.h"

namespace tob::sim {

class Simulator {
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

 private:
  enum class EvType : uint8_t { timer, transmit, arrive, submit, crash, restart, fault_tick };
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
  struct SimNode {
    std::unique_ptr<core::Engine> node;
    std::vector<uint8_t> log;      // otfp: the acceptor log, survives crashes
    size_t log_sent_upto = 0;      // log bytes that a transmitted frame depended on
    uint64_t persisted = 0;        // record bytes this incarnation's engine emitted
    uint64_t durable = 0;          // ... and that the simulated disk made durable
    bool alive = false;
    int incarnation = 0;
    int64_t offset_ns = 0;
    uint64_t next_msg_id = 0;
    uint64_t timer_gen = 0;
    int64_t timer_at = INT64_MAX;
    int64_t last_turn_seq = -1;
    int ordinal = 0;
    bool burst[core::kMaxNodes] = {};
  };

  Simulator(const Scenario& scenario, core::Schedule schedule);
  void push(Ev e);
  void start_node(int i, int64_t now);
  void after_call(int i, int64_t now);
  void handle_actions(int i, int64_t now);
  void on_transmit(const Ev& e);
  void on_arrive(const Ev& e);
  void on_submit(const Ev& e);
  void on_fault_tick(const Ev& e);
  void schedule_submit(int i, int64_t now);
  void inject(const Fault& f, int64_t now);
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

// Payload a simulated application submits as message `msg_id` of `sender`.
void fill_payload(std::span<uint8_t> out, core::NodeId sender, uint64_t msg_id);
bool payload_matches(std::span<const uint8_t> p, core::NodeId sender, uint64_t msg_id);

}  // namespace tob::sim
