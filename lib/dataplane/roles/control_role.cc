#include "dataplane/roles/control_role.h"

#include <rte_mbuf.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/wire.h"
#include "dataplane/observe/status.h"
#include "dataplane/security/auth_trailer.h"
#include "dataplane/security/frame_auth.h"

namespace tob::dataplane {

namespace {
constexpr unsigned kSubmitsPerStep = 4096;         // from the applications' submit rings
constexpr unsigned kTelemetrySubmitsPerStep = 16;   // from telemetry's /tob/submit
constexpr size_t kMinEtherFrame = 60;                // without FCS
constexpr int64_t kClockWaitNs = 20'000;              // waiting for the RX role to pass a round's end
constexpr int64_t kDurablePollNs = 50'000;            // otfp: how soon to look again while records sync
}  // namespace

ControlRole::ControlRole(DaemonContext& ctx, core::Engine& node, Calibrator& calibrator, Calibrator* nic_calibrator,
                         ClockDiscipline& clock, ClientHub& hub, core::IcNode* ic, KvHub* kv,
                         core::IcFaultInjector* ic_faults)
    : ctx_(ctx),
      node_(node),
      calibrator_(calibrator),
      nic_calibrator_(nic_calibrator),
      clock_(clock),
      release_(*ctx.schedule, ctx.self, clock.active(), ctx.release),
      hub_(hub),
      tx_rotation_(ctx.methods, ctx.method_count),
      generator_(*ctx.options, ctx.self),
      ic_(ic),
      kv_(kv),
      ic_faults_(ic_faults) {
  TOB_ASSERT((ic == nullptr) == (kv == nullptr));
  clock_.set_release_monitor(&release_);
  const DaemonOptions& o = *ctx_.options;
  const double ns_per_tick = ctx_.clock.fit().ns_per_tick;
  // The RX role may lag a membership point by this much before the control role goes ahead.
  const int64_t timeout_ns = std::max<int64_t>(100'000, ctx_.schedule->config().decision_margin_ns / 2);
  watermark_timeout_ticks_ = static_cast<uint64_t>(static_cast<double>(timeout_ns) / ns_per_tick);
  clock_wait_ticks_ = static_cast<uint64_t>(static_cast<double>(kClockWaitNs) / ns_per_tick);
  start_cycle_ = ctx_.schedule->cycle_of(ctx_.clock.to_ns(__rdtsc()));
  if (ic_ != nullptr) {
    // One slot's IC frames can wait for the engine's while the next slot's are made (a stall).
    ic_held_.resize(2 * ic_->frames_per_slot_max() * static_cast<size_t>(ic_->config().copies));
    ic_pub_record_.assign(ctx_.ic_pub_bytes, 0);
    if (o.ic_gen_keys > 0) ic_generator_ = std::make_unique<IcKeyGenerator>(ic_->config(), o.ic_gen_keys, ctx_.self);
    ctx_.ic_status.publish(ic_status(*ic_, ic_last_instance_, ic_last_finish_ns_));
  }
}

unsigned ControlRole::step(uint64_t& next_due_tsc) {
  next_due_tsc = UINT64_MAX;
  if (stopped_) return 0;
  ctx_.control.loops.add();
  const uint64_t now_tsc = __rdtsc();
  if (calibrator_.poll(now_tsc)) hub_.publish_clock(ctx_.clock.fit());
  if (nic_calibrator_ != nullptr) nic_calibrator_->poll(now_tsc);
  const bool engine_runs = step_clock(now_tsc);
  const int64_t now_ns = ctx_.clock.to_ns(now_tsc);
  hub_.heartbeat(now_ns);
  if (!engine_runs) {
    next_due_tsc = clock_due_tsc(now_tsc);
    return hub_.serve();
  }
  if (!engine_started_) {
    // [timing] sync = inband | both: the clock has integrated and global time may have jumped to
    // the ensemble's, on which an earlier life of this node sent: the cycle this daemon starts in
    // is the one of now, on that time.
    engine_started_ = true;
    if (clock_.applied()) start_cycle_ = ctx_.schedule->cycle_of(now_ns);
  }
  unsigned work = take_frames();
  work += take_durability(now_ns);
  work += take_submissions();
  work += generator_.generate(node_, now_ns, ctx_.control);
  advance_time(now_ns, now_tsc);
  release_.tick(hub_.shared()->slots, now_ns);
  if (ic_ != nullptr && ic_->next_deadline_ns() > now_ns) {
    // Only with every boundary up to now processed: a write or the generator must not move the
    // IC node past a boundary the RX role has not delivered the frames of yet. Writes produce no
    // actions (outputs come from boundaries only: advance_time takes them).
    work += kv_->take_writes(*ic_, now_ns);
    if (ic_generator_ != nullptr) work += ic_generator_->generate(*ic_, *ctx_.schedule, now_ns, ctx_.control);
  }
  release_ic_frames();
  work += hub_.serve();
  int64_t due_ns = node_.next_deadline_ns();
  if (ic_ != nullptr) due_ns = std::min(due_ns, ic_->next_deadline_ns());
  due_ns = std::min(due_ns, generator_.next_due_ns());
  // Records being synced: the engine counts its own votes once they are durable (poll soon).
  if (ctx_.log != nullptr && ctx_.log->awaited() > engine_durable_) due_ns = std::min(due_ns, now_ns + kDurablePollNs);
  next_due_tsc = watermark_wait_since_tsc_ != 0 ? 0 : std::min(ctx_.clock.to_tsc(due_ns), clock_due_tsc(now_tsc));
  return work;
}

uint64_t ControlRole::clock_due_tsc(uint64_t now_tsc) const {
  const uint64_t due = clock_.next_due_tsc();
  // A round closes once the RX role has passed its end (step_clock): until its watermark moves,
  // asking to run again at once would only spin, and on a shared core under SCHED_FIFO keep the
  // RX lcore from ever moving it. Look again a little later.
  if (ctx_.split_rx && due <= now_tsc) return now_tsc + clock_wait_ticks_;
  return due;
}

bool ControlRole::step_clock(uint64_t now_tsc) {
  if (!clock_.active()) return true;
  // Every reading stamped before the RX role's watermark is on the ring (the RX role of this
  // loop, when it runs here, has just polled).
  const uint64_t upto = ctx_.split_rx ? std::min(now_tsc, ctx_.rx_watermark_tsc.load(std::memory_order_acquire)) : now_tsc;
  if (clock_.step(ctx_.clock_ring, upto)) hub_.publish_clock_map(clock_.map());
  if (clock_.rounds() != clock_rounds_published_) {
    clock_rounds_published_ = clock_.rounds();
    ctx_.clock_status.publish(clock_.status(now_tsc));
  }
  if (clock_.engine_may_start()) return true;
  // Integrating: what the RX role queued is no input for an engine that has not started.
  rte_mbuf* done[kFramesPerStep];
  const unsigned n = rte_ring_dequeue_burst_elem(ctx_.rx_ring, rx_items_.data(), sizeof(RxItem), kFramesPerStep, nullptr);
  for (unsigned i = 0; i < n; ++i) done[i] = rx_items_[i].mbuf;
  if (n > 0) rte_pktmbuf_free_bulk(done, n);
  return false;
}

unsigned ControlRole::take_frames() {
  RxItem* items = rx_items_.data();
  rte_mbuf* done[kFramesPerStep];
  const unsigned n = rte_ring_dequeue_burst_elem(ctx_.rx_ring, items, sizeof(RxItem), kFramesPerStep, nullptr);
  if (n == 0) return 0;
  const int64_t now_ns = ctx_.clock.to_ns(__rdtsc());
  for (unsigned i = 0; i < n; ++i) {
    const core::FrameView& view = items[i].view;  // decoded by the RX role
    done[i] = items[i].mbuf;
    if (view.header.kind != core::FrameKind::slot) {  // IC round data is not the engine's
      if (ic_ == nullptr) {
        ctx_.control.ic_frames_unused.add();
        continue;
      }
      // The verdicts are the IC node's counters; a frame produces no actions (boundaries do).
      ic_->on_frame(view, items[i].rx_ns);
      continue;
    }
    node_.on_frame(view, items[i].rx_ns);
    handle_actions(now_ns);
  }
  rte_pktmbuf_free_bulk(done, n);
  return n;
}

unsigned ControlRole::take_durability(int64_t now_ns) {
  // otfp: the engine acts on its own votes and promises only once their records are durable
  // (the log's byte count and the engine's both start at this life's first record).
  if (ctx_.log == nullptr) return 0;
  const uint64_t durable = ctx_.log->durable();
  if (durable <= engine_durable_) return 0;
  engine_durable_ = durable;
  node_.on_durable(durable);
  handle_actions(now_ns);
  return 1;
}

unsigned ControlRole::take_submissions() {
  // Telemetry's /tob/submit (rare, a pool and an MP ring), then the applications' submit rings.
  unsigned n = 0;
  while (n < kTelemetrySubmitsPerStep) {
    SubmitMsg* msg = held_;
    if (msg == nullptr && rte_ring_dequeue(ctx_.submit_ring, reinterpret_cast<void**>(&msg)) != 0) break;
    const core::SubmitResult r =
        node_.submit(msg->client, std::span<const uint8_t>(msg->payload, msg->bytes), msg->submit_ns);
    if (r.status == core::SubmitStatus::backpressure) {
      if (held_ == nullptr) ctx_.control.submit_backpressure.add();
      held_ = msg;  // FIFO: nothing behind it goes first
      return n;
    }
    if (r.status == core::SubmitStatus::too_large) {
      ctx_.control.submit_too_large.add();
    } else {
      ctx_.control.submitted.add();
    }
    held_ = nullptr;
    rte_mempool_put(ctx_.msg_pool, msg);
    ++n;
  }
  const IntakeCounts c = hub_.intake().take(node_, kSubmitsPerStep);
  ctx_.control.submitted.add(c.taken - c.too_large);
  ctx_.control.submit_too_large.add(c.too_large);
  ctx_.control.submit_backpressure.add(c.backpressure);
  return n + c.taken;
}

void ControlRole::advance_time(int64_t now_ns, uint64_t now_tsc) {
  // The engine's next turn or the IC node's next cycle boundary, whichever comes first; both
  // wait for the RX watermark the same way. INT64_MIN: not started yet (runs at once).
  const int64_t engine_due = node_.next_deadline_ns();
  const int64_t ic_due = ic_ != nullptr ? ic_->next_deadline_ns() : INT64_MAX;
  const int64_t deadline = std::min(engine_due, ic_due);
  if (deadline != INT64_MIN && now_ns < deadline) return;
  int64_t core_now = now_ns;
  if (ctx_.split_rx && deadline != INT64_MIN) {
    // Frames received before the membership point must reach the node first (docs/architecture.md
    // "Dataplane").
    const int64_t mark_ns = ctx_.clock.to_ns(ctx_.rx_watermark_tsc.load(std::memory_order_acquire));
    if (mark_ns < deadline) {
      if (watermark_wait_since_tsc_ == 0) {
        watermark_wait_since_tsc_ = now_tsc;
        ctx_.control.watermark_waits.add();
      }
      if (now_tsc - watermark_wait_since_tsc_ < watermark_timeout_ticks_) return;
      ctx_.control.watermark_timeouts.add();  // the RX role stalled: go ahead without it
    } else {
      core_now = std::min(now_ns, mark_ns);
    }
    watermark_wait_since_tsc_ = 0;
    take_frames();  // what the RX role queued up to the watermark
  }
  if (engine_due == INT64_MIN || core_now >= engine_due) {
    if (engine_due != INT64_MIN) ctx_.control.turn_lateness.record(core_now - engine_due);
    node_.on_time(core_now);
    handle_actions(now_ns);
    ctx_.status.publish(node_status(node_, calibrator_, now_ns));
  }
  if (ic_ != nullptr && (ic_due == INT64_MIN || core_now >= ic_due)) {
    // One boundary per call, so that at most one instance finishes in each: take_actions reports
    // a bounded number of decisions, and after a stall of several cycles the ones beyond it
    // would reach the node's own store but not the shared mirror nor the --published file.
    int64_t due = ic_due;
    do {
      ic_->on_time(due == INT64_MIN ? core_now : due);
      handle_ic_actions();
      due = ic_->next_deadline_ns();
    } while (due != INT64_MIN && due <= core_now);
    ctx_.ic_status.publish(ic_status(*ic_, ic_last_instance_, ic_last_finish_ns_));
  }
}

void ControlRole::handle_actions(int64_t now_ns) {
  const core::Actions& a = node_.take_actions();
  // Records first: the frames below leave only once these are durable (TxItem::log_offset).
  if (!a.persist.empty() && ctx_.log != nullptr && !ctx_.log->append(a.persist, a.persist_awaited)) {
    // The writer fell 16 MiB behind: sending votes it has not recorded would be unsafe.
    ctx_.control.acceptor_log_full.add();
    ctx_.fatal.store(1, std::memory_order_relaxed);
    ctx_.quit.store(true, std::memory_order_relaxed);
    return;
  }
  for (const core::TxFrame& f : a.tx) queue_frame(f);
  // The I/O thread gets every delivery for the deliveries file; without one only the latest
  // (telemetry's /tob/deliveries), so that nothing per message crosses to it for nothing.
  const size_t first_logged =
      ctx_.options->deliveries_path.empty() && a.deliveries.size() > kRecentDeliveries ? a.deliveries.size() - kRecentDeliveries : 0;
  for (size_t i = 0; i < a.deliveries.size(); ++i) {
    const core::Delivery& d = a.deliveries[i];
    ctx_.control.delivery_latency.record(now_ns - d.submit_ns);
    hub_.record(d);
    if (i < first_logged) continue;
    LogRecord r{};
    r.kind = LogKind::delivery;
    r.node = d.sender;
    r.client = d.client;
    r.payload_bytes = static_cast<uint16_t>(d.payload.size());
    r.cycle = d.cycle;
    r.msg_id = d.msg_id;
    r.at_ns = now_ns;
    r.submit_ns = d.submit_ns;
    std::memcpy(r.head, d.payload.data(), std::min(sizeof r.head, d.payload.size()));
    log(r);
  }
  if (!a.deliveries.empty()) hub_.publish();  // one release store per burst for every client
  for (const core::MembershipEvent& e : a.events) {
    LogRecord r{};
    r.kind = LogKind::event;
    r.node = e.node;
    r.reason = static_cast<uint8_t>(e.reason);
    r.event = static_cast<uint8_t>(e.kind);
    r.cycle = e.cycle;
    r.msg_id = e.members_after;
    r.at_ns = e.at_ns;
    log(r);
  }
  for (const core::Undelivered& u : a.undelivered) {
    LogRecord r{};
    r.kind = LogKind::undelivered;
    r.node = ctx_.self;
    r.reason = static_cast<uint8_t>(u.reason);
    r.client = u.client;
    r.cycle = u.cycle;
    r.msg_id = u.msg_id;
    r.at_ns = now_ns;
    log(r);
  }
}

void ControlRole::queue_frame(const core::TxFrame& f) {
  TxItem item{};
  if (make_item(f, item)) enqueue(item, f.cycle);
}

// The frame as an mbuf with its instants; the TX method is chosen when it is queued.
bool ControlRole::make_item(const core::TxFrame& f, TxItem& item) {
  rte_mbuf* m = rte_pktmbuf_alloc(ctx_.pkt_pool);
  if (m == nullptr) {
    ctx_.control.mbuf_alloc_failed.add();
    return false;
  }
  // [security]: the authentication trailer follows the frame (docs/wire-format.md).
  core::ClockWindow window;
  // The peers' clock reading carries this node's rate window (section 14, room reserved:
  // ClusterConfig) and its wake-ups for release instants (section 7, where there is room).
  const bool reading_frame = f.copy == 0 && core::clock_reading_frame(core::peek_header(f.bytes));
  const size_t window_bytes =
      reading_frame && clock_.window(window) && fits(f.bytes.size() + core::kClockWindowSectionBytes)
          ? core::kClockWindowSectionBytes
          : 0;
  const size_t wake_bytes = reading_frame ? wake_section_bytes(f.bytes.size() + window_bytes) : 0;
  const size_t frame_bytes = f.bytes.size() + window_bytes + wake_bytes;
  const size_t tob_bytes = frame_bytes + (ctx_.keys != nullptr ? security::kAuthTrailerBytes : 0);
  const size_t len = std::max(kMinEtherFrame, ctx_.ether_bytes + tob_bytes);
  auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(len)));
  TOB_ASSERT(p != nullptr);  // the data room holds the largest frame (sized at start)
  write_ether_header(std::span<uint8_t>(p, ctx_.ether_bytes), ctx_.ether);
  std::memcpy(p + ctx_.ether_bytes, f.bytes.data(), f.bytes.size());
  const std::span<uint8_t> frame(p + ctx_.ether_bytes, frame_bytes);
  size_t at = f.bytes.size();
  if (window_bytes > 0) {
    std::array<uint8_t, core::kClockWindowBytes> body{};
    core::encode_clock_window(window, body);
    at = core::append_section(frame, at, core::SectionType::clock_window, 0, body);
  }
  if (wake_bytes > 0) at = core::append_section(frame, at, core::SectionType::clock_sync, 0, release_.section());
  TOB_ASSERT(at == frame_bytes);
  if (ctx_.keys != nullptr && !seal(std::span<uint8_t>(p + ctx_.ether_bytes, tob_bytes), frame_bytes, f)) {
    rte_pktmbuf_free(m);
    return false;
  }
  if (len > ctx_.ether_bytes + tob_bytes)
    std::memset(p + ctx_.ether_bytes + tob_bytes, 0, len - ctx_.ether_bytes - tob_bytes);
  item = TxItem{};
  item.mbuf = m;
  item.tx_ns = f.tx_ns;
  item.slot_end_ns = ctx_.schedule->slot_end_ns(f.cycle, ctx_.self);
  // otfp uses a frame whenever it comes (timing is liveness only): sent late, up to the node's
  // next slot, it still carries its batch into its instance if the others have not fixed their
  // votes yet, and its votes and decisions in any case (docs/protocol-otfp.md "Timeouts").
  // Interactive consistency's rounds are synchronous: its frames keep to their slot.
  const bool late_ok = ctx_.late_frames && core::peek_header(f.bytes).kind != core::FrameKind::ic;
  item.close_ns = late_ok ? ctx_.schedule->membership_point_ns(f.cycle + 1, ctx_.self) : item.slot_end_ns;
  // The log counts bytes from this life's first record, as the engine does.
  item.log_offset = ctx_.log == nullptr ? 0 : f.records_needed(ctx_.log->appended());
  item.copy = f.copy;
  return true;
}

