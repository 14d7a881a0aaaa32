// Port profiles (drivers_cfg/*.ini): the shipped profiles load and are found by name, path and
// driver; a broken profile is refused with the file, the key and the reason.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <map>
#include <vector>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>

#include "dataplane/port/port_frame.h"
#include "dataplane/port/port_profile.h"

#ifndef TOB_DRIVERS_CFG_DIR
#error "the test needs -DTOB_DRIVERS_CFG_DIR (see tests/unit/meson.build)"
#endif

using namespace tob::dataplane;
namespace fs = std::filesystem;

namespace {

const std::string kDir = TOB_DRIVERS_CFG_DIR;

const char* kMinimal = "[profile]\ndriver = net_test\n";

// A scratch directory of its own per test case, removed at the end.
class TempDir {
 public:
  TempDir() {
    static int n = 0;
    path_ = fs::temp_directory_path() / ("tob-profile-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string dir() const { return path_.string(); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (path_ / name).string();
    std::ofstream(p) << text;
    return p;
  }

 private:
  fs::path path_;
};

PortProfile load_ok(const std::string& path) {
  auto r = load_port_profile(path);
  INFO("error: " << (r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  return r.value();
}

// The profile text is refused; the message starts with the file and contains `needle`.
void expect_error(const std::string& text, const std::string& needle) {
  TempDir t;
  const std::string path = t.write("bad.ini", text);
  auto r = load_port_profile(path);
  INFO("profile:\n" << text);
  REQUIRE_FALSE(r.ok());
  INFO("message: " << r.error().message);
  CHECK(r.error().message.rfind(path + ": ", 0) == 0);
  CHECK(r.error().message.find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("the af_packet profile loads with its documented settings") {
  const PortProfile p = load_ok(kDir + "/af_packet.ini");
  CHECK(p.path == kDir + "/af_packet.ini");
  CHECK(p.name == "af_packet");
  CHECK(p.driver == "net_af_packet");
  CHECK_FALSE(p.description.empty());
  CHECK(p.vdev.rfind("net_af_packet0,iface={iface}", 0) == 0);
  CHECK(p.rx_desc == 1024);
  CHECK(p.tx_desc == 1024);
  CHECK(p.rx_burst == 32);
  CHECK(p.allmulticast);
  CHECK_FALSE(p.promiscuous);
  CHECK(p.mtu == 0);
  CHECK(p.tx_method == TxMethod::spin);
  CHECK_FALSE(p.launch_time);
  CHECK_FALSE(p.rx_hw_timestamp);
}

TEST_CASE("the tap, ring and null profiles load") {
  const PortProfile tap = load_ok(kDir + "/tap.ini");
  CHECK(tap.name == "tap");
  CHECK(tap.driver == "net_tap");
  CHECK(tap.vdev == "net_tap0,iface={iface}");
  CHECK(tap.rx_desc == 512);
  CHECK(tap.tx_desc == 512);
  CHECK(tap.promiscuous);
  CHECK(tap.allmulticast);

  const PortProfile ring = load_ok(kDir + "/ring.ini");
  CHECK(ring.name == "ring");
  CHECK(ring.driver == "net_ring");
  CHECK(ring.vdev == "net_ring0");

  const PortProfile null = load_ok(kDir + "/null.ini");
  CHECK(null.name == "null");
  CHECK(null.driver == "net_null");
  CHECK(null.vdev == "net_null0,size=64");
  CHECK(null.tx_method == TxMethod::spin);
}

TEST_CASE("every shipped profile loads, and a driver finds the first of its profiles in name order") {
  std::map<std::string, std::string> first_of;  // driver -> its first profile by file name
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kDir))
    if (entry.path().extension() == ".ini") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    const PortProfile p = load_ok(f.string());
    INFO(f);
    CHECK(p.name == f.stem().string());
    first_of.emplace(p.driver, p.name);
  }
  CHECK(files.size() >= 5);
  for (const auto& [driver, name] : first_of) {
    auto found = profile_for_driver(driver, kDir);
    REQUIRE(found.ok());
    CHECK(found.value().name == name);
  }
  for (const char* d : {"net_af_packet", "net_tap", "net_ring", "net_null"}) CHECK(first_of.count(d) == 1);
  CHECK(first_of["net_af_packet"] == "af_packet");  // the jumbo variant only when asked for
}

TEST_CASE("the af_packet profiles state the largest frame they carry, and the jumbo one's ring slots hold it") {
  const PortProfile std_ = load_ok(kDir + "/af_packet.ini");
  CHECK(std_.frame_bytes_max == 1500);
  const PortProfile jumbo = load_ok(kDir + "/af_packet_jumbo.ini");
  CHECK(jumbo.driver == "net_af_packet");
  CHECK(jumbo.frame_bytes_max == 9000);
  const std::string args = jumbo.vdev.substr(jumbo.vdev.find(',') + 1);
  const uint32_t framesz = af_packet_framesz_of(args);
  CHECK(af_packet_frame_max(framesz, 18) >= 9000);  // with a VLAN tag too
}

TEST_CASE("a frame_bytes_max out of range is refused with the key") {
  TempDir d;
  const std::string f = d.write("bad.ini", std::string(kMinimal) + "[port]\nframe_bytes_max = 9001\n");
  auto r = load_port_profile(f);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("[port] frame_bytes_max") && Catch::Contains("9001"));
}

TEST_CASE("the profile for a driver is found by the driver's name") {
  auto r = profile_for_driver("net_af_packet", kDir);
  REQUIRE(r.ok());
  CHECK(r.value().name == "af_packet");
  CHECK(r.value().path == kDir + "/af_packet.ini");
  r = profile_for_driver("net_tap", kDir);
  REQUIRE(r.ok());
  CHECK(r.value().name == "tap");
}

TEST_CASE("an unknown driver is refused with the drivers that have profiles") {
  auto r = profile_for_driver("net_bogus", kDir);
  REQUIRE_FALSE(r.ok());
  const std::string& m = r.error().message;
  INFO("message: " << m);
  CHECK(m.find("net_bogus") != std::string::npos);
  CHECK(m.find(kDir) != std::string::npos);
  for (const char* d : {"net_af_packet", "net_tap", "net_ring", "net_null"}) CHECK(m.find(d) != std::string::npos);
  CHECK(m.find("--profile") != std::string::npos);
  // Matching is exact: a prefix or another case is not the driver.
  CHECK_FALSE(profile_for_driver("net_af", kDir).ok());
  CHECK_FALSE(profile_for_driver("NET_TAP", kDir).ok());
  CHECK_FALSE(profile_for_driver("", kDir).ok());
}

TEST_CASE("profile_for_driver reports a missing directory and a broken profile in it") {
  auto r = profile_for_driver("net_tap", "/nonexistent/drivers_cfg");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.rfind("/nonexistent/drivers_cfg: cannot read the profile directory", 0) == 0);

