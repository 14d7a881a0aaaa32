// One loop per lcore (docs/architecture.md "Dataplane"), running the roles assigned to it in turn:
// RX poll, control step, TX step. With the idle policy `sleep` a loop that found no work sleeps
// until the earliest instant a role asked for (at most --idle-sleep-us), so several daemons can
// share a small machine; with `poll` it spins. The loop ends when the stop flag is set; the control
// role then leaves the membership and the TX role drops what it will not send.
#pragma once

#include "dataplane/context.h"
#include "dataplane/roles/control_role.h"
#include "dataplane/roles/rx_role.h"
#include "dataplane/roles/tx_role.h"

namespace tob::dataplane {

struct LoopRoles {
  DaemonContext* ctx = nullptr;
  RxRole* rx = nullptr;
  ControlRole* control = nullptr;
  TxRole* tx = nullptr;
  const char* name = "";
};

// rte_eal_remote_launch entry point: arg is a LoopRoles*.
int run_lcore_loop(void* arg);

}  // namespace tob::dataplane
