// include/tob.h over the daemon's shared memory (lib/dataplane/shm_layout.h): the client side.
// Runs in the application's threads; never blocks except in tob_attach, tob_detach (bounded
// waits for the daemon) and tob_wait_release (a TSC spin).
#include "../../include/tob.h"

#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_memzone.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <unistd.h>
#include <x86intrin.h>

#include <atomic>
#include <cstring>
#include <ctime>
#include <new>

#include "dataplane/context.h"
#include "dataplane/client_hub.h"
#include "dataplane/shm_layout.h"

using tob::dataplane::ClientSlot;
using tob::dataplane::DeliveryRecord;
using tob::dataplane::Shm;
using tob::dataplane::SlotState;
using tob::dataplane::SubmitMsg;

struct tob_client {
  Shm* shm = nullptr;
  ClientSlot* slot = nullptr;
  int slot_index = -1;
  rte_ring* ring = nullptr;
  rte_ring* submit = nullptr;
  rte_mempool* msg_pool = nullptr;
  rte_mbuf* held[tob::dataplane::kPollBurstMax] = {};
  unsigned held_count = 0;
  uint64_t last_seq = 0;
  uint64_t delivered = 0;
  bool detached = false;
};

namespace {

constexpr int64_t kAttachWaitNs = 1'000'000'000;
constexpr int64_t kHeartbeatStaleNs = 1'000'000'000;
constexpr int64_t kSpinAheadNs = 300'000;  // tob_wait_release spins at most this long

int64_t now_ns(const Shm& shm) {
  return tob::dataplane::tsc_to_ns(shm.clock.read(), shm.knobs, __rdtsc());
}

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void nap() {
  const timespec ts{0, 100'000};
  nanosleep(&ts, nullptr);
}

bool daemon_alive(const Shm& shm) {
  if (shm.running.load(std::memory_order_acquire) == 0) return false;
  return now_ns(shm) - shm.heartbeat_ns.load(std::memory_order_relaxed) < kHeartbeatStaleNs;
}

SlotState state_of(const ClientSlot* s) { return static_cast<SlotState>(s->state.load(std::memory_order_acquire)); }

void release_held(tob_client* c) {
  if (c->held_count > 0) rte_pktmbuf_free_bulk(c->held, c->held_count);
  c->held_count = 0;
}

}  // namespace

extern "C" {

const char* tob_strerror(int e) {
  switch (e) {
    case TOB_OK: return "success";
    case TOB_EAGAIN: return "try again: backpressure (the node's queue or rings are full, or this client lags)";
    case TOB_EINVAL: return "invalid argument";
    case TOB_ENODAEMON: return "no dpdk-tob daemon is running under this file prefix (or it stopped)";
    case TOB_EVERSION: return "the daemon uses another TOB_ABI_VERSION than this library";
    case TOB_ECLUSTER: return "the daemon under this file prefix serves another cluster";
    case TOB_ENOSLOT: return "every client slot of the daemon is taken ([clients] max)";
    case TOB_ETOOLARGE: return "payload larger than the cluster's [limits] payload_bytes";
    case TOB_EOVERRUN: return "this client fell behind by more than the daemon's history: deliveries were lost to it";
    case TOB_ETOOLATE: return "cannot resume: the daemon no longer holds deliveries that far back";
    case TOB_EDETACHED: return "the client is detached";
    case TOB_ENOEAL: return "rte_eal_init has not run in this process";
  }
  return "unknown tob error";
}

int tob_attach(const char* cluster_name, const tob_attach_options* options, tob_client** out) {
  if (cluster_name == nullptr || out == nullptr) return TOB_EINVAL;
  *out = nullptr;
  if (rte_eal_process_type() == RTE_PROC_INVALID || rte_lcore_count() == 0) return TOB_ENOEAL;
  const rte_memzone* zone = rte_memzone_lookup(tob::dataplane::kShmZoneName);
  if (zone == nullptr) return TOB_ENODAEMON;
  auto* shm = static_cast<Shm*>(zone->addr);
  if (shm->magic != tob::dataplane::kShmMagic) return TOB_ENODAEMON;
  if (shm->abi_version != TOB_ABI_VERSION) return TOB_EVERSION;
  if (std::strncmp(shm->cluster, cluster_name, sizeof shm->cluster) != 0) return TOB_ECLUSTER;
  if (!daemon_alive(*shm)) return TOB_ENODAEMON;

  int index = -1;
  for (uint32_t i = 0; i < shm->clients_max && index < 0; ++i) {
    uint32_t expected = static_cast<uint32_t>(SlotState::free);
    if (shm->slots[i].state.compare_exchange_strong(expected, static_cast<uint32_t>(SlotState::reserving)))
      index = static_cast<int>(i);
  }
  if (index < 0) return TOB_ENOSLOT;
  ClientSlot* slot = &shm->slots[index];
  slot->pid.store(static_cast<uint32_t>(getpid()), std::memory_order_relaxed);
  slot->resume_after_seq.store(options != nullptr ? options->resume_after_seq : 0, std::memory_order_relaxed);
  slot->submitted.store(0, std::memory_order_relaxed);
  slot->refused.store(0, std::memory_order_relaxed);
  slot->polled.store(0, std::memory_order_relaxed);
  slot->state.store(static_cast<uint32_t>(SlotState::claimed), std::memory_order_release);

  // The control role answers within a step; a daemon that does not is treated as gone.
  const int64_t deadline = monotonic_ns() + kAttachWaitNs;
  SlotState st;
  while ((st = state_of(slot)) == SlotState::claimed && monotonic_ns() < deadline) nap();
  if (st == SlotState::claimed) {
    uint32_t expected = static_cast<uint32_t>(SlotState::claimed);
    if (slot->state.compare_exchange_strong(expected, static_cast<uint32_t>(SlotState::free))) return TOB_ENODAEMON;
    st = state_of(slot);  // answered just now
  }
  if (st == SlotState::refused) {
    const int status = slot->status.load(std::memory_order_relaxed);
    slot->state.store(static_cast<uint32_t>(SlotState::free), std::memory_order_release);
    return status != 0 ? status : TOB_ENODAEMON;
  }
  auto* c = new (std::nothrow) tob_client();
  if (c == nullptr) {
    slot->state.store(static_cast<uint32_t>(SlotState::leaving), std::memory_order_release);
    return TOB_EINVAL;
  }
  c->shm = shm;
  c->slot = slot;
  c->slot_index = index;
  c->ring = rte_ring_lookup(slot->ring_name);
  c->submit = rte_ring_lookup(tob::dataplane::kSubmitRingName);
  c->msg_pool = rte_mempool_lookup(tob::dataplane::kMsgPoolName);
  if (c->ring == nullptr || c->submit == nullptr || c->msg_pool == nullptr) {
    slot->state.store(static_cast<uint32_t>(SlotState::leaving), std::memory_order_release);
    delete c;
    return TOB_ENODAEMON;
  }
  c->last_seq = options != nullptr ? options->resume_after_seq : 0;
  *out = c;
  return TOB_OK;
}

int tob_detach(tob_client* c) {
  if (c == nullptr) return TOB_EINVAL;
  release_held(c);
  int rc = TOB_OK;
  if (!c->detached && state_of(c->slot) == SlotState::attached) {
    c->slot->state.store(static_cast<uint32_t>(SlotState::leaving), std::memory_order_release);
    // The control role drains the ring and frees the slot; a stopped daemon cannot, so the
    // wait is bounded (the slot then stays leaving until the daemon restarts).
    const int64_t deadline = monotonic_ns() + kAttachWaitNs;
    while (state_of(c->slot) == SlotState::leaving && monotonic_ns() < deadline) nap();
    if (state_of(c->slot) == SlotState::leaving) rc = TOB_ENODAEMON;
  }
  delete c;
  return rc;
}

int tob_submit(tob_client* c, const void* payload, size_t length) {
  if (c == nullptr || (payload == nullptr && length > 0)) return TOB_EINVAL;
  if (c->detached || state_of(c->slot) != SlotState::attached) return TOB_EDETACHED;
  if (length > c->shm->payload_bytes_max) return TOB_ETOOLARGE;
  ClientSlot& slot = *c->slot;
  // A client that does not read its deliveries may not add more (backpressure, DESIGN §9).
  if (slot.lagging.load(std::memory_order_acquire) != 0) {
    slot.refused.fetch_add(1, std::memory_order_relaxed);
    return TOB_EAGAIN;
  }
  void* obj = nullptr;
  if (rte_mempool_get(c->msg_pool, &obj) != 0) {
    slot.refused.fetch_add(1, std::memory_order_relaxed);
    return TOB_EAGAIN;
  }
  auto* m = static_cast<SubmitMsg*>(obj);
  m->client = static_cast<uint16_t>(tob::dataplane::kFirstSlotClientId + c->slot_index);
  m->bytes = static_cast<uint16_t>(length);
  m->submit_ns = now_ns(*c->shm);
  if (length > 0) std::memcpy(m->payload, payload, length);
  if (rte_ring_enqueue(c->submit, m) != 0) {
    rte_mempool_put(c->msg_pool, m);
    slot.refused.fetch_add(1, std::memory_order_relaxed);
    return TOB_EAGAIN;
  }
  slot.submitted.fetch_add(1, std::memory_order_relaxed);
  return TOB_OK;
}

int tob_poll(tob_client* c, tob_delivery* out, unsigned max) {
  if (c == nullptr || (out == nullptr && max > 0)) return TOB_EINVAL;
  release_held(c);
  if (c->detached) return TOB_EDETACHED;
  if (max > tob::dataplane::kPollBurstMax) max = tob::dataplane::kPollBurstMax;
  const unsigned n = rte_ring_dequeue_burst(c->ring, reinterpret_cast<void**>(c->held), max, nullptr);
  c->held_count = n;
  for (unsigned i = 0; i < n; ++i) {
    const auto* rec = rte_pktmbuf_mtod(c->held[i], const DeliveryRecord*);
    out[i] = {rec->seq,        rec->cycle,      rec->msg_id, rec->submit_ns, rec->deliver_ns, rec->release_ns,
              rec->sender,     rec->client,     rec->length, reinterpret_cast<const uint8_t*>(rec + 1)};
  }
  if (n > 0) {
    c->last_seq = out[n - 1].seq;
    c->delivered += n;
    c->slot->polled.fetch_add(n, std::memory_order_relaxed);
    return static_cast<int>(n);
  }
  // Nothing queued: say why when it is not just quiet.
  if (c->slot->overrun.load(std::memory_order_acquire) != 0) return TOB_EOVERRUN;
  if (state_of(c->slot) != SlotState::attached) return TOB_EDETACHED;
  if (!daemon_alive(*c->shm)) return TOB_ENODAEMON;
  return 0;
}

int64_t tob_wait_release(tob_client* c, const tob_delivery* d) {
  if (c == nullptr || d == nullptr) return TOB_EINVAL;
  const tob::dataplane::TscFit fit = c->shm->clock.read();
  const uint64_t target = tob::dataplane::ns_to_tsc(fit, c->shm->knobs, d->release_ns);
  // Sleep through most of a long wait (so that many waiting applications do not spin against
  // each other), then spin the last stretch on the TSC: sleeping alone wakes tens of
  // microseconds late (DESIGN §12).
  const int64_t remaining_ns = d->release_ns - tob::dataplane::tsc_to_ns(fit, c->shm->knobs, __rdtsc());
  if (remaining_ns > kSpinAheadNs) {
    const int64_t sleep_ns = remaining_ns - kSpinAheadNs;
    const timespec ts{static_cast<time_t>(sleep_ns / 1'000'000'000), static_cast<long>(sleep_ns % 1'000'000'000)};
    nanosleep(&ts, nullptr);
  }
  while (__rdtsc() < target) _mm_pause();
  return tob::dataplane::tsc_to_ns(fit, c->shm->knobs, __rdtsc()) - d->release_ns;
}

int64_t tob_now_ns(tob_client* c) { return c == nullptr ? 0 : now_ns(*c->shm); }

uint16_t tob_client_id(const tob_client* c) {
  return c == nullptr ? 0 : static_cast<uint16_t>(tob::dataplane::kFirstSlotClientId + c->slot_index);
}

uint16_t tob_node_id(const tob_client* c) { return c == nullptr ? 0 : c->shm->node_id; }

int tob_get_stats(const tob_client* c, tob_client_stats* out) {
  if (c == nullptr || out == nullptr) return TOB_EINVAL;
  const ClientSlot& s = *c->slot;
  out->submitted = s.submitted.load(std::memory_order_relaxed);
  out->refused = s.refused.load(std::memory_order_relaxed);
  out->delivered = c->delivered;
  out->lagging_events = s.lagging_events.load(std::memory_order_relaxed);
  out->pending = s.pending.load(std::memory_order_relaxed) + rte_ring_count(c->ring);
  out->last_seq = c->last_seq;
  return TOB_OK;
}

}  // extern "C"
