// include/tob.h over the daemon's shared memory (lib/dataplane/shm/shm_layout.h): the client side.
// Runs in the application's threads; never blocks except in tob_attach, tob_detach (bounded
// waits for the daemon) and tob_wait_release (a TSC spin).
#include "../../include/tob.h"

#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_memzone.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <unistd.h>
#include <x86intrin.h>

#include <atomic>
#include <bit>
#include <cstring>
#include <ctime>
#include <new>
#include <vector>

#include "core/bytes.h"
#include "core/ic_reduce.h"
#include "dataplane/shm/kv_mirror.h"
#include "dataplane/shm/shm_layout.h"

using tob::dataplane::ClientSlot;
using tob::dataplane::DeliveryRecord;
using tob::dataplane::KvMirror;
using tob::dataplane::KvMirrorStatus;
using tob::dataplane::KvWriteMsg;
using tob::dataplane::SubmitRingProducer;
using tob::dataplane::Shm;
using tob::dataplane::SlotState;

struct tob_client {
  Shm* shm = nullptr;
  ClientSlot* slot = nullptr;
  int slot_index = -1;
  // Deliveries: the shared ring (tob_dlv) and this client's position in it; the records from
  // `held` on stay valid until the next tob_poll, which publishes `held` as its cursor.
  const uint8_t* dlv = nullptr;
  uint64_t dlv_bytes = 0;
  uint64_t pos = 0;
  uint64_t held = 0;
  // Submissions: this slot's ring (tob_sub).
  SubmitRingProducer submit;
  // A kv buffer taken from kv_pool whose enqueue failed: kept for the next call instead of being
  // put back. Only the daemon's control lcore returns buffers to that pool, so that its put never
  // waits on a client preempted inside its own (docs/architecture.md "Dataplane").
  KvWriteMsg* kv_spare = nullptr;
  uint64_t last_seq = 0;
  uint64_t delivered = 0;
  uint64_t submitted = 0;  // mirrors of this client's counters in its slot (single writer)
  uint64_t refused = 0;
  bool detached = false;
  // [ic] (Shm::ic.enabled): the key-value ring, pool and mirror, and the key classes, looked up
  // and copied once at attach.
  bool ic = false;
  rte_ring* kv_ring = nullptr;
  rte_mempool* kv_pool = nullptr;
  KvMirror mirror;
  std::vector<tob::core::IcKeyClass> classes;
};

