// Dataplane statistics (docs/architecture.md "Dataplane"): counters and timing histograms, each
// written by exactly one lcore (single writer, relaxed atomics, no locks) and read by the telemetry
// and I/O threads. visit_stats() walks everything once, so telemetry, the JSON file and the exit
// report list the same names.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "core/ic_node.h"
#include "core/engine.h"
#include "core/wire.h"
#include "dataplane/storage/acceptor_log.h"
#include "dataplane/time/global_clock.h"
#include "dataplane/observe/histogram.h"
#include "dataplane/clients/kv_hub.h"
#include "dataplane/config/options.h"

namespace tob::dataplane {

class Counter {
 public:
  void add(uint64_t n = 1) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  uint64_t get() const { return v_.load(std::memory_order_relaxed); }
  void raise_to(uint64_t n) {  // a running maximum (single writer)
    if (n > get()) v_.store(n, std::memory_order_relaxed);
  }

 private:
  std::atomic<uint64_t> v_{0};
};

struct RxStats {  // the RX role
  Counter polls;
  Counter frames;
  Counter bytes;
  Counter other_ethertype;
  Counter wrong_vlan;
  Counter runt;
  Counter decode_error[core::kDecodeErrorCount];
  Counter wrong_cluster;
  Counter unknown_sender;
  Counter own_frames;
  // [security] (docs/wire-format.md "Authenticated frames", "Replay protection"):
  Counter auth_missing;      // no authentication trailer (a sender without the cluster key)
  Counter auth_failed;       // the tag does not verify under any key this node holds
  Counter replayed;          // authentic, but taken before or older than the replay window
  Counter auth_unexpected;   // authentic, but a copy or segment no sender of this configuration sends
  Counter early;          // before the sender's reception window (timing failure)
  Counter late;           // after it, or for another cycle
  Counter late_forgiven;  // polled after its window, but the poll before came while it was open
  Counter ring_full;      // the control lcore fell behind: frame dropped (counted as an omission)
  Counter accepted;       // handed to the control lcore
  Counter dropped_by_knob;  // test knob --drop-rx: frames thrown away on purpose
  Counter clock_readings;          // first copies handed to the clock synchronisation
  Counter clock_readings_stalled;  // not: found after a poll gap too long to time them
  Counter clock_ring_full;         // not: the control lcore fell behind
  Histogram arrival_offset;  // rx instant minus the sender's transmit instant (first copy)
  Histogram poll_gap;        // polls that found frames: the time since the poll before, i.e.
                             // how early those frames may have arrived (the poll stamp's error)
};

struct TxStats {  // the TX role
  Counter frames;
  Counter bytes;
  Counter bursts;         // rte_eth_tx_burst calls that sent at least one frame
  Counter late;           // sent more than the schedule's precision after its instant
  Counter missed;         // not sent: its slot was over when the TX role got to it (otfp: its next slot began)
  Counter sent_late;      // otfp: sent after its slot's end, before the node's next slot
  Counter tx_failed;      // the PMD refused the frame for the whole window
  Counter nic_launch;     // handed to the NIC with a launch time
  Counter waited_for_log; // otfp: frames held until the acceptor log was durable
  Counter log_late;       // otfp: frames not sent: the log was not durable before the slot ended
  Counter ic_frames;      // IC round data frames sent (also in frames)
  Counter ic_lag_max_us;  // largest lag of an IC frame behind its instant (they queue in the slot)
  Counter spin_gap_max_ns;  // largest gap between two TSC reads inside a spin (the vCPU was away)
  Histogram tx_error[kTxMethodCount];  // TSC at the tx_burst call minus the slot instant
};

struct ControlStats {  // the control role
  Counter loops;
  Counter turns_late;     // on_time ran after the own transmit instant had passed
  Counter mbuf_alloc_failed;
  Counter tx_ring_full;
  Counter log_ring_full;  // delivery/event records the I/O thread never saw (must stay 0)
  Counter acceptor_log_full;  // otfp: the acceptor log writer fell behind (fatal)
  Counter ic_frames_unused;   // IC frames while this node runs no IC (its cluster.ini has no [ic])
  Counter ic_tx_hold_full;    // IC frames dropped: the hold for the engine's frames was full (must stay 0)
  Counter ic_pub_ring_full;   // publications the I/O thread never saw (--published; must stay 0)
  Counter ic_gen_writes;      // --ic-gen-keys: writes taken by the IC node
  Counter ic_gen_refused;     // ... and refused (kv_write status other than ok)
  Counter tx_seal_failed;     // [security]: not sent: OpenSSL failed, or a cycle before one already sealed (must stay 0)
  Counter tx_start_cycle;     // [security]: not sent: a frame of the cycle this daemon started in (IV uniqueness across restarts)
  Counter tx_withheld_clock;  // not sent: the clock's self-check failed ([timing] sync = inband | both)
  Counter submitted;
  Counter submit_backpressure;
  Counter submit_too_large;
  Counter submit_abandoned;   // submitted but not taken by the node when it stopped
  Counter generated;
  Counter watermark_waits;    // turns held back until the RX role caught up
  Counter watermark_timeouts; // ... and given up on (the RX role stalled)
  Histogram delivery_latency;   // delivery instant minus the sender's submit instant
  Histogram turn_lateness;      // on_time call minus the membership point it processed
};

// What the control lcore publishes about the node (Seqlock), for telemetry and status.
struct NodeStatus {
  core::SelfState state = core::SelfState::listening;
  uint8_t self = 0;
  uint8_t nodes = 0;
  uint8_t member_count = 0;
  uint64_t members = 0;
  int64_t cycle = -1;
  uint64_t queued = 0;
  int64_t now_ns = 0;
  core::Stage stages[core::kMaxNodes] = {};
  core::NodeCounters counters;
  CalibrationStats calibration;
};

// What the control lcore publishes about interactive consistency (Seqlock), with [ic] only.
struct IcStatus {
  core::IcCounters counters;
  uint64_t store_keys = 0;          // distinct keys in this node's store
  uint64_t store_versions = 0;      // versions stored (ever), evictions, duplicates, store full
  uint64_t store_evictions = 0;
  uint64_t store_duplicates = 0;
  uint64_t store_full = 0;
  uint64_t last_instance = 0;       // the last finished instance
  int64_t last_finish_ns = 0;
  uint64_t frames_per_slot = 0;     // provisioned, every copy
};

struct StatsSources {
  const RxStats& rx;
  const TxStats& tx;
  const ControlStats& control;
  const NodeStatus& node;
  uint64_t io_records = 0;
  uint64_t io_write_errors = 0;
  const AcceptorLog* log = nullptr;  // otfp
  const IcStatus* ic = nullptr;      // [ic]
  const KvHubStats* kv = nullptr;    // [ic]
};

// Receives every statistic in a fixed order. Names use only [A-Za-z0-9_] (DPDK telemetry accepts nothing else): "rx_frames".
class StatsVisitor {
 public:
  virtual ~StatsVisitor() = default;
  virtual void u64(const std::string& name, uint64_t value) = 0;
  virtual void i64(const std::string& name, int64_t value) = 0;
  virtual void real(const std::string& name, double value) = 0;
};

void visit_stats(const StatsSources& s, StatsVisitor& v);
// The ic_ and kv_ part of it (with [ic]; /tob/ic): kv may be nullptr.
void visit_ic_stats(const IcStatus& ic, const KvHubStats* kv, StatsVisitor& v);
// Histograms by name, for /tob/histogram: rx_arrival_offset, tx_error_spin, ... Null if unknown.
const Histogram* find_histogram(const StatsSources& s, const std::string& name);
std::string histogram_names();
// The whole set as one JSON object (the --stats-file format).
std::string stats_json(const StatsSources& s);

}  // namespace tob::dataplane