  TempDir t;
  t.write("a.ini", "[profile]\ndriver = net_a\n");
  const std::string broken = t.write("b.ini", "[profile]\ndriver = net_b\n[port]\nrx_desc = 1\n");
  t.write("notes.txt", "not a profile");
  r = profile_for_driver("net_a", t.dir());
  REQUIRE(r.ok());
  CHECK(r.value().name == "a");
  r = profile_for_driver("net_c", t.dir());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.rfind(broken + ": [port] rx_desc", 0) == 0);

  TempDir empty;
  r = profile_for_driver("net_a", empty.dir());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("no port profile in " + empty.dir() + " for driver net_a") != std::string::npos);
}

TEST_CASE("find_port_profile takes a name in the directory or a path") {
  auto r = find_port_profile("af_packet", kDir);
  REQUIRE(r.ok());
  CHECK(r.value().driver == "net_af_packet");
  CHECK(r.value().path == kDir + "/af_packet.ini");

  // A path (with '/', or ending in .ini) ignores the directory.
  r = find_port_profile(kDir + "/ring.ini", "/nonexistent");
  REQUIRE(r.ok());
  CHECK(r.value().driver == "net_ring");
  TempDir t;
  const std::string own = t.write("mine.ini", "[profile]\ndriver = net_mine\n");
  r = find_port_profile(own, kDir);
  REQUIRE(r.ok());
  CHECK(r.value().name == "mine");
  CHECK(r.value().driver == "net_mine");

  r = find_port_profile("nope", kDir);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.rfind(kDir + "/nope.ini: cannot open port profile", 0) == 0);
  r = find_port_profile("/nonexistent/x.ini", kDir);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.rfind("/nonexistent/x.ini: cannot open port profile", 0) == 0);
}

