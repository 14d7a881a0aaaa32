// DPDK telemetry commands under /tob/ (docs/architecture.md "Dataplane"), read with
// dpdk-telemetry.py -f <prefix>:
//   /tob/info                  cluster, node, schedule, port, clock, lcore layout
//   /tob/stats                 every counter and histogram summary (same names as --stats-file)
//   /tob/membership            own state, members, every node's stage, recent events
//   /tob/release               timed release: cross-node wake-up skew, own clients' lateness
//   /tob/histogram,<name>      percentiles of one timing histogram
//   /tob/deliveries[,<client>] the latest deliveries with the head of their payload
//   /tob/submit,<text>         submit <text> as a message of client 1 (demos and tests)
//   /tob/clients               attached applications (include/tob.h): slot, pid, pending, ...
//   /tob/ic                    interactive consistency and the key-value store ([ic])
//   /tob/keys                  frame authentication ([security]): the ids of the keys in use
//   /tob/keys/reload           re-read the key file (key rotation, docs/operations.md)
// Callbacks run on the telemetry thread; they read seqlocks and atomics, never lcore state.
#pragma once

#include "dataplane/time/ptp4l_client.h"

#include <string>

#include "dataplane/clients/client_hub.h"
#include "dataplane/context.h"
#include "dataplane/observe/io_thread.h"
#include "dataplane/clients/kv_hub.h"

namespace tob::dataplane {

struct TelemetryInfo {  // static facts for /tob/info, filled at start-up
  std::string driver;
  std::string profile;
  std::string mac;
  std::string clock;
  std::string lcores;
  std::string tx_methods;
  Ptp4lClient* ptp4l = nullptr;  // [timing] ptp4l_socket: /tob/clock asks it for its offset
};

// kv: the key-value side of the clients with [ic], else nullptr.
void register_telemetry(DaemonContext& ctx, IoThread& io, const ClientHub& hub, const KvHub* kv,
                        const TelemetryInfo& info);

}  // namespace tob::dataplane
