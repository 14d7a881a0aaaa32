// Interactive consistency in the TDMA schedule and the time-aware key-value store (docs/protocol-ic.md,
// seed 004, docs/protocol-ic.md). A component the drivers run next to the ordering engine, in the
// same style: inputs in, actions out, virtual time only, no allocation after create().
//
//   ic.on_time(now_ns);                      cycle boundaries: rounds, instance start and finish
//   ic.on_frame(view, rx_ns);                a decoded frame of kind ic from a peer
//   ic.kv_write(key, t_pub_ns, value, now);  batched into the instance of the current period
//   ic.kv_read(key, t_min_ns, now);          the store (seed 004 §IV-B)
//   const IcActions& a = ic.take_actions();  frames to send, round data, decisions, publications
//
// Timeline (P = period in cycles, R = f + 1 rounds). Period p is the cycles [pP, (p+1)P). Instance
// p carries every write made during period p; it starts at cycle s = (p+1)P, runs round r in
// cycle s + r - 1 (each node's round data in its own slot) and finishes at the start of cycle
// s + R, when the node reduces its EIG tree, reduces every key and publishes into the store.
// Instances overlap when P < R (at most ceil(R / P) in flight).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/eig.h"
#include "core/ic_reduce.h"
#include "core/ic_wire.h"
#include "core/kv_batch.h"
#include "core/kv_store.h"
#include "core/engine.h"
#include "core/result.h"
#include "core/schedule.h"

namespace tob::core {

struct IcConfig {
  int f = 1;                          // faults tolerated; needs N > 3f; R = f + 1 rounds
  int period_cycles = 1;              // an instance every P cycles
  size_t keys_per_period_max = 64;    // writes batched into one instance
  size_t key_bytes_max = 32;          // 1..255
  size_t value_bytes_max = 16;        // 1..65535; >= 8 when a numeric reduction is configured
  size_t store_keys_max = 1024;       // distinct keys in the store
  size_t versions_per_key = 4;        // retention: versions kept per key (by publishing time)
  size_t chunk_bytes = 1440;          // round data per section; cluster-wide like f and P
  int copies = 1;                     // each ic frame is sent this many times (1..4)
  size_t tree_bytes_max = 64u << 20;  // refuse EIG trees larger than this
  Reduction default_reduction = Reduction::majority;
  std::vector<IcKeyClass> key_classes;  // reduction by key prefix (longest match)