TEST_CASE("default_profile_dir is $TOB_DRIVERS_CFG when set, else the source tree's") {
  const char* saved = std::getenv("TOB_DRIVERS_CFG");
  const std::string saved_value = saved != nullptr ? saved : "";
  ::setenv("TOB_DRIVERS_CFG", "/opt/tob/profiles", 1);
  CHECK(default_profile_dir() == "/opt/tob/profiles");
  ::setenv("TOB_DRIVERS_CFG", "", 1);
  CHECK(default_profile_dir() == kDir);
  ::unsetenv("TOB_DRIVERS_CFG");
  CHECK(default_profile_dir() == kDir);
  if (saved != nullptr) ::setenv("TOB_DRIVERS_CFG", saved_value.c_str(), 1);
}

TEST_CASE("a profile with only a driver takes the defaults") {
  TempDir t;
  const PortProfile p = load_ok(t.write("min.ini", kMinimal));
  CHECK(p.name == "min");
  CHECK(p.driver == "net_test");
  CHECK(p.description.empty());
  CHECK(p.vdev.empty());
  CHECK(p.rx_desc == 1024);
  CHECK(p.tx_desc == 1024);
  CHECK(p.rx_burst == 32);
  CHECK(p.allmulticast);
  CHECK_FALSE(p.promiscuous);
  CHECK(p.mtu == 0);
  CHECK(p.tx_method == TxMethod::automatic);
  CHECK_FALSE(p.launch_time);
  CHECK_FALSE(p.rx_hw_timestamp);
}

TEST_CASE("every key of a profile is read") {
  TempDir t;
  const PortProfile p = load_ok(t.write("full.ini",
                                        "[profile]\ndriver = net_ice\ndescription = E810\nvdev = none\n"
                                        "[port]\nrx_desc = 64\ntx_desc = 32768\nrx_burst = 512\nallmulticast = no\n"
                                        "promiscuous = true\nmtu = 9600\n"
                                        "[timing]\ntx_method = nic\nlaunch_time = 1\nrx_hw_timestamp = yes\n"));
  CHECK(p.driver == "net_ice");
  CHECK(p.description == "E810");
  CHECK(p.vdev == "none");
  CHECK(p.rx_desc == 64);
  CHECK(p.tx_desc == 32768);
  CHECK(p.rx_burst == 512);
  CHECK_FALSE(p.allmulticast);
  CHECK(p.promiscuous);
  CHECK(p.mtu == 9600);
  CHECK(p.tx_method == TxMethod::nic);
  CHECK(p.launch_time);
  CHECK(p.rx_hw_timestamp);
}

TEST_CASE("booleans accept yes/no, true/false and 1/0; tx_method every method name") {
  TempDir t;
  const std::pair<const char*, bool> spellings[] = {{"yes", true}, {"true", true}, {"1", true},
                                                    {"no", false}, {"false", false}, {"0", false}};
  for (const auto& [text, value] : spellings) {
    INFO(text);
    const PortProfile p = load_ok(t.write("b.ini", std::string(kMinimal) + "[port]\npromiscuous = " + text +
                                                       "\nallmulticast = " + text + "\n[timing]\nlaunch_time = " +
                                                       text + "\nrx_hw_timestamp = " + text + "\n"));
    CHECK(p.promiscuous == value);
    CHECK(p.allmulticast == value);
    CHECK(p.launch_time == value);
    CHECK(p.rx_hw_timestamp == value);
  }
  const std::pair<const char*, TxMethod> methods[] = {{"auto", TxMethod::automatic}, {"spin", TxMethod::spin},
                                                      {"sleep", TxMethod::sleep},    {"hybrid", TxMethod::hybrid},
                                                      {"nic", TxMethod::nic}};
  for (const auto& [text, method] : methods) {
    INFO(text);
    CHECK(load_ok(t.write("m.ini", std::string(kMinimal) + "[timing]\ntx_method = " + text + "\n")).tx_method == method);
  }
}

TEST_CASE("numbers accept their bounds and 0x hex") {
  TempDir t;
  PortProfile p = load_ok(t.write("n.ini", std::string(kMinimal) +
                                               "[port]\nrx_desc = 32768\ntx_desc = 64\nrx_burst = 1\nmtu = 0\n"));
  CHECK(p.rx_desc == 32768);
  CHECK(p.tx_desc == 64);
  CHECK(p.rx_burst == 1);
  CHECK(p.mtu == 0);
  p = load_ok(t.write("h.ini", std::string(kMinimal) + "[port]\nrx_desc = 0x400\nrx_burst = 0x20\n"));
  CHECK(p.rx_desc == 1024);
  CHECK(p.rx_burst == 32);
}

