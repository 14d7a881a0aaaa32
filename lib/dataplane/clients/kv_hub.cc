#include "dataplane/clients/kv_hub.h"

#include <rte_errno.h>
#include <rte_lcore.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace tob::dataplane {

namespace {

void bump(std::atomic<uint64_t>& x) { x.store(x.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

}  // namespace

core::Result<std::unique_ptr<KvHub>> KvHub::create(const ClusterConfig& cfg, Shm& shm) {
  TOB_ASSERT(cfg.ic.has_value());
  const core::IcConfig& ic = *cfg.ic;
  std::unique_ptr<KvHub> hub(new KvHub());
  hub->shm_ = &shm;
  const int socket = static_cast<int>(rte_socket_id());

  const core::KvStoreConfig store{ic.store_keys_max, ic.versions_per_key, ic.key_bytes_max, ic.value_bytes_max};
  const size_t bytes = KvMirror::bytes_for(store);
  if (bytes == 0)
    return core::Error{cfg.path + ": [ic] the shared store for " + std::to_string(ic.store_keys_max) + " keys of " +
                       std::to_string(ic.versions_per_key) + " versions of " + std::to_string(ic.value_bytes_max) +
                       " bytes is beyond 64 GiB: fewer store_keys or versions_per_key, or smaller values"};
  hub->zone_ = rte_memzone_reserve_aligned(kKvZoneName, bytes, socket, 0, 64);
  if (hub->zone_ == nullptr)
    return core::Error{"cannot reserve the key-value memzone (" + std::to_string(bytes) +
                       " bytes for [ic] store_keys/versions_per_key/value_bytes; hugepages?): " + rte_strerror(rte_errno)};
  hub->mirror_ = KvMirror::format(hub->zone_->addr, bytes, store);

  // Two periods of writes from every client at once, at least 256.
  hub->ring_size_ = rte_align32pow2(static_cast<uint32_t>(std::clamp<size_t>(2 * ic.keys_per_period_max, 256, 65536)));
  hub->ring_ = rte_ring_create(kKvWriteRingName, static_cast<unsigned>(hub->ring_size_), socket, RING_F_SC_DEQ);
  const size_t element = sizeof(KvWriteMsg) + ic.key_bytes_max + ic.value_bytes_max;
  hub->pool_ = rte_mempool_create(kKvWritePoolName, static_cast<unsigned>(2 * hub->ring_size_ - 1), static_cast<unsigned>(element),
                                  0, 0, nullptr, nullptr, nullptr, nullptr, socket, 0);
  if (hub->ring_ == nullptr || hub->pool_ == nullptr)
    return core::Error{"cannot create the key-value write ring and pool (" + std::to_string(hub->ring_size_) + " x " +
                       std::to_string(element) + " bytes): " + rte_strerror(rte_errno)};

  ShmIc& s = shm.ic;
  s.f = static_cast<uint32_t>(ic.f);
  s.rounds = static_cast<uint32_t>(ic.f + 1);
  s.period_cycles = static_cast<uint32_t>(ic.period_cycles);
  s.keys_per_period_max = static_cast<uint32_t>(ic.keys_per_period_max);
  s.key_bytes_max = static_cast<uint32_t>(ic.key_bytes_max);
  s.value_bytes_max = static_cast<uint32_t>(ic.value_bytes_max);
  s.default_reduction = static_cast<uint32_t>(ic.default_reduction);
  s.epoch_ns = cfg.node.schedule.epoch_ns;
  s.mirror_bytes = bytes;
  TOB_ASSERT(ic.key_classes.size() <= kIcClassesMax);  // the configuration refuses more
  s.class_count = static_cast<uint32_t>(ic.key_classes.size());
  for (size_t i = 0; i < ic.key_classes.size(); ++i) {
    const core::IcKeyClass& k = ic.key_classes[i];
    TOB_ASSERT(k.prefix.size() <= kIcClassPrefixMax);
    std::memcpy(s.classes[i].prefix, k.prefix.data(), k.prefix.size());
    s.classes[i].length = static_cast<uint8_t>(k.prefix.size());
    s.classes[i].reduction = static_cast<uint8_t>(k.reduction);
  }
  s.enabled = 1;
  return hub;
}

KvHub::~KvHub() {
  if (shm_ != nullptr) shm_->ic.enabled = 0;
  if (ring_ != nullptr) {
    void* obj;
    while (rte_ring_dequeue(ring_, &obj) == 0) rte_mempool_put(pool_, obj);
    rte_ring_free(ring_);
  }
  // The pool and the memzone stay until the EAL cleans up: a client may still map them.
}

unsigned KvHub::take_writes(core::IcNode& ic, int64_t now_ns) {
  void* objs[kWritesPerStep];
  const unsigned n = rte_ring_dequeue_burst(ring_, objs, kWritesPerStep, nullptr);
  const core::IcConfig& c = ic.config();
  for (unsigned i = 0; i < n; ++i) {
    auto* m = static_cast<KvWriteMsg*>(objs[i]);
    core::KvWriteStatus status;
    // The library checked the lengths against the same bounds; lengths beyond them come from a
    // broken client and are not read past the element.
    if (m->key_len > c.key_bytes_max) {
      status = core::KvWriteStatus::key_too_long;
    } else if (m->value_len > c.value_bytes_max) {
      status = core::KvWriteStatus::value_too_long;
    } else {
      const std::span<const uint8_t> key(m->bytes, m->key_len);
      const std::span<const uint8_t> value(m->bytes + m->key_len, m->value_len);
      status = ic.kv_write(key, m->t_pub_ns, value, now_ns).status;
    }
    bump(writes_[static_cast<int>(status)]);
    if (m->slot < kClientSlots && status != core::KvWriteStatus::ok) {
      ClientSlot& slot = shm_->slots[m->slot];
      (status == core::KvWriteStatus::too_late ? slot.kv_late : slot.kv_dropped).fetch_add(1, std::memory_order_relaxed);
    }
    rte_mempool_put(pool_, m);
  }
  return n;
}

void KvHub::publish(const core::IcDecision& d) {
  for (const core::IcPublication& p : d.publications) {
    const core::KvPublish got =
        mirror_.publish(p.key, p.t_pub_ns, p.instance, p.status == core::ReduceStatus::ok, p.value);
    if (got != p.stored) bump(mismatches_);
  }
}

KvHubStats KvHub::stats() const {
  KvHubStats s;
  for (int k = 0; k < core::kKvWriteStatusCount; ++k) s.writes[k] = writes_[k].load(std::memory_order_relaxed);
  s.mirror_mismatches = mismatches_.load(std::memory_order_relaxed);
  s.mirror = mirror_.counters();
  return s;
}

}  // namespace tob::dataplane
