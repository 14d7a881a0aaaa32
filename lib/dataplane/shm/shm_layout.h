// The shared memory between a dpdk-tob daemon and its co-located applications (include/tob.h):
// one memzone found by name, holding the daemon's facts, the TSC clock fit and one slot per client,
// and the memzones and rings found by their names (DPDK multi-process, docs/architecture.md
// "Dataplane"):
//
//   tob_dlv           memzone: the delivery ring (delivery_ring.h), written once per delivery by
//                     the control lcore, read by every client from its own cursor; the history
//   tob_sub           memzone: one submit ring per client slot (submit_ring.h), client -> control
//   tob_submit        MP/SC ring of SubmitMsg* from telemetry's /tob/submit to control,
//   tob_msg           ... elements from this mempool
//   tob_kvw           MP/SC ring of KvWriteMsg* (tob_kv_write) to control, elements from
//   tob_kvw_pool      ... this mempool                                 (only with [ic])
//   tob_kv            memzone: the mirror of the key-value store (kv_mirror.h)  (only with [ic])
//
// A client's slot goes free -> reserving -> claimed (library) -> attached or refused (control
// role) -> leaving (library or control) -> free (control, once its submit ring is drained), and
// the control role answers every claim within one step. Plain layout, lock-free atomics only
// (address-free across processes on x86-64). ABI 3 (TOB_ABI_VERSION): byte rings instead of the
// mbufs and rte_rings of ABI 2. ABI 4: the in-band clock correction map (clock_map, issue 19),
// which tob_now_ns and tob_wait_release apply on top of the fit. ABI 5: each slot's wake-up ring
// (WakeRing, issue 19's release skew in the daemon's telemetry).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "dataplane/shm/delivery_ring.h"
#include "dataplane/shm/seqlock.h"
#include "dataplane/shm/submit_ring.h"
#include "dataplane/time/tsc_clock.h"

