#include "dataplane/roles/tx_role.h"

#include <rte_ethdev.h>
#include <rte_mbuf_dyn.h>
#include <x86intrin.h>

#include <algorithm>
#include <ctime>

namespace tob::dataplane {

namespace {
constexpr int kFramesPerStep = 16;  // heads per call (each with its burst): bounded work
constexpr int kSendRetries = 64;    // tx_burst attempts before the rest of a burst counts as failed
}

TxRole::TxRole(DaemonContext& ctx) : ctx_(ctx) {
  ns_per_tick_ = ctx_.clock.fit().ns_per_tick;
  lead_ticks_ = static_cast<uint64_t>(static_cast<double>(ctx_.options->tx_lead_ns) / ns_per_tick_);
  hybrid_ticks_ = static_cast<uint64_t>(static_cast<double>(ctx_.options->hybrid_margin_ns) / ns_per_tick_);
}

bool TxRole::load_head() {
  if (have_head_) return true;
  if (rte_ring_dequeue_elem(ctx_.tx_ring, &head_, sizeof(TxItem)) != 0) return false;
  have_head_ = true;
  deadline_tsc_ = ctx_.options->transport == Transport::best_effort ? 0 : ctx_.clock.to_tsc(head_.tx_ns);
  return true;
}

void TxRole::wait_until(uint64_t deadline_tsc, TxMethod method) {
  const auto sleep_until = [&](uint64_t until_tsc) {
    const uint64_t now = __rdtsc();
    if (until_tsc <= now) return;
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const auto ns = static_cast<int64_t>(static_cast<double>(until_tsc - now) * ns_per_tick_);
    const int64_t target = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec + ns;
    const timespec abs{static_cast<time_t>(target / 1'000'000'000), static_cast<long>(target % 1'000'000'000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, nullptr) == EINTR) {
    }
  };
  // The spin also keeps the largest gap between two consecutive TSC reads in it: time the vCPU
  // or the loop was away (an interrupt, the hypervisor), the usual cause of a late frame. It is
  // counted after the send (send_head): a shared counter's cache line between the instant and
  // the call was a tenth of a microsecond of TX error.
  const auto spin_until = [this](uint64_t until_tsc) {
    uint64_t prev = __rdtsc(), gap_max = 0;
    for (uint64_t t = prev; t < until_tsc; prev = t) {
      _mm_pause();
      t = __rdtsc();
      gap_max = std::max(gap_max, t - prev);
    }
    spin_gap_ticks_ = std::max(spin_gap_ticks_, gap_max);
  };
  switch (method) {
    case TxMethod::spin: spin_until(deadline_tsc); break;
    case TxMethod::sleep: sleep_until(deadline_tsc); break;
    case TxMethod::hybrid:
      if (deadline_tsc > hybrid_ticks_) sleep_until(deadline_tsc - hybrid_ticks_);
      spin_until(deadline_tsc);
      break;
    case TxMethod::nic:
    case TxMethod::automatic: break;  // resolved at start-up; nic waits in the NIC
  }
}

// The head, at its instant, and every frame queued behind it that is due by then (the other
// segments of a copy, IC frames that queue after the copies), in one rte_eth_tx_burst: on
// af_packet that is one system call for the burst instead of one per frame. The burst is gathered
// before the wait, so that nothing but the call itself lies between the instant and the send
// (tx_error: the TSC at the call minus the instant).
unsigned TxRole::send_head() {
  TxStats& st = ctx_.tx;
  const auto method = static_cast<TxMethod>(head_.method);
  const bool timed = ctx_.options->transport == Transport::tdma;
  if (timed && ctx_.clock.to_ns(__rdtsc()) >= head_.close_ns) {
    st.missed.add();  // its time is over (mars: the slot; otfp: the node's next slot began)
    rte_pktmbuf_free(head_.mbuf);
    have_head_ = false;
    return 1;
  }
  if (timed && ctx_.clock.to_ns(__rdtsc()) >= head_.slot_end_ns) st.sent_late.add();
  const uint64_t instant_tsc = deadline_tsc_;
  const uint64_t due_tsc = std::max<uint64_t>(instant_tsc, __rdtsc());
  burst_[0] = {head_, instant_tsc, head_.mbuf->pkt_len};
  burst_mbufs_[0] = head_.mbuf;
  unsigned n = 1;
  have_head_ = false;
  while (n < kBurstMax && load_head()) {
    // Next in the burst only what may leave then exactly as it would alone.
    if (deadline_tsc_ > due_tsc || head_.method != burst_[0].item.method) break;
    if (ctx_.log != nullptr && ctx_.log->durable() < head_.log_offset) break;
    if (timed && ctx_.clock.to_ns(due_tsc) >= head_.close_ns) break;
    if (timed && method == TxMethod::nic) stamp_launch(head_.mbuf, deadline_tsc_);
    burst_mbufs_[n] = head_.mbuf;
    burst_[n++] = {head_, deadline_tsc_, head_.mbuf->pkt_len};
    have_head_ = false;
  }
  if (timed && method == TxMethod::nic) {
    stamp_launch(burst_[0].item.mbuf, instant_tsc);
  } else if (timed) {
    wait_until(instant_tsc, method);
  }
  transmit_burst(n, timed && method != TxMethod::nic);
  if (spin_gap_ticks_ > 0) {
    ctx_.tx.spin_gap_max_ns.raise_to(static_cast<uint64_t>(static_cast<double>(spin_gap_ticks_) * ns_per_tick_));
    spin_gap_ticks_ = 0;
  }
  return n;
}

void TxRole::stamp_launch(rte_mbuf* m, uint64_t deadline_tsc) {
  *RTE_MBUF_DYNFIELD(m, ctx_.ts_offset, uint64_t*) = static_cast<uint64_t>(ctx_.nic_clock.to_ns(deadline_tsc));
  m->ol_flags |= ctx_.ts_flag;
  ctx_.tx.nic_launch.add();
}

void TxRole::transmit_burst(unsigned n, bool record_error) {
  TxStats& st = ctx_.tx;
  rte_mbuf** mbufs = burst_mbufs_;  // filled as the burst was gathered
  unsigned sent = 0;
  for (int attempt = 0; attempt < kSendRetries && sent < n; ++attempt) {
    const uint64_t call_tsc = __rdtsc();
    const unsigned k = rte_eth_tx_burst(ctx_.port_id, 0, mbufs + sent, static_cast<uint16_t>(n - sent));
    if (k > 0) st.bursts.add();
    for (unsigned i = sent; i < sent + k; ++i) account(burst_[i], call_tsc, record_error);
    sent += k;
  }
  if (sent < n) {
    st.tx_failed.add(n - sent);
    rte_pktmbuf_free_bulk(mbufs + sent, n - sent);
  }
}

void TxRole::account(const Pending& p, uint64_t call_tsc, bool record_error) {
  TxStats& st = ctx_.tx;
  st.frames.add();
  st.bytes.add(p.len);
  if (!record_error) return;
  const auto error_ns = static_cast<int64_t>(static_cast<double>(static_cast<int64_t>(call_tsc - p.deadline_tsc)) * ns_per_tick_);
  if (p.item.ic != 0) {  // round data queues behind the engine's frames: its lag, not an error
    st.ic_frames.add();
    st.ic_lag_max_us.raise_to(static_cast<uint64_t>(std::max<int64_t>(0, error_ns / 1000)));
  } else {
    st.tx_error[p.item.method].record(error_ns);
    if (error_ns > ctx_.schedule->config().precision_ns) st.late.add();
  }
}

unsigned TxRole::step(uint64_t& next_due_tsc) {
  unsigned handled = 0;
  next_due_tsc = UINT64_MAX;
  for (int i = 0; i < kFramesPerStep && load_head(); ++i) {
    const uint64_t now = __rdtsc();
    if (deadline_tsc_ > lead_ticks_ && now < deadline_tsc_ - lead_ticks_) {
      next_due_tsc = deadline_tsc_ - lead_ticks_;
      return handled;
    }
    // otfp: the votes in this frame must be in the acceptor log first (group commit per cycle).
    if (ctx_.log != nullptr && ctx_.log->durable() < head_.log_offset) {
      if (ctx_.clock.to_ns(now) < head_.close_ns) {
        if (!waited_) ctx_.tx.waited_for_log.add();
        waited_ = true;
        next_due_tsc = 0;  // poll again soon
        return handled;
      }
      ctx_.tx.log_late.add();
      rte_pktmbuf_free(head_.mbuf);
      have_head_ = false;
      waited_ = false;
      ++handled;
      continue;
    }
    waited_ = false;
    handled += send_head();
  }
  if (have_head_ || !rte_ring_empty(ctx_.tx_ring)) next_due_tsc = 0;  // more work right away
  return handled;
}

void TxRole::discard_pending() {
  if (have_head_) rte_pktmbuf_free(head_.mbuf);
  have_head_ = false;
  TxItem item;
  while (rte_ring_dequeue_elem(ctx_.tx_ring, &item, sizeof(TxItem)) == 0) rte_pktmbuf_free(item.mbuf);
}

}  // namespace tob::dataplane
