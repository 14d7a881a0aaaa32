// RX role (docs/architecture.md "Dataplane"): polls the port, stamps the receive instant on the
// TSC, classifies every frame (other EtherTypes, other VLANs, runts, malformed frames, other
// clusters, unknown or own senders, frames outside the sender's reception window are counted and
// dropped) and hands the rest to the control role with their global receive time. No allocation, no
// locks.
#pragma once

#include <x86intrin.h>

#include <array>
#include <cstdint>

#include "dataplane/context.h"

namespace tob::dataplane {

class RxRole {
 public:
  static constexpr unsigned kBurstMax = 512;

  explicit RxRole(DaemonContext& ctx);
  // One poll. Returns the number of frames taken from the port.
  unsigned poll();

 private:
  // True when the frame goes to the control role. rx_ns: the poll's instant, moved back into the
  // sender's reception window when the frame may have arrived in it after the poll before.
  bool classify(rte_mbuf* m, int64_t& rx_ns, core::FrameView& view);
  // [security]: true when the frame is authentic and fresh (docs/wire-format.md "Authenticated
  // frames", "Replay protection"); every refusal counted.
  bool authenticate(std::span<const uint8_t> payload, const core::FrameView& view);
  bool drop_by_knob();  // --drop-rx: lose a good frame on purpose (loss tests)
  // In-band clock synchronisation: the first copy of a slot frame is a clock reading, taken
  // whatever its window says (a node whose clock is out must still hear how far).
  void note_clock_reading(const core::FrameView& view);
  void flush_clock_readings();
  DaemonContext& ctx_;
  uint64_t rng_;
  security::KeySet* keys_ = nullptr;  // [security]: this poll's keys (taken from the bank per poll)
  int64_t last_poll_ns_ = 0;  // the poll before this one (0: none yet)
  uint64_t last_poll_tsc_ = 0;
  int64_t reading_local_ns_ = 0;  // this poll's clock-reading stamp (the middle of the interval)
  bool reading_ok_ = false;       // ... and whether the interval was short enough to time frames
  unsigned reading_count_ = 0;
  std::array<ClockReading, kBurstMax> readings_{};
  // A burst's frames and what becomes of them: built once, not per poll (an RxItem holds a
  // decoded view with default members; 512 of them per poll was most of an idle poll's cost).
  std::array<rte_mbuf*, kBurstMax> burst_{};
  std::array<RxItem, kBurstMax> items_{};
  std::array<rte_mbuf*, kBurstMax> drop_{};
};

}  // namespace tob::dataplane