namespace {

constexpr int64_t kAttachWaitNs = 1'000'000'000;
constexpr int64_t kHeartbeatStaleNs = 1'000'000'000;
constexpr int64_t kSpinAheadNs = 300'000;  // tob_wait_release spins at most this long

// The daemon's global time: its fit and knobs, and its in-band correction when it applies one.
struct ClockRead {
  tob::dataplane::TscFit fit;
  tob::core::ClockMap map;
  bool mapped;
  const tob::core::ClockMap* map_or_null() const { return mapped ? &map : nullptr; }
};

ClockRead read_clock(const Shm& shm) {
  const bool mapped = shm.clock_mapped != 0;
  return {shm.clock.read(), mapped ? shm.clock_map.read() : tob::core::ClockMap{}, mapped};
}

int64_t now_ns(const Shm& shm) {
  const ClockRead r = read_clock(shm);
  return tob::dataplane::tsc_to_global_ns(r.fit, shm.knobs, r.map_or_null(), __rdtsc());
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

// The key-value side of a daemon with [ic]; true without [ic] too (every kv call then answers
// TOB_ENOIC). False when the daemon's objects are missing or do not match.
bool attach_ic(tob_client* c) {
  const tob::dataplane::ShmIc& ic = c->shm->ic;
  if (ic.enabled == 0) return true;
  c->kv_ring = rte_ring_lookup(tob::dataplane::kKvWriteRingName);
  c->kv_pool = rte_mempool_lookup(tob::dataplane::kKvWritePoolName);
  const rte_memzone* zone = rte_memzone_lookup(tob::dataplane::kKvZoneName);
  if (c->kv_ring == nullptr || c->kv_pool == nullptr || zone == nullptr || zone->len < ic.mirror_bytes) return false;
  if (!KvMirror::attach(zone->addr, ic.mirror_bytes, c->mirror)) return false;
  const uint32_t classes = ic.class_count < tob::dataplane::kIcClassesMax ? ic.class_count
                                                                           : static_cast<uint32_t>(tob::dataplane::kIcClassesMax);
  for (uint32_t i = 0; i < classes; ++i) {
    const tob::dataplane::ShmIcClass& k = ic.classes[i];
    const size_t len = k.length < tob::dataplane::kIcClassPrefixMax ? k.length : tob::dataplane::kIcClassPrefixMax;
    c->classes.push_back({std::string(k.prefix, len), static_cast<tob::core::Reduction>(k.reduction)});
  }
  c->ic = true;
  return true;
}

// The finish of the IC instance that a write made at now_ns joins (core::IcNode::finish_ns of
// instance_of(now)): the start of cycle (p + 1) * P + R for period p. INT64_MIN before the epoch.
int64_t earliest_pub_ns(const Shm& shm, int64_t now_ns) {
  const tob::dataplane::ShmIc& ic = shm.ic;
  if (now_ns < ic.epoch_ns || shm.cycle_ns <= 0 || ic.period_cycles == 0) return INT64_MIN;
  const int64_t cycle = (now_ns - ic.epoch_ns) / shm.cycle_ns;
  const int64_t period = cycle / ic.period_cycles;
  return ic.epoch_ns + ((period + 1) * ic.period_cycles + ic.rounds) * shm.cycle_ns;
}

// Common checks of the kv calls: TOB_OK when the client may use the store.
int kv_usable(const tob_client* c, const void* key, size_t key_len) {
  if (c == nullptr || key == nullptr) return TOB_EINVAL;
  if (c->detached || state_of(c->slot) != SlotState::attached) return TOB_EDETACHED;
  if (!c->ic || c->shm->ic.enabled == 0) return TOB_ENOIC;
  if (key_len == 0) return TOB_EINVAL;
  if (key_len > c->shm->ic.key_bytes_max) return TOB_ETOOLARGE;
  return TOB_OK;
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
    case TOB_ETOOLARGE:
      return "too large: a payload above [limits] payload_bytes, a key or value above [ic] key_bytes or "
             "value_bytes, or a read buffer shorter than the value";
    case TOB_EOVERRUN: return "this client fell behind by more than the daemon's history: deliveries were lost to it";
    case TOB_ETOOLATE: return "cannot resume: the daemon no longer holds deliveries that far back";
    case TOB_EDETACHED: return "the client is detached";
    case TOB_ENOEAL: return "rte_eal_init has not run in this process";
    case TOB_ENOIC: return "the cluster runs no interactive consistency (no [ic] section in its configuration)";
    case TOB_EDEADLINE: return "the IC instance that would carry this write finishes after its publishing time";
    case TOB_ENOTFOUND: return "no version of the key was published in [t_min, now]";
    case TOB_EEVICTED: return "the versions asked for were dropped by the store's retention ([ic] versions_per_key)";
    case TOB_EREDUCTION: return "the value published for that instant could not be reduced (too many missing or faulty copies)";
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
  const rte_memzone* dlv = rte_memzone_lookup(tob::dataplane::kDeliveryRingName);
  const rte_memzone* sub = rte_memzone_lookup(tob::dataplane::kSubmitRingsName);
  if (dlv == nullptr || sub == nullptr || dlv->len < shm->dlv_bytes ||
      sub->len < shm->sub_bytes * static_cast<uint64_t>(index + 1)) {
    slot->state.store(static_cast<uint32_t>(SlotState::leaving), std::memory_order_release);
    delete c;
    return TOB_ENODAEMON;
  }
  c->dlv = static_cast<const uint8_t*>(dlv->addr);
  c->dlv_bytes = shm->dlv_bytes;
  c->pos = slot->dlv_start.load(std::memory_order_relaxed);  // written before `attached`
  c->held = c->pos;
  c->submit.init(static_cast<uint8_t*>(sub->addr) + shm->sub_bytes * static_cast<uint64_t>(index), shm->sub_bytes,
                 &slot->submit);
  c->last_seq = options != nullptr ? options->resume_after_seq : 0;
  if (!attach_ic(c)) {
    slot->state.store(static_cast<uint32_t>(SlotState::leaving), std::memory_order_release);
    delete c;
    return TOB_ENODAEMON;
  }
  *out = c;
  return TOB_OK;
}

int tob_detach(tob_client* c) {
  if (c == nullptr) return TOB_EINVAL;
  // Once per client life: the only put a client makes (the window of a preemption inside it is
  // a few nanoseconds of a detach, not one per refused write).
  if (c->kv_spare != nullptr) rte_mempool_put(c->kv_pool, c->kv_spare);
  c->kv_spare = nullptr;
  int rc = TOB_OK;
  if (!c->detached && state_of(c->slot) == SlotState::attached) {
    c->slot->state.store(static_cast<uint32_t>(SlotState::leaving), std::memory_order_release);
    // The control role takes what is left in the submit ring and frees the slot; a stopped
    // daemon cannot, so the wait is bounded (the slot then stays leaving until the daemon
    // restarts). A live daemon whose queue is full frees it once the ring is drained.
    const int64_t deadline = monotonic_ns() + kAttachWaitNs;
    while (state_of(c->slot) == SlotState::leaving && monotonic_ns() < deadline) nap();
    if (state_of(c->slot) == SlotState::leaving && !daemon_alive(*c->shm)) rc = TOB_ENODAEMON;
  }
  delete c;
  return rc;
}

int tob_submit_burst(tob_client* c, const tob_msg* msgs, unsigned n) {
  if (c == nullptr || (msgs == nullptr && n > 0)) return TOB_EINVAL;
  if (c->detached || state_of(c->slot) != SlotState::attached) return TOB_EDETACHED;
  if (n == 0) return 0;
  ClientSlot& slot = *c->slot;
  // A client that does not read its deliveries may not add more (backpressure, docs/client-api.md).
  if (slot.lagging.load(std::memory_order_acquire) != 0) {
    c->refused += n;
    slot.refused.store(c->refused, std::memory_order_relaxed);
    return TOB_EAGAIN;
  }
  const int64_t now = now_ns(*c->shm);
  unsigned taken = 0;
  int error = 0;
  for (; taken < n; ++taken) {
    const tob_msg& m = msgs[taken];
    if (m.payload == nullptr && m.length > 0) {
      error = TOB_EINVAL;
      break;
    }
    if (m.length > c->shm->payload_bytes_max) {
      error = TOB_ETOOLARGE;
      break;
    }
    if (!c->submit.put(m.payload, static_cast<uint32_t>(m.length), now)) {
      error = TOB_EAGAIN;
      break;
    }
  }
  if (taken > 0) {
    c->submit.publish();  // one release store for the burst
    c->submitted += taken;
    slot.submitted.store(c->submitted, std::memory_order_relaxed);
  }
  if (error == TOB_EAGAIN) {
    c->refused += n - taken;
    slot.refused.store(c->refused, std::memory_order_relaxed);
  }
  // A prefix was taken: say how much; nothing taken: say why.
  return taken > 0 || error == 0 ? static_cast<int>(taken) : error;
}

int tob_submit(tob_client* c, const void* payload, size_t length) {
  const tob_msg m{payload, length};
  const int rc = tob_submit_burst(c, &m, 1);
  return rc == 1 ? TOB_OK : rc;
}

int tob_poll(tob_client* c, tob_delivery* out, unsigned max) {
  if (c == nullptr || (out == nullptr && max > 0)) return TOB_EINVAL;
  if (c->detached) return TOB_EDETACHED;
  ClientSlot& slot = *c->slot;
  // The previous poll's records are let go: the daemon may write over them from now on.
  c->held = c->pos;
  slot.dlv_cursor.store(c->held, std::memory_order_release);
  if (max > tob::dataplane::kPollBurstMax) max = tob::dataplane::kPollBurstMax;
  const uint64_t end = c->shm->dlv_end.load(std::memory_order_acquire);
  unsigned n = 0;
  uint64_t pos = c->pos;
  while (n < max) {
    const DeliveryRecord* r = tob::dataplane::delivery_at(c->dlv, c->dlv_bytes, pos, end);
    if (r == nullptr) break;
    out[n++] = {r->seq,        r->cycle,  r->msg_id, r->submit_ns, r->deliver_ns, r->release_ns,
                r->sender,     r->client, r->length, reinterpret_cast<const uint8_t*>(r + 1)};
    pos = tob::dataplane::next_delivery_pos(pos, *r);
  }
  // The daemon marks a client overrun before it writes over what the client holds: a flag seen
  // after the reads means they may be torn (x86-64 keeps loads in order; the fence keeps the
  // compiler from moving them).
  std::atomic_thread_fence(std::memory_order_acquire);
  if (slot.overrun.load(std::memory_order_relaxed) != 0) return TOB_EOVERRUN;
  if (n > 0) {
    c->pos = pos;
    c->last_seq = out[n - 1].seq;
    c->delivered += n;
    slot.polled.store(c->delivered, std::memory_order_relaxed);
    return static_cast<int>(n);
  }
  // Nothing new: say why when it is not just quiet.
  if (state_of(c->slot) != SlotState::attached) return TOB_EDETACHED;
  if (!daemon_alive(*c->shm)) return TOB_ENODAEMON;
  return 0;
}

int64_t tob_wait_release(tob_client* c, const tob_delivery* d) {
  if (c == nullptr || d == nullptr) return TOB_EINVAL;
  const ClockRead clk = read_clock(*c->shm);
  const auto now = [&] { return tob::dataplane::tsc_to_global_ns(clk.fit, c->shm->knobs, clk.map_or_null(), __rdtsc()); };
  const uint64_t target = tob::dataplane::global_ns_to_tsc(clk.fit, c->shm->knobs, clk.map_or_null(), d->release_ns);
  // Sleep through most of a long wait (so that many waiting applications do not spin against
  // each other), then spin the last stretch on the TSC: sleeping alone wakes tens of
  // microseconds late (docs/architecture.md "Facts of this machine").
  const int64_t remaining_ns = d->release_ns - now();
  if (remaining_ns > kSpinAheadNs) {
    const int64_t sleep_ns = remaining_ns - kSpinAheadNs;
    const timespec ts{static_cast<time_t>(sleep_ns / 1'000'000'000), static_cast<long>(sleep_ns % 1'000'000'000)};
    nanosleep(&ts, nullptr);
  }
  while (__rdtsc() < target) _mm_pause();
  const int64_t late_ns = now() - d->release_ns;
  if (c->detached || c->slot == nullptr) return late_ns;
  // For the daemon's release-skew telemetry (shm_layout.h WakeRing): one writer, this client. Its
  // wake-up for an instant is the first wait for it (many deliveries share one instant: the
  // waits after the first return at once, late by the work done since, which is no wake-up).
  tob::dataplane::WakeRing& w = c->slot->wake;
  const uint64_t n = w.count.load(std::memory_order_relaxed);
  if (n > 0 && w.at[(n - 1) % tob::dataplane::kWakeRing].release_ns.load(std::memory_order_relaxed) >= d->release_ns)
    return late_ns;
  w.at[n % tob::dataplane::kWakeRing].release_ns.store(d->release_ns, std::memory_order_relaxed);
  w.at[n % tob::dataplane::kWakeRing].late_ns.store(late_ns, std::memory_order_relaxed);
  w.count.store(n + 1, std::memory_order_release);
  return late_ns;
}

int tob_kv_write(tob_client* c, const void* key, size_t key_len, int64_t t_pub_ns, const void* value,
                 size_t value_len) {
  if (const int rc = kv_usable(c, key, key_len); rc != TOB_OK) return rc;
  if (value == nullptr && value_len > 0) return TOB_EINVAL;
  const tob::dataplane::ShmIc& ic = c->shm->ic;
  ClientSlot& slot = *c->slot;
  const auto refuse = [&](int rc) {
    slot.kv_refused.fetch_add(1, std::memory_order_relaxed);
    return rc;
  };
  if (value_len > ic.value_bytes_max) return refuse(TOB_ETOOLARGE);
  const std::span<const uint8_t> k(static_cast<const uint8_t*>(key), key_len);
  const std::span<const uint8_t> v(static_cast<const uint8_t*>(value), value_len);
  const auto reduction = tob::core::reduction_for(k, c->classes, static_cast<tob::core::Reduction>(ic.default_reduction));
  if (!tob::core::valid_value(reduction, v)) return refuse(TOB_EINVAL);
  // Refused at once when the carrying instance cannot finish by t_pub (seed 004 §IV-B); the
  // control lcore checks again with its own clock (a write crossing a boundary: kv_late).
  const int64_t now = now_ns(*c->shm);
  const int64_t earliest = earliest_pub_ns(*c->shm, now);
  if (earliest == INT64_MIN || earliest > t_pub_ns) return refuse(TOB_EDEADLINE);
  void* obj = c->kv_spare;
  if (obj == nullptr && rte_mempool_get(c->kv_pool, &obj) != 0) return refuse(TOB_EAGAIN);
  c->kv_spare = nullptr;
  auto* m = static_cast<KvWriteMsg*>(obj);
  m->slot = static_cast<uint16_t>(c->slot_index);
  m->key_len = static_cast<uint8_t>(key_len);
  m->pad = 0;
  m->value_len = static_cast<uint32_t>(value_len);
  m->t_pub_ns = t_pub_ns;
  m->write_ns = now;
  std::memcpy(m->bytes, key, key_len);
  if (value_len > 0) std::memcpy(m->bytes + key_len, value, value_len);
  if (rte_ring_enqueue(c->kv_ring, m) != 0) {
    c->kv_spare = m;
    return refuse(TOB_EAGAIN);
  }
  slot.kv_written.fetch_add(1, std::memory_order_relaxed);
  return TOB_OK;
}

int tob_kv_read(tob_client* c, const void* key, size_t key_len, int64_t t_min_ns, void* value, size_t capacity,
                int64_t* t_pub_ns) {
  if (const int rc = kv_usable(c, key, key_len); rc != TOB_OK) return rc;
  if (value == nullptr && capacity > 0) return TOB_EINVAL;
  const std::span<const uint8_t> k(static_cast<const uint8_t*>(key), key_len);
  const tob::dataplane::KvMirrorRead r =
      c->mirror.read(k, t_min_ns, now_ns(*c->shm), {static_cast<uint8_t*>(value), capacity});
  if (t_pub_ns != nullptr &&
      (r.status == KvMirrorStatus::ok || r.status == KvMirrorStatus::reduction_failed || r.status == KvMirrorStatus::too_small))
    *t_pub_ns = r.t_pub_ns;
  switch (r.status) {
    case KvMirrorStatus::ok: return static_cast<int>(r.value_bytes);
    case KvMirrorStatus::never_written:
    case KvMirrorStatus::not_fresh: return TOB_ENOTFOUND;
    case KvMirrorStatus::evicted: return TOB_EEVICTED;
    case KvMirrorStatus::reduction_failed: return TOB_EREDUCTION;
    case KvMirrorStatus::too_small: return TOB_ETOOLARGE;
    case KvMirrorStatus::busy:
    case KvMirrorStatus::behind:
      // The daemon is publishing this very instant, unless it is gone: then it never will.
      return daemon_alive(*c->shm) ? TOB_EAGAIN : TOB_ENODAEMON;
  }
  return TOB_EAGAIN;
}

int64_t tob_kv_earliest_pub_ns(tob_client* c, int64_t now) {
  if (c == nullptr) return TOB_EINVAL;
  if (!c->ic || c->shm->ic.enabled == 0) return TOB_ENOIC;
  const int64_t e = earliest_pub_ns(*c->shm, now);
  return e == INT64_MIN ? int64_t{TOB_EINVAL} : e;
}

void tob_kv_f64(double v, uint8_t out[8]) { tob::core::encode_f64(v, {out, 8}); }

double tob_kv_to_f64(const uint8_t in[8]) { return std::bit_cast<double>(tob::core::load_be64(in)); }

void tob_kv_i64(int64_t v, uint8_t out[8]) { tob::core::store_be64(out, static_cast<uint64_t>(v)); }

int64_t tob_kv_to_i64(const uint8_t in[8]) { return static_cast<int64_t>(tob::core::load_be64(in)); }

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
  out->pending = s.pending.load(std::memory_order_relaxed);
  out->last_seq = c->last_seq;
  out->kv_written = s.kv_written.load(std::memory_order_relaxed);
  out->kv_refused = s.kv_refused.load(std::memory_order_relaxed);
  out->kv_late = s.kv_late.load(std::memory_order_relaxed);
  out->kv_dropped = s.kv_dropped.load(std::memory_order_relaxed);
  return TOB_OK;
}

}  // extern "C"