// A frame of `frame_bytes` fits [limits] frame_bytes with the authentication trailer.
bool ControlRole::fits(size_t frame_bytes) const {
  const size_t trailer = ctx_.keys != nullptr ? security::kAuthTrailerBytes : 0;
  return frame_bytes + trailer <= ctx_.config->frame_bytes_on_wire;
}

size_t ControlRole::wake_section_bytes(size_t frame_bytes) {
  const std::span<const uint8_t> body = release_.section();
  if (body.empty()) return 0;
  const size_t extra = core::kSectionHeaderBytes + body.size();
  const bool room = fits(frame_bytes + extra);
  release_.note_sent(room);
  return room ? extra : 0;
}

// The frame's tag under the sending key. Its IV is unique only while a kind's frames never go
// back to a cycle already sealed (docs/wire-format.md "Why the IV is unique"): a frame that would
// is refused, whatever the clock did; so is a frame of the cycle this daemon started in, which an
// earlier life of this node may have sent in before it crashed.
bool ControlRole::seal(std::span<uint8_t> out, size_t frame_bytes, const core::TxFrame& f) {
  if (f.cycle <= start_cycle_) {
    ctx_.control.tx_start_cycle.add();
    return false;
  }
  const auto kind = static_cast<size_t>(core::peek_header(f.bytes).kind == core::FrameKind::ic);
  if (f.cycle < sealed_cycle_[kind]) {
    ctx_.control.tx_seal_failed.add();
    return false;
  }
  sealed_cycle_[kind] = f.cycle;
  if (security::seal_frame(out, frame_bytes, f.copy, ctx_.keys->tx().current()) == out.size()) return true;
  ctx_.control.tx_seal_failed.add();
  return false;
}

