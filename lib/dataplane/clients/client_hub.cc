#include "dataplane/clients/client_hub.h"

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_memzone.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "../../include/tob.h"

namespace tob::dataplane {

namespace {
constexpr unsigned kFillBurst = 256;  // entries moved into one client ring per step
static_assert(kShmAbiVersion == TOB_ABI_VERSION, "include/tob.h and the shared layout must agree");
}  // namespace

core::Result<std::unique_ptr<ClientHub>> ClientHub::create(const ClusterConfig& cfg, core::NodeId self,
                                                           const TscClock& clock) {
  std::unique_ptr<ClientHub> hub(new ClientHub());
  const int socket = static_cast<int>(rte_socket_id());
  hub->zone_ = rte_memzone_reserve(kShmZoneName, sizeof(Shm), socket, 0);
  if (hub->zone_ == nullptr)
    return core::Error{std::string("cannot reserve the client memzone: ") + rte_strerror(rte_errno)};
  hub->shm_ = new (hub->zone_->addr) Shm();
  Shm& s = *hub->shm_;
  std::snprintf(s.cluster, sizeof s.cluster, "%s", cfg.name.c_str());
  s.node_id = self;
  s.nodes = static_cast<uint16_t>(cfg.nodes);
  s.payload_bytes_max = static_cast<uint32_t>(cfg.node.payload_bytes_max);
  s.clients_max = static_cast<uint32_t>(cfg.clients_max);
  s.client_ring_size = cfg.client_ring;
  s.cycle_ns = cfg.node.schedule.cycle_ns;
  s.daemon_pid = static_cast<uint32_t>(getpid());
  s.knobs = clock.knobs();
  s.clock.publish(clock.fit());

  hub->slots_ = cfg.clients_max;
  hub->ring_size_ = cfg.client_ring;
  // History + every client ring + what every client holds from its last poll, + slack.
  const uint64_t count = cfg.history + static_cast<uint64_t>(cfg.clients_max) * (cfg.client_ring + kPollBurstMax) + 64;
  const size_t room = sizeof(DeliveryRecord) + cfg.node.payload_bytes_max;
  hub->pool_ = rte_pktmbuf_pool_create(kDeliveryPoolName, static_cast<unsigned>(count), 0, 0,
                                       static_cast<uint16_t>(RTE_PKTMBUF_HEADROOM + room), socket);
  if (hub->pool_ == nullptr)
    return core::Error{"cannot create the delivery pool (" + std::to_string(count) + " x " + std::to_string(room) +
                       " bytes; [clients] history/ring/max or hugepages): " + rte_strerror(rte_errno)};
  for (int i = 0; i < hub->slots_; ++i) {
    ClientSlot& slot = s.slots[i];
    std::snprintf(slot.ring_name, sizeof slot.ring_name, "tob_dlv_%d", i);
    rte_ring* r = rte_ring_create(slot.ring_name, cfg.client_ring, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (r == nullptr)
      return core::Error{std::string("cannot create client ring ") + slot.ring_name + ": " + rte_strerror(rte_errno)};
    hub->rings_.push_back(r);
  }
  hub->history_.assign(cfg.history, nullptr);
  hub->history_seq_.assign(cfg.history, 0);
  hub->mask_ = cfg.history - 1;
  hub->cursor_.assign(static_cast<size_t>(hub->slots_), 0);
  hub->active_.assign(static_cast<size_t>(hub->slots_), false);
  // At most every client ring and every client's last poll hold a delivery the history let go.
  hub->deferred_.assign(static_cast<size_t>(cfg.clients_max) * (cfg.client_ring + kPollBurstMax) + 1, nullptr);
  s.running.store(1, std::memory_order_release);
  return hub;
}

ClientHub::~ClientHub() {
  if (shm_ != nullptr) shm_->running.store(0, std::memory_order_release);
  for (rte_mbuf* m : history_)
    if (m != nullptr) rte_pktmbuf_free(m);
  for (size_t k = 0; k < deferred_count_; ++k) rte_pktmbuf_free(deferred_[(deferred_head_ + k) % deferred_.size()]);
  for (rte_ring* r : rings_) {
    void* obj;
    while (rte_ring_dequeue(r, &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
    rte_ring_free(r);
  }
  // The pool and the memzone stay until the EAL cleans up: a client may still map them.
}

uint64_t ClientHub::global_seq(const core::Delivery& d, uint16_t index) {
  return static_cast<uint64_t>(d.turn_seq) * kSeqPerTurn + index;
}

void ClientHub::record(const core::Delivery& d) {
  if (d.turn_seq != last_turn_) {
    last_turn_ = d.turn_seq;
    index_in_turn_ = 0;
  }
  const uint64_t seq = global_seq(d, index_in_turn_++);
  const uint64_t n = head_.load(std::memory_order_relaxed);
  const uint64_t at = n & mask_;
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m == nullptr) {
    // Sized so this cannot happen; if it does, every client that would need it is told.
    alloc_failed_.fetch_add(1, std::memory_order_relaxed);
    for (int i = 0; i < slots_; ++i)
      if (active_[static_cast<size_t>(i)]) shm_->slots[i].overrun.store(1, std::memory_order_release);
    return;
  }
  auto* rec = reinterpret_cast<DeliveryRecord*>(
      rte_pktmbuf_append(m, static_cast<uint16_t>(sizeof(DeliveryRecord) + d.payload.size())));
  TOB_ASSERT(rec != nullptr);  // data room = record + [limits] payload_bytes
  *rec = {seq, d.cycle, d.msg_id, d.submit_ns, d.deliver_ns, d.release_ns, d.sender, d.client,
          static_cast<uint32_t>(d.payload.size())};
  std::memcpy(rec + 1, d.payload.data(), d.payload.size());
  if (history_[at] != nullptr) {
    // The oldest delivery leaves the history: a client that has not taken it is overrun.
    const uint64_t leaving = n - history_.size();
    for (int i = 0; i < slots_; ++i) {
      if (active_[static_cast<size_t>(i)] && cursor_[static_cast<size_t>(i)] <= leaving) {
        active_[static_cast<size_t>(i)] = false;
        shm_->slots[i].overrun.store(1, std::memory_order_release);
        overruns_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    release(history_[at]);
  }
  history_[at] = m;
  history_seq_[at] = seq;
  head_.store(n + 1, std::memory_order_relaxed);
}

bool ClientHub::attach(int i) {
  ClientSlot& slot = shm_->slots[i];
  const uint64_t head = head_.load(std::memory_order_relaxed);
  const uint64_t resume = slot.resume_after_seq.load(std::memory_order_acquire);
  uint64_t cursor = head;
  if (resume != 0) {
    // Resume right after `resume`. Safe only when the history still holds a delivery the
    // client already had (its seq <= resume): everything after it is then in the history.
    // Seqs are global, so this works on another node of the cluster too.
    const uint64_t oldest = head > history_.size() ? head - history_.size() : 0;
    if (head == oldest || history_seq_[oldest & mask_] > resume) {
      slot.status.store(TOB_ETOOLATE, std::memory_order_relaxed);
      return false;
    }
    cursor = oldest;
    while (cursor < head && history_seq_[cursor & mask_] <= resume) ++cursor;
  }
  // Whatever a previous client left in this slot's ring is not for the new one.
  void* obj;
  while (rte_ring_dequeue(rings_[static_cast<size_t>(i)], &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
  cursor_[static_cast<size_t>(i)] = cursor;
  active_[static_cast<size_t>(i)] = true;
  slot.overrun.store(0, std::memory_order_relaxed);
  slot.lagging.store(0, std::memory_order_relaxed);
  slot.enqueued.store(0, std::memory_order_relaxed);
  slot.lagging_events.store(0, std::memory_order_relaxed);
  slot.pending.store(head - cursor, std::memory_order_relaxed);
  slot.status.store(0, std::memory_order_relaxed);
  return true;
}

void ClientHub::detach(int i) {
  active_[static_cast<size_t>(i)] = false;
  void* obj;
  while (rte_ring_dequeue(rings_[static_cast<size_t>(i)], &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
  shm_->slots[i].pending.store(0, std::memory_order_relaxed);
}

unsigned ClientHub::fill(int i) {
  const auto s = static_cast<size_t>(i);
  ClientSlot& slot = shm_->slots[i];
  const uint64_t head = head_.load(std::memory_order_relaxed);
  uint64_t& cursor = cursor_[s];
  unsigned moved = 0;
  if (cursor < head) {
    rte_mbuf* batch[kFillBurst];
    const auto want = static_cast<unsigned>(std::min<uint64_t>(head - cursor, kFillBurst));
    const unsigned room = rte_ring_free_count(rings_[s]);
    const unsigned n = std::min(want, room);
    for (unsigned k = 0; k < n; ++k) {
      batch[k] = history_[(cursor + k) & mask_];
      rte_mbuf_refcnt_update(batch[k], 1);
    }
    moved = rte_ring_enqueue_burst(rings_[s], reinterpret_cast<void**>(batch), n, nullptr);
    TOB_ASSERT(moved == n);  // single producer: the free count cannot shrink meanwhile
    cursor += moved;
    slot.enqueued.fetch_add(moved, std::memory_order_relaxed);
  }
  // Lagging: more held back than one ring's worth. Its submissions are refused until it reads.
  const uint64_t pending = head - cursor;
  slot.pending.store(pending, std::memory_order_relaxed);
  const bool lagging = pending > ring_size_;
  if (lagging != (slot.lagging.load(std::memory_order_relaxed) != 0)) {
    slot.lagging.store(lagging ? 1 : 0, std::memory_order_release);
    if (lagging) slot.lagging_events.fetch_add(1, std::memory_order_relaxed);
  }
  return moved;
}

unsigned ClientHub::serve() {
  unsigned moved = 0;
  for (int i = 0; i < slots_; ++i) {
    ClientSlot& slot = shm_->slots[i];
    const auto state = static_cast<SlotState>(slot.state.load(std::memory_order_acquire));
    if (state == SlotState::claimed) {
      if (attach(i)) {
        attaches_.fetch_add(1, std::memory_order_relaxed);
        slot.state.store(static_cast<uint32_t>(SlotState::attached), std::memory_order_release);
      } else {
        refused_.fetch_add(1, std::memory_order_relaxed);
        slot.state.store(static_cast<uint32_t>(SlotState::refused), std::memory_order_release);
      }
    } else if (state == SlotState::leaving) {
      detach(i);
      detaches_.fetch_add(1, std::memory_order_relaxed);
      slot.state.store(static_cast<uint32_t>(SlotState::free), std::memory_order_release);
    } else if (state == SlotState::attached && active_[static_cast<size_t>(i)]) {
      moved += fill(i);
    }
  }
  if (deferred_count_ > 0) release_deferred();
  return moved;
}

// The history lets go of a delivery. A client still holding it (in its ring or from its last
// poll) only drops its reference later and never sees the count reach 0: the free, a put into
// the pool, stays on this lcore.
void ClientHub::release(rte_mbuf* m) {
  if (rte_mbuf_refcnt_read(m) == 1 || deferred_count_ == deferred_.size()) {
    rte_pktmbuf_free(m);  // full: cannot happen (sized for every client reference); the old way
    return;
  }
  deferred_[(deferred_head_ + deferred_count_) % deferred_.size()] = m;
  ++deferred_count_;
  deferred_total_.fetch_add(1, std::memory_order_relaxed);
}

// A few deferred deliveries per step, oldest first; one still held goes to the back (a client
// that died holding some must not stop the others from being freed).
unsigned ClientHub::release_deferred() {
  constexpr unsigned kPerStep = 32;
  unsigned freed = 0;
  for (unsigned k = 0; k < kPerStep && deferred_count_ > 0; ++k) {
    rte_mbuf* m = deferred_[deferred_head_];
    deferred_head_ = (deferred_head_ + 1) % deferred_.size();
    --deferred_count_;
    if (rte_mbuf_refcnt_read(m) == 1) {
      rte_pktmbuf_free(m);
      ++freed;
    } else {
      deferred_[(deferred_head_ + deferred_count_) % deferred_.size()] = m;
      ++deferred_count_;
    }
  }
  return freed;
}

HubStats ClientHub::stats() const {
  HubStats s;
  s.deliveries = head_.load(std::memory_order_relaxed);
  s.alloc_failed = alloc_failed_.load(std::memory_order_relaxed);
  s.overruns = overruns_.load(std::memory_order_relaxed);
  s.attaches = attaches_.load(std::memory_order_relaxed);
  s.refused_attaches = refused_.load(std::memory_order_relaxed);
  s.detaches = detaches_.load(std::memory_order_relaxed);
  s.deferred = deferred_total_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace tob::dataplane
