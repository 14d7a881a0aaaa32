// Deterministic simulator for interactive consistency (docs/protocol-ic.md, docs/architecture.md
// "Testing on one machine"; docs/protocol-ic.md): N core::IcNode instances on virtual time from one
// seed, on the TDMA schedule, with Byzantine nodes. A liar tells each receiver another story in
// every round (the seed's "0.15 to one, 35.33 to another": the simulator delivers different round
// data per receiver, and liars collude by telling a receiver the same story); an omitter sends
// nothing, part of its round data, or sends it late, choosing per receiver; a corrupter sends
// garbage entries, messages of the wrong length or for the wrong instance; a crasher stops for good
// at a random instant. Every node runs the same replicated workload of key writes (majority, median
// and midpoint keys) and the simulator reads every key on every node at the same instants.
// Everything observed goes to IcRecords.
//
// The ordering engine is not part of these runs: IC frames are of their own kind (ic) and drivers
// hand them to the IC node only, so the two components do not see each other's frames.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "core/ic_node.h"
#include "core/result.h"
#include "sim/rng.h"

namespace tob::sim {

enum class IcRole : uint8_t { correct = 0, liar, omitter, crasher, corrupter };
const char* to_string(IcRole r);

struct IcScenario {
  uint64_t seed = 1;
  int nodes = 4;
  int f = -1;                  // -1: the most the cluster tolerates, (N - 1) / 3
  int64_t periods = 20;        // instances 0 .. periods-1 are written, run and checked
  int period_cycles = 1;
  int64_t cycle_ns = 0;        // 0: N x 250 us
  int liars = 0;
  int omitters = 0;
  int crashers = 0;
  int corrupters = 0;
  int keys = 6;                // keys each node writes per period, over the reduction classes
  size_t versions_per_key = 4; // store retention
  int64_t delay_ns = 20'000;
  int64_t jitter_ns = 10'000;
  size_t frame_bytes_max = 1500;
  size_t chunk_bytes = 1440;
};

struct IcDecisionRecord {
  core::NodeId node;
  uint64_t instance;
  int64_t finish_ns;
  std::vector<uint8_t> entries;  // canonical EIG entries (core::IcDecision)
};

struct IcRootRecord {          // a node's own value of an instance (its round 1 message)
  core::NodeId node;
  uint64_t instance;
  std::vector<uint8_t> entry;
};

struct IcPublicationRecord {
  core::NodeId node;
  uint64_t instance;
  int64_t finish_ns;
  std::string key;
  int64_t t_pub_ns;
  core::Reduction reduction;
  bool ok;
  core::KvPublish stored;
  int copies;
  std::vector<uint8_t> value;
};

struct IcWriteRecord {
  core::NodeId node;
  std::string key;
  int64_t t_pub_ns;
  std::vector<uint8_t> value;
  int64_t at_ns;
  core::KvWriteStatus status;
  uint64_t instance;
  int64_t finish_ns;
};

struct IcReadRecord {
  core::NodeId node;
  std::string key;
  int64_t t_min_ns;
  int64_t now_ns;
  core::KvStatus status;
  int64_t t_pub_ns;
  std::vector<uint8_t> value;
};

struct IcRecords {
  int nodes = 0;
  int f = 0;
  int rounds = 0;
  int period_cycles = 1;
  int64_t cycle_ns = 0;
  int64_t periods = 0;
  size_t entry_bytes = 0;
  size_t versions_per_key = 0;
  core::KvLimits limits;
  std::vector<IcRole> roles;
  std::vector<int64_t> crash_ns;  // INT64_MAX: never
  std::vector<int64_t> finish_ns; // per instance
  std::vector<IcDecisionRecord> decisions;
  std::vector<IcRootRecord> roots;
  std::vector<IcPublicationRecord> publications;
  std::vector<IcWriteRecord> writes;
  std::vector<IcReadRecord> reads;
  uint64_t frames_sent = 0;       // frame copies handed to the network, per receiver
  uint64_t frames_lied = 0;       // rewritten per receiver by a liar or corrupter
  uint64_t frames_omitted = 0;
  uint64_t frames_late = 0;
  core::IcCounters totals;        // summed over the nodes at the end (or crash)
  int64_t end_ns = 0;
};

class IcSimulator {
 public:
  static core::Result<IcSimulator> create(const IcScenario& scenario);

  void run();
  const IcRecords& records() const { return records_; }
  const core::Schedule& schedule() const { return schedule_; }
  const IcScenario& scenario() const { return scenario_; }
  const core::IcConfig& ic_config() const { return ic_; }
  // Key names the workload writes, in key-index order.
  const std::vector<std::string>& keys() const { return keys_; }

 private:
  enum class EvType : uint8_t { timer, arrive, write, read, crash };
  struct Ev {
    int64_t t;
    uint64_t order;
    EvType type;
    uint8_t node;
    uint32_t frame;
    uint64_t gen;
    bool operator>(const Ev& o) const { return t != o.t ? t > o.t : order > o.order; }
  };
  struct SimNode {
    std::optional<core::IcNode> ic;
    bool alive = false;
    uint64_t timer_gen = 0;
    int64_t timer_at = INT64_MAX;
  };

  IcSimulator(const IcScenario& s, core::Schedule schedule, core::IcConfig ic);
  void push(Ev e);
  void after_call(int i, int64_t now);
  void handle_actions(int i, int64_t now);
  void send_honest(int i, const core::TxFrame& tx);
  void send_rewritten(int i, const core::IcActions& a);
  void deliver(int from, int to, std::span<const uint8_t> bytes, int64_t tx_ns, int64_t cycle, bool late);
  void on_arrive(const Ev& e);
  void on_write(const Ev& e);
  void on_read(const Ev& e);
  void crash(int i, int64_t now);
  void add_totals(const core::IcCounters& c);
  uint32_t store_frame(std::span<const uint8_t> bytes);
  std::vector<uint8_t> value_for(int node, int64_t period, int key, core::Reduction r);

  IcScenario scenario_;
  core::Schedule schedule_;
  core::IcConfig ic_;
  Rng rng_;
  Rng net_rng_;
  std::priority_queue<Ev, std::vector<Ev>, std::greater<>> queue_;
  uint64_t order_ = 0;
  std::vector<SimNode> nodes_;
  std::vector<std::string> keys_;
  std::vector<std::vector<uint8_t>> pool_;
  std::vector<uint32_t> pool_free_;
  std::vector<uint8_t> scratch_;
  std::vector<uint8_t> frames_;
  std::vector<size_t> lengths_;
  IcRecords records_;
};

}  // namespace tob::sim
