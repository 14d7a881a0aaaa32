// Command line of the dpdk-tob daemon after the EAL arguments (docs/configuration.md):
//   dpdk-tob [EAL args] -- --config FILE --node-id K [options]
// Parsed before the EAL starts, so a wrong option or configuration fails fast, without touching
// hugepages or the wire. Every option is documented in daemon_help().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ic_fault.h"
#include "core/ic_node.h"
#include "core/result.h"

namespace tob::dataplane {

enum class IdlePolicy : uint8_t { poll, sleep };
// How the TX role waits for a slot instant (docs/architecture.md "Dataplane"). `automatic` picks
// nic when the port offers launch-time offload and spin otherwise.
enum class TxMethod : uint8_t { spin = 0, sleep, hybrid, nic, automatic };
inline constexpr int kTxMethodCount = 4;  // the concrete ones (histograms are kept per method)
enum class Transport : uint8_t { tdma, best_effort };

const char* to_string(IdlePolicy p);
const char* to_string(TxMethod m);
const char* to_string(Transport t);
std::optional<TxMethod> parse_tx_method(const std::string& s);
// What --tx-method auto becomes (and any other method unchanged): launch time when the port can,
// else the profile's software method, else spin; and hybrid instead of spin when the loop sleeps
// (--idle sleep: cores shared with other daemons), so that a sender spins only the last
// --hybrid-margin-us before its instant instead of from --tx-lead-us.
TxMethod resolve_tx_method(TxMethod requested, bool can_launch, TxMethod profile_method, IdlePolicy idle);

struct DaemonOptions {
  std::string config_path;
  int node_id = -1;
  std::vector<std::pair<std::string, std::string>> overrides;  // --set section.key=value

  // Port and lcores.
  uint16_t port_id = 0;
  std::string profile;  // drivers_cfg profile name or file; empty: chosen by the port's driver
  bool single_lcore = false;
  IdlePolicy idle = IdlePolicy::poll;
  int64_t idle_sleep_ns = 100'000;
  int rt_priority = 0;  // > 0: lcore threads run SCHED_FIFO at this priority (seed 001 §5)

  // Transmission.
  std::vector<TxMethod> tx_methods = {TxMethod::automatic};  // several: rotate per own turn
  int64_t tx_lead_ns = 100'000;     // the TX role commits to a frame this long before its instant
  int64_t hybrid_margin_ns = 50'000;  // hybrid: sleep until this long before, then spin
  Transport transport = Transport::tdma;

  double drop_rx = 0;               // test knob: drop received cluster frames with this probability

  // Clock test knobs (docs/architecture.md "Time and schedule").
  int64_t clock_offset_ns = 0;
  double clock_drift_ppm = 0;

  // Output.
  double status_interval_s = 1.0;  // 0: no periodic status line
  std::string deliveries_path;     // every delivery: `node cycle sender msg_id`
  std::string deliveries_format = "text";  // text or bin (observe/deliveries_file.h)
  std::string events_path;         // membership events, one per line
  std::string stats_path;          // JSON statistics at exit
  double duration_s = 0;           // > 0: stop by itself after this long

  // Built-in message generator (until applications attach through tob.h).
  double gen_rate_per_s = 0;
  size_t gen_size_bytes = 32;
  uint64_t gen_count_max = 0;  // 0: unbounded while running

  // Interactive consistency ([ic]).
  std::string published_path;  // every publication: `instance node key value` (tob-sim --ic --published)
  core::IcFaultMode ic_fault = core::IcFaultMode::none;  // test knob: misbehave in the IC round data
  size_t ic_gen_keys = 0;      // built-in writer: keys written every IC period with node-specific values

  bool help = false;
};

// argv here is what follows "--" (without it). Errors name the option and the reason.
core::Result<DaemonOptions> parse_daemon_options(const std::vector<std::string>& args);
std::string daemon_help(const char* program);

}  // namespace tob::dataplane