  KvLimits limits() const { return {keys_per_period_max, key_bytes_max, value_bytes_max}; }
  // Checks every bound against a cluster of `nodes` and frames of `frame_bytes_max`.
  Result<bool> validate(int nodes, size_t frame_bytes_max) const;
};

enum class KvWriteStatus : uint8_t {
  ok = 0,
  too_late,       // the instance that would carry it finishes after t_pub (seed 004 §IV-B)
  too_many_keys,  // the period's batch is full (keys_per_period_max)
  empty_key,
  key_too_long,
  value_too_long,
  bad_number,     // the key's reduction is numeric and the value is not 8 bytes (finite for f64)
  before_epoch,   // written before cycle 0 of the schedule
  stopped,
};
inline constexpr int kKvWriteStatusCount = 9;
const char* to_string(KvWriteStatus s);

struct KvWriteResult {
  KvWriteStatus status = KvWriteStatus::stopped;
  uint64_t instance = 0;  // the instance that carries it (also when too late)
  int64_t finish_ns = 0;  // when that instance finishes
};

enum class IcFrameVerdict : uint8_t {
  accepted = 0,   // at least one chunk was taken
  not_ic,         // a frame of another kind: not for this component
  wrong_cluster,
  unknown_sender,
  own_frame,
  outside_window, // outside the sender's reception window for the cycle it names
  stale,          // no chunk for an instance in flight here (e.g. started before this node)
  malformed,      // chunks that do not fit the instance, round, length or chunk grid
  duplicate,      // every chunk was already received (a second copy)
  stopped,
};
inline constexpr int kIcFrameVerdictCount = 10;
const char* to_string(IcFrameVerdict v);

struct IcCounters {
  uint64_t instances_started = 0;
  uint64_t instances_finished = 0;
  uint64_t frames_tx = 0;
  uint64_t frames_rx[kIcFrameVerdictCount] = {};
  uint64_t chunks_rx = 0;
  uint64_t chunks_duplicate = 0;
  uint64_t chunks_malformed = 0;
  uint64_t messages_default = 0;      // (instance, round, sender) missing, late or incomplete: all ⊥
  uint64_t rounds_missed = 0;         // own round data not sent: called after the transmit instant
  uint64_t decisions_bottom = 0;      // decision-vector entries that are ⊥
  uint64_t batches_malformed = 0;     // decided values that are not a valid batch
  uint64_t groups_ignored = 0;        // (key, t_pub) with fewer than f + 1 copies or t_pub past
  uint64_t publications_ok = 0;
  uint64_t publications_failed = 0;   // reduction without quorum: published as an error
  uint64_t publications_conflict = 0; // (key, t_pub) published before: the first one stands
  uint64_t publications_dropped = 0;  // store full, or older than the retained versions
  uint64_t writes_accepted = 0;
  uint64_t writes_refused = 0;
  uint64_t decisions_dropped = 0;     // finished instances beyond the per-call report bound
};

// What one node holds for (key, t_pub) after an instance: a value, or an error.
struct IcPublication {
  uint64_t instance = 0;
  std::span<const uint8_t> key;
  int64_t t_pub_ns = 0;
  Reduction reduction = Reduction::majority;
  ReduceStatus status = ReduceStatus::no_quorum;
  KvPublish stored = KvPublish::stored;  // what the store did with it
  int copies = 0;                        // nodes whose decided batch held (key, t_pub)
  std::span<const uint8_t> value;        // empty unless status ok
};

// A finished instance: the decision vector (entries as in the EIG tree) and its publications.
struct IcDecision {
  uint64_t instance = 0;
  int64_t finish_ns = 0;
  int nodes = 0;
  size_t entry_bytes = 0;
  std::span<const uint8_t> entries;  // N entries
  std::span<const IcPublication> publications;
  // Senders whose round data this node took as ⊥ in some round (missing, late or incomplete):
  // with a correct node among them the instance had a fault on top of the f assumed (tools that
  // judge agreement say so, tests/integration/ic_test.py).
  uint64_t defaulted = 0;
  // Node a's decided value; false for ⊥.
  bool value(NodeId a, std::span<const uint8_t>& out) const;
};

// The honest round data this node sends (its EIG level r-1): drivers that inject faults rewrite
// it (core/ic_fault.h: IcFaultInjector, or per receiver in the simulator) and encode it again.
struct IcRoundData {
  uint64_t instance = 0;
  int round = 0;
  int64_t cycle = 0;
  int64_t tx_ns = 0;
  std::span<const uint8_t> message;
};

struct IcActions {
  std::vector<TxFrame> tx;
  std::vector<IcRoundData> rounds;
  std::vector<IcDecision> decisions;
  bool empty() const { return tx.empty() && rounds.empty() && decisions.empty(); }
  void clear() {  // keeps the capacity
    tx.clear();
    rounds.clear();
    decisions.clear();
  }
};

class IcNode {
 public:
  static Result<IcNode> create(const NodeConfig& node, const IcConfig& ic);

  void on_time(int64_t now_ns);
  IcFrameVerdict on_frame(const FrameView& frame, int64_t rx_ns);
  KvWriteResult kv_write(std::span<const uint8_t> key, int64_t t_pub_ns, std::span<const uint8_t> value,
                         int64_t now_ns);
  KvRead kv_read(std::span<const uint8_t> key, int64_t t_min_ns, int64_t now_ns);
  // Outputs accumulated since the last call (a second call without an input in between returns
  // nothing new); valid until the next input call.
  const IcActions& take_actions();
  // Sends nothing more, refuses writes; the store stays readable.
  void stop();
  // Next instant at which on_time must be called (the next cycle boundary).
  int64_t next_deadline_ns() const;

