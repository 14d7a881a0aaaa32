// The cluster configuration file: a good file loads into a node configuration; every kind of
// mistake is refused with the file, section, key and reason.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <unistd.h>
#include <string>

#include "dataplane/config/cluster_config.h"
#include "core/otfp_limits.h"

using tob::dataplane::load_cluster_config;

namespace {

const char* kGood = R"([cluster]
name = lab
id = 7
nodes = 4
order = mars
multicast_mac = 01:1b:19:00:00:00
vlan = 100
pcp = 5

[timing]
clock = tai
epoch_ns = 0
cycle_ns = 4000000

[node.0]
mac = 02:00:00:00:00:00
[node.1]
mac = 02:00:00:00:00:01
[node.2]
mac = 02:00:00:00:00:02
[node.3]
mac = 02:00:00:00:00:03
)";

std::string write(const std::string& text) {
  static int n = 0;
  const std::string path = "/tmp/tob-config-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".ini";
  std::ofstream(path) << text;
  return path;
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

void expect_error(const std::string& text, const std::string& needle) {
  const std::string path = write(text);
  auto r = load_cluster_config(path);
  std::remove(path.c_str());
  REQUIRE_FALSE(r.ok());
  INFO("message: " << r.error().message);
  CHECK(r.error().message.rfind(path, 0) == 0);  // names the file first
  CHECK(r.error().message.find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("a complete configuration loads into node settings") {
  const std::string path = write(kGood);
  auto r = load_cluster_config(path);
  std::remove(path.c_str());
  REQUIRE(r.ok());
  const auto& c = r.value();
  CHECK(c.name == "lab");
  CHECK(c.cluster_id == 7);
  CHECK(c.nodes == 4);
  CHECK(c.vlan == 100);
  CHECK(tob::dataplane::format_mac(c.node_macs[3]) == "02:00:00:00:00:03");
  const auto n = c.for_node(2);
  CHECK(n.self == 2);
  CHECK(n.cluster_id == 7);
  REQUIRE(n.schedule.slots.size() == 4);
  CHECK(n.schedule.slots[1].offset_ns == 1'000'000);
  CHECK(n.validate().ok());
}

TEST_CASE("explicit slots from tob-schedule replace the equal slots") {
  std::string text = kGood;
  text = replace(text, "mac = 02:00:00:00:00:00", "mac = 02:00:00:00:00:00\nslot_offset_ns = 3000000\nslot_length_ns = 1000000");
  text = replace(text, "mac = 02:00:00:00:00:01", "mac = 02:00:00:00:00:01\nslot_offset_ns = 0\nslot_length_ns = 1000000");
  text = replace(text, "mac = 02:00:00:00:00:02", "mac = 02:00:00:00:00:02\nslot_offset_ns = 1000000\nslot_length_ns = 1000000");
  text = replace(text, "mac = 02:00:00:00:00:03", "mac = 02:00:00:00:00:03\nslot_offset_ns = 2000000\nslot_length_ns = 1000000");
  const std::string path = write(text);
  auto r = load_cluster_config(path);
  std::remove(path.c_str());
  REQUIRE(r.ok());
  CHECK(r.value().node.schedule.slots[0].offset_ns == 3'000'000);
}

TEST_CASE("configuration mistakes name the file, key and reason") {
  expect_error("", "empty configuration");
  expect_error(replace(kGood, "pcp = 5", "pcp = 5\ncolour = blue"), "[cluster] colour: unknown key");
  expect_error(kGood + std::string("[extra]\nx = 1\n"), "[extra]: unknown section");
  expect_error(replace(kGood, "nodes = 4", "nodes = 2"), "[cluster] nodes: '2' is outside [3, 64]");
  expect_error(replace(kGood, "nodes = 4", "nodes = four"), "[cluster] nodes: 'four' is not an integer");
  expect_error(replace(kGood, "order = mars", "order = raft"), "[cluster] order: 'raft'");
  expect_error(replace(kGood, "01:1b:19:00:00:00", "01:1b:19:00:00"), "[cluster] multicast_mac");
  expect_error(replace(kGood, "01:1b:19:00:00:00", "02:1b:19:00:00:00"), "not a multicast address");
  expect_error(replace(kGood, "vlan = 100", "vlan = 5000"), "[cluster] vlan");
  expect_error(replace(kGood, "cycle_ns = 4000000\n", ""), "[timing] cycle_ns: missing");
  expect_error(replace(kGood, "clock = tai", "clock = gps"), "[timing] clock: 'gps'");
  expect_error(replace(kGood, "mac = 02:00:00:00:00:03", "mac = 02:00:00:00:00:02"), "[node.3] mac: same address as node 2");
  expect_error(replace(kGood, "mac = 02:00:00:00:00:01", "mac = zz"), "[node.1] mac: 'zz'");
  expect_error(replace(kGood, "[node.3]\nmac = 02:00:00:00:00:03\n", ""), "[node.3]: missing");
  expect_error(kGood + std::string("[node.9]\nmac = 02:00:00:00:00:09\n"), "[node.9]: node id outside the cluster");
  expect_error(replace(kGood, "mac = 02:00:00:00:00:00", "mac = 02:00:00:00:00:00\nslot_offset_ns = 0"),
               "give slot_offset_ns and slot_length_ns together");
  expect_error(replace(kGood, "mac = 02:00:00:00:00:00", "mac = 02:00:00:00:00:00\nslot_offset_ns = 0\nslot_length_ns = 100"),
               "for all or none");
}

TEST_CASE("an overlapping slot layout is refused with the schedule's reason") {
  std::string text = kGood;
  for (int k = 0; k < 4; ++k)
    text = replace(text, "mac = 02:00:00:00:00:0" + std::to_string(k),
                   "mac = 02:00:00:00:00:0" + std::to_string(k) + "\nslot_offset_ns = " + std::to_string(k * 500000) +
                       "\nslot_length_ns = 1000000");
  expect_error(text, "slots overlap");
}

TEST_CASE("a missing file is reported, not crashed on") {
  auto r = load_cluster_config("/nonexistent/cluster.ini");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("/nonexistent/cluster.ini: cannot open") == 0);
}

// --set overrides (the daemon's `--set SECTION.KEY=VALUE`), applied over the file before validation.

namespace {

using tob::dataplane::ClusterConfig;
using tob::dataplane::Overrides;

tob::core::Result<ClusterConfig> load_with(const std::string& text, const Overrides& overrides) {
  const std::string path = write(text);
  auto r = load_cluster_config(path, overrides);
  std::remove(path.c_str());
  return r;
}

ClusterConfig load_ok_with(const std::string& text, const Overrides& overrides) {
  auto r = load_with(text, overrides);
  INFO("error: " << (r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  return r.value();
}

std::string override_error(const std::string& text, const Overrides& overrides) {
  auto r = load_with(text, overrides);
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

}  // namespace

TEST_CASE("an override replaces a value given in the file") {
  const ClusterConfig c = load_ok_with(kGood, {{"timing.cycle_ns", "8000000"}, {"cluster.vlan", "0"}});
  CHECK(c.node.schedule.cycle_ns == 8'000'000);
  REQUIRE(c.node.schedule.slots.size() == 4);
  CHECK(c.node.schedule.slots[1].offset_ns == 2'000'000);  // equal slots follow the new cycle
  CHECK(c.vlan == 0);
  CHECK(c.name == "lab");  // untouched keys keep the file's values
  CHECK(c.cluster_id == 7);
}

TEST_CASE("overrides are applied in order, the last one winning") {
  const ClusterConfig c = load_ok_with(
      kGood, {{"timing.cycle_ns", "8000000"}, {"timing.clock", "ptp:/dev/ptp0"}, {"timing.cycle_ns", "12000000"}});
  CHECK(c.node.schedule.cycle_ns == 12'000'000);
  CHECK(c.clock == tob::dataplane::ClockSource::ptp);
  CHECK(c.ptp_device == "/dev/ptp0");
}

TEST_CASE("an override adds a key the file does not give") {
  const ClusterConfig c = load_ok_with(kGood, {{"timing.kappa", "5"}, {"timing.sends_per_slot", "1"},
                                               {"cluster.order", "otfp"}, {"storage.path", "/tmp/a-{node}.log"}});
  CHECK(c.kappa == 5);
  CHECK(c.node.kappa == 5);
  CHECK(c.log_path_for(3) == "/tmp/a-3.log");
  CHECK(c.log_sync);
  CHECK(c.node.schedule.sends_per_slot == 1);
  CHECK(c.order == tob::dataplane::Order::otfp);
  // Without the override the defaults hold.
  const ClusterConfig d = load_ok_with(kGood, {});
  CHECK(d.kappa == 2);
  CHECK(d.node.schedule.sends_per_slot == 2);
  CHECK(d.order == tob::dataplane::Order::mars);
}

TEST_CASE("an override adds a whole section the file does not have") {
  REQUIRE(std::string(kGood).find("[limits]") == std::string::npos);
  const ClusterConfig c = load_ok_with(kGood, {{"limits.batch_msgs", "32"}, {"limits.queue_msgs", "100"}});
  CHECK(c.node.batch_msgs_max == 32);
  CHECK(c.node.queue_msgs_max == 100);
  CHECK(c.for_node(0).batch_msgs_max == 32);
}

TEST_CASE("an override does not change the file") {
  const std::string path = write(kGood);
  auto with = load_cluster_config(path, {{"timing.cycle_ns", "8000000"}});
  auto without = load_cluster_config(path);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  REQUIRE(with.ok());
  REQUIRE(without.ok());
  CHECK(with.value().node.schedule.cycle_ns == 8'000'000);
  CHECK(without.value().node.schedule.cycle_ns == 4'000'000);
  CHECK(text == kGood);
}

TEST_CASE("an override that makes the configuration invalid names the key and the --set") {
  std::string m = override_error(kGood, {{"timing.cycle_ns", "10"}});
  INFO("message: " << m);
  CHECK(m.find("[timing] cycle_ns: '10' is outside") != std::string::npos);
  CHECK(m.find("(from --set timing.cycle_ns=10)") != std::string::npos);

  m = override_error(kGood, {{"timing.cycle_ns", "fast"}});
  CHECK(m.find("[timing] cycle_ns: 'fast' is not an integer (from --set timing.cycle_ns=fast)") != std::string::npos);

  m = override_error(kGood, {{"cluster.name", "no spaces"}});
  CHECK(m.find("[cluster] name:") != std::string::npos);
  CHECK(m.find("(from --set cluster.name=no spaces)") != std::string::npos);

  m = override_error(kGood, {{"limits.batch_msgs", "0"}});  // added section, bad value
  CHECK(m.find("[limits] batch_msgs: '0' is outside [1, 16384] (from --set limits.batch_msgs=0)") != std::string::npos);

  m = override_error(kGood, {{"timing.clock", "gps"}});
  CHECK(m.find("[timing] clock: 'gps'") != std::string::npos);
  CHECK(m.find("(from --set timing.clock=gps)") != std::string::npos);

  // A mistake in the file itself is not blamed on an unrelated --set.
  m = override_error(replace(kGood, "vlan = 100", "vlan = 5000"), {{"timing.cycle_ns", "8000000"}});
  CHECK(m.find("[cluster] vlan") != std::string::npos);
  CHECK(m.find("--set") == std::string::npos);
}

TEST_CASE("an override of an unknown key or section is refused like one in the file") {
  std::string m = override_error(kGood, {{"timing.cycle", "5"}});
  INFO("message: " << m);
  CHECK(m.find("[timing] cycle: unknown key") != std::string::npos);
  m = override_error(kGood, {{"limits.frames", "5"}});
  CHECK(m.find("[limits] frames: unknown key") != std::string::npos);
  m = override_error(kGood, {{"extra.x", "1"}});
  CHECK(m.find("[extra]: unknown section") != std::string::npos);
}

TEST_CASE("a malformed override name is refused") {
  for (const std::string name : {"timing", ".cycle_ns", "timing.", ""}) {
    INFO("--set " << name);
    const std::string m = override_error(kGood, {{name, "1"}});
    INFO("message: " << m);
    CHECK(m.find("--set " + name + "=1: expected SECTION.KEY=VALUE") != std::string::npos);
  }
  // Longer than rte_cfgfile can hold.
  std::string m = override_error(kGood, {{"cluster.name", std::string(300, 'a')}});
  CHECK(m.find("within INI limits") != std::string::npos);
  m = override_error(kGood, {{"timing." + std::string(100, 'k'), "1"}});
  CHECK(m.find("within INI limits") != std::string::npos);
}

TEST_CASE("an override reaches a node section: the key is after the last dot") {
  const ClusterConfig c = load_ok_with(kGood, {{"node.1.mac", "02:00:00:00:00:09"}});
  CHECK(tob::dataplane::format_mac(c.node_macs[1]) == "02:00:00:00:00:09");
  CHECK(tob::dataplane::format_mac(c.node_macs[0]) == "02:00:00:00:00:00");
  CHECK(override_error(kGood, {{"node.2.mac", "02:00:00:00:00:00"}}).find("[node.2] mac") != std::string::npos);
}

TEST_CASE("a section given twice is refused, not half read") {
  // rte_cfgfile keeps both; lookups would read only the first and miss the second's mistakes.
  const std::string twice = std::string(kGood) + "\n[timing]\ncycle_ns = 5\n";
  const std::string msg = override_error(twice, {});
  CHECK(msg.find("[timing]: appears twice") != std::string::npos);
}

TEST_CASE("numbers are decimal even with a leading zero, hexadecimal with 0x") {
  const ClusterConfig dec = load_ok_with(replace(kGood, "cycle_ns = 4000000", "cycle_ns = 04000000"), {});
  CHECK(dec.node.schedule.cycle_ns == 4'000'000);  // not octal 1048576
  const ClusterConfig hex = load_ok_with(replace(kGood, "cycle_ns = 4000000", "cycle_ns = 0x3D0900"), {});
  CHECK(hex.node.schedule.cycle_ns == 4'000'000);
  CHECK(override_error(replace(kGood, "cycle_ns = 4000000", "cycle_ns = 4e6"), {}).find("not an integer") !=
        std::string::npos);
}

TEST_CASE("otfp needs an acceptor log, and durability is sync or none") {
  CHECK(override_error(kGood, {{"cluster.order", "otfp"}}).find("[storage] path") != std::string::npos);
  const ClusterConfig c = load_ok_with(kGood, {{"cluster.order", "otfp"}, {"storage.path", "/x"},
                                               {"storage.durability", "none"}, {"timing.window", "16"}});
  CHECK_FALSE(c.log_sync);
  CHECK(c.node.otfp_window == 16);
  CHECK(override_error(kGood, {{"storage.durability", "maybe"}}).find("[storage] durability") != std::string::npos);
  CHECK(override_error(kGood, {{"timing.window", "2"}}).find("[timing] window") != std::string::npos);
}

// [ic]: interactive consistency and the key-value store (docs/configuration.md).

TEST_CASE("without an [ic] section the cluster runs no interactive consistency") {
  const ClusterConfig c = load_ok_with(kGood, {});
  CHECK_FALSE(c.ic.has_value());
  CHECK(c.ic_frames_per_slot == 0);
}

TEST_CASE("an [ic] section loads every bound, the default reduction and the key classes") {
  const std::string text = std::string(kGood) +
                           "[ic]\nf = 1\nperiod_cycles = 2\nkeys_per_period = 19\nkey_bytes = 16\nvalue_bytes = 8\n"
                           "store_keys = 100\nversions_per_key = 3\nchunk_bytes = 700\ncopies = 2\ntree_bytes = 0x100000\n"
                           "reduction = median-i64\nclass.temp/ = median-f64\nclass.temp/fast. = midpoint-f64\n"
                           "class.name = majority\n";
  const ClusterConfig c = load_ok_with(text, {});
  REQUIRE(c.ic.has_value());
  const tob::core::IcConfig& ic = *c.ic;
  CHECK(ic.f == 1);
  CHECK(ic.period_cycles == 2);
  CHECK(ic.keys_per_period_max == 19);
  CHECK(ic.key_bytes_max == 16);
  CHECK(ic.value_bytes_max == 8);
  CHECK(ic.store_keys_max == 100);
  CHECK(ic.versions_per_key == 3);
  CHECK(ic.chunk_bytes == 700);
  CHECK(ic.copies == 2);
  CHECK(ic.tree_bytes_max == 0x100000);
  CHECK(ic.default_reduction == tob::core::Reduction::median_i64);
  REQUIRE(ic.key_classes.size() == 3);
  const auto reduction = [&](const std::string& key) {
    return tob::core::reduction_for({reinterpret_cast<const uint8_t*>(key.data()), key.size()}, ic.key_classes,
                                    ic.default_reduction);
  };
  CHECK(reduction("temp/1") == tob::core::Reduction::median_f64);
  CHECK(reduction("temp/fast.x") == tob::core::Reduction::midpoint_f64);  // the longest prefix wins
  CHECK(reduction("name") == tob::core::Reduction::majority);
  CHECK(reduction("other") == tob::core::Reduction::median_i64);
  // 19 keys of 16 + 8 bytes: batches of 688 bytes, entries of 692: rounds of 1 and 4 entries in
  // chunks of 700 bytes: 1 + 4 chunks, twice.
  CHECK(c.ic_frames_per_slot == 10);
}

TEST_CASE("an empty [ic] section takes the defaults, f as large as the cluster allows") {
  const ClusterConfig c = load_ok_with(std::string(kGood) + "[ic]\n", {});
  REQUIRE(c.ic.has_value());
  CHECK(c.ic->f == 1);  // (4 - 1) / 3
  CHECK(c.ic->period_cycles == 1);
  CHECK(c.ic->default_reduction == tob::core::Reduction::majority);
  CHECK(c.ic->chunk_bytes == 1440);
  CHECK(c.ic_frames_per_slot == tob::dataplane::ic_frames_per_slot(*c.ic, 4));
  const ClusterConfig three =
      load_ok_with(replace(replace(kGood, "nodes = 4", "nodes = 3"), "[node.3]\nmac = 02:00:00:00:00:03\n", "") + "[ic]\n", {});
  CHECK(three.ic->f == 0);
}

TEST_CASE("[ic] mistakes name the file, the key and the reason") {
  const std::string ic = std::string(kGood) + "[ic]\n";
  expect_error(ic + "f = 2\n", "[ic] f = 2 needs more than 6 nodes (N > 3f), the cluster has 4");
  expect_error(ic + "f = -1\n", "[ic] f: '-1' is outside");
  expect_error(ic + "period_cycles = 0\n", "[ic] period_cycles: '0' is outside [1, 1000000]");
  expect_error(ic + "keys_per_period = 70000\n", "[ic] keys_per_period: '70000' is outside");
  expect_error(ic + "key_bytes = 256\n", "[ic] key_bytes: '256' is outside [1, 255]");
  expect_error(ic + "value_bytes = many\n", "[ic] value_bytes: 'many' is not an integer");
  expect_error(ic + "store_keys = 0\n", "[ic] store_keys");
  expect_error(ic + "versions_per_key = 2000\n", "[ic] versions_per_key");
  expect_error(ic + "copies = 5\n", "[ic] copies: '5' is outside [1, 4]");
  expect_error(ic + "chunk_bytes = 1441\n", "[ic] chunk size must be 1..1440 bytes for frames of 1500 bytes");
  expect_error(ic + "reduction = mean\n", "[ic] reduction: 'mean': expected majority, median-f64");
  expect_error(ic + "class.t/ = average\n", "[ic] class.t/: 'average': expected majority");
  expect_error(ic + "class. = median-f64\n", "[ic] class.: give the key prefix");
  expect_error(ic + "key_bytes = 4\nclass.toolong = majority\n", "[ic] class.toolong: the prefix is longer than key_bytes = 4");
  // rte_cfgfile cuts names at 63 characters: a 60-byte prefix arrives as 57 bytes; refused.
  expect_error(ic + "key_bytes = 64\nclass." + std::string(60, 'p') + " = majority\n", "class prefixes of at most 56 bytes");
  CHECK(load_ok_with(ic + "key_bytes = 64\nclass." + std::string(56, 'p') + " = majority\n", {}).ic->key_classes.at(0).prefix ==
        std::string(56, 'p'));
  expect_error(ic + "value_bytes = 4\nclass.t/ = median-f64\n", "[ic] numeric reductions need values of 8 bytes");
  expect_error(ic + "colour = blue\n", "[ic] colour: unknown key");
  expect_error(ic + "keys_per_period = 65535\nkey_bytes = 255\nvalue_bytes = 65535\n", "[ic] a batch of");
  expect_error(ic + "keys_per_period = 65535\nvalue_bytes = 64\n", "exceeds 67108864 bytes");  // the EIG tree
  std::string classes = ic;
  for (int k = 0; k < 33; ++k) classes += "class.c" + std::to_string(k) + " = majority\n";
  expect_error(classes, "[ic]: 33 key classes; at most 32");
}

TEST_CASE("[ic] refuses round data beyond the frames one slot may carry, with the count") {
  // 512 keys of 32 + 16 bytes at f = 1: batches of 30724 bytes, 5 entries per slot in 1440-byte
  // chunks: 22 + 86 frames; 4 copies: 432 frames (accepted). 2500 keys: more than 2048.
  const std::string ic = std::string(kGood) + "[ic]\ncopies = 4\n";
  const ClusterConfig ok = load_ok_with(ic + "keys_per_period = 512\n", {});
  CHECK(ok.ic_frames_per_slot == tob::dataplane::ic_frames_per_slot(*ok.ic, 4));
  CHECK(ok.ic_frames_per_slot <= tob::dataplane::kIcFramesPerSlotMax);
  expect_error(ic + "keys_per_period = 2500\n", "frames per slot (4 copies); at most 2048");
}

TEST_CASE("--set reaches [ic], key classes with dots included, and adds the section") {
  const ClusterConfig c = load_ok_with(kGood, {{"ic.period_cycles", "3"}, {"ic.class.temp.fast", "midpoint-i64"}});
  REQUIRE(c.ic.has_value());
  CHECK(c.ic->period_cycles == 3);
  REQUIRE(c.ic->key_classes.size() == 1);
  CHECK(c.ic->key_classes[0].prefix == "temp.fast");
  CHECK(c.ic->key_classes[0].reduction == tob::core::Reduction::midpoint_i64);
  const std::string m = override_error(kGood, {{"ic.copies", "9"}});
  CHECK(m.find("[ic] copies: '9' is outside [1, 4] (from --set ic.copies=9)") != std::string::npos);
}

TEST_CASE("[timing] rate_mbps and [limits] slot_frames load, and a slot that cannot carry its frames is refused") {
  // 4 ms cycle: 1 ms slots (margin 100 us, precision 50 us, copy gap 50 us).
  const ClusterConfig c = load_ok_with(kGood, {{"timing.rate_mbps", "1000"}, {"limits.slot_frames", "8"}});
  CHECK(c.node.rate_mbps == 1000);
  CHECK(c.node.slot_frames_max == 8);
  CHECK(c.for_node(2).rate_mbps == 1000);
  const ClusterConfig legacy = load_ok_with(kGood, {});
  CHECK(legacy.node.rate_mbps == 0);
  CHECK(legacy.node.slot_frames_max == 0);
  // 9000-byte frames at 10 Mbit/s: 7.2 ms each, in a 1 ms slot.
  std::string m = override_error(kGood, {{"timing.rate_mbps", "10"}, {"limits.frame_bytes", "9000"}});
  INFO("message: " << m);
  CHECK(m.find("node 0: its slot of 1000000 ns cannot carry its frames at 10 Mbit/s") != std::string::npos);
  CHECK(m.find("us short") != std::string::npos);
  m = override_error(kGood, {{"timing.rate_mbps", "400001"}});
  CHECK(m.find("[timing] rate_mbps: '400001' is outside [0, 400000]") != std::string::npos);
  m = override_error(kGood, {{"limits.slot_frames", "4097"}});
  CHECK(m.find("[limits] slot_frames: '4097' is outside [0, 4096]") != std::string::npos);
}

TEST_CASE("[ic] round data counts in the slot budget: refused with the frames it adds") {
  // 1 ms slots at 100 Mbit/s hold 2 copies of 1 frame (about 123 us each) but not 22 more.
  const std::string ic = std::string(kGood) + "[ic]\nkeys_per_period = 512\n";
  expect_error(replace(ic, "cycle_ns = 4000000", "cycle_ns = 4000000\nrate_mbps = 100"), "[ic] adds");
  const ClusterConfig c = load_ok_with(ic, {});  // without a rate nothing is checked
  CHECK(c.node.aux_frames == static_cast<int>(c.ic_frames_per_slot));
}

TEST_CASE("the queue's defaults follow batch_msgs: four batches; explicit keys win") {
  const ClusterConfig small = load_ok_with(kGood, {});
  CHECK(small.node.queue_msgs_max == 4096);
  CHECK(small.node.queue_bytes_max == 1u << 20);
  const ClusterConfig big = load_ok_with(kGood, {{"limits.batch_msgs", "4096"}});
  CHECK(big.node.queue_msgs_max == 4 * 4096);
  CHECK(big.node.queue_bytes_max == size_t{4} * 4096 * 1024);
  const ClusterConfig set = load_ok_with(kGood, {{"limits.batch_msgs", "4096"}, {"limits.queue_msgs", "100"},
                                                 {"limits.queue_bytes", "5000"}});
  CHECK(set.node.queue_msgs_max == 100);
  CHECK(set.node.queue_bytes_max == 5000);
}

TEST_CASE("the clients' history follows batch_msgs: four cycles of every node's batch; an explicit key wins") {
  const ClusterConfig small = load_ok_with(kGood, {});
  CHECK(small.history == 16384);
  const ClusterConfig big = load_ok_with(kGood, {{"limits.batch_msgs", "4096"}});
  CHECK(big.history >= 4u * static_cast<uint32_t>(big.nodes) * 4096);
  CHECK((big.history & (big.history - 1)) == 0);
  const ClusterConfig set = load_ok_with(kGood, {{"limits.batch_msgs", "4096"}, {"clients.history", "2048"}});
  CHECK(set.history == 2048);
}

TEST_CASE("otfp's timeouts are durations: 20, 20 and 4 ms by default, at least their floors in cycles") {
  const ClusterConfig d = load_ok_with(kGood, {});
  CHECK(d.node.otfp_heard_ns == 20'000'000);
  CHECK(d.node.otfp_recovery_ns == 20'000'000);
  CHECK(d.node.otfp_retry_ns == 4'000'000);
  // At a 1 ms cycle they span 20, 20 and 4 cycles; at 4 ms the floors 2, 4 and 2 hold.
  const auto t1 = tob::core::otfp::timeouts(1'000'000, d.node.otfp_heard_ns, d.node.otfp_recovery_ns,
                                            d.node.otfp_retry_ns, 4, 32, 2);
  CHECK((t1.heard == 20 && t1.recovery == 20 && t1.retry == 4));
  CHECK(t1.patience == 2 * (20 + 4 * 4));
  const auto t40 = tob::core::otfp::timeouts(40'000'000, d.node.otfp_heard_ns, d.node.otfp_recovery_ns,
                                             d.node.otfp_retry_ns, 4, 32, 2);
  CHECK((t40.heard == 2 && t40.recovery == 4 && t40.retry == 2 && t40.patience == 24));
  const ClusterConfig set = load_ok_with(kGood, {{"timing.cycle_ns", "1000000"}, {"timing.heard_ns", "5000000"},
                                                 {"timing.recovery_ns", "0"}});
  CHECK(set.node.otfp_heard_ns == 5'000'000);
  CHECK(set.node.otfp_recovery_ns == 0);  // the floor: 4 cycles
}

TEST_CASE("otfp's stall budget sets the defaults of the heard and recovery timeouts and of the tempo window") {
  // 13 ms by default: 1.5 x, rounded up to a millisecond, is 20 ms; the window stays 32.
  const ClusterConfig d = load_ok_with(kGood, {{"timing.cycle_ns", "1000000"}});
  CHECK(d.node.otfp_heard_ns == 20'000'000);
  CHECK(d.node.otfp_window == 32);
  // 20 ms at a 0.75 ms cycle: timeouts of 30 ms, a window of 27 + kappa 2 + 8 instances.
  const ClusterConfig b = load_ok_with(kGood, {{"timing.cycle_ns", "750000"}, {"timing.stall_budget_ns", "20000000"}});
  CHECK(b.node.otfp_heard_ns == 30'000'000);
  CHECK(b.node.otfp_recovery_ns == 30'000'000);
  CHECK(b.node.otfp_window == 37);
  // A budget the instance ring cannot ride out at that cycle is refused, naming what to change.
  CHECK_THAT(override_error(kGood, {{"timing.cycle_ns", "500000"}, {"timing.stall_budget_ns", "20000000"}}),
             Catch::Contains("must stay below 126"));
  // Keys given explicitly win over the budget's defaults.
  const ClusterConfig e = load_ok_with(kGood, {{"timing.cycle_ns", "1000000"}, {"timing.stall_budget_ns", "20000000"},
                                               {"timing.heard_ns", "25000000"}, {"timing.window", "40"}});
  CHECK(e.node.otfp_heard_ns == 25'000'000);
  CHECK(e.node.otfp_recovery_ns == 30'000'000);
  CHECK(e.node.otfp_window == 40);
  CHECK(tob::core::otfp::window_for_budget(100'000'000, 1'000'000, 2) == 64);  // capped
  CHECK_THAT(override_error(kGood, {{"timing.stall_budget_ns", "-1"}}), Catch::Contains("stall_budget_ns"));
}

TEST_CASE("otfp timeouts longer than a node's instance ring can catch up are refused, naming the keys") {
  const std::string e = override_error(kGood, {{"timing.cycle_ns", "1000000"}, {"timing.recovery_ns", "100000000"}});
  CHECK_THAT(e, Catch::Contains("recovery 100"));
  CHECK_THAT(e, Catch::Contains("[timing] recovery_ns or heard_ns"));
  CHECK_THAT(override_error(kGood, {{"timing.heard_ns", "-1"}}), Catch::Contains("heard_ns"));
}

TEST_CASE("[security] key_file loads the keys and keeps the trailer's 20 bytes out of the engines' frames") {
  const std::string key = write(std::string(64, 'a') + "\n");
  const std::string path = write(std::string(kGood) + "[limits]\nframe_bytes = 1500\n[security]\nkey_file = " + key + "\n");
  auto r = load_cluster_config(path);
  std::remove(path.c_str());
  std::remove(key.c_str());
  REQUIRE(r.ok());
  REQUIRE(r.value().keys.has_value());
  CHECK(r.value().keys->count == 1);
  CHECK(r.value().key_file == key);
  CHECK(r.value().frame_bytes_on_wire == 1500);
  CHECK(r.value().node.frame_bytes_max == 1480);
}

TEST_CASE("in-band synchronisation keeps its rate window's 20 bytes out of the engines' frames") {
  for (const char* mode : {"inband", "both"}) {
    const ClusterConfig c = load_ok_with(kGood, {{"timing.sync", mode}, {"limits.frame_bytes", "1500"}});
    CHECK(c.frame_bytes_on_wire == 1500);
    CHECK(c.node.frame_bytes_max == 1480);
  }
  for (const char* mode : {"external", "off"})
    CHECK(load_ok_with(kGood, {{"timing.sync", mode}, {"limits.frame_bytes", "1500"}}).node.frame_bytes_max == 1500);
}

TEST_CASE("without [security] frames carry no trailer") {
  const std::string path = write(kGood);
  auto r = load_cluster_config(path);
  std::remove(path.c_str());
  REQUIRE(r.ok());
  CHECK_FALSE(r.value().keys.has_value());
  CHECK(r.value().frame_bytes_on_wire == r.value().node.frame_bytes_max);
}

TEST_CASE("[security] without a usable key file is refused naming the config, the key file and the reason") {
  expect_error(std::string(kGood) + "[security]\n", "[security] key_file: missing (required)");
  expect_error(std::string(kGood) + "[security]\nkey_file = /nonexistent/tob.key\n",
               "[security] key_file: /nonexistent/tob.key: cannot open the key file: No such file");
  const std::string shortkey = write(std::string(63, 'a'));
  expect_error(std::string(kGood) + "[security]\nkey_file = " + shortkey + "\n", "63 characters");
  std::remove(shortkey.c_str());
  const std::string empty = write("");
  expect_error(std::string(kGood) + "[security]\nkey_file = " + empty + "\n", empty + ": empty");
  std::remove(empty.c_str());
  expect_error(std::string(kGood) + "[security]\nkey = x\n", "key");
}

TEST_CASE("[timing] sync chooses what corrects the clock; external by default") {
  using tob::dataplane::ClockSyncMode;
  const ClusterConfig d = load_ok_with(kGood, {});
  CHECK(d.sync == ClockSyncMode::external);  // today's behaviour: the clock source as it is
  CHECK(d.delay_ns == 0);
  CHECK(load_ok_with(kGood, {{"timing.sync", "inband"}}).sync == ClockSyncMode::inband);
  CHECK(load_ok_with(kGood, {{"timing.sync", "external"}}).sync == ClockSyncMode::external);
  CHECK(load_ok_with(kGood, {{"timing.sync", "both"}}).sync == ClockSyncMode::both);
  CHECK(load_ok_with(kGood, {{"timing.sync", "off"}}).sync == ClockSyncMode::off);
  CHECK(std::string(tob::dataplane::to_string(ClockSyncMode::both)) == "both");
  CHECK(load_ok_with(kGood, {{"timing.delay_ns", "40000"}}).delay_ns == 40'000);
  CHECK(d.sync_rate_max_ppm == 500);
  CHECK(load_ok_with(kGood, {{"timing.sync_rate_max_ppm", "200"}}).sync_rate_max_ppm == 200);
}

TEST_CASE("[timing] sync and delay_ns refuse what they cannot mean") {
  std::string m = override_error(kGood, {{"timing.sync", "ptp"}});
  CHECK(m.find("[timing] sync: 'ptp': expected inband, external, both or off") != std::string::npos);
  m = override_error(kGood, {{"timing.sync", "Inband"}});  // case matters, as for every keyword
  CHECK(m.find("[timing] sync: 'Inband'") != std::string::npos);
  m = override_error(kGood, {{"timing.sync", ""}});
  CHECK(m.find("[timing] sync") != std::string::npos);
  m = override_error(kGood, {{"timing.sync_rate_max_ppm", "1001"}});
  CHECK(m.find("[timing] sync_rate_max_ppm: '1001' is outside [0, 1000]") != std::string::npos);
  m = override_error(kGood, {{"timing.delay_ns", "-1"}});
  CHECK(m.find("[timing] delay_ns: '-1' is outside [0, 1000000]") != std::string::npos);
  // 4 ms cycle, 1 ms slots, 100 us margin: a delay of 900 us leaves no room in the slot.
  m = override_error(kGood, {{"timing.delay_ns", "900000"}});
  CHECK(m.find("[timing] delay_ns: 900000: not below a slot (1000000 ns) less the decision margin (100000 ns)") !=
        std::string::npos);
  CHECK(load_ok_with(kGood, {{"timing.delay_ns", "899999"}}).delay_ns == 899'999);
}

TEST_CASE("[timing] ptp4l_socket names ptp4l's management socket, with an external source only") {
  CHECK(load_ok_with(kGood, {}).ptp4l_socket.empty());
  CHECK(load_ok_with(kGood, {{"timing.ptp4l_socket", "/var/run/ptp4l"}}).ptp4l_socket == "/var/run/ptp4l");
  CHECK(load_ok_with(kGood, {{"timing.sync", "both"}, {"timing.ptp4l_socket", "/var/run/ptp4l"}}).ptp4l_socket ==
        "/var/run/ptp4l");
  std::string m = override_error(kGood, {{"timing.ptp4l_socket", "ptp4l"}});
  CHECK(m.find("[timing] ptp4l_socket: 'ptp4l': an absolute path") != std::string::npos);
  CHECK(load_ok_with(kGood, {{"timing.ptp4l_socket", "/run/ptp4l-{node}"}}).ptp4l_socket_for(3) == "/run/ptp4l-3");
  m = override_error(kGood, {{"timing.ptp4l_socket", "/" + std::string(100, 'x')}});
  CHECK(m.find("[timing] ptp4l_socket") != std::string::npos);
  m = override_error(kGood, {{"timing.sync", "inband"}, {"timing.ptp4l_socket", "/var/run/ptp4l"}});
  CHECK(m.find("give it with sync = external or both (sync is inband)") != std::string::npos);
}
