// The daemon's side of include/tob.h (docs/architecture.md): the shared memzone, the delivery pool,
// one delivery ring per client slot, and the history of the latest deliveries.
//
// Every delivery becomes one mbuf (DeliveryRecord + payload) in the history, numbered densely
// by the daemon. Each attached client has a cursor into that numbering; every control step
// moves what fits from the history into the client's ring, one mbuf reference per entry, so a
// delivery is copied once however many clients read it. A client that stops polling only
// fills its own ring: its cursor lags, its submissions are refused (backpressure, counted),
// and the others go on. Nothing is dropped silently: if a client lags by more than the history
// holds it is marked overrun and its next tob_poll says so. A client that detaches and
// attaches again with the seq of the last delivery it handled resumes right after it, as long
// as the history still holds it. The pool is sized so that allocation cannot fail: history +
// every client ring + what every client holds from its last poll.
#pragma once

#include <rte_mbuf.h>
#include <rte_memzone.h>
#include <rte_ring.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/engine.h"
#include "core/result.h"
#include "dataplane/config/cluster_config.h"
#include "dataplane/shm/shm_layout.h"
#include "dataplane/time/tsc_clock.h"

namespace tob::dataplane {


struct HubStats {
  uint64_t deliveries = 0;       // recorded in the history
  uint64_t alloc_failed = 0;     // must stay 0 (pool sized to make it impossible)
  uint64_t overruns = 0;         // clients that fell behind the history
  uint64_t attaches = 0;
  uint64_t refused_attaches = 0;
  uint64_t detaches = 0;
  uint64_t deferred = 0;         // deliveries left the history while a client held them
};

class ClientHub {
 public:
  // At start-up, on the main thread: the memzone, the pool and the rings.
  static core::Result<std::unique_ptr<ClientHub>> create(const ClusterConfig& cfg, core::NodeId self,
                                                         const TscClock& clock);
  ~ClientHub();
  ClientHub(const ClientHub&) = delete;
  ClientHub& operator=(const ClientHub&) = delete;

  // Control lcore only, no allocation beyond the pool, no blocking.
  void record(const core::Delivery& d);
  // Answers claims and departures, fills client rings. Returns deliveries moved.
  unsigned serve();
  void publish_clock(const TscFit& fit) { shm_->clock.publish(fit); }
  void heartbeat(int64_t now_ns) { shm_->heartbeat_ns.store(now_ns, std::memory_order_relaxed); }
  // The control role stops: applications see the daemon gone.
  void stop() { shm_->running.store(0, std::memory_order_release); }

  // Any thread (telemetry; the I/O thread frees slots of exited clients through it).
  const Shm& shm() const { return *shm_; }
  Shm* shared() { return shm_; }
  HubStats stats() const;
  uint64_t head() const { return head_.load(std::memory_order_relaxed); }

 private:
  ClientHub() = default;
  bool attach(int slot);
  void detach(int slot);
  unsigned fill(int slot);
  void release(rte_mbuf* m);
  unsigned release_deferred();
  static uint64_t global_seq(const core::Delivery& d, uint16_t index);

  const rte_memzone* zone_ = nullptr;
  Shm* shm_ = nullptr;
  rte_mempool* pool_ = nullptr;
  std::vector<rte_ring*> rings_;
  std::vector<rte_mbuf*> history_;      // index % size: the delivery with that local number
  std::vector<uint64_t> history_seq_;   // its global seq
  uint64_t mask_ = 0;
  std::atomic<uint64_t> head_{0};       // local number of the next delivery
  // Deliveries that left the history while a client still held them: freed here once the
  // clients let go (refcount 1), so that a client never frees into the pool (its put would
  // be a producer beside ours: docs/architecture.md "Dataplane", shared rings).
  std::vector<rte_mbuf*> deferred_;
  size_t deferred_head_ = 0;
  size_t deferred_count_ = 0;
  std::vector<uint64_t> cursor_;        // per slot: local number of the next delivery to enqueue
  std::vector<bool> active_;            // per slot: attached and served
  int slots_ = 0;
  uint32_t ring_size_ = 0;
  int64_t last_turn_ = -1;              // ordinal of deliveries within one membership point
  uint16_t index_in_turn_ = 0;
  std::atomic<uint64_t> alloc_failed_{0};
  std::atomic<uint64_t> overruns_{0};
  std::atomic<uint64_t> attaches_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> detaches_{0};
  std::atomic<uint64_t> deferred_total_{0};
};

}  // namespace tob::dataplane
