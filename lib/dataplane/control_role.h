// Control role (DESIGN §1, §3): drives the protocol core (either engine, core::Engine). Frames from the RX role go to
// node.on_frame with their receive instant; time goes to node.on_time at each membership
// point (held back until the RX role has passed that instant, so no frame of the closing
// window is still on its way); the node's frames become mbufs for the TX role; deliveries and
// membership events become records for the I/O thread. Applications' messages arrive on the
// submit ring; the built-in generator adds its own. It also re-fits the TSC clock, and hands
// the otfp engine's log records to the acceptor log before the frames that depend on them.
#pragma once

#include <cstdint>

#include "core/engine.h"
#include "dataplane/client_hub.h"
#include "dataplane/context.h"
#include "dataplane/global_clock.h"

namespace tob::dataplane {

class ControlRole {
 public:
  // nic_calibrator: the NIC clock's fit for launch-time offload, or nullptr. hub: the attached
  // applications (include/tob.h).
  ControlRole(DaemonContext& ctx, core::Engine& node, Calibrator& calibrator, Calibrator* nic_calibrator,
              ClientHub& hub);
  // One round of work. Sets next_due_tsc to when it must run again. Returns units of work done.
  unsigned step(uint64_t& next_due_tsc);
  // Leave: the node goes silent (others remove it within two cycles). Idempotent.
  void stop();
  bool stopped() const { return stopped_; }

 private:
  unsigned take_frames();
  unsigned take_submissions();
  unsigned generate(int64_t now_ns);
  void advance_time(int64_t now_ns, uint64_t now_tsc);
  void handle_actions(int64_t now_ns);
  void queue_frame(const core::TxFrame& f);
  void log(const LogRecord& r);
  void publish_status(int64_t now_ns);

  DaemonContext& ctx_;
  core::Engine& node_;
  Calibrator& calibrator_;
  Calibrator* nic_calibrator_;
  ClientHub& hub_;
  bool stopped_ = false;
  int method_turn_ = 0;        // rotation through --tx-method lists, per own turn
  int64_t last_tx_cycle_ = -1;
  SubmitMsg* held_ = nullptr;  // a submission refused by backpressure, retried first
  int64_t gen_next_ns_ = 0;
  bool gen_blocked_ = false;  // the last submission met backpressure
  uint64_t gen_count_ = 0;
  int64_t gen_interval_ns_ = 0;
  uint64_t watermark_wait_since_tsc_ = 0;
  uint64_t watermark_timeout_ticks_ = 0;
  uint8_t gen_payload_[65535];
};

}  // namespace tob::dataplane