void ControlRole::enqueue(TxItem& item, int64_t cycle) {
  if (!clock_.may_send()) {  // self-checking (seed 000): a clock out by more than the precision stays silent
    ctx_.control.tx_withheld_clock.add();
    rte_pktmbuf_free(item.mbuf);
    return;
  }
  bool new_turn = false;
  item.method = static_cast<uint8_t>(tx_rotation_.method_for(cycle, &new_turn));
  if (new_turn && ctx_.clock.to_ns(__rdtsc()) > item.tx_ns) ctx_.control.turns_late.add();
  if (rte_ring_enqueue_elem(ctx_.tx_ring, &item, sizeof(TxItem)) != 0) {
    ctx_.control.tx_ring_full.add();
    rte_pktmbuf_free(item.mbuf);
  }
}

// After every boundary of the IC node (its only source of outputs): its frames wait for the
// engine's, decisions go to the shared mirror and the --published file, and the mirror learns
// how far the node has got.
void ControlRole::handle_ic_actions() {
  const core::IcActions& a = ic_faults_ != nullptr ? ic_faults_->apply(ic_->take_actions()) : ic_->take_actions();
  for (const core::TxFrame& f : a.tx) {
    if (ic_held_count_ == ic_held_.size()) {
      ctx_.control.ic_tx_hold_full.add();
      continue;
    }
    HeldFrame& h = ic_held_[ic_held_count_];
    if (!make_item(f, h.item)) continue;
    h.item.ic = 1;
    h.cycle = f.cycle;
    ++ic_held_count_;
  }
  for (const core::IcDecision& d : a.decisions) {
    kv_->publish(d);
    ic_last_instance_ = d.instance;
    ic_last_finish_ns_ = d.finish_ns;
    if (ctx_.ic_pub_ring != nullptr)
      for (const core::IcPublication& p : d.publications) record_publication(p, d.defaulted);
  }
  kv_->set_complete_below(ic_->next_deadline_ns());
  release_ic_frames();
}

