#include "dataplane/port/port_profile.h"

#include "dataplane/config/ini.h"
#include "dataplane/config/numbers.h"

#include <dirent.h>
#include <rte_cfgfile.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string_view>

#ifndef TOB_DRIVERS_CFG_DIR
#define TOB_DRIVERS_CFG_DIR "drivers_cfg"
#endif

namespace tob::dataplane {
namespace {

using core::Error;

struct CfgCloser {
  void operator()(rte_cfgfile* f) const { rte_cfgfile_close(f); }
};

const std::set<std::string_view> kProfileKeys = {"driver", "description", "vdev"};
const std::set<std::string_view> kPortKeys = {"rx_desc", "tx_desc", "rx_burst", "allmulticast", "promiscuous", "mtu", "frame_bytes_max"};
const std::set<std::string_view> kTimingKeys = {"tx_method", "launch_time", "rx_hw_timestamp"};

struct Ctx {
  rte_cfgfile* f;
  const std::string& path;
  Error error(const char* sec, const char* key, const std::string& why) const {
    return Error{path + ": [" + sec + "] " + key + ": " + why};
  }
};

core::Result<bool> boolean(const Ctx& c, const char* sec, const char* key, bool dflt) {
  const char* v = rte_cfgfile_get_entry(c.f, sec, key);
  if (v == nullptr) return dflt;
  const std::string s = v;
  if (s == "yes" || s == "true" || s == "1") return true;
  if (s == "no" || s == "false" || s == "0") return false;
  return c.error(sec, key, "'" + s + "': expected yes or no");
}

core::Result<uint16_t> number(const Ctx& c, const char* sec, const char* key, long lo, long hi, uint16_t dflt) {
  const char* v = rte_cfgfile_get_entry(c.f, sec, key);
  if (v == nullptr) return dflt;
  int64_t x = 0;
  if (!parse_int64(v, x) || x < lo || x > hi)
    return c.error(sec, key, std::string("'") + v + "': expected an integer in [" + std::to_string(lo) + ", " +
                                 std::to_string(hi) + "]");
  return static_cast<uint16_t>(x);
}

#define TRY(var, expr)       \
  auto var##_r = (expr);     \
  if (!var##_r) return var##_r.error(); \
  const auto var = var##_r.value();

}  // namespace

std::string default_profile_dir() {
  const char* env = std::getenv("TOB_DRIVERS_CFG");
  return env != nullptr && *env != '\0' ? env : TOB_DRIVERS_CFG_DIR;
}

core::Result<PortProfile> load_port_profile(const std::string& path) {
  std::FILE* probe = std::fopen(path.c_str(), "r");
  if (probe == nullptr) return Error{path + ": cannot open port profile: " + std::strerror(errno)};
  std::fclose(probe);
  std::unique_ptr<rte_cfgfile, CfgCloser> file(rte_cfgfile_load(path.c_str(), 0));
  if (!file) return Error{path + ": not a valid INI file"};
  const Ctx c{file.get(), path};

  auto sections = ini_sections(file.get(), path);
  if (!sections) return sections.error();
  for (const std::string& sec : sections.value()) {
    const std::set<std::string_view>* keys = sec == "profile" ? &kProfileKeys
                                             : sec == "port"  ? &kPortKeys
                                             : sec == "timing" ? &kTimingKeys
                                                               : nullptr;
    if (keys == nullptr) return Error{path + ": [" + sec + "]: unknown section (known: profile, port, timing)"};
    if (auto ok = check_ini_keys(file.get(), path, sec, *keys); !ok) return ok.error();
  }

  PortProfile p;
  p.path = path;
  const auto slash = path.find_last_of('/');
  p.name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  if (p.name.size() > 4 && p.name.compare(p.name.size() - 4, 4, ".ini") == 0) p.name.resize(p.name.size() - 4);
  const char* driver = rte_cfgfile_get_entry(file.get(), "profile", "driver");
  if (driver == nullptr || *driver == '\0') return c.error("profile", "driver", "missing (required)");
  p.driver = driver;
  if (const char* d = rte_cfgfile_get_entry(file.get(), "profile", "description")) p.description = d;
  if (const char* v = rte_cfgfile_get_entry(file.get(), "profile", "vdev")) p.vdev = v;
  TRY(rx_desc, number(c, "port", "rx_desc", 64, 32768, p.rx_desc));
  TRY(tx_desc, number(c, "port", "tx_desc", 64, 32768, p.tx_desc));
  TRY(rx_burst, number(c, "port", "rx_burst", 1, 512, p.rx_burst));
  TRY(mtu, number(c, "port", "mtu", 0, 9600, p.mtu));
  TRY(frame_max, number(c, "port", "frame_bytes_max", 0, 9000, p.frame_bytes_max));
  TRY(allmulti, boolean(c, "port", "allmulticast", p.allmulticast));
  TRY(promisc, boolean(c, "port", "promiscuous", p.promiscuous));
  TRY(launch, boolean(c, "timing", "launch_time", p.launch_time));
  TRY(rxts, boolean(c, "timing", "rx_hw_timestamp", p.rx_hw_timestamp));
  p.rx_desc = rx_desc;
  p.tx_desc = tx_desc;
  p.rx_burst = rx_burst;
  p.mtu = mtu;
  p.frame_bytes_max = frame_max;
  p.allmulticast = allmulti;
  p.promiscuous = promisc;
  p.launch_time = launch;
  p.rx_hw_timestamp = rxts;
  if (const char* m = rte_cfgfile_get_entry(file.get(), "timing", "tx_method")) {
    const auto method = parse_tx_method(m);
    if (!method) return c.error("timing", "tx_method", std::string("'") + m + "': expected auto, spin, sleep, hybrid or nic");
    p.tx_method = *method;
  }
  return p;
}

core::Result<PortProfile> find_port_profile(const std::string& name_or_path, const std::string& dir) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 4 && name_or_path.compare(name_or_path.size() - 4, 4, ".ini") == 0);
  return load_port_profile(is_path ? name_or_path : dir + "/" + name_or_path + ".ini");
}

core::Result<PortProfile> profile_for_driver(const std::string& driver_name, const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return Error{dir + ": cannot read the profile directory: " + std::strerror(errno)};
  std::vector<std::string> files;
  while (const dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".ini") == 0) files.push_back(n);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  std::string known;
  for (const std::string& f : files) {
    auto p = load_port_profile(dir + "/" + f);
    if (!p) return p.error();
    if (p.value().driver == driver_name) return p;
    known += (known.empty() ? "" : ", ") + p.value().driver;
  }
  return Error{"no port profile in " + dir + " for driver " + driver_name + " (profiles exist for: " + known +
               "); give one with --profile"};
}

}  // namespace tob::dataplane
