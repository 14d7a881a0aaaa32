#include "dataplane/roles/rx_role.h"

#include <rte_ethdev.h>
#include <x86intrin.h>

#include <algorithm>

#include "core/wire.h"
#include "dataplane/security/frame_auth.h"

namespace tob::dataplane {

RxRole::RxRole(DaemonContext& ctx) : ctx_(ctx), rng_(0x9E3779B97F4A7C15ull ^ (uint64_t{ctx.self} << 32) ^ __rdtsc()) {
  // Nothing a sender sent before this node started is fresh to it: a frame captured earlier and
  // replayed now is refused even though this node's window has not seen it (replay_window.h).
  if (ctx_.replay != nullptr)
    ctx_.replay->set_floor(static_cast<uint64_t>(std::max<int64_t>(0, ctx_.schedule->cycle_of(ctx_.clock.to_ns(__rdtsc())))));
}

unsigned RxRole::poll() {
  rte_mbuf** burst = burst_.data();
  RxItem* items = items_.data();
  rte_mbuf** drop = drop_.data();
  ctx_.rx.polls.add();
  const uint16_t n = rte_eth_rx_burst(ctx_.port_id, 0, burst, ctx_.rx_burst);
  const uint64_t now_tsc = __rdtsc();
  if (n == 0) {
    last_poll_ns_ = ctx_.clock.to_ns(now_tsc);
    last_poll_tsc_ = now_tsc;
    ctx_.rx_watermark_tsc.store(now_tsc, std::memory_order_release);
    return 0;
  }
  const int64_t rx_ns = ctx_.clock.to_ns(now_tsc);
  if (ctx_.clock_ring != nullptr) {
    // The frames arrived somewhere in (the poll before, this poll]: their middle is the stamp
    // with the least bias, the interval its error (clock_discipline.h).
    const uint64_t gap_tsc = now_tsc - last_poll_tsc_;
    reading_ok_ = last_poll_tsc_ != 0 && static_cast<double>(gap_tsc) * ctx_.clock.fit().ns_per_tick <=
                                             static_cast<double>(ctx_.clock_gap_max_ns);
    if (reading_ok_) reading_local_ns_ = ctx_.clock.to_local_ns(last_poll_tsc_ + gap_tsc / 2);
  }
  if (ctx_.keys != nullptr) keys_ = &ctx_.keys->rx().current();  // a rotation takes effect here
  if (last_poll_ns_ != 0) ctx_.rx.poll_gap.record(rx_ns - last_poll_ns_);
  unsigned keep = 0;
  unsigned dropped = 0;
  for (uint16_t i = 0; i < n; ++i) {
    core::FrameView view;
    int64_t stamp = rx_ns;
    if (classify(burst[i], stamp, view)) {
      items[keep++] = {burst[i], stamp, view};
    } else {
      drop[dropped++] = burst[i];
    }
  }
  if (keep > 0) {
    const unsigned queued = rte_ring_enqueue_burst_elem(ctx_.rx_ring, items, sizeof(RxItem), keep, nullptr);
    ctx_.rx.accepted.add(queued);
    for (unsigned i = queued; i < keep; ++i) drop[dropped++] = items[i].mbuf;
    if (queued < keep) ctx_.rx.ring_full.add(keep - queued);
  }
  if (dropped > 0) rte_pktmbuf_free_bulk(drop, dropped);
  flush_clock_readings();
  // Everything stamped up to now_tsc is in the ring: the control role may pass this instant.
  last_poll_ns_ = rx_ns;
  last_poll_tsc_ = now_tsc;
  ctx_.rx_watermark_tsc.store(now_tsc, std::memory_order_release);
  return n;
}

bool RxRole::authenticate(std::span<const uint8_t> payload, const core::FrameView& view) {
  RxStats& st = ctx_.rx;
  const security::AuthResult a = security::verify_frame(payload, view, *keys_);
  switch (a.verdict) {
    case security::AuthVerdict::ok: break;
    case security::AuthVerdict::missing: st.auth_missing.add(); return false;
    case security::AuthVerdict::failed: st.auth_failed.add(); return false;
  }
  const core::FrameHeader& h = view.header;
  switch (ctx_.replay->admit(h.sender, h.kind, a.copy, h.segment_index, h.cycle)) {
    case security::ReplayWindow::Verdict::fresh: return true;
    case security::ReplayWindow::Verdict::replayed: st.replayed.add(); return false;
    case security::ReplayWindow::Verdict::out_of_range: st.auth_unexpected.add(); return false;
  }
  return false;
}

void RxRole::note_clock_reading(const core::FrameView& view) {
  const core::FrameHeader& h = view.header;
  if (ctx_.clock_ring == nullptr || !core::clock_reading_frame(h)) return;
  // The sender's wake-ups for release instants (section 7): telemetry that rides on the reading,
  // and goes on its own when the poll gap makes the frame no clock reading.
  // Its rate window (section 14) rides the same way.
  core::SectionView s{};
  core::SectionView cs{};
  core::ClockWindow window;
  const bool wake = view.find_section(core::SectionType::clock_sync, s);
  const bool has_window =
      view.find_section(core::SectionType::clock_window, cs) && core::decode_clock_window(cs.body, window);
  if (!reading_ok_) ctx_.rx.clock_readings_stalled.add();
  if (!reading_ok_ && !wake && !has_window) return;
  ClockReading& r = readings_[reading_count_++];
  r = {reading_ok_ ? reading_local_ns_ : 0, static_cast<int64_t>(h.cycle), h.sender, 0, reading_ok_, has_window, {}, {},
       window};
  if (wake) {
    const int n = core::decode_wake_samples(s.body, r.wake);
    r.wake_count = n < 0 ? ClockReading::kWakeMalformed : static_cast<uint16_t>(n);
  }
}

void RxRole::flush_clock_readings() {
  if (reading_count_ == 0) return;
  const unsigned queued =
      rte_ring_enqueue_burst_elem(ctx_.clock_ring, readings_.data(), sizeof(ClockReading), reading_count_, nullptr);
  ctx_.rx.clock_readings.add(queued);
  if (queued < reading_count_) ctx_.rx.clock_ring_full.add(reading_count_ - queued);
  reading_count_ = 0;
}

bool RxRole::drop_by_knob() {
  if (ctx_.options->drop_rx <= 0) return false;
  // xorshift64: a test knob's coin, no locks, no syscalls.
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  if (static_cast<double>(rng_ >> 11) * 0x1p-53 >= ctx_.options->drop_rx) return false;
  ctx_.rx.dropped_by_knob.add();
  return true;
}

// Classifies and decodes one received frame: true, with its decoded view, when it goes on to the
// control role (the view points into the mbuf's data, which only moves its start offset here).
bool RxRole::classify(rte_mbuf* m, int64_t& rx_ns, core::FrameView& view) {
  RxStats& st = ctx_.rx;
  st.frames.add();
  st.bytes.add(m->pkt_len);
  if (m->nb_segs != 1) {  // our frames fit one segment (data room sized from frame_bytes)
    st.decode_error[static_cast<int>(core::DecodeError::too_short)].add();
    return false;
  }
  const std::span<const uint8_t> bytes(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len);
  const EtherParse e = parse_ether(bytes, ctx_.config->vlan);
  switch (e.verdict) {
    case EtherVerdict::ours: break;
    case EtherVerdict::other_type: st.other_ethertype.add(); return false;
    case EtherVerdict::wrong_vlan: st.wrong_vlan.add(); return false;
    case EtherVerdict::runt: st.runt.add(); return false;
  }
  const core::DecodeResult d = core::decode_frame(e.payload);
  if (!d.ok()) {
    st.decode_error[static_cast<int>(d.error)].add();
    return false;
  }
  view = d.view;
  const core::FrameHeader& h = d.view.header;
  if (h.cluster_id != ctx_.config->cluster_id) {
    st.wrong_cluster.add();
    return false;
  }
  const core::Schedule& sched = *ctx_.schedule;
  if (h.sender >= sched.node_count()) {
    st.unknown_sender.add();
    return false;
  }
  if (h.sender == ctx_.self) {
    st.own_frames.add();
    return false;
  }
  // Authentic and fresh before anything else looks at what the sender wrote (its cycle, its window).
  if (keys_ != nullptr && !authenticate(e.payload, d.view)) return false;
  note_clock_reading(d.view);
  // The sender's reception window (seed 000 §6.2, docs/architecture.md "Time and schedule"):
  // outside it is a timing failure. A window lies inside its cycle, so the frame's cycle must be
  // the current one.
  int64_t cycle = sched.cycle_of(rx_ns);
  if (last_poll_ns_ != 0 && cycle >= 0 && h.cycle <= static_cast<uint64_t>(cycle)) {
    // The frame arrived somewhere after the poll before: when this lcore stalled (the
    // hypervisor took its vCPU, or it slept through a window) it may have come in time, and is
    // then stamped in its window instead of accusing its sender (Schedule::stamp_within).
    const int64_t stamp = sched.stamp_within(static_cast<int64_t>(h.cycle), h.sender, last_poll_ns_, rx_ns);
    if (stamp != rx_ns) {
      rx_ns = stamp;
      cycle = static_cast<int64_t>(h.cycle);
      st.late_forgiven.add();
    }
  }
  if (h.cycle != static_cast<uint64_t>(cycle)) {
    (h.cycle > static_cast<uint64_t>(cycle) ? st.early : st.late).add();
    if (!ctx_.lenient_windows) return false;
    rte_pktmbuf_adj(m, static_cast<uint16_t>(e.payload.data() - bytes.data()));
    return !drop_by_knob();
  }
  const core::Window w = sched.reception_window(cycle, h.sender);
  if (rx_ns < w.open_ns || rx_ns >= w.close_ns) {
    (rx_ns < w.open_ns ? st.early : st.late).add();
    // mars: a timing failure is an omission. otfp: timing is only liveness, the frame counts.
    if (!ctx_.lenient_windows) return false;
  }
  // The first copy of the engine's frame: IC frames leave later in the slot (after the copies).
  if (h.kind == core::FrameKind::slot && (h.flags & core::kFlagSecondCopy) == 0 && h.segment_index == 0)
    st.arrival_offset.record(rx_ns - sched.transmit_ns(cycle, h.sender));
  // Keep only the TOB payload in the mbuf for the control role.
  rte_pktmbuf_adj(m, static_cast<uint16_t>(e.payload.data() - bytes.data()));
  return !drop_by_knob();
}

}  // namespace tob::dataplane
