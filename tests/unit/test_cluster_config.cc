// The cluster configuration file: a good file loads into a node configuration; every kind of
// mistake is refused with the file, section, key and reason.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <unistd.h>
#include <string>

#include "dataplane/cluster_config.h"

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
