// TX role (docs/architecture.md "Time and schedule"): takes the frames the control role built,
// waits for each frame's slot instant with the configured method and hands it to the port. `spin`
// busy-waits on the TSC;
// `sleep` calls clock_nanosleep up to the instant (seed 000's prototype); `hybrid` sleeps until
// a margin before and spins the rest; `nic` passes the instant to the NIC as a launch time
// (RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP). TX error is the TSC at the tx_burst call minus the
// instant. With --transport best-effort frames leave as soon as they are ready.
#pragma once

#include <cstdint>

#include "dataplane/context.h"

namespace tob::dataplane {

class TxRole {
 public:
  explicit TxRole(DaemonContext& ctx);
  // Sends every frame that is due. Sets next_due_tsc to when the loop must call again
  // (UINT64_MAX: nothing pending). Returns the number of frames handled.
  unsigned step(uint64_t& next_due_tsc);
  // At stop: frees frames that will not be sent (the node goes silent).
  void discard_pending();

 private:
  static constexpr unsigned kBurstMax = 64;  // frames per rte_eth_tx_burst
  struct Pending {
    TxItem item;
    uint64_t deadline_tsc;
    uint32_t len;  // read before the burst: the PMD may free the mbuf once it has taken it
  };
  bool load_head();
  // Inlined into send_head: nothing but the spin's exit lies between the instant and the send
  // call's TSC (each call was some 10 ns of TX error).
  [[gnu::always_inline]] inline void wait_until(uint64_t deadline_tsc, TxMethod method);
  unsigned send_head();  // frames handled: sent, failed or missed
  void stamp_launch(rte_mbuf* m, uint64_t deadline_tsc);
  [[gnu::always_inline]] inline void transmit_burst(unsigned n, bool record_error);
  void account(const Pending& p, uint64_t call_tsc, bool record_error);
  DaemonContext& ctx_;
  bool have_head_ = false;
  bool waited_ = false;  // the head already counted as waiting for the acceptor log
  TxItem head_{};
  uint64_t deadline_tsc_ = 0;
  uint64_t lead_ticks_ = 0;
  uint64_t hybrid_ticks_ = 0;
  double ns_per_tick_ = 1;
  uint64_t spin_gap_ticks_ = 0;  // the last spin's largest gap, counted after its send
  Pending burst_[kBurstMax];
  rte_mbuf* burst_mbufs_[kBurstMax];  // the same frames, ready for rte_eth_tx_burst
};

}  // namespace tob::dataplane