// IC frames of cycle c leave once the engine has processed its own turn of c (its membership
// point), i.e. queued its frames of c, whose instants come first in the slot; a stopped engine
// sends nothing more, so nothing waits for it.
void ControlRole::release_ic_frames() {
  size_t done = 0;
  const int64_t engine_due = node_.next_deadline_ns();
  for (; done < ic_held_count_; ++done) {
    HeldFrame& h = ic_held_[done];
    const int64_t turn_ns = ctx_.schedule->membership_point_ns(h.cycle, ctx_.self);
    if (engine_due == INT64_MIN || engine_due <= turn_ns) break;
    enqueue(h.item, h.cycle);
  }
  if (done == 0) return;
  std::copy(ic_held_.begin() + static_cast<std::ptrdiff_t>(done),
            ic_held_.begin() + static_cast<std::ptrdiff_t>(ic_held_count_), ic_held_.begin());
  ic_held_count_ -= done;
}

void ControlRole::record_publication(const core::IcPublication& p, uint64_t defaulted) {
  auto* r = reinterpret_cast<IcPubRecord*>(ic_pub_record_.data());
  r->instance = p.instance;
  r->defaulted = defaulted;
  r->t_pub_ns = p.t_pub_ns;
  r->value_len = static_cast<uint32_t>(p.value.size());
  r->key_len = static_cast<uint8_t>(p.key.size());
  r->reduction = static_cast<uint8_t>(p.reduction);
  r->ok = p.status == core::ReduceStatus::ok ? 1 : 0;
  r->stored = static_cast<uint8_t>(p.stored);
  TOB_ASSERT(sizeof(IcPubRecord) + p.key.size() + p.value.size() <= ic_pub_record_.size());
  std::memcpy(ic_pub_record_.data() + sizeof(IcPubRecord), p.key.data(), p.key.size());
  if (!p.value.empty()) std::memcpy(ic_pub_record_.data() + sizeof(IcPubRecord) + p.key.size(), p.value.data(), p.value.size());
  if (rte_ring_enqueue_elem(ctx_.ic_pub_ring, ic_pub_record_.data(), static_cast<unsigned>(ctx_.ic_pub_bytes)) != 0)
    ctx_.control.ic_pub_ring_full.add();
}

