// The daemon's command line (after "--"): every option in both `--opt value` and `--opt=value`
// form, the defaults, and every kind of mistake refused with a message that names the option.
// The help text documents exactly the options the parser accepts.
#include <catch2/catch.hpp>

#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dataplane/config/options.h"

using namespace tob::dataplane;

namespace {

using Args = std::vector<std::string>;

const std::set<std::string> kOptionNames = {
    "--config",        "--node-id",         "--set",           "--port",          "--profile",
    "--single-lcore",  "--idle",            "--rt-priority",   "--idle-sleep-us", "--tx-method",
    "--tx-lead-us",    "--hybrid-margin-us", "--transport",    "--clock",         "--clock-offset-ns",
    "--clock-drift-ppm", "--drop-rx", "--status-interval", "--deliveries", "--deliveries-format", "--events",        "--stats-file",
    "--duration",      "--gen-rate",        "--gen-size",      "--gen-count",     "--published",
    "--ic-fault",      "--ic-gen-keys",     "--help"};

// The required options followed by `extra`.
Args with_required(const Args& extra) {
  Args a = {"--config", "cluster.ini", "--node-id", "1"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

DaemonOptions parse_ok(const Args& args) {
  auto r = parse_daemon_options(args);
  INFO("error: " << (r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  return r.value();
}

std::string parse_error(const Args& args) {
  auto r = parse_daemon_options(args);
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A wrong value is refused in both forms, and the message starts with the option and quotes
// the value.
void expect_bad_value(const std::string& name, const std::string& value) {
  INFO(name << " " << value);
  for (const Args& extra : {Args{name, value}, Args{name + "=" + value}}) {
    const std::string m = parse_error(with_required(extra));
    INFO("message: " << m);
    CHECK(m.rfind(name + " ", 0) == 0);
    CHECK(contains(m, "'" + value + "'"));
  }
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("the required options alone give the documented defaults") {
  const DaemonOptions o = parse_ok({"--config", "cluster.ini", "--node-id", "2"});
  CHECK(o.config_path == "cluster.ini");
  CHECK(o.node_id == 2);
  CHECK(o.overrides.empty());
  CHECK(o.port_id == 0);
  CHECK(o.profile.empty());
  CHECK_FALSE(o.single_lcore);
  CHECK(o.idle == IdlePolicy::poll);
  CHECK(o.idle_sleep_ns == 100'000);
  CHECK(o.rt_priority == 0);
  CHECK(o.tx_methods == std::vector<TxMethod>{TxMethod::automatic});
  CHECK(o.tx_lead_ns == 100'000);
  CHECK(o.hybrid_margin_ns == 50'000);
  CHECK(o.transport == Transport::tdma);
  CHECK(o.clock_offset_ns == 0);
  CHECK(o.clock_drift_ppm == 0);
  CHECK(o.status_interval_s == 1.0);
  CHECK(o.deliveries_path.empty());
  CHECK(o.events_path.empty());
  CHECK(o.stats_path.empty());
  CHECK(o.duration_s == 0);
  CHECK(o.gen_rate_per_s == 0);
  CHECK(o.gen_size_bytes == 32);
  CHECK(o.gen_count_max == 0);
  CHECK_FALSE(o.help);
}

TEST_CASE("every option with a value is accepted as `--opt value` and as `--opt=value`") {
  struct Case {
    std::string name;
    std::string value;
    std::function<void(const DaemonOptions&)> check;
  };
  using P = std::pair<std::string, std::string>;
  const std::vector<Case> cases = {
      {"--config", "/etc/tob/lab.ini", [](const DaemonOptions& o) { CHECK(o.config_path == "/etc/tob/lab.ini"); }},
      {"--node-id", "63", [](const DaemonOptions& o) { CHECK(o.node_id == 63); }},
      {"--node-id", "0", [](const DaemonOptions& o) { CHECK(o.node_id == 0); }},
      {"--set", "timing.cycle_ns=20000000",
       [](const DaemonOptions& o) { CHECK(o.overrides == std::vector<P>{{"timing.cycle_ns", "20000000"}}); }},
      {"--port", "1023", [](const DaemonOptions& o) { CHECK(o.port_id == 1023); }},
      {"--profile", "tap", [](const DaemonOptions& o) { CHECK(o.profile == "tap"); }},
      {"--idle", "sleep", [](const DaemonOptions& o) { CHECK(o.idle == IdlePolicy::sleep); }},
      {"--idle", "poll", [](const DaemonOptions& o) { CHECK(o.idle == IdlePolicy::poll); }},
      {"--rt-priority", "99", [](const DaemonOptions& o) { CHECK(o.rt_priority == 99); }},
      {"--rt-priority", "0", [](const DaemonOptions& o) { CHECK(o.rt_priority == 0); }},
      {"--idle-sleep-us", "250", [](const DaemonOptions& o) { CHECK(o.idle_sleep_ns == 250'000); }},
      {"--idle-sleep-us", "1", [](const DaemonOptions& o) { CHECK(o.idle_sleep_ns == 1'000); }},
      {"--idle-sleep-us", "100000", [](const DaemonOptions& o) { CHECK(o.idle_sleep_ns == 100'000'000); }},
      {"--tx-method", "nic", [](const DaemonOptions& o) { CHECK(o.tx_methods == std::vector<TxMethod>{TxMethod::nic}); }},
      {"--tx-lead-us", "200", [](const DaemonOptions& o) { CHECK(o.tx_lead_ns == 200'000); }},
      {"--hybrid-margin-us", "20", [](const DaemonOptions& o) { CHECK(o.hybrid_margin_ns == 20'000); }},
      {"--transport", "best-effort", [](const DaemonOptions& o) { CHECK(o.transport == Transport::best_effort); }},
      {"--transport", "tdma", [](const DaemonOptions& o) { CHECK(o.transport == Transport::tdma); }},
      {"--clock", "ptp:/dev/ptp1",
       [](const DaemonOptions& o) { CHECK(o.overrides == std::vector<P>{{"timing.clock", "ptp:/dev/ptp1"}}); }},
      {"--clock", "monotonic",
       [](const DaemonOptions& o) { CHECK(o.overrides == std::vector<P>{{"timing.clock", "monotonic"}}); }},
      {"--clock-offset-ns", "-2500", [](const DaemonOptions& o) { CHECK(o.clock_offset_ns == -2500); }},
      {"--clock-offset-ns", "-1000000000000",
       [](const DaemonOptions& o) { CHECK(o.clock_offset_ns == -1'000'000'000'000); }},
      {"--clock-offset-ns", "1000000000000",
       [](const DaemonOptions& o) { CHECK(o.clock_offset_ns == 1'000'000'000'000); }},
      {"--clock-drift-ppm", "-12.5", [](const DaemonOptions& o) { CHECK(o.clock_drift_ppm == -12.5); }},
      {"--clock-drift-ppm", "1000", [](const DaemonOptions& o) { CHECK(o.clock_drift_ppm == 1000); }},
      {"--drop-rx", "0.05", [](const DaemonOptions& o) { CHECK(o.drop_rx == 0.05); }},
      {"--status-interval", "0.25", [](const DaemonOptions& o) { CHECK(o.status_interval_s == 0.25); }},
      {"--status-interval", "0", [](const DaemonOptions& o) { CHECK(o.status_interval_s == 0); }},
      {"--deliveries", "/tmp/d.txt", [](const DaemonOptions& o) { CHECK(o.deliveries_path == "/tmp/d.txt"); }},
      {"--deliveries-format", "bin", [](const DaemonOptions& o) { CHECK(o.deliveries_format == "bin"); }},
      {"--deliveries-format", "text", [](const DaemonOptions& o) { CHECK(o.deliveries_format == "text"); }},
      {"--events", "/tmp/e.txt", [](const DaemonOptions& o) { CHECK(o.events_path == "/tmp/e.txt"); }},
      {"--stats-file", "/tmp/s.json", [](const DaemonOptions& o) { CHECK(o.stats_path == "/tmp/s.json"); }},
      {"--duration", "30", [](const DaemonOptions& o) { CHECK(o.duration_s == 30); }},
      {"--gen-rate", "1500.5", [](const DaemonOptions& o) { CHECK(o.gen_rate_per_s == 1500.5); }},
      {"--gen-size", "65535", [](const DaemonOptions& o) { CHECK(o.gen_size_bytes == 65535); }},
      {"--gen-size", "1", [](const DaemonOptions& o) { CHECK(o.gen_size_bytes == 1); }},
      {"--gen-count", "1000000", [](const DaemonOptions& o) { CHECK(o.gen_count_max == 1'000'000); }},
      {"--gen-count", "9223372036854775807",
       [](const DaemonOptions& o) { CHECK(o.gen_count_max == 9'223'372'036'854'775'807ull); }},
      {"--published", "/tmp/p.txt", [](const DaemonOptions& o) { CHECK(o.published_path == "/tmp/p.txt"); }},
      {"--ic-fault", "lie", [](const DaemonOptions& o) { CHECK(o.ic_fault == tob::core::IcFaultMode::lie); }},
      {"--ic-fault", "omit", [](const DaemonOptions& o) { CHECK(o.ic_fault == tob::core::IcFaultMode::omit); }},
      {"--ic-fault", "garble", [](const DaemonOptions& o) { CHECK(o.ic_fault == tob::core::IcFaultMode::garble); }},
      {"--ic-fault", "none", [](const DaemonOptions& o) { CHECK(o.ic_fault == tob::core::IcFaultMode::none); }},
      {"--ic-gen-keys", "0", [](const DaemonOptions& o) { CHECK(o.ic_gen_keys == 0); }},
      {"--ic-gen-keys", "65535", [](const DaemonOptions& o) { CHECK(o.ic_gen_keys == 65535); }},
  };
  std::set<std::string> covered;
  for (const Case& c : cases) {
    INFO(c.name << " " << c.value);
    c.check(parse_ok(with_required({c.name, c.value})));
    c.check(parse_ok(with_required({c.name + "=" + c.value})));
    covered.insert(c.name);
  }
  // Together with the flags below, the table covers every option.
  covered.insert("--single-lcore");
  covered.insert("--help");
  CHECK(covered == kOptionNames);
}

TEST_CASE("flags take no value") {
  CHECK(parse_ok(with_required({"--single-lcore"})).single_lcore);
  CHECK(parse_ok(with_required({"--help"})).help);
  CHECK(parse_ok(with_required({"-h"})).help);
  for (const std::string flag : {"--single-lcore", "--help"}) {
    const std::string m = parse_error(with_required({flag + "=x"}));
    INFO("message: " << m);
    CHECK(m == flag + ": takes no value");
  }
}

TEST_CASE("--help needs neither --config nor --node-id") {
  for (const std::string help : {"--help", "-h"}) {
    const DaemonOptions o = parse_ok({help});
    CHECK(o.help);
    CHECK(o.config_path.empty());
    CHECK(o.node_id == -1);
  }
  CHECK(parse_ok({"--node-id", "3", "--help"}).help);
}

TEST_CASE("--config and --node-id are required") {
  std::string m = parse_error({});
  CHECK(contains(m, "--config FILE is required"));
  m = parse_error({"--node-id", "1"});
  CHECK(contains(m, "--config FILE is required"));
  m = parse_error({"--config", "cluster.ini"});
  CHECK(contains(m, "--node-id K is required"));
  m = parse_error({"--config", "cluster.ini", "--port", "1"});
  CHECK(contains(m, "--node-id K is required"));
}

TEST_CASE("an unknown option or a stray argument is refused by name") {
  for (const std::string arg : {"--bogus", "--bogus=1", "--Config", "-c", "extra", "--", "--node"}) {
    const std::string m = parse_error(with_required({arg}));
    INFO("message: " << m);
    CHECK(contains(m, "unknown option '" + arg + "'"));
  }
}

TEST_CASE("an option without its value is refused by name") {
  for (const std::string name : {"--config", "--node-id", "--set", "--port", "--profile", "--idle", "--tx-method",
                                  "--gen-count", "--clock"}) {
    const std::string m = parse_error(with_required({name}));
    INFO("message: " << m);
    CHECK(m.rfind(name + ": missing value", 0) == 0);
  }
  CHECK(parse_error(with_required({"--port"})) == "--port: missing value ID");
}

TEST_CASE("out-of-range and malformed values are refused with the option and value") {
  expect_bad_value("--node-id", "64");
  expect_bad_value("--node-id", "-1");
  expect_bad_value("--node-id", "one");
  expect_bad_value("--node-id", "1.5");
  expect_bad_value("--node-id", "3x");
  expect_bad_value("--port", "1024");
  expect_bad_value("--port", "-1");
  expect_bad_value("--idle", "spin");
  expect_bad_value("--rt-priority", "100");
  expect_bad_value("--rt-priority", "-1");
  expect_bad_value("--idle-sleep-us", "-5");
  expect_bad_value("--idle-sleep-us", "0");
  expect_bad_value("--idle-sleep-us", "100001");
  expect_bad_value("--tx-lead-us", "0");
  expect_bad_value("--tx-lead-us", "100001");
  expect_bad_value("--hybrid-margin-us", "0");
  expect_bad_value("--transport", "udp");
  expect_bad_value("--clock-offset-ns", "1000000000001");
  expect_bad_value("--clock-offset-ns", "-1000000000001");
  expect_bad_value("--clock-drift-ppm", "1000.5");
  expect_bad_value("--clock-drift-ppm", "nan");
  expect_bad_value("--clock-drift-ppm", "inf");
  expect_bad_value("--clock-drift-ppm", "1e400");
  expect_bad_value("--clock-drift-ppm", "fast");
  expect_bad_value("--drop-rx", "1.5");
  expect_bad_value("--drop-rx", "-0.1");
  expect_bad_value("--status-interval", "-1");
  expect_bad_value("--status-interval", "3601");
  expect_bad_value("--duration", "-0.5");
  expect_bad_value("--duration", "1e8");
  expect_bad_value("--gen-rate", "-1");
  expect_bad_value("--gen-rate", "10000001");
  expect_bad_value("--gen-size", "0");
  expect_bad_value("--ic-fault", "liar");
  expect_bad_value("--ic-gen-keys", "-1");
  expect_bad_value("--ic-gen-keys", "65536");
  expect_bad_value("--gen-size", "65536");
  expect_bad_value("--gen-count", "-1");
  expect_bad_value("--gen-count", "9223372036854775808");  // overflows int64
  expect_bad_value("--tx-method", "fast");
  expect_bad_value("--set", "timing");
  // The messages say what is expected.
  CHECK(parse_error(with_required({"--node-id", "64"})) == "--node-id '64': expected an integer in [0, 63]");
  CHECK(contains(parse_error(with_required({"--rt-priority", "100"})), "expected an integer in [0, 99]"));
  CHECK(contains(parse_error(with_required({"--idle", "spin"})), "expected poll or sleep"));
  CHECK(contains(parse_error(with_required({"--deliveries-format", "csv"})), "expected text or bin"));
}

TEST_CASE("options that take text refuse an empty value") {
  for (const std::string name :
       {"--config", "--profile", "--deliveries", "--events", "--stats-file", "--clock", "--node-id", "--port"}) {
    const std::string m = parse_error(with_required({name + "="}));
    INFO("message: " << m);
    CHECK(m.rfind(name + " '': ", 0) == 0);
  }
}

TEST_CASE("--tx-method takes a rotation of up to 8 methods") {
  using V = std::vector<TxMethod>;
  CHECK(parse_ok(with_required({"--tx-method", "spin,sleep,hybrid"})).tx_methods ==
        V{TxMethod::spin, TxMethod::sleep, TxMethod::hybrid});
  CHECK(parse_ok(with_required({"--tx-method=hybrid,spin"})).tx_methods == V{TxMethod::hybrid, TxMethod::spin});
  CHECK(parse_ok(with_required({"--tx-method", "auto"})).tx_methods == V{TxMethod::automatic});
  CHECK(parse_ok(with_required({"--tx-method", "spin,spin,sleep,sleep,hybrid,hybrid,nic,auto"})).tx_methods.size() == 8);
  // A second --tx-method replaces the first rather than appending.
  CHECK(parse_ok(with_required({"--tx-method", "spin,sleep", "--tx-method", "nic"})).tx_methods == V{TxMethod::nic});

  std::string m = parse_error(with_required({"--tx-method", "spin,bogus,sleep"}));
  INFO("message: " << m);
  CHECK(m.rfind("--tx-method ", 0) == 0);
  CHECK(contains(m, "'bogus': expected spin, sleep, hybrid, nic or auto"));
  m = parse_error(with_required({"--tx-method", "spin,"}));  // empty last item
  CHECK(contains(m, "'': expected"));
  m = parse_error(with_required({"--tx-method", ",spin"}));  // empty first item
  CHECK(contains(m, "'': expected"));
  m = parse_error(with_required({"--tx-method=", "--port", "1"}));
  CHECK(m.rfind("--tx-method", 0) == 0);
  m = parse_error(with_required({"--tx-method", "Spin"}));  // names are lower case
  CHECK(contains(m, "'Spin'"));
  m = parse_error(with_required({"--tx-method", "spin,spin,sleep,sleep,hybrid,hybrid,nic,auto,spin"}));
  CHECK(m.rfind("--tx-method ", 0) == 0);
  CHECK(contains(m, "at most 8 methods"));
}

TEST_CASE("--set takes SECTION.KEY=VALUE and keeps every override in order") {
  using P = std::pair<std::string, std::string>;
  DaemonOptions o = parse_ok(with_required(
      {"--set", "timing.cycle_ns=20000000", "--set=limits.batch_msgs=32", "--clock", "tai", "--set", "cluster.name=a=b"}));
  CHECK(o.overrides == std::vector<P>{{"timing.cycle_ns", "20000000"},
                                      {"limits.batch_msgs", "32"},
                                      {"timing.clock", "tai"},
                                      {"cluster.name", "a=b"}});  // the value may hold '='
  o = parse_ok(with_required({"--set", "node.3.mac=02:00:00:00:00:03"}));
  CHECK(o.overrides == std::vector<P>{{"node.3.mac", "02:00:00:00:00:03"}});

  for (const std::string bad : {"timing=5", ".x=1", "a.=1", "timing.cycle_ns", "=5", "cycle=1.5", "", "."}) {
    INFO("--set " << bad);
    const std::string m = parse_error(with_required({"--set", bad}));
    INFO("message: " << m);
    CHECK(m.rfind("--set '" + bad + "': ", 0) == 0);
    CHECK(contains(m, "expected SECTION.KEY=VALUE"));
  }
}

TEST_CASE("the hybrid margin may not exceed the TX lead") {
  DaemonOptions o = parse_ok(with_required({"--hybrid-margin-us", "100", "--tx-lead-us", "100"}));
  CHECK(o.hybrid_margin_ns == o.tx_lead_ns);
  o = parse_ok(with_required({"--tx-lead-us", "40", "--hybrid-margin-us", "40"}));
  CHECK(o.tx_lead_ns == 40'000);

  std::string m = parse_error(with_required({"--hybrid-margin-us", "101", "--tx-lead-us", "100"}));
  INFO("message: " << m);
  CHECK(contains(m, "--hybrid-margin-us must not exceed --tx-lead-us"));
  // The check applies to the defaults too: the default margin is 50 us.
  m = parse_error(with_required({"--tx-lead-us", "40"}));
  CHECK(contains(m, "--hybrid-margin-us must not exceed --tx-lead-us"));
}

TEST_CASE("a repeated option takes its last value") {
  const DaemonOptions o = parse_ok({"--config", "a.ini", "--node-id", "1", "--config", "b.ini", "--node-id", "5",
                                    "--port", "3", "--port=4"});
  CHECK(o.config_path == "b.ini");
  CHECK(o.node_id == 5);
  CHECK(o.port_id == 4);
}

TEST_CASE("the help text documents exactly the options the parser accepts") {
  const std::string h = daemon_help("dpdk-tob");
  CHECK(h.rfind("usage: dpdk-tob [EAL options] -- --config FILE --node-id K [options]\n", 0) == 0);
  std::set<std::string> documented;
  for (const std::string& line : lines_of(h)) {
    if (line.rfind("  --", 0) != 0) continue;
    const std::string name = line.substr(2, line.find(' ', 2) - 2);
    if (name == "--no-pci") continue;  // the EAL example line
    documented.insert(name);
  }
  CHECK(documented == kOptionNames);
  // And every documented option is known to the parser.
  for (const std::string& name : documented) {
    auto r = parse_daemon_options({name});
    if (!r.ok()) CHECK_FALSE(contains(r.error().message, "unknown option"));
  }
}

TEST_CASE("the help text has no trailing spaces or tabs and fits 100 columns") {
  const std::string h = daemon_help("dpdk-tob");
  REQUIRE(!h.empty());
  CHECK(h.back() == '\n');
  const auto lines = lines_of(h);
  CHECK(lines.size() > 30);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    INFO("line " << i + 1 << ": '" << line << "'");
    CHECK((line.empty() || line.back() != ' '));
    CHECK_FALSE(contains(line, "\t"));
    CHECK(line.size() <= 100);
  }
}

TEST_CASE("tx method names parse and print back") {
  for (TxMethod m : {TxMethod::spin, TxMethod::sleep, TxMethod::hybrid, TxMethod::nic, TxMethod::automatic}) {
    const auto parsed = parse_tx_method(to_string(m));
    REQUIRE(parsed.has_value());
    CHECK(*parsed == m);
  }
  CHECK(parse_tx_method("spin") == TxMethod::spin);
  CHECK(parse_tx_method("sleep") == TxMethod::sleep);
  CHECK(parse_tx_method("hybrid") == TxMethod::hybrid);
  CHECK(parse_tx_method("nic") == TxMethod::nic);
  CHECK(parse_tx_method("auto") == TxMethod::automatic);
  for (const std::string bad : {"", "automatic", "SPIN", " spin", "spin ", "spin,sleep", "unknown"})
    CHECK_FALSE(parse_tx_method(bad).has_value());
  CHECK(std::string(to_string(IdlePolicy::poll)) == "poll");
  CHECK(std::string(to_string(IdlePolicy::sleep)) == "sleep");
  CHECK(std::string(to_string(Transport::tdma)) == "tdma");
  CHECK(std::string(to_string(Transport::best_effort)) == "best-effort");
}

TEST_CASE("option numbers with a leading zero are decimal") {
  CHECK(parse_ok({"--config", "c.ini", "--node-id", "010"}).node_id == 10);
  CHECK(parse_ok(with_required({"--port", "0x10"})).port_id == 16);
}

TEST_CASE("--tx-method auto: launch time if the port can, else the profile's, hybrid for spin when cores are shared") {
  using tob::dataplane::IdlePolicy;
  using tob::dataplane::resolve_tx_method;
  using tob::dataplane::TxMethod;
  CHECK(resolve_tx_method(TxMethod::automatic, true, TxMethod::spin, IdlePolicy::sleep) == TxMethod::nic);
  CHECK(resolve_tx_method(TxMethod::automatic, false, TxMethod::spin, IdlePolicy::poll) == TxMethod::spin);
  CHECK(resolve_tx_method(TxMethod::automatic, false, TxMethod::spin, IdlePolicy::sleep) == TxMethod::hybrid);
  CHECK(resolve_tx_method(TxMethod::automatic, false, TxMethod::sleep, IdlePolicy::sleep) == TxMethod::sleep);
  CHECK(resolve_tx_method(TxMethod::automatic, false, TxMethod::nic, IdlePolicy::poll) == TxMethod::spin);
  CHECK(resolve_tx_method(TxMethod::automatic, false, TxMethod::automatic, IdlePolicy::sleep) == TxMethod::hybrid);
  // A method asked for by name is kept, whatever the idle policy.
  CHECK(resolve_tx_method(TxMethod::spin, false, TxMethod::sleep, IdlePolicy::sleep) == TxMethod::spin);
  CHECK(resolve_tx_method(TxMethod::nic, false, TxMethod::spin, IdlePolicy::poll) == TxMethod::nic);
}