  // The instance timeline (docs/protocol-ic.md).
  uint64_t instance_of(int64_t write_ns) const;          // the period of a write; >= 0 from the epoch
  int64_t start_cycle(uint64_t instance) const;          // (p + 1) * P
  int64_t finish_ns(uint64_t instance) const;            // start of cycle (p + 1) * P + R

  NodeId self() const { return self_; }
  int nodes() const { return n_; }
  int f() const { return config_.f; }
  int rounds() const { return rounds_; }
  const Schedule& schedule() const { return sched_; }
  const IcConfig& config() const { return config_; }
  const KvStore& store() const { return store_; }
  const IcCounters& counters() const { return counters_; }
  size_t frames_per_slot_max() const { return frames_max_; }
  size_t round_data_bytes_max() const { return round_data_bytes_max_; }
  size_t entry_bytes() const { return trees_.front().tree.entry_bytes(); }

 private:
  struct TreeSlot {
    EigTree tree;
    int64_t instance = -1;          // -1: free
    int round = 0;                  // round being received
    size_t chunks = 0;              // chunks of that round's messages
    std::vector<uint64_t> bits;     // per sender: chunks received
    std::vector<uint32_t> got;      // per sender: chunk count received
    uint64_t defaulted = 0;         // senders taken as ⊥ in some round
  };
  struct DecisionSlot {
    IcDecision d;
    std::vector<uint8_t> entries;
    std::vector<IcPublication> pubs;
    std::vector<uint8_t> values;    // reduced values, value_bytes_max each
  };
  struct Ref {                      // one (node, key entry) of a decided batch
    uint64_t prefix;                // the key's first 8 bytes, big-endian, zero-padded (sorts first)
    int64_t t_pub;
    uint32_t offset;                // of the key entry in the decision entries
    uint8_t node;
  };

  IcNode(const NodeConfig& node, const IcConfig& ic, Schedule sched, KvStore store);
  void clear_if_taken();
  void advance(int64_t now_ns);
  void boundary(int64_t cycle, int64_t now_ns);
  void begin_instance(uint64_t instance);
  void finalize_round(TreeSlot& t, int round);
  void finish(TreeSlot& t, int64_t cycle);
  void publish(DecisionSlot& ds, int64_t finish_ns);
  size_t collect_copies(const DecisionSlot& ds);
  void sort_copies(const uint8_t* base, size_t refs);
  size_t publish_group(DecisionSlot& ds, size_t refs, size_t i, int64_t finish_ns, size_t& pubs);
  // The key of a copy (inline: the sort compares keys a few thousand times per boundary).
  static std::span<const uint8_t> key_at(const uint8_t* base, const Ref& r) {
    return {base + r.offset + kKvEntryHeaderBytes, base[r.offset + 8]};
  }
  void transmit(int64_t cycle, int64_t now_ns, std::span<const IcMessage> messages);
  TreeSlot* slot_of(uint64_t instance);
  Reduction reduction_of(std::span<const uint8_t> key) const;

  NodeConfig node_config_;
  IcConfig config_;
  Schedule sched_;
  KvStore store_;
  NodeId self_;
  int n_;
  int rounds_;
  int64_t period_;

  bool started_ = false;
  bool stopped_ = false;
  int64_t next_cycle_ = 0;    // next boundary to process
  int64_t last_now_ns_ = 0;

  KvPending pending_;
  std::vector<uint8_t> root_;
  std::vector<TreeSlot> trees_;
  std::vector<DecisionSlot> decisions_;
  uint64_t finished_ = 0;
  std::vector<Ref> refs_;
  std::array<std::span<const uint8_t>, kMaxNodes> group_copies_;  // one group's copies (publish_group)
  size_t round_data_bytes_max_ = 0;     // one slot's round messages, all together
  size_t frames_max_ = 0;
  std::vector<uint8_t> tx_bytes_;
  std::vector<size_t> tx_lengths_;

  IcActions actions_;
  bool taken_ = false;
  IcCounters counters_;
};

}  // namespace tob::core