namespace tob::dataplane {

inline constexpr char kShmZoneName[] = "tob_shm";
inline constexpr char kSubmitRingName[] = "tob_submit";
inline constexpr char kMsgPoolName[] = "tob_msg";
inline constexpr char kDeliveryRingName[] = "tob_dlv";
inline constexpr char kSubmitRingsName[] = "tob_sub";
inline constexpr char kKvZoneName[] = "tob_kv";
inline constexpr char kKvWriteRingName[] = "tob_kvw";
inline constexpr char kKvWritePoolName[] = "tob_kvw_pool";
inline constexpr uint32_t kShmMagic = 0x544F4253;  // "TOBS"
inline constexpr uint32_t kShmAbiVersion = 5;      // = TOB_ABI_VERSION in include/tob.h
inline constexpr int kClientSlots = 16;
// Client ids on the wire: 0 the built-in generator, 1 telemetry /tob/submit, 2.. the slots.
inline constexpr uint16_t kFirstSlotClientId = 2;
// Global sequence number of a delivery: turn * kSeqPerTurn + index within the delivered batch
// (a turn delivers at most nodes x [limits] batch_msgs = 16 x 4096 messages).
inline constexpr uint64_t kSeqPerTurn = 1 << 16;

// free -> reserving (client CAS) -> claimed (client, fields written) -> attached | refused
// (control) ... attached -> leaving (client) -> free (control, after draining its submit ring);
// refused -> free (client, after reading status).
enum class SlotState : uint32_t { free = 0, reserving, claimed, attached, refused, leaving };

// A client's latest wake-ups for release instants (tob_wait_release, ABI 5): a ring of kWakeRing
// pairs behind a count. The client writes entry count % kWakeRing, then publishes count + 1
// (release); the control lcore reads the entries between its last count and the new one, then
// the count again, and keeps an entry only if the writer cannot have started over it (index +
// kWakeRing > count read after). Telemetry of the release skew (time/release_monitor.h).
inline constexpr uint64_t kWakeRing = 7;  // a client that catches up after a stall of 7 cycles
struct alignas(64) WakeRing {
  std::atomic<uint64_t> count{0};
  struct Entry {
    std::atomic<int64_t> release_ns{0};
    std::atomic<int64_t> late_ns{0};  // woke this long after release_ns, on the daemon's global clock
  } at[kWakeRing];
};
static_assert(sizeof(WakeRing) == 128);

struct alignas(64) ClientSlot {
  // The claim (client) and the answer (control).
  std::atomic<uint32_t> state{0};
  std::atomic<int32_t> status{0};          // control's answer to the claim: 0 or a TOB_E* code
  std::atomic<uint32_t> pid{0};
  std::atomic<uint64_t> resume_after_seq{0};  // written by the client before its claim
  std::atomic<uint64_t> dlv_start{0};      // control, at attach: ring position of its first delivery
  // Written by the control role.
  alignas(64) std::atomic<uint32_t> lagging{0};  // its submissions are refused until it reads
  std::atomic<uint32_t> overrun{0};        // control: unread deliveries were overwritten
  std::atomic<uint64_t> pending{0};        // control: deliveries in the ring it has not polled
  std::atomic<uint64_t> lagging_events{0};
  std::atomic<uint64_t> enqueued{0};       // control: deliveries written for it since it attached
  std::atomic<uint64_t> kv_late{0};        // control: taken, then too late (period boundary race)
  std::atomic<uint64_t> kv_dropped{0};     // control: taken, then refused for another reason
  // Written by the client library (plain stores, one per burst).
  alignas(64) std::atomic<uint64_t> dlv_cursor{0};  // ring position of the first delivery it holds
  std::atomic<uint64_t> submitted{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<uint64_t> polled{0};
  std::atomic<uint64_t> kv_written{0};     // tob_kv_write calls handed to control
  std::atomic<uint64_t> kv_refused{0};     // tob_kv_write calls refused at once
  SubmitRingShared submit;                 // its submit ring's tail (client) and head (control)
  WakeRing wake;                           // client: tob_wait_release's wake-ups (ABI 5)
};

// Interactive consistency facts for the client library: enough to refuse at once a write that
// cannot be published by its t_pub (the instance timeline, docs/protocol-ic.md) and a value
// that does not suit its key's reduction, without asking the daemon.
inline constexpr size_t kIcClassesMax = 32;
inline constexpr size_t kIcClassPrefixMax = 57;  // "class." + prefix: rte_cfgfile's 63-byte names

struct ShmIcClass {
  char prefix[kIcClassPrefixMax] = {};
  uint8_t length = 0;
  uint8_t reduction = 0;  // core::Reduction
  uint8_t pad[5] = {};
};
static_assert(sizeof(ShmIcClass) == 64);

struct ShmIc {
  uint32_t enabled = 0;  // 0: no [ic]; every kv call answers TOB_ENOIC
  uint32_t f = 0;
  uint32_t rounds = 0;   // R = f + 1
  uint32_t period_cycles = 0;
  uint32_t keys_per_period_max = 0;
  uint32_t key_bytes_max = 0;
  uint32_t value_bytes_max = 0;
  uint32_t class_count = 0;
  uint32_t default_reduction = 0;  // core::Reduction
  uint32_t pad = 0;
  int64_t epoch_ns = 0;
  uint64_t mirror_bytes = 0;       // size of the tob_kv memzone's mirror
  ShmIcClass classes[kIcClassesMax];
};

// An element of tob_kvw_pool: one tob_kv_write, key then value in `bytes`.
struct KvWriteMsg {
  uint16_t slot;       // client slot index (its counters)
  uint8_t key_len;
  uint8_t pad;
  uint32_t value_len;
  int64_t t_pub_ns;
  int64_t write_ns;    // the client's global time at the call
  uint8_t bytes[];
};

// A message of telemetry's /tob/submit: an element of tob_msg, header + payload_bytes_max bytes.
struct SubmitMsg {
  uint16_t client;
  uint16_t bytes;
  uint32_t pad;
  int64_t submit_ns;
  uint8_t payload[];
};

inline constexpr unsigned kPollBurstMax = 512;  // deliveries one tob_poll returns at most

struct Shm {
  uint32_t magic = kShmMagic;
  uint32_t abi_version = kShmAbiVersion;
  char cluster[32] = {};
  uint16_t node_id = 0;
  uint16_t nodes = 0;
  uint32_t payload_bytes_max = 0;
  uint32_t clients_max = 0;
  uint32_t client_ring_size = 0;            // [clients] ring: deliveries pending before it lags
  int64_t cycle_ns = 0;
  uint64_t dlv_bytes = 0;                    // capacity of the delivery ring (tob_dlv)
  uint64_t sub_bytes = 0;                    // capacity of each slot's submit ring (tob_sub)
  uint32_t daemon_pid = 0;
  std::atomic<uint32_t> running{0};          // 1 while the control role serves clients
  std::atomic<int64_t> heartbeat_ns{0};      // the control role's clock, refreshed every turn
  Seqlock<TscFit> clock;                     // TSC -> global time, as the daemon fits it
  ClockKnobs knobs;                          // the daemon's test knobs (tob_now_ns follows them)
  uint32_t clock_mapped = 0;                 // 1: global time follows clock_map ([timing] sync = inband | both)
  Seqlock<core::ClockMap> clock_map;         // the in-band correction, local -> global (ABI 4)
  alignas(64) std::atomic<uint64_t> dlv_end{0};  // the delivery ring's end, published per burst
  ClientSlot slots[kClientSlots];
  ShmIc ic;
};

}  // namespace tob::dataplane
