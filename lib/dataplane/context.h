// What the daemon's lcores and threads share (docs/architecture.md): configuration, the TSC clock,
// the rings between roles, the pools, statistics and the stop flag. Built once at start-up in
// app/dpdk-tob/daemon.cc; the roles hold a reference and never allocate.
//
//   RX role --rx ring (RxItem)--> control role --tx ring (TxItem)--> TX role --> port
//                                      |  --log ring (LogRecord)--> I/O thread (files, status)
//                                      |  --ic pub ring (IcPubRecord)--> I/O thread (--published)
//   telemetry thread --submit ring (SubmitMsg from the msg pool)--> control role
#pragma once

#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "core/engine.h"
#include "dataplane/storage/acceptor_log.h"
#include "dataplane/config/cluster_config.h"
#include "dataplane/port/ether.h"
#include "dataplane/security/cluster_keys.h"
#include "dataplane/security/replay_window.h"
#include "dataplane/config/options.h"
#include "dataplane/shm/seqlock.h"
#include "dataplane/observe/stats.h"
#include "dataplane/time/clock_discipline.h"
#include "dataplane/time/release_monitor.h"
#include "dataplane/time/tsc_clock.h"

namespace tob::dataplane {

// A received frame on its way from the RX role to the control role: decoded once, by the RX role;
// the view points into the mbuf, which the control role frees after using it.
struct RxItem {
  rte_mbuf* mbuf;
  int64_t rx_ns;
  core::FrameView view;
};
static_assert(std::is_trivially_copyable_v<RxItem> && sizeof(RxItem) % 4 == 0, "an rte_ring element");

struct TxItem {  // 48 bytes
  rte_mbuf* mbuf;
  int64_t tx_ns;        // the slot instant (global time)
  int64_t slot_end_ns;  // the slot's end: a frame sent after it is late (tx_sent_late)
  int64_t close_ns;     // a frame not sent by then is not sent (tx_missed): the slot's end under
                        // mars, the node's next slot under otfp (late_frames)
  uint64_t log_offset;  // otfp: acceptor log bytes that must be durable before it leaves
  uint8_t method;       // TxMethod (concrete)
  uint8_t copy;
  uint8_t ic;           // 1: interactive consistency round data (sent after the engine's copies,
                        // back to back: not in the TX error histograms nor the late count)
  uint8_t pad[5];
};

enum class LogKind : uint8_t { delivery = 1, event, undelivered };

struct LogRecord {  // 128 bytes: one ring element
  LogKind kind;
  uint8_t node;        // delivery/undelivered: sender; event: the node it is about
  uint8_t reason;      // core::Reason
  uint8_t event;       // core::EventKind
  uint16_t client;
  uint16_t payload_bytes;
  int64_t cycle;
  uint64_t msg_id;     // event: members after it
  int64_t at_ns;       // delivery: when handed out; event: the membership point
  int64_t submit_ns;
  uint8_t head[88];    // the payload's first bytes (for /tob/deliveries)
};
static_assert(sizeof(LogRecord) == 128);

// Latest deliveries kept for telemetry (/tob/deliveries): without a deliveries file the control
// role hands the I/O thread only this many of each batch of deliveries.
inline constexpr size_t kRecentDeliveries = 64;

// The head of an element of the ic pub ring: one publication of the IC node for the --published
// file; key_len key bytes and value_len value bytes follow (element size from [ic]).
struct IcPubRecord {  // 32 bytes
  uint64_t instance;
  int64_t t_pub_ns;
  uint64_t defaulted;  // IcDecision::defaulted of its instance
  uint32_t value_len;
  uint8_t key_len;
  uint8_t reduction;  // core::Reduction
  uint8_t ok;         // 0: the reduction missed its quorum (no value)
  uint8_t stored;     // core::KvPublish
};
static_assert(sizeof(IcPubRecord) == 32);


// Roles are assigned to lcores at start; a loop runs one or several (lcore_loop.h).
struct DaemonContext {
  const DaemonOptions* options = nullptr;
  const ClusterConfig* config = nullptr;
  core::NodeId self = 0;
  const core::Schedule* schedule = nullptr;
  EtherParams ether;       // header of our frames
  size_t ether_bytes = 0;  // 14 or 18
  uint16_t port_id = 0;
  uint16_t rx_burst = 32;
  TxMethod methods[8] = {};
  int method_count = 1;
  bool split_rx = false;   // RX runs on another lcore than control (watermark applies)
  bool lenient_windows = false;  // otfp: frames outside their window still count (timing is liveness)
  bool late_frames = false;      // otfp: a frame that missed its slot still leaves, up to a cycle late
  AcceptorLog* log = nullptr;    // otfp: the acceptor log (the TX role checks a frame's records are durable)
  // [security] (docs/wire-format.md "Authenticated frames"): the keys (the control role seals with
  // its bank, the RX role verifies with its own) and the RX role's replay window; nullptr without.
  security::ClusterKeys* keys = nullptr;
  security::ReplayWindow* replay = nullptr;
  std::atomic<bool> reload_keys{false};  // SIGHUP: the I/O thread re-reads the key file

  TscClock clock;
  // In-band clock synchronisation ([timing] sync != off, time/clock_discipline.h): the RX role's
  // readings for the control role, and how long a poll gap may be for a frame to be one.
  rte_ring* clock_ring = nullptr;
  int64_t clock_gap_max_ns = 0;
  Seqlock<ClockStatus> clock_status;  // /tob/clock
  ReleaseTelemetry release;           // /tob/release (time/release_monitor.h)
  rte_mempool* pkt_pool = nullptr;
  rte_mempool* msg_pool = nullptr;
  rte_ring* rx_ring = nullptr;
  rte_ring* tx_ring = nullptr;
  rte_ring* log_ring = nullptr;
  rte_ring* submit_ring = nullptr;
  size_t msg_bytes = 0;    // SubmitMsg element size
  rte_ring* ic_pub_ring = nullptr;  // [ic] with --published: publications for the I/O thread
  size_t ic_pub_bytes = 0;          // its element size

  // NIC launch time: TSC -> NIC clock fit and the mbuf dynamic field.
  bool nic_launch = false;
  TscClock nic_clock;
  int ts_offset = -1;
  uint64_t ts_flag = 0;

  std::atomic<uint64_t> rx_watermark_tsc{0};  // every frame stamped up to here is in the rx ring
  std::atomic<bool> quit{false};              // set by signals, --duration, or a fatal error
  std::atomic<bool> control_done{false};      // the node stopped and sent its last frame
  std::atomic<int> fatal{0};                  // a reason to stop with exit status 1 (app/dpdk-tob/daemon.cc)

  RxStats rx;
  TxStats tx;
  ControlStats control;
  Seqlock<NodeStatus> status;
  bool ic = false;                  // [ic]: the control role runs an IC node
  Seqlock<IcStatus> ic_status;
  std::atomic<uint64_t> io_records{0};
  std::atomic<uint64_t> io_write_errors{0};
};

}  // namespace tob::dataplane