TEST_CASE("profile mistakes name the file, section, key and reason") {
  const std::string m = kMinimal;
  expect_error(m + "[ports]\nrx_desc = 1024\n", "[ports]: unknown section (known: profile, port, timing)");
  expect_error(m + "[Port]\nrx_desc = 1024\n", "[Port]: unknown section");
  expect_error(m + "[port]\nrx_ring = 1024\n", "[port] rx_ring: unknown key");
  expect_error(m + "[timing]\nlaunch = yes\n", "[timing] launch: unknown key");
  expect_error("[profile]\ndriver = net_x\nname = x\n", "[profile] name: unknown key");
  expect_error(m + "[port]\nrx_desc = 1024\nrx_desc = 512\n", "[port] rx_desc: given twice");
  expect_error("[profile]\ndescription = no driver\n", "[profile] driver: missing (required)");
  expect_error("[port]\nrx_desc = 1024\n", "[profile] driver: missing (required)");
  expect_error(m + "[port]\nrx_desc = 10\n", "[port] rx_desc: '10': expected an integer in [64, 32768]");
  expect_error(m + "[port]\nrx_desc = 32769\n", "[port] rx_desc: '32769'");
  expect_error(m + "[port]\ntx_desc = 63\n", "[port] tx_desc: '63'");
  expect_error(m + "[port]\ntx_desc = 1e3\n", "[port] tx_desc: '1e3'");
  expect_error(m + "[port]\nrx_burst = abc\n", "[port] rx_burst: 'abc': expected an integer in [1, 512]");
  expect_error(m + "[port]\nrx_burst = 0\n", "[port] rx_burst: '0'");
  expect_error(m + "[port]\nrx_burst = 513\n", "[port] rx_burst: '513'");
  expect_error(m + "[port]\nrx_burst = 32 frames\n", "[port] rx_burst: '32 frames'");
  expect_error(m + "[port]\nmtu = 9601\n", "[port] mtu: '9601'");
  expect_error(m + "[port]\nmtu = -1\n", "[port] mtu: '-1'");
  expect_error(m + "[port]\nrx_desc = 99999999999999999999\n", "[port] rx_desc:");
  expect_error(m + "[port]\nallmulticast = maybe\n", "[port] allmulticast: 'maybe': expected yes or no");
  expect_error(m + "[port]\npromiscuous = 2\n", "[port] promiscuous: '2'");
  expect_error(m + "[timing]\nlaunch_time = on\n", "[timing] launch_time: 'on'");
  expect_error(m + "[timing]\nrx_hw_timestamp = yes please\n", "[timing] rx_hw_timestamp: 'yes please'");
  expect_error(m + "[timing]\ntx_method = fast\n", "[timing] tx_method: 'fast': expected auto, spin, sleep, hybrid or nic");
  expect_error(m + "[timing]\ntx_method = automatic\n", "[timing] tx_method: 'automatic'");
  expect_error(m + "[timing]\ntx_method = spin,sleep\n", "[timing] tx_method: 'spin,sleep'");
  // rte_cfgfile itself refuses a key outside any section and an empty value.
  expect_error("driver = net_x\n[profile]\ndriver = net_x\n", "not a valid INI file");
  expect_error("[profile]\ndriver =\n", "not a valid INI file");
  expect_error(m + "[port]\nrx_burst =\n", "not a valid INI file");
  expect_error(m + "[port]\npromiscuous =\n", "not a valid INI file");
}

TEST_CASE("a missing profile file is reported, not crashed on") {
  auto r = load_port_profile("/nonexistent/profile.ini");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.rfind("/nonexistent/profile.ini: cannot open port profile", 0) == 0);
}

TEST_CASE("a profile section given twice is refused") {
  expect_error(std::string(kMinimal) + "[port]\nrx_desc = 1024\n[port]\nrx_desc = 10\nbogus = 1\n",
               "[port]: appears twice");
}

TEST_CASE("profile numbers with a leading zero are decimal") {
  TempDir t;
  const PortProfile p = load_ok(t.write("zero.ini", std::string(kMinimal) + "[port]\nrx_desc = 0200\n"));
  CHECK(p.rx_desc == 200);  // not octal 128
}
