// The dpdk-tob daemon in phases (docs/architecture.md "Dataplane", docs/operations.md):
//   1. configure  options and cluster.ini, parsed and validated before the EAL starts (exit 2);
//   2. start      EAL, port profile, clock calibration, pools and rings, the port, the memory
//                 shared with applications, the ordering engine (replaying its acceptor log) and
//                 the IC node;
//   3. launch     the roles onto lcores, telemetry, signals, the start-up report;
//   4. run        the lcore loops, until SIGINT/SIGTERM or --duration;
//   5. stop       the node is silent: files flushed, statistics reported, the port and EAL released.
// Exit status: 0 clean stop, 1 runtime failure, 2 bad options or configuration.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/engine.h"
#include "core/ic_fault.h"
#include "core/ic_node.h"
#include "core/schedule.h"
#include "dataplane/clients/client_hub.h"
#include "dataplane/clients/kv_hub.h"
#include "dataplane/config/cluster_config.h"
#include "dataplane/config/options.h"
#include "dataplane/context.h"
#include "dataplane/observe/io_thread.h"
#include "dataplane/observe/telemetry.h"
#include "dataplane/port/port.h"
#include "dataplane/port/port_profile.h"
#include "dataplane/roles/control_role.h"
#include "dataplane/roles/lcore_loop.h"
#include "dataplane/roles/rx_role.h"
#include "dataplane/roles/tx_role.h"
#include "dataplane/storage/acceptor_log.h"
#include "dataplane/time/clock_discipline.h"
#include "dataplane/time/global_clock.h"

namespace tob::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitUsage = 2;

class Daemon {
 public:
  Daemon() = default;
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Each phase returns kExitOk to go on, or the exit status (having released what it took).
  // configure also returns kExitOk with done() set after --help.
  int configure(int argc, char** argv);
  int start();
  int launch();
  int run();
  int stop(int code);
  bool done() const { return done_; }

 private:
  int fail_started(int code, const std::string& message);  // releases the port and the EAL
  int check_options() const;
  int pick_tx_methods();
  int create_pools_and_rings();
  int start_port_and_clocks();
  int create_engines();
  void print_start_report() const;
  int report_statistics(int code);
  void release_eal();

  bool done_ = false;
  // 1. configure
  int eal_argc_ = 0;
  std::vector<char*> eal_argv_;
  dataplane::DaemonOptions opt_;
  std::optional<dataplane::ClusterConfig> cfg_;
  core::NodeId self_ = 0;
  core::NodeConfig node_config_;
  std::optional<core::Schedule> schedule_;
  std::optional<dataplane::GlobalClockSource> clock_source_;
  std::unique_ptr<dataplane::AcceptorLog> acceptor_log_;
  std::vector<uint8_t> earlier_log_;
  size_t replayed_bytes_ = 0;
  // 2. start
  bool eal_started_ = false;
  bool pdump_started_ = false;  // rte_pdump_init: dpdk-dumpcap and dpdk-pdump can attach
  bool port_started_ = false;
  std::unique_ptr<dataplane::DaemonContext> ctx_;
  std::optional<dataplane::PortInfo> port_info_;
  std::optional<dataplane::PortProfile> profile_;
  bool use_nic_ = false;
  std::optional<dataplane::Calibrator> calibrator_;
  std::optional<dataplane::Calibrator> nic_calibrator_;
  std::optional<dataplane::ClockDiscipline> clock_discipline_;  // [timing] sync
  std::optional<dataplane::Ptp4lClient> ptp4l_;                 // [timing] ptp4l_socket
  std::unique_ptr<dataplane::ClientHub> client_hub_;  // released before the EAL, whose rings it holds
  std::unique_ptr<dataplane::KvHub> kv_hub_;
  std::unique_ptr<core::Engine> engine_;
  std::optional<core::IcNode> ic_node_;
  std::optional<core::IcFaultInjector> ic_faults_;  // --ic-fault
  std::optional<dataplane::IoThread> io_;
  std::unique_ptr<dataplane::security::ClusterKeys> keys_;      // [security]
  std::unique_ptr<dataplane::security::ReplayWindow> replay_;  // [security]
  // 3. launch
  std::optional<dataplane::RxRole> rx_;
  std::optional<dataplane::TxRole> tx_;
  std::optional<dataplane::ControlRole> control_;
  dataplane::LoopRoles main_loop_{};
  std::vector<std::pair<unsigned, dataplane::LoopRoles>> worker_loops_;
  dataplane::TelemetryInfo info_;
};

// The whole life of a daemon: the phases in order.
int run_daemon(int argc, char** argv);

}  // namespace tob::app
