// Control role (docs/architecture.md): drives the protocol core (either engine, core::Engine).
// Frames from the RX role go to node.on_frame with their receive instant; time goes to node.on_time
// at each membership point (held back until the RX role has passed that instant, so no frame of the
// closing window is still on its way); the node's frames become mbufs for the TX role; deliveries
// and membership events become records for the I/O thread. Applications' messages arrive on the
// submit ring; the built-in generators add their own (roles/generators.h). It also re-fits the
// TSC clock, picks each turn's TX method (roles/tx_rotation.h), publishes the status snapshots
// (observe/status.h), and hands the otfp engine's log records to the acceptor log before the
// frames that depend on them. It drives the in-band clock synchronisation (time/clock_discipline.h):
// with [timing] sync = inband | both the engine starts once the clock has integrated, and frames
// are withheld while the clock's self-check fails. Its release monitor (time/release_monitor.h)
// reads the clients' wake-ups and appends them to its slot frames (section 7).
//
// With [ic] it runs a core::IcNode next to the engine (docs/protocol-ic.md): frames of kind ic go to it,
// its cycle boundaries join the engine's turns in the loop's due time (held back by the same RX
// watermark), applications' writes come from the KvHub's ring, its publications go to the shared
// mirror and, with --published, to the I/O thread. Its frames are sent in the node's own slot
// after the engine's copies; they are held until the engine has queued its frames of that cycle,
// because the TX role sends in ring order and an IC frame ahead of them would hold them back.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/engine.h"
#include "core/ic_fault.h"
#include "core/ic_node.h"
#include "dataplane/clients/client_hub.h"
#include "dataplane/clients/kv_hub.h"
#include "dataplane/context.h"
#include "dataplane/roles/generators.h"
#include "dataplane/roles/tx_rotation.h"
#include "dataplane/time/clock_discipline.h"
#include "dataplane/time/global_clock.h"
#include "dataplane/time/release_monitor.h"

namespace tob::dataplane {

class ControlRole {
 public:
  // nic_calibrator: the NIC clock's fit for launch-time offload, or nullptr. hub: the attached
  // applications (include/tob.h).
  // ic, kv: the IC node and the applications' side of the store, both or neither ([ic]).
  // ic_faults: the test knob --ic-fault, the IC node's outputs rewritten (core/ic_fault.h), or nullptr.
  // clock: the in-band clock synchronisation (any mode, off included).
  ControlRole(DaemonContext& ctx, core::Engine& node, Calibrator& calibrator, Calibrator* nic_calibrator,
              ClockDiscipline& clock, ClientHub& hub, core::IcNode* ic = nullptr, KvHub* kv = nullptr,
              core::IcFaultInjector* ic_faults = nullptr);
  // One round of work. Sets next_due_tsc to when it must run again. Returns units of work done.
  unsigned step(uint64_t& next_due_tsc);
  // Leave: the node goes silent (others remove it within two cycles). Idempotent.
  void stop();
  bool stopped() const { return stopped_; }

 private:
  unsigned take_frames();
  // The clock: readings, rounds, the map to applications. False while the engine must wait
  // for the clock to integrate (it then drops what the RX role queued).
  bool step_clock(uint64_t now_tsc);
  uint64_t clock_due_tsc(uint64_t now_tsc) const;  // when step_clock has work again
  unsigned take_submissions();
  unsigned take_durability(int64_t now_ns);
  void advance_time(int64_t now_ns, uint64_t now_tsc);
  void handle_actions(int64_t now_ns);
  void queue_frame(const core::TxFrame& f);
  bool make_item(const core::TxFrame& f, TxItem& item);
  bool fits(size_t frame_bytes) const;
  size_t wake_section_bytes(size_t frame_bytes);  // section 7 appended to a frame of that size: its bytes
  bool seal(std::span<uint8_t> out, size_t frame_bytes, const core::TxFrame& f);  // [security]: the frame's first bytes
  void enqueue(TxItem& item, int64_t cycle);
  void log(const LogRecord& r);
  // Interactive consistency.
  void handle_ic_actions();
  void release_ic_frames();
  void record_publication(const core::IcPublication& p, uint64_t defaulted);

  DaemonContext& ctx_;
  core::Engine& node_;
  Calibrator& calibrator_;
  Calibrator* nic_calibrator_;
  ClockDiscipline& clock_;
  ReleaseMonitor release_;  // /tob/release: the clients' wake-ups, section 7 out, the skew
  uint64_t clock_rounds_published_ = UINT64_MAX;
  uint64_t clock_wait_ticks_ = 0;
  bool engine_started_ = false;
  ClientHub& hub_;
  bool stopped_ = false;
  TxRotation tx_rotation_;
  MessageGenerator generator_;
  SubmitMsg* held_ = nullptr;  // a submission refused by backpressure, retried first
  uint64_t engine_durable_ = 0;          // otfp: acceptor log bytes the engine knows durable
  uint64_t watermark_wait_since_tsc_ = 0;
  uint64_t watermark_timeout_ticks_ = 0;
  std::array<int64_t, 2> sealed_cycle_{INT64_MIN, INT64_MIN};  // [security]: per kind (slot, ic), the last cycle sealed
  int64_t start_cycle_ = 0;  // [security]: the cycle this daemon started in: nothing of it is sealed

  core::IcNode* ic_ = nullptr;
  KvHub* kv_ = nullptr;
  core::IcFaultInjector* ic_faults_ = nullptr;
  struct HeldFrame {
    TxItem item;
    int64_t cycle;
  };
  std::vector<HeldFrame> ic_held_;       // capacity fixed at start: two slots' IC frames
  size_t ic_held_count_ = 0;
  std::vector<uint8_t> ic_pub_record_;   // one ic pub ring element
  uint64_t ic_last_instance_ = 0;        // for the status snapshot
  int64_t ic_last_finish_ns_ = 0;
  std::unique_ptr<IcKeyGenerator> ic_generator_;  // --ic-gen-keys
  // One step's received frames (built once: a decoded view has default members).
  static constexpr unsigned kFramesPerStep = 64;
  std::array<RxItem, kFramesPerStep> rx_items_{};
};

}  // namespace tob::dataplane
