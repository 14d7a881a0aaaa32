// The shared memory between a dpdk-tob daemon and its co-located applications (include/tob.h):
// one memzone found by name, holding the daemon's facts, the TSC clock fit and one slot per client.
// Rings and pools are found by their names (DPDK multi-process, docs/architecture.md "Dataplane"):
//
//   tob_submit        MP/SC ring of SubmitMsg* from every client (and telemetry) to control
//   tob_msg           mempool of SubmitMsg elements
//   tob_dlv           pktmbuf pool of deliveries (DeliveryRecord + payload), shared by reference
//   tob_dlv_<slot>    SP/SC ring of delivery mbufs from control to one client
//   tob_kvw           MP/SC ring of KvWriteMsg* (tob_kv_write) to control, elements from
//   tob_kvw_pool      ... this mempool                                 (only with [ic])
//   tob_kv            memzone: the mirror of the key-value store (kv_mirror.h)  (only with [ic])
//
// Deliveries are mbufs with a reference per holder: the daemon's history keeps the latest ones
// (for clients that resume), and every client ring holds one reference per entry; the client
// library frees its references after the next poll. A client's slot goes free -> reserving ->
// claimed (library) -> attached or refused (control role) -> leaving (library or control) ->
// free (control), and the control role answers every claim within one step. Plain layout, lock-free
// atomics only (address-free across processes on x86-64).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "dataplane/shm/seqlock.h"
#include "dataplane/time/tsc_clock.h"

namespace tob::dataplane {

inline constexpr char kShmZoneName[] = "tob_shm";
inline constexpr char kSubmitRingName[] = "tob_submit";
inline constexpr char kMsgPoolName[] = "tob_msg";
inline constexpr char kDeliveryPoolName[] = "tob_dlv";
inline constexpr char kKvZoneName[] = "tob_kv";
inline constexpr char kKvWriteRingName[] = "tob_kvw";
inline constexpr char kKvWritePoolName[] = "tob_kvw_pool";
inline constexpr uint32_t kShmMagic = 0x544F4253;  // "TOBS"
inline constexpr uint32_t kShmAbiVersion = 2;      // = TOB_ABI_VERSION in include/tob.h
inline constexpr int kClientSlots = 16;
// Client ids on the wire: 0 the built-in generator, 1 telemetry /tob/submit, 2.. the slots.
inline constexpr uint16_t kFirstSlotClientId = 2;
// Global sequence number of a delivery: turn * kSeqPerTurn + index within the delivered batch.
inline constexpr uint64_t kSeqPerTurn = 4096;

// free -> reserving (client CAS) -> claimed (client, fields written) -> attached | refused
// (control) ... attached -> leaving (client) -> free (control, after draining the ring);
// refused -> free (client, after reading status).
enum class SlotState : uint32_t { free = 0, reserving, claimed, attached, refused, leaving };

struct alignas(64) ClientSlot {
  std::atomic<uint32_t> state{0};
  std::atomic<int32_t> status{0};          // control's answer to the claim: 0 or a TOB_E* code
  std::atomic<uint32_t> pid{0};
  std::atomic<uint64_t> resume_after_seq{0};  // written by the client before its claim
  std::atomic<uint32_t> lagging{0};        // control: deliveries are held back for this client
  std::atomic<uint32_t> overrun{0};        // control: unread deliveries were dropped from history
  std::atomic<uint64_t> pending{0};        // control: deliveries not yet enqueued to its ring
  std::atomic<uint64_t> lagging_events{0};
  std::atomic<uint64_t> enqueued{0};       // control: deliveries put in its ring
  std::atomic<uint64_t> submitted{0};      // client library
  std::atomic<uint64_t> refused{0};        // client library
  std::atomic<uint64_t> polled{0};         // client library
  std::atomic<uint64_t> kv_written{0};     // client library: tob_kv_write calls handed to control
  std::atomic<uint64_t> kv_refused{0};     // client library: tob_kv_write calls refused at once
  std::atomic<uint64_t> kv_late{0};        // control: taken, then too late (period boundary race)
  std::atomic<uint64_t> kv_dropped{0};     // control: taken, then refused for another reason
  char ring_name[32] = {};
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

// A message on the submit ring: an element of the msg pool, header + payload_bytes_max bytes.
struct SubmitMsg {
  uint16_t client;
  uint16_t bytes;
  uint32_t pad;
  int64_t submit_ns;
  uint8_t payload[];
};

inline constexpr unsigned kPollBurstMax = 512;  // deliveries one tob_poll returns at most

struct DeliveryRecord {  // the head of a delivery mbuf's data; the payload follows
  uint64_t seq;
  int64_t cycle;
  uint64_t msg_id;
  int64_t submit_ns;
  int64_t deliver_ns;
  int64_t release_ns;
  uint16_t sender;
  uint16_t client;
  uint32_t length;
};

struct Shm {
  uint32_t magic = kShmMagic;
  uint32_t abi_version = kShmAbiVersion;
  char cluster[32] = {};
  uint16_t node_id = 0;
  uint16_t nodes = 0;
  uint32_t payload_bytes_max = 0;
  uint32_t clients_max = 0;
  uint32_t client_ring_size = 0;
  int64_t cycle_ns = 0;
  uint32_t daemon_pid = 0;
  std::atomic<uint32_t> running{0};          // 1 while the control role serves clients
  std::atomic<int64_t> heartbeat_ns{0};      // the control role's clock, refreshed every turn
  Seqlock<TscFit> clock;                     // TSC -> global time, as the daemon fits it
  ClockKnobs knobs;                          // the daemon's test knobs (tob_now_ns follows them)
  ClientSlot slots[kClientSlots];
  ShmIc ic;
};

}  // namespace tob::dataplane
