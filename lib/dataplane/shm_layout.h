// The shared memory between a dpdk-tob daemon and its co-located applications (include/tob.h):
// one memzone found by name, holding the daemon's facts, the TSC clock fit and one slot per
// client. Rings and pools are found by their names (DPDK multi-process, DESIGN §9):
//
//   tob_submit        MP/SC ring of SubmitMsg* from every client (and telemetry) to control
//   tob_msg           mempool of SubmitMsg elements
//   tob_dlv           pktmbuf pool of deliveries (DeliveryRecord + payload), shared by reference
//   tob_dlv_<slot>    SP/SC ring of delivery mbufs from control to one client
//
// Deliveries are mbufs with a reference per holder: the daemon's history keeps the latest ones
// (for clients that resume), and every client ring holds one reference per entry; the client
// library frees its references after the next poll. A client's slot goes
// and the control role answers every claim within one step. Plain layout, lock-free
// atomics only (address-free across processes on x86-64).
#pragma once

#include <atomic>
#include <cstdint>

#include "dataplane/seqlock.h"
#include "dataplane/tsc_clock.h"

namespace tob::dataplane {

inline constexpr char kShmZoneName[] = "tob_shm";
inline constexpr char kSubmitRingName[] = "tob_submit";
inline constexpr char kMsgPoolName[] = "tob_msg";
inline constexpr char kDeliveryPoolName[] = "tob_dlv";
inline constexpr uint32_t kShmMagic = 0x544F4253;  // "TOBS"
inline constexpr uint32_t kShmAbiVersion = 1;      // = TOB_ABI_VERSION in include/tob.h
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
  char ring_name[32] = {};
};

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
};

}  // namespace tob::dataplane
