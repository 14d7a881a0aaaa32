// The daemon's side of include/tob.h (docs/client-api.md, docs/architecture.md "Dataplane"): the
// shared memzone, the delivery ring, the clients' submit rings, and the client slots.
//
// Every delivery is written once into the delivery ring (shm/delivery_ring.h) and published
// once per burst; each attached client reads it from its own cursor, so a delivery is copied once
// however many clients read it, and nothing per message is allocated, counted by reference or
// freed. The ring is the history too: a client that detaches and attaches again with the seq of
// the last delivery it handled resumes right after it, as long as the ring still holds it. A
// client that stops polling lags: once it has more than [clients] ring deliveries (or half the
// ring's bytes) unread, its submissions are refused (backpressure, counted) and the others go on.
// Nothing is dropped silently: a client whose unread deliveries are about to be overwritten is
// marked overrun before the bytes are, and its next tob_poll says so. The control lcore never
// waits for a client.
#pragma once

#include <rte_memzone.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/engine.h"
#include "core/result.h"
#include "dataplane/clients/submit_intake.h"
#include "dataplane/config/cluster_config.h"
#include "dataplane/shm/shm_layout.h"
#include "dataplane/time/tsc_clock.h"

namespace tob::dataplane {

struct HubStats {
  uint64_t deliveries = 0;       // written into the delivery ring
  uint64_t overruns = 0;         // clients whose unread deliveries were overwritten
  uint64_t attaches = 0;
  uint64_t refused_attaches = 0;
  uint64_t detaches = 0;
  uint64_t ring_bytes = 0;       // the delivery ring's capacity
  uint64_t oldest_seq = 0;       // the oldest delivery it still holds (0: none)
};

// The shared rings' sizes for a configuration (docs/client-api.md "Ring sizes").
struct ClientRingBytes {
  uint64_t delivery = 0;  // the delivery ring: four cycles of every node's largest batch
  uint64_t submit = 0;    // each slot's submit ring: 10 ms of the node's own peak load
};
ClientRingBytes client_ring_bytes(const ClusterConfig& cfg, core::NodeId self);

class ClientHub {
 public:
  // At start-up, on the main thread: the memzones and the rings.
  static core::Result<std::unique_ptr<ClientHub>> create(const ClusterConfig& cfg, core::NodeId self,
                                                         const TscClock& clock);
  ~ClientHub();
  ClientHub(const ClientHub&) = delete;
  ClientHub& operator=(const ClientHub&) = delete;

  // Control lcore only; no allocation, no blocking. record() writes, publish() makes everything
  // recorded so far visible to the clients (once per burst).
  void record(const core::Delivery& d);
  void publish() {
    shm_->dlv_end.store(writer_.end(), std::memory_order_release);
    deliveries_.store(writer_.count(), std::memory_order_relaxed);  // for stats(), once per burst
  }
  // Answers claims and departures, updates each client's pending count and lagging flag.
  // Returns the slots it changed.
  unsigned serve();
  SubmitIntake& intake() { return intake_; }
  void publish_clock(const TscFit& fit) { shm_->clock.publish(fit); }
  void publish_clock_map(const core::ClockMap& map) { shm_->clock_map.publish(map); }
  void heartbeat(int64_t now_ns) { shm_->heartbeat_ns.store(now_ns, std::memory_order_relaxed); }
  // The control role stops: applications see the daemon gone.
  void stop() { shm_->running.store(0, std::memory_order_release); }

  // Any thread (telemetry; the I/O thread frees slots of exited clients through it).
  const Shm& shm() const { return *shm_; }
  Shm* shared() { return shm_; }
  HubStats stats() const;

 private:
  ClientHub() = default;
  bool attach(int slot);
  void update_lag(int slot);
  void overrun_before(uint64_t keep_from);

  const rte_memzone* zone_ = nullptr;
  const rte_memzone* dlv_zone_ = nullptr;
  const rte_memzone* sub_zone_ = nullptr;
  Shm* shm_ = nullptr;
  DeliveryRingWriter writer_;
  SubmitIntake intake_;
  int slots_ = 0;
  uint32_t lag_deliveries_ = 0;         // [clients] ring
  std::vector<bool> active_;            // per slot: attached and not overrun
  std::vector<uint64_t> base_;          // per slot: delivery number of its first delivery
  uint64_t guard_ = UINT64_MAX;         // the lowest active cursor as last loaded
  int64_t last_turn_ = -1;              // ordinal of deliveries within one membership point
  uint32_t index_in_turn_ = 0;
  std::atomic<uint64_t> deliveries_{0};
  std::atomic<uint64_t> overruns_{0};
  std::atomic<uint64_t> attaches_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> detaches_{0};
  std::atomic<uint64_t> oldest_seq_{0};
};

}  // namespace tob::dataplane
