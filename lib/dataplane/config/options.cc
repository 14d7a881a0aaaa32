#include "dataplane/config/options.h"

#include "dataplane/config/numbers.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>

namespace tob::dataplane {

const char* to_string(IdlePolicy p) { return p == IdlePolicy::poll ? "poll" : "sleep"; }

const char* to_string(TxMethod m) {
  switch (m) {
    case TxMethod::spin: return "spin";
    case TxMethod::sleep: return "sleep";
    case TxMethod::hybrid: return "hybrid";
    case TxMethod::nic: return "nic";
    case TxMethod::automatic: return "auto";
  }
  return "unknown";
}

const char* to_string(Transport t) { return t == Transport::tdma ? "tdma" : "best-effort"; }

TxMethod resolve_tx_method(TxMethod requested, bool can_launch, TxMethod profile_method, IdlePolicy idle) {
  if (requested != TxMethod::automatic) return requested;
  if (can_launch) return TxMethod::nic;
  TxMethod r = profile_method != TxMethod::nic ? profile_method : TxMethod::automatic;
  if (r == TxMethod::automatic) r = TxMethod::spin;
  return r == TxMethod::spin && idle == IdlePolicy::sleep ? TxMethod::hybrid : r;
}

std::optional<TxMethod> parse_tx_method(const std::string& s) {
  for (TxMethod m : {TxMethod::spin, TxMethod::sleep, TxMethod::hybrid, TxMethod::nic, TxMethod::automatic})
    if (s == to_string(m)) return m;
  return std::nullopt;
}

namespace {

using Handler = std::function<std::optional<std::string>(DaemonOptions&, const std::string&)>;

struct Option {
  const char* name;
  const char* arg;   // nullptr: a flag without value
  const char* help;
  Handler apply;
};

std::optional<int64_t> to_int(const std::string& s, int64_t lo, int64_t hi) {
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  if (!parse_int64(s.c_str(), v) || v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<double> to_double(const std::string& s, double lo, double hi) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) return std::nullopt;
  return v;
}

std::string range(int64_t lo, int64_t hi) { return "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"; }

// Handlers for the common shapes.
Handler int_into(int64_t DaemonOptions::*field, int64_t lo, int64_t hi, int64_t scale = 1) {
  return [=](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
    auto x = to_int(v, lo, hi);
    if (!x) return "expected " + range(lo, hi);
    o.*field = *x * scale;
    return std::nullopt;
  };
}

Handler double_into(double DaemonOptions::*field, double lo, double hi) {
  return [=](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
    auto x = to_double(v, lo, hi);
    if (!x) return "expected a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    o.*field = *x;
    return std::nullopt;
  };
}

Handler string_into(std::string DaemonOptions::*field) {
  return [=](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
    if (v.empty()) return std::string("expected a non-empty value");
    o.*field = v;
    return std::nullopt;
  };
}

const std::vector<Option>& options() {
  static const std::vector<Option> table = {
      {"--config", "FILE", "cluster configuration (INI, docs/configuration.md); required",
       string_into(&DaemonOptions::config_path)},
      {"--node-id", "K", "this node's id, 0..nodes-1; required",
       [](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
         auto x = to_int(v, 0, 63);
         if (!x) return "expected " + range(0, 63);
         o.node_id = static_cast<int>(*x);
         return std::nullopt;
       }},
      {"--set", "SECTION.KEY=VALUE",
       "override one configuration key (repeatable), e.g. --set timing.cycle_ns=20000000",
       [](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
         const auto eq = v.find('=');
         const auto dot = v.find('.');
         if (eq == std::string::npos || dot == std::string::npos || dot == 0 || dot + 1 >= eq)
           return std::string("expected SECTION.KEY=VALUE, e.g. timing.cycle_ns=20000000");
         o.overrides.emplace_back(v.substr(0, eq), v.substr(eq + 1));
         return std::nullopt;
       }},
      {"--port", "ID", "DPDK port id to use (default 0)",
       [](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
         auto x = to_int(v, 0, 1023);
         if (!x) return "expected " + range(0, 1023);
         o.port_id = static_cast<uint16_t>(*x);
         return std::nullopt;
       }},
      {"--profile", "NAME|FILE",
       "port profile from drivers_cfg/ (af_packet, tap, ring, null, igc, ice, mlx5) or a path; "
       "default: chosen by the port's driver name",
       string_into(&DaemonOptions::profile)},
      {"--single-lcore", nullptr, "run RX, TX and control in one loop on the main lcore whatever -l gives",
       [](DaemonOptions& o, const std::string&) -> std::optional<std::string> {
         o.single_lcore = true;
         return std::nullopt;
       }},
      {"--idle", "poll|sleep",
       "what a loop does with nothing to do: poll (busy, lowest latency) or sleep (share a small machine)",
       [](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
         if (v == "poll") o.idle = IdlePolicy::poll;
         else if (v == "sleep") o.idle = IdlePolicy::sleep;
         else return std::string("expected poll or sleep");
         return std::nullopt;
       }},
      {"--rt-priority", "P",
       "run the lcore threads SCHED_FIFO at priority P (1..99) so a waking loop preempts ordinary work; "
       "meant for --idle sleep (a polling loop under SCHED_FIFO is throttled by the kernel); default 0 = off",
       [](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
         auto x = to_int(v, 0, 99);
         if (!x) return "expected " + range(0, 99);
         o.rt_priority = static_cast<int>(*x);
         return std::nullopt;
       }},
      {"--idle-sleep-us", "US", "longest idle sleep with --idle sleep (default 100)",
       int_into(&DaemonOptions::idle_sleep_ns, 1, 100'000, 1000)},
      {"--tx-method", "M[,M...]",
       "how a frame waits for its slot instant: spin (TSC busy wait), sleep (clock_nanosleep, the seed 000 "
       "prototype), hybrid (sleep, then spin the last --hybrid-margin-us), nic (launch-time offload), auto "
       "(nic when the port offers it, else the port profile's method, hybrid for spin with --idle sleep; default). A list rotates per own turn, to compare methods "
       "side by side in one run",
       [](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
         o.tx_methods.clear();
         size_t start = 0;
         while (start <= v.size()) {
           const size_t comma = v.find(',', start);
           const std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
           auto m = parse_tx_method(item);
           if (!m) return "'" + item + "': expected spin, sleep, hybrid, nic or auto";
           o.tx_methods.push_back(*m);
           if (comma == std::string::npos) break;
           start = comma + 1;
         }
         if (o.tx_methods.size() > 8) return std::string("at most 8 methods in the rotation");
         return std::nullopt;
       }},
      {"--tx-lead-us", "US", "the TX role stops other work this long before a slot instant (default 100)",
       int_into(&DaemonOptions::tx_lead_ns, 1, 100'000, 1000)},
      {"--hybrid-margin-us", "US", "hybrid: spin this long before the instant (default 50)",
       int_into(&DaemonOptions::hybrid_margin_ns, 1, 100'000, 1000)},
      {"--transport", "tdma|best-effort",
       "tdma: send in the slot (default); best-effort: send each frame as soon as it is ready",
       [](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
         if (v == "tdma") o.transport = Transport::tdma;
         else if (v == "best-effort") o.transport = Transport::best_effort;
         else return std::string("expected tdma or best-effort");
         return std::nullopt;
       }},
      {"--clock", "tai|monotonic|ptp:/dev/ptpN", "global time source (overrides [timing] clock)",
       [](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
         if (v.empty()) return std::string("expected tai, monotonic or ptp:/dev/ptpN");
         o.overrides.emplace_back("timing.clock", v);
         return std::nullopt;
       }},
      {"--drop-rx", "P", "test knob: drop each received cluster frame with probability P (loss tests)",
       double_into(&DaemonOptions::drop_rx, 0, 1)},
      {"--clock-offset-ns", "NS", "test knob: add a fixed offset to this node's global time",
       int_into(&DaemonOptions::clock_offset_ns, -1'000'000'000'000, 1'000'000'000'000)},
      {"--clock-drift-ppm", "PPM", "test knob: let this node's global time drift",
       double_into(&DaemonOptions::clock_drift_ppm, -1000, 1000)},
      {"--status-interval", "S", "seconds between one-line status reports, 0 = none (default 1)",
       double_into(&DaemonOptions::status_interval_s, 0, 3600)},
      {"--deliveries", "FILE", "append every delivery as `node cycle sender msg_id` (tob-sim's format)",
       string_into(&DaemonOptions::deliveries_path)},
      {"--deliveries-format", "text|bin",
       "the deliveries file's format: text lines (default) or 32-byte binary records (docs/operations.md "
       "\"Deliveries file\"; scripts/tobclient.py reads both)",
       [](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
         if (v != "text" && v != "bin") return std::string("expected text or bin");
         o.deliveries_format = v;
         return std::nullopt;
       }},
      {"--events", "FILE", "append every membership event as one line", string_into(&DaemonOptions::events_path)},
      {"--stats-file", "FILE", "write all statistics as JSON at exit", string_into(&DaemonOptions::stats_path)},
      {"--duration", "S", "stop cleanly after S seconds (default: run until SIGINT/SIGTERM)",
       double_into(&DaemonOptions::duration_s, 0, 1e7)},
      {"--gen-rate", "MSGS", "built-in generator: messages per second submitted by this node (default 0)",
       double_into(&DaemonOptions::gen_rate_per_s, 0, 10'000'000)},
      {"--gen-size", "BYTES", "built-in generator: payload size (default 32, at most [limits] payload_bytes)",
       [](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
         auto x = to_int(v, 1, 65535);
         if (!x) return "expected " + range(1, 65535);
         o.gen_size_bytes = static_cast<size_t>(*x);
         return std::nullopt;
       }},
      {"--gen-count", "N", "built-in generator: stop after N messages (default 0 = no limit)",
       [](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
         auto x = to_int(v, 0, INT64_MAX);
         if (!x) return "expected " + range(0, INT64_MAX);
         o.gen_count_max = static_cast<uint64_t>(*x);
         return std::nullopt;
       }},
      {"--published", "FILE",
       "[ic]: append every publication of the key-value store as `instance node key value` (the format of "
       "tob-sim --ic --published: tests/sim/check_published.py compares the files of several nodes)",
       string_into(&DaemonOptions::published_path)},
      {"--ic-fault", "lie|omit|garble|none",
       "test knob, [ic]: this node lies in its IC round data (every value replaced), omits it (sends no IC "
       "frames) or garbles it (malformed entries); a Byzantine node for tests (default none)",
       [](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
         if (v == "lie") o.ic_fault = core::IcFaultMode::lie;
         else if (v == "omit") o.ic_fault = core::IcFaultMode::omit;
         else if (v == "garble") o.ic_fault = core::IcFaultMode::garble;
         else if (v == "none") o.ic_fault = core::IcFaultMode::none;
         else return std::string("expected lie, omit, garble or none");
         return std::nullopt;
       }},
      {"--ic-gen-keys", "N",
       "[ic]: built-in writer: N keys every IC period, published at the earliest instant, with node-specific "
       "values over the key classes (docs/operations.md); at most [ic] keys_per_period",
       [](DaemonOptions& o, const std::string& v) -> std::optional<std::string> {
         auto x = to_int(v, 0, 65535);
         if (!x) return "expected " + range(0, 65535);
         o.ic_gen_keys = static_cast<size_t>(*x);
         return std::nullopt;
       }},
      {"--help", nullptr, "this text",
       [](DaemonOptions& o, const std::string&) -> std::optional<std::string> {
         o.help = true;
         return std::nullopt;
       }},
  };
  return table;
}

}  // namespace

core::Result<DaemonOptions> parse_daemon_options(const std::vector<std::string>& args) {
  DaemonOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    std::string value;
    bool inline_value = false;
    if (const auto eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    if (name == "-h") name = "--help";
    const Option* opt = nullptr;
    for (const Option& candidate : options())
      if (name == candidate.name) opt = &candidate;
    if (opt == nullptr) return core::Error{"unknown option '" + args[i] + "' (see --help)"};
    if (opt->arg != nullptr && !inline_value) {
      if (i + 1 >= args.size()) return core::Error{name + ": missing value " + opt->arg};
      value = args[++i];
    } else if (opt->arg == nullptr && inline_value) {
      return core::Error{name + ": takes no value"};
    }
    if (auto why = opt->apply(o, value)) return core::Error{name + " '" + value + "': " + *why};
  }
  if (o.help) return o;
  if (o.config_path.empty()) return core::Error{"--config FILE is required (see --help)"};
  if (o.node_id < 0) return core::Error{"--node-id K is required (see --help)"};
  if (o.hybrid_margin_ns > o.tx_lead_ns)
    return core::Error{"--hybrid-margin-us must not exceed --tx-lead-us (the TX role must be awake before it spins)"};
  return o;
}

std::string daemon_help(const char* program) {
  std::string h = std::string("usage: ") + program +
                  " [EAL options] -- --config FILE --node-id K [options]\n\n"
                  "One dpdk-tob process per host: it owns one DPDK port, sends this node's slot frames at\n"
                  "TSC-timed instants and runs MARS membership and ordering on a control lcore.\n"
                  "EAL options come first (always give --no-pci on machines whose own NIC must stay\n"
                  "with the kernel), e.g.\n"
                  "  --no-pci --file-prefix tob1 -l 0 --vdev net_af_packet0,iface=veth1\n"
                  "lcores: one runs everything; two run control on the main lcore and RX+TX on the\n"
                  "other; three or more give RX and TX an lcore each.\n\noptions:\n";
  for (const Option& o : options()) {
    std::string left = std::string("  ") + o.name + (o.arg != nullptr ? std::string(" ") + o.arg : "");
    h += left;
    if (left.size() < 30) {
      h += std::string(30 - left.size(), ' ');
    } else {
      h += "\n" + std::string(30, ' ');
    }
    // Wrap the help text at about 100 columns.
    const std::string text = o.help;
    size_t col = 30;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t next = text.find(' ', pos);
      if (next == std::string::npos) next = text.size();
      const std::string word = text.substr(pos, next - pos);
      if (col > 30 && col + 1 + word.size() > 100) {
        h += "\n" + std::string(30, ' ');
        col = 30;
      } else if (col > 30) {
        h += ' ';
        ++col;
      }
      h += word;
      col += word.size();
      pos = next + 1;
    }
    h += "\n";
  }
  h +=
      "\nsignals: SIGINT/SIGTERM stop cleanly (the node goes silent, which the others see as a\n"
      "departure within two cycles), flush the output files and print the statistics.\n"
      "telemetry: /tob/info, /tob/stats, /tob/membership, /tob/histogram,<name>, /tob/deliveries,\n"
      "/tob/submit,<text>, /tob/clients, /tob/ic (read with dpdk-telemetry.py -f <file-prefix>).\n"
      "exit status: 0 after a clean stop, 1 on a runtime failure, 2 on bad options or configuration.\n";
  return h;
}

}  // namespace tob::dataplane