void ControlRole::log(const LogRecord& r) {
  if (rte_ring_enqueue_elem(ctx_.log_ring, const_cast<LogRecord*>(&r), sizeof(LogRecord)) != 0) ctx_.control.log_ring_full.add();
}

void ControlRole::stop() {
  if (stopped_) return;
  stopped_ = true;
  // Submissions the node never took: counted (and their clients were told nothing more than
  // "queued"), never silently dropped from the statistics.
  uint64_t abandoned = 0;
  if (held_ != nullptr) {
    rte_mempool_put(ctx_.msg_pool, held_);
    ++abandoned;
  }
  held_ = nullptr;
  for (void* m = nullptr; rte_ring_dequeue(ctx_.submit_ring, &m) == 0;) {
    rte_mempool_put(ctx_.msg_pool, m);
    ++abandoned;
  }
  ctx_.control.submit_abandoned.add(abandoned);
  node_.stop();
  if (ic_ != nullptr) {
    ic_->stop();
    // The node goes silent: held IC frames are not sent (the TX role discards what it has).
    for (size_t i = 0; i < ic_held_count_; ++i) rte_pktmbuf_free(ic_held_[i].item.mbuf);
    ic_held_count_ = 0;
    ctx_.ic_status.publish(ic_status(*ic_, ic_last_instance_, ic_last_finish_ns_));
  }
  hub_.stop();
  ctx_.status.publish(node_status(node_, calibrator_, ctx_.clock.to_ns(__rdtsc())));
}

}  // namespace tob::dataplane
