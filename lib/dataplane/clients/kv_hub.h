// The daemon's side of the key-value calls of include/tob.h (docs/architecture.md,
// docs/protocol-ic.md): the writes of every client arrive on one MP/SC ring and are handed to the
// IC node on the control lcore; every publication of the IC node goes into the shared mirror of the
// store (kv_mirror.h) that the applications read without asking the daemon. Only with an [ic]
// section.
//
//   tob_kv_write --KvWriteMsg (tob_kvw ring, tob_kvw_pool)--> take_writes --> IcNode::kv_write
//   IcNode decisions --publish()--> KvMirror in memzone tob_kv <-- tob_kv_read
//
// The library refuses at once what cannot be published by t_pub (from the facts in Shm::ic); the
// control lcore checks again with its own clock, and a write that crossed a period boundary on
// the way is refused there and counted for its client (ClientSlot::kv_late), as is one that
// found the period's batch full (kv_dropped). The mirror follows the store exactly (same rules,
// checked publication by publication: mirror_mismatches must stay 0).
#pragma once

#include <rte_mempool.h>
#include <rte_memzone.h>
#include <rte_ring.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "core/ic_node.h"
#include "core/result.h"
#include "dataplane/config/cluster_config.h"
#include "dataplane/shm/kv_mirror.h"
#include "dataplane/shm/shm_layout.h"

namespace tob::dataplane {

struct KvHubStats {
  uint64_t writes[core::kKvWriteStatusCount] = {};  // client writes the IC node answered, by status
  uint64_t mirror_mismatches = 0;  // the mirror and the store disagreed on a publication (must stay 0)
  KvMirrorCounters mirror;
};

class KvHub {
 public:
  static constexpr unsigned kWritesPerStep = 64;

  // At start-up, on the main thread: the ring, the pool and the mirror's memzone, and the IC
  // facts in the client memzone.
  static core::Result<std::unique_ptr<KvHub>> create(const ClusterConfig& cfg, Shm& shm);
  ~KvHub();
  KvHub(const KvHub&) = delete;
  KvHub& operator=(const KvHub&) = delete;

  // Control lcore: at most kWritesPerStep writes, at `now_ns`. Returns how many were taken.
  unsigned take_writes(core::IcNode& ic, int64_t now_ns);
  // Control lcore: a finished instance's publications, then how far the node has got.
  void publish(const core::IcDecision& d);
  void set_complete_below(int64_t ns) { mirror_.set_complete_below(ns); }

  // Any thread.
  KvHubStats stats() const;
  size_t write_ring_size() const { return ring_size_; }

 private:
  KvHub() = default;

  const rte_memzone* zone_ = nullptr;
  rte_ring* ring_ = nullptr;
  rte_mempool* pool_ = nullptr;
  Shm* shm_ = nullptr;
  KvMirror mirror_;
  size_t ring_size_ = 0;
  std::atomic<uint64_t> writes_[core::kKvWriteStatusCount] = {};
  std::atomic<uint64_t> mismatches_{0};
};

}  // namespace tob::dataplane
