// RX role (DESIGN §9): polls the port, stamps the receive instant on the TSC, classifies every
// frame (other EtherTypes, other VLANs, runts, malformed frames, other clusters, unknown or own
// senders, frames outside the sender's reception window are counted and dropped) and hands the
// rest to the control role with their global receive time. No allocation, no locks.
#pragma once

#include <cstdint>

#include "dataplane/context.h"

namespace tob::dataplane {

class RxRole {
 public:
  explicit RxRole(DaemonContext& ctx) : ctx_(ctx) {}
  // One poll. Returns the number of frames taken from the port.
  unsigned poll();

 private:
  // True when the frame goes to the control role.
  bool classify(rte_mbuf* m, int64_t rx_ns);
  DaemonContext& ctx_;
};

}  // namespace tob::dataplane
