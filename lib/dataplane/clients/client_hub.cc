#include "dataplane/clients/client_hub.h"

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_memzone.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "../../include/tob.h"

namespace tob::dataplane {

namespace {
static_assert(kShmAbiVersion == TOB_ABI_VERSION, "include/tob.h and the shared layout must agree");

constexpr uint64_t kRingBytesMin = 64 * 1024;
constexpr uint64_t kDeliveryRingBytesMax = uint64_t{1} << 30;
constexpr uint64_t kSubmitRingBytesMax = uint64_t{4} << 20;
constexpr int64_t kSubmitRingSpanNs = 10'000'000;  // a submit ring holds 10 ms of peak load

uint64_t pow2_at_least(uint64_t n) {
  uint64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Bytes a node's largest batch takes per cycle as `record_bytes`-framed records: its message
// limit, or what its slot's frames can carry, whichever is less.
uint64_t batch_bytes(const core::NodeConfig& n, core::NodeId k, uint64_t header_bytes) {
  const uint64_t by_count = n.batch_msgs_max * byte_ring::align8(header_bytes + n.payload_bytes_max);
  const uint64_t by_frames =
      n.batch_msgs_max * (header_bytes + 8) + static_cast<uint64_t>(n.frames_per_copy(k)) * n.frame_bytes_max;
  return std::min(by_count, by_frames);
}

const rte_memzone* reserve(const char* name, uint64_t bytes, std::string& error) {
  const rte_memzone* z = rte_memzone_reserve_aligned(name, bytes, static_cast<int>(rte_socket_id()), 0, 64);
  if (z == nullptr)
    error = std::string("cannot reserve the memzone ") + name + " (" + std::to_string(bytes) +
            " bytes; [clients] history/max, [limits] batch_msgs/payload_bytes, or hugepages): " + rte_strerror(rte_errno);
  return z;
}
}  // namespace

ClientRingBytes client_ring_bytes(const ClusterConfig& cfg, core::NodeId self) {
  const core::NodeConfig& n = cfg.node;
  ClientRingBytes r;
  // Four cycles of every node's largest batch, and the [clients] history of 64-byte deliveries.
  uint64_t cycles4 = 0;
  for (int k = 0; k < cfg.nodes; ++k) cycles4 += 4 * batch_bytes(n, static_cast<core::NodeId>(k), sizeof(DeliveryRecord));
  uint64_t d = std::max({cycles4, uint64_t{cfg.history} * delivery_record_bytes(64),
                         2 * delivery_record_bytes(n.payload_bytes_max), kRingBytesMin});
  r.delivery = pow2_at_least(std::min(d, kDeliveryRingBytesMax));
  // 10 ms of this node's own peak: its largest batch per cycle.
  const int64_t cycle_ns = std::max<int64_t>(1, n.schedule.cycle_ns);
  const uint64_t own = batch_bytes(n, self, sizeof(SubmitRecord));
  uint64_t s = static_cast<uint64_t>(static_cast<double>(own) * static_cast<double>(kSubmitRingSpanNs) / static_cast<double>(cycle_ns));
  s = std::clamp(s, kRingBytesMin, kSubmitRingBytesMax);
  r.submit = pow2_at_least(std::max(s, 2 * submit_record_bytes(n.payload_bytes_max)));
  return r;
}

core::Result<std::unique_ptr<ClientHub>> ClientHub::create(const ClusterConfig& cfg, core::NodeId self,
                                                           const TscClock& clock) {
  std::unique_ptr<ClientHub> hub(new ClientHub());
  std::string error;
  const ClientRingBytes sizes = client_ring_bytes(cfg, self);
  hub->zone_ = reserve(kShmZoneName, sizeof(Shm), error);
  if (hub->zone_ == nullptr) return core::Error{error};
  hub->dlv_zone_ = reserve(kDeliveryRingName, sizes.delivery, error);
  if (hub->dlv_zone_ == nullptr) return core::Error{error};
  const uint64_t sub_total = sizes.submit * static_cast<uint64_t>(std::max(1, cfg.clients_max));
  hub->sub_zone_ = reserve(kSubmitRingsName, sub_total, error);
  if (hub->sub_zone_ == nullptr) return core::Error{error};

  hub->shm_ = new (hub->zone_->addr) Shm();
  Shm& s = *hub->shm_;
  std::snprintf(s.cluster, sizeof s.cluster, "%s", cfg.name.c_str());
  s.node_id = self;
  s.nodes = static_cast<uint16_t>(cfg.nodes);
  s.payload_bytes_max = static_cast<uint32_t>(cfg.node.payload_bytes_max);
  s.clients_max = static_cast<uint32_t>(cfg.clients_max);
  s.client_ring_size = cfg.client_ring;
  s.cycle_ns = cfg.node.schedule.cycle_ns;
  s.dlv_bytes = sizes.delivery;
  s.sub_bytes = sizes.submit;
  s.daemon_pid = static_cast<uint32_t>(getpid());
  s.knobs = clock.knobs();
  s.clock.publish(clock.fit());
  s.clock_mapped = clock.mapped() ? 1 : 0;
  s.clock_map.publish(clock.map());

  hub->slots_ = cfg.clients_max;
  hub->lag_deliveries_ = cfg.client_ring;
  hub->writer_.init(static_cast<uint8_t*>(hub->dlv_zone_->addr), sizes.delivery);
  hub->intake_.init(hub->shm_, static_cast<uint8_t*>(hub->sub_zone_->addr), sizes.submit, hub->slots_);
  hub->active_.assign(static_cast<size_t>(hub->slots_), false);
  hub->base_.assign(static_cast<size_t>(hub->slots_), 0);
  s.running.store(1, std::memory_order_release);
  return hub;
}

ClientHub::~ClientHub() {
  if (shm_ != nullptr) shm_->running.store(0, std::memory_order_release);
  // The memzones stay until the EAL cleans up: a client may still map them.
}

void ClientHub::record(const core::Delivery& d) {
  if (d.turn_seq != last_turn_) {
    last_turn_ = d.turn_seq;
    index_in_turn_ = 0;
  }
  const DeliveryRecord r{static_cast<uint32_t>(d.payload.size()), d.sender, d.client,
                         static_cast<uint64_t>(d.turn_seq) * kSeqPerTurn + index_in_turn_++,
                         d.cycle, d.msg_id, d.submit_ns, d.deliver_ns, d.release_ns};
  const uint64_t end = writer_.end_after(r.length);
  // Bytes before end - capacity are overwritten: a client still holding one is told first.
  if (end > writer_.capacity() && end - writer_.capacity() > guard_) overrun_before(end - writer_.capacity());
  writer_.write(r, d.payload.data());
}

// Marks every active client whose cursor lies before keep_from as overrun, before the bytes it
// holds are overwritten (x86-64 keeps the flag's store ahead of the ring's stores; the library
// checks the flag after reading), and sets the guard to the lowest cursor left.
void ClientHub::overrun_before(uint64_t keep_from) {
  guard_ = UINT64_MAX;
  for (int i = 0; i < slots_; ++i) {
    if (!active_[static_cast<size_t>(i)]) continue;
    ClientSlot& slot = shm_->slots[i];
    const uint64_t cursor = slot.dlv_cursor.load(std::memory_order_acquire);
    if (cursor < keep_from) {
      active_[static_cast<size_t>(i)] = false;
      slot.overrun.store(1, std::memory_order_release);
      overruns_.fetch_add(1, std::memory_order_relaxed);
    } else {
      guard_ = std::min(guard_, cursor);
    }
  }
  std::atomic_thread_fence(std::memory_order_release);
}

bool ClientHub::attach(int i) {
  ClientSlot& slot = shm_->slots[i];
  const uint64_t resume = slot.resume_after_seq.load(std::memory_order_acquire);
  DeliveryRingWriter::Found start{writer_.end(), writer_.count()};
  if (resume != 0) {
    // Resume right after `resume`. Safe only when the ring still holds a delivery the client
    // already had (its seq <= resume): everything after it is then in the ring. Seqs are
    // global, so this works on another node of the cluster too.
    const DeliveryRecord* oldest = writer_.oldest_record();
    if (oldest == nullptr || oldest->seq > resume) {
      slot.status.store(TOB_ETOOLATE, std::memory_order_relaxed);
      return false;
    }
    start = writer_.find_after(resume);
  }
  intake_.reset(i);
  active_[static_cast<size_t>(i)] = true;
  base_[static_cast<size_t>(i)] = start.index;
  guard_ = std::min(guard_, start.pos);
  slot.dlv_start.store(start.pos, std::memory_order_relaxed);
  slot.dlv_cursor.store(start.pos, std::memory_order_relaxed);
  slot.overrun.store(0, std::memory_order_relaxed);
  slot.lagging.store(0, std::memory_order_relaxed);
  slot.enqueued.store(writer_.count() - start.index, std::memory_order_relaxed);
  slot.lagging_events.store(0, std::memory_order_relaxed);
  slot.pending.store(writer_.count() - start.index, std::memory_order_relaxed);
  slot.status.store(0, std::memory_order_relaxed);
  publish();
  return true;
}

// Pending deliveries and the lagging flag: more than [clients] ring deliveries, or half the
// ring's bytes, unread. Its submissions are refused until it reads.
void ClientHub::update_lag(int i) {
  ClientSlot& slot = shm_->slots[i];
  const uint64_t written = writer_.count() - base_[static_cast<size_t>(i)];
  const uint64_t polled = slot.polled.load(std::memory_order_relaxed);
  const uint64_t pending = written > polled ? written - polled : 0;
  const uint64_t unread_bytes = writer_.end() - slot.dlv_cursor.load(std::memory_order_relaxed);
  slot.enqueued.store(written, std::memory_order_relaxed);
  slot.pending.store(pending, std::memory_order_relaxed);
  const bool lagging = pending > lag_deliveries_ || unread_bytes > writer_.capacity() / 2;
  if (lagging != (slot.lagging.load(std::memory_order_relaxed) != 0)) {
    slot.lagging.store(lagging ? 1 : 0, std::memory_order_release);
    if (lagging) slot.lagging_events.fetch_add(1, std::memory_order_relaxed);
  }
}

unsigned ClientHub::serve() {
  unsigned changed = 0;
  for (int i = 0; i < slots_; ++i) {
    ClientSlot& slot = shm_->slots[i];
    const auto state = static_cast<SlotState>(slot.state.load(std::memory_order_acquire));
    if (state == SlotState::claimed) {
      ++changed;
      if (attach(i)) {
        attaches_.fetch_add(1, std::memory_order_relaxed);
        slot.state.store(static_cast<uint32_t>(SlotState::attached), std::memory_order_release);
      } else {
        refused_.fetch_add(1, std::memory_order_relaxed);
        slot.state.store(static_cast<uint32_t>(SlotState::refused), std::memory_order_release);
      }
    } else if (state == SlotState::leaving) {
      // What it submitted before leaving goes out first (the intake drains leaving slots).
      active_[static_cast<size_t>(i)] = false;
      if (!intake_.drained(i)) continue;
      ++changed;
      slot.pending.store(0, std::memory_order_relaxed);
      detaches_.fetch_add(1, std::memory_order_relaxed);
      slot.state.store(static_cast<uint32_t>(SlotState::free), std::memory_order_release);
    } else if (state == SlotState::attached && active_[static_cast<size_t>(i)]) {
      update_lag(i);
    }
  }
  const DeliveryRecord* oldest = writer_.oldest_record();
  oldest_seq_.store(oldest != nullptr ? oldest->seq : 0, std::memory_order_relaxed);
  publish();
  return changed;
}

HubStats ClientHub::stats() const {
  HubStats s;
  s.deliveries = deliveries_.load(std::memory_order_relaxed);
  s.overruns = overruns_.load(std::memory_order_relaxed);
  s.attaches = attaches_.load(std::memory_order_relaxed);
  s.refused_attaches = refused_.load(std::memory_order_relaxed);
  s.detaches = detaches_.load(std::memory_order_relaxed);
  s.ring_bytes = shm_->dlv_bytes;
  s.oldest_seq = oldest_seq_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace tob::dataplane
