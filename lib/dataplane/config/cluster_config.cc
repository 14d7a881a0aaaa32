#include "dataplane/config/cluster_config.h"

#include "core/otfp_limits.h"
#include "core/slot_budget.h"

#include "dataplane/config/ini.h"
#include "dataplane/config/numbers.h"
#include "dataplane/security/auth_trailer.h"

#include <rte_cfgfile.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string_view>
#include <vector>

namespace tob::dataplane {
namespace {

using core::Error;

struct CfgCloser {
  void operator()(rte_cfgfile* f) const { rte_cfgfile_close(f); }
};

// The keys each section accepts; anything else is an error (a typo must not pass silently).
const std::set<std::string_view> kClusterKeys = {"name", "id", "nodes", "order", "multicast_mac", "vlan", "pcp"};
const std::set<std::string_view> kTimingKeys = {
    "clock",         "epoch_ns",        "cycle_ns",        "decision_margin_ns", "precision_ns",
    "copy_gap_ns",   "sends_per_slot",  "kappa",           "two_member_wait_cycles",
    "rejoin_silence_cycles", "stall_limit_ns", "window", "rate_mbps", "heard_ns", "recovery_ns", "retry_ns",
    "stall_budget_ns", "sync", "delay_ns", "ptp4l_socket", "sync_rate_max_ppm"};
const std::set<std::string_view> kStorageKeys = {"path", "durability"};
const std::set<std::string_view> kLimitsKeys = {"frame_bytes", "payload_bytes", "queue_msgs", "queue_bytes",
                                                "batch_msgs", "slot_frames"};
const std::set<std::string_view> kClientsKeys = {"max", "ring", "history"};
const std::set<std::string_view> kSecurityKeys = {"key_file"};
const std::set<std::string_view> kNodeKeys = {"mac", "slot_offset_ns", "slot_length_ns"};
const std::set<std::string_view> kIcKeys = {"f",           "period_cycles", "keys_per_period", "key_bytes",
                                            "value_bytes", "store_keys",    "versions_per_key", "chunk_bytes",
                                            "copies",      "tree_bytes",    "reduction"};
constexpr std::string_view kIcClassKey = "class.";

class Reader {
 public:
  Reader(rte_cfgfile* f, std::string path, const Overrides& overrides)
      : f_(f), path_(std::move(path)), overrides_(overrides) {}

  Error error(const std::string& section, const std::string& key, const std::string& why) const {
    if (key.empty()) return Error{path_ + ": [" + section + "]: " + why};
    std::string from;
    for (const auto& [name, value] : overrides_)
      if (name == section + "." + key) from = " (from --set " + name + "=" + value + ")";
    return Error{path_ + ": [" + section + "] " + key + ": " + why + from};
  }
  const char* get(const char* section, const char* key) const { return rte_cfgfile_get_entry(f_, section, key); }
  bool has(const char* section, const char* key) const { return get(section, key) != nullptr; }

  // Integer in [lo, hi]; `dflt` when absent (required when dflt is nullptr).
  core::Result<int64_t> integer(const char* section, const char* key, int64_t lo, int64_t hi,
                                const int64_t* dflt) const {
    const char* v = get(section, key);
    if (v == nullptr) {
      if (dflt != nullptr) return *dflt;
      return error(section, key, "missing (required)");
    }
    int64_t x = 0;
    if (!parse_int64(v, x)) return error(section, key, std::string("'") + v + "' is not an integer");
    if (x < lo || x > hi)
      return error(section, key, std::string("'") + v + "' is outside [" + std::to_string(lo) + ", " +
                                     std::to_string(hi) + "]");
    return static_cast<int64_t>(x);
  }

 private:
  rte_cfgfile* f_;
  std::string path_;
  const Overrides& overrides_;
};

// Applies SECTION.KEY=VALUE overrides to the loaded file; the usual validation follows.
core::Result<bool> apply_overrides(rte_cfgfile* f, const std::string& path, const Overrides& overrides) {
  for (const auto& [name, value] : overrides) {
    // The section ends at the first dot, [node.K] at the second: node.1.mac is section node.1,
    // key mac; ic.class.temp. is section ic, key class.temp. (key class prefixes may hold dots).
    const auto dot = name.rfind("node.", 0) == 0 ? name.find('.', 5) : name.find('.');
    const std::string section = name.substr(0, dot);
    const std::string key = dot == std::string::npos ? "" : name.substr(dot + 1);
    if (section.empty() || key.empty() || section.size() >= CFG_NAME_LEN || key.size() >= CFG_NAME_LEN ||
        value.size() >= CFG_VALUE_LEN)
      return Error{path + ": --set " + name + "=" + value + ": expected SECTION.KEY=VALUE within INI limits"};
    if (!rte_cfgfile_has_section(f, section.c_str()) && rte_cfgfile_add_section(f, section.c_str()) != 0)
      return Error{path + ": --set " + name + ": cannot add section [" + section + "]"};
    const int rc = rte_cfgfile_has_entry(f, section.c_str(), key.c_str())
                       ? rte_cfgfile_set_entry(f, section.c_str(), key.c_str(), value.c_str())
                       : rte_cfgfile_add_entry(f, section.c_str(), key.c_str(), value.c_str());
    if (rc != 0) return Error{path + ": --set " + name + "=" + value + ": cannot apply"};
  }
  return true;
}

#define TRY_INT(var, ...)                  \
  int64_t var;                             \
  {                                        \
    auto r_ = rd.integer(__VA_ARGS__);     \
    if (!r_) return r_.error();            \
    var = r_.value();                      \
  }

// [ic] (docs/configuration.md): the bounds of core::IcConfig by key, the reductions by key
// class, then IcConfig::validate for what depends on the cluster (N > 3f, frame size, tree size).
core::Result<core::IcConfig> load_ic(rte_cfgfile* f, const Reader& rd, const ClusterConfig& c) {
  core::IcConfig ic;
  const int64_t f_d = (c.nodes - 1) / 3;  // as many faults as the cluster can tolerate
  const int64_t period_d = ic.period_cycles;
  const auto keys_d = static_cast<int64_t>(ic.keys_per_period_max);
  const auto key_d = static_cast<int64_t>(ic.key_bytes_max);
  const auto value_d = static_cast<int64_t>(ic.value_bytes_max);
  const auto store_d = static_cast<int64_t>(ic.store_keys_max);
  const auto versions_d = static_cast<int64_t>(ic.versions_per_key);
  const auto chunk_d = static_cast<int64_t>(std::min(ic.chunk_bytes, c.node.frame_bytes_max - core::kIcFrameOverheadBytes));
  const int64_t copies_d = ic.copies;
  const auto tree_d = static_cast<int64_t>(ic.tree_bytes_max);
  TRY_INT(fv, "ic", "f", 0, core::kEigRoundsMax - 1, &f_d);
  TRY_INT(period, "ic", "period_cycles", 1, 1'000'000, &period_d);
  TRY_INT(keys, "ic", "keys_per_period", 1, static_cast<int64_t>(core::kKvKeysMax), &keys_d);
  TRY_INT(key_bytes, "ic", "key_bytes", 1, static_cast<int64_t>(core::kKvKeyBytesMax), &key_d);
  TRY_INT(value_bytes, "ic", "value_bytes", 1, static_cast<int64_t>(core::kKvValueBytesMax), &value_d);
  TRY_INT(store_keys, "ic", "store_keys", 1, int64_t{1} << 24, &store_d);
  TRY_INT(versions, "ic", "versions_per_key", 1, 1024, &versions_d);
  TRY_INT(chunk, "ic", "chunk_bytes", 1, 65535, &chunk_d);
  TRY_INT(copies, "ic", "copies", 1, 4, &copies_d);
  TRY_INT(tree, "ic", "tree_bytes", 1024, int64_t{1} << 40, &tree_d);
  ic.f = static_cast<int>(fv);
  ic.period_cycles = static_cast<int>(period);
  ic.keys_per_period_max = static_cast<size_t>(keys);
  ic.key_bytes_max = static_cast<size_t>(key_bytes);
  ic.value_bytes_max = static_cast<size_t>(value_bytes);
  ic.store_keys_max = static_cast<size_t>(store_keys);
  ic.versions_per_key = static_cast<size_t>(versions);
  ic.chunk_bytes = static_cast<size_t>(chunk);
  ic.copies = static_cast<int>(copies);
  ic.tree_bytes_max = static_cast<size_t>(tree);
  const std::string names = "majority, median-f64, midpoint-f64, median-i64 or midpoint-i64";
  if (const char* r = rd.get("ic", "reduction"); r != nullptr && !core::parse_reduction(r, ic.default_reduction))
    return rd.error("ic", "reduction", std::string("'") + r + "': expected " + names);

  // class.<prefix> = reduction: keys starting with the prefix (the longest one wins).
  const int entries = std::max(rte_cfgfile_section_num_entries(f, "ic"), 0);
  std::vector<rte_cfgfile_entry> e(static_cast<size_t>(entries));
  rte_cfgfile_section_entries(f, "ic", e.data(), entries);
  for (const rte_cfgfile_entry& entry : e) {
    const std::string name = entry.name;
    if (name.rfind(kIcClassKey, 0) != 0) continue;
    const std::string prefix = name.substr(kIcClassKey.size());
    if (prefix.empty()) return rd.error("ic", name, "give the key prefix after 'class.', e.g. class.temp/ = median-f64");
    // rte_cfgfile keeps CFG_NAME_LEN - 1 characters of a name and drops the rest silently: a
    // name of that length may have been cut, and a shortened prefix would match other keys.
    if (name.size() >= CFG_NAME_LEN - 1)
      return rd.error("ic", name, "key names are cut at " + std::to_string(CFG_NAME_LEN - 1) +
                                      " characters when the file is read: class prefixes of at most " +
                                      std::to_string(CFG_NAME_LEN - 2 - kIcClassKey.size()) + " bytes");
    if (prefix.size() > ic.key_bytes_max)
      return rd.error("ic", name, "the prefix is longer than key_bytes = " + std::to_string(ic.key_bytes_max));
    static_assert(CFG_NAME_LEN - 1 - kIcClassKey.size() <= kIcClassPrefixMax, "every prefix rte_cfgfile reads fits");
    core::IcKeyClass kc;
    kc.prefix = prefix;
    if (!core::parse_reduction(entry.value, kc.reduction))
      return rd.error("ic", name, std::string("'") + entry.value + "': expected " + names);
    ic.key_classes.push_back(kc);
  }
  if (ic.key_classes.size() > kIcClassesMax)
    return rd.error("ic", "", std::to_string(ic.key_classes.size()) + " key classes; at most " +
                                  std::to_string(kIcClassesMax));

  if (auto valid = ic.validate(c.nodes, c.node.frame_bytes_max); !valid)
    return Error{c.path + ": " + valid.error().message, valid.error().code};
  const size_t frames = ic_frames_per_slot(ic, c.nodes);
  if (frames > kIcFramesPerSlotMax)
    return rd.error("ic", "", "the round data needs " + std::to_string(frames) + " frames per slot (" +
                                  std::to_string(ic.copies) + (ic.copies == 1 ? " copy" : " copies") + "); at most " + std::to_string(kIcFramesPerSlotMax) +
                                  ": fewer keys per period, smaller keys or values, larger chunk_bytes, fewer copies or a smaller f");
  return ic;
}

}  // namespace

namespace {
std::string with_node(std::string p, core::NodeId self) {
  for (size_t at = p.find("{node}"); at != std::string::npos; at = p.find("{node}", at))
    p.replace(at, 6, std::to_string(self));
  return p;
}
}  // namespace

std::string ClusterConfig::log_path_for(core::NodeId self) const { return with_node(log_path, self); }

std::string ClusterConfig::ptp4l_socket_for(core::NodeId self) const { return with_node(ptp4l_socket, self); }

bool parse_mac(const std::string& text, Mac& out) {
  unsigned b[6];
  char tail;
  if (std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
    return false;
  if (text.size() != 17) return false;
  for (int i = 0; i < 6; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(b[i]);
  return true;
}

const char* to_string(ClockSyncMode m) {
  switch (m) {
    case ClockSyncMode::off: return "off";
    case ClockSyncMode::external: return "external";
    case ClockSyncMode::inband: return "inband";
    case ClockSyncMode::both: return "both";
  }
  return "unknown";
}

std::string format_mac(const Mac& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return buf;
}

core::Result<ClusterConfig> load_cluster_config(const std::string& path, const Overrides& overrides) {
  std::FILE* probe = std::fopen(path.c_str(), "r");
  if (probe == nullptr) return Error{path + ": cannot open: " + std::strerror(errno)};
  std::fclose(probe);
  std::unique_ptr<rte_cfgfile, CfgCloser> file(rte_cfgfile_load(path.c_str(), 0));
  if (!file) return Error{path + ": not a valid INI file (rte_cfgfile could not parse it)"};
  if (auto ok = apply_overrides(file.get(), path, overrides); !ok) return ok.error();
  Reader rd(file.get(), path, overrides);
  ClusterConfig c;
  c.path = path;

  // Sections: known names only; every key known in its section.
  auto listed = ini_sections(file.get(), path);
  if (!listed) return listed.error();
  const std::vector<std::string>& sections = listed.value();
  std::set<int> node_sections;
  for (const std::string& sec : sections) {
    const std::set<std::string_view>* keys = nullptr;
    if (sec == "cluster") keys = &kClusterKeys;
    else if (sec == "timing") keys = &kTimingKeys;
    else if (sec == "limits") keys = &kLimitsKeys;
    else if (sec == "clients") keys = &kClientsKeys;
    else if (sec == "storage") keys = &kStorageKeys;
    else if (sec == "ic") keys = &kIcKeys;
    else if (sec == "security") keys = &kSecurityKeys;
    else if (sec.rfind("node.", 0) == 0) {
      char* end = nullptr;
      const long k = std::strtol(sec.c_str() + 5, &end, 10);
      if (end == sec.c_str() + 5 || *end != '\0' || k < 0 || k > 63)
        return rd.error(sec, "", "node sections are [node.K] with K in 0..63");
      if (!node_sections.insert(static_cast<int>(k)).second)
        return rd.error(sec, "", "appears twice (as another spelling of node " + std::to_string(k) + ")");
      keys = &kNodeKeys;
    } else {
      return rd.error(sec, "", "unknown section (known: cluster, timing, limits, clients, storage, ic, security, node.K)");
    }
    const std::vector<std::string_view> prefixes = sec == "ic" ? std::vector<std::string_view>{kIcClassKey}
                                                               : std::vector<std::string_view>{};
    if (auto ok = check_ini_keys(file.get(), path, sec, *keys, prefixes); !ok) return ok.error();
  }
  if (!rd.has("cluster", "nodes") && sections.empty()) return Error{path + ": empty configuration"};

  // [cluster]
  const char* name = rd.get("cluster", "name");
  if (name == nullptr || *name == '\0') return rd.error("cluster", "name", "missing (required)");
  c.name = name;
  if (c.name.size() > 31 || c.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos)
    return rd.error("cluster", "name", "'" + c.name + "': use 1..31 letters, digits, '-' or '_' (it names DPDK objects)");
  const int64_t one = 1;
  TRY_INT(id, "cluster", "id", 0, 65535, &one);
  c.cluster_id = static_cast<uint16_t>(id);
  TRY_INT(nodes, "cluster", "nodes", 3, core::kMaxNodes, nullptr);
  c.nodes = static_cast<int>(nodes);
  if (const char* o = rd.get("cluster", "order")) {
    if (std::strcmp(o, "mars") == 0) c.order = Order::mars;
    else if (std::strcmp(o, "otfp") == 0) c.order = Order::otfp;
    else return rd.error("cluster", "order", std::string("'") + o + "': expected mars or otfp");
  }
  const char* mac = rd.get("cluster", "multicast_mac");
  if (mac == nullptr) return rd.error("cluster", "multicast_mac", "missing (required)");
  if (!parse_mac(mac, c.multicast_mac)) return rd.error("cluster", "multicast_mac", std::string("'") + mac + "' is not a MAC address like 01:1b:19:00:00:00");
  if ((c.multicast_mac[0] & 1u) == 0)
    return rd.error("cluster", "multicast_mac", std::string("'") + mac + "' is not a multicast address (the first octet must be odd)");
  const int64_t zero = 0;
  const int64_t five = 5;
  TRY_INT(vlan, "cluster", "vlan", 0, 4094, &zero);
  TRY_INT(pcp, "cluster", "pcp", 0, 7, &five);
  c.vlan = static_cast<uint16_t>(vlan);
  c.pcp = static_cast<uint8_t>(pcp);

  // [timing]
  if (const char* clk = rd.get("timing", "clock")) {
    const std::string s = clk;
    if (s == "tai") c.clock = ClockSource::tai;
    else if (s == "monotonic") c.clock = ClockSource::monotonic;
    else if (s.rfind("ptp:", 0) == 0 && s.size() > 4) {
      c.clock = ClockSource::ptp;
      c.ptp_device = s.substr(4);
    } else return rd.error("timing", "clock", "'" + s + "': expected tai, monotonic or ptp:/dev/ptpN");
  }
  if (const char* m = rd.get("timing", "sync")) {
    const std::string s = m;
    if (s == "inband") c.sync = ClockSyncMode::inband;
    else if (s == "external") c.sync = ClockSyncMode::external;
    else if (s == "both") c.sync = ClockSyncMode::both;
    else if (s == "off") c.sync = ClockSyncMode::off;
    else return rd.error("timing", "sync", "'" + s + "': expected inband, external, both or off");
  }
  if (const char* u = rd.get("timing", "ptp4l_socket")) {
    c.ptp4l_socket = u;
    if (c.ptp4l_socket.empty() || c.ptp4l_socket[0] != '/' || c.ptp4l_socket.size() > 100)
      return rd.error("timing", "ptp4l_socket", "'" + c.ptp4l_socket + "': an absolute path of at most 100 characters, {node} for the node id (ptp4l's uds_address)");
    if (c.sync != ClockSyncMode::external && c.sync != ClockSyncMode::both)
      return rd.error("timing", "ptp4l_socket", std::string("ptp4l is an external source: give it with sync = external or both (sync is ") +
                                                    to_string(c.sync) + ")");
  }
  TRY_INT(epoch_ns, "timing", "epoch_ns", 0, INT64_MAX / 4, &zero);
  TRY_INT(cycle_ns, "timing", "cycle_ns", 1000, 10'000'000'000, nullptr);
  core::ScheduleConfig sc = core::ScheduleConfig::equal_slots(c.nodes, cycle_ns, epoch_ns);
  const int64_t margin_d = sc.decision_margin_ns;
  const int64_t precision_d = sc.precision_ns;
  const int64_t gap_d = sc.copy_gap_ns;
  const int64_t two = 2;
  TRY_INT(margin, "timing", "decision_margin_ns", 0, cycle_ns, &margin_d);
  TRY_INT(precision, "timing", "precision_ns", 0, cycle_ns, &precision_d);
  TRY_INT(gap, "timing", "copy_gap_ns", 0, cycle_ns, &gap_d);
  TRY_INT(sends, "timing", "sends_per_slot", 1, 4, &two);
  TRY_INT(kappa, "timing", "kappa", 1, 16, &two);
  // otfp's stall budget (core/otfp_limits.h): the longest stall of a node's loop the defaults of
  // the timeouts and the tempo window ride out; this kind of host takes a vCPU for up to 13 ms.
  const int64_t budget_d = 13'000'000;
  TRY_INT(budget, "timing", "stall_budget_ns", 0, 1'000'000'000, &budget_d);
  const int64_t window_d = core::otfp::window_for_budget(budget, cycle_ns, static_cast<int>(kappa));
  TRY_INT(window, "timing", "window", 4, 64, &window_d);
  const int64_t wait_d = c.node.two_member_wait_cycles;
  TRY_INT(wait, "timing", "two_member_wait_cycles", 1, 1'000'000, &wait_d);
  TRY_INT(silence, "timing", "rejoin_silence_cycles", 2, 1'000'000, &two);
  TRY_INT(stall, "timing", "stall_limit_ns", 0, INT64_MAX / 4, &zero);
  TRY_INT(rate, "timing", "rate_mbps", 0, 400'000, &zero);
  TRY_INT(delay, "timing", "delay_ns", 0, cycle_ns / 4, &zero);
  c.delay_ns = delay;
  const int64_t rate_max_d = c.sync_rate_max_ppm;
  TRY_INT(rate_max, "timing", "sync_rate_max_ppm", 0, 1000, &rate_max_d);
  c.sync_rate_max_ppm = rate_max;
  // otfp's timeouts as durations (each at least its floor in cycles, core/otfp_limits.h): the heard
  // and recovery timeouts ride out the stall budget by default; at 40 ms cycles the floors (2, 4
  // and 2 cycles) are longer anyway.
  const int64_t heard_d = core::otfp::timeout_for_budget(budget), recovery_d = heard_d, retry_d = 4'000'000;
  TRY_INT(heard, "timing", "heard_ns", 0, 10'000'000'000, &heard_d);
  TRY_INT(recovery, "timing", "recovery_ns", 0, 10'000'000'000, &recovery_d);
  TRY_INT(retry, "timing", "retry_ns", 0, 10'000'000'000, &retry_d);
  sc.decision_margin_ns = margin;
  sc.precision_ns = precision;
  sc.copy_gap_ns = gap;
  sc.sends_per_slot = static_cast<int>(sends);
  c.kappa = static_cast<int>(kappa);

  // [node.K]: every node 0..nodes-1 has a section with its MAC; slots all given or none.
  int with_slots = 0;
  for (int k : node_sections)
    if (k >= c.nodes)
      return rd.error("node." + std::to_string(k), "", "node id outside the cluster ([cluster] nodes = " + std::to_string(c.nodes) + ")");
  c.node_macs.resize(static_cast<size_t>(c.nodes));
  for (int k = 0; k < c.nodes; ++k) {
    const std::string sec = "node." + std::to_string(k);
    if (node_sections.count(k) == 0) return Error{path + ": [" + sec + "]: missing (every node needs a section with its mac)"};
    const char* m = rd.get(sec.c_str(), "mac");
    if (m == nullptr) return rd.error(sec, "mac", "missing (required)");
    if (!parse_mac(m, c.node_macs[static_cast<size_t>(k)]) || (c.node_macs[static_cast<size_t>(k)][0] & 1u) != 0)
      return rd.error(sec, "mac", std::string("'") + m + "' is not a unicast MAC address");
    for (int j = 0; j < k; ++j)
      if (c.node_macs[static_cast<size_t>(j)] == c.node_macs[static_cast<size_t>(k)])
        return rd.error(sec, "mac", "same address as node " + std::to_string(j));
    const bool off = rd.has(sec.c_str(), "slot_offset_ns");
    const bool len = rd.has(sec.c_str(), "slot_length_ns");
    if (off != len) return rd.error(sec, off ? "slot_length_ns" : "slot_offset_ns", "give slot_offset_ns and slot_length_ns together");
    if (off) {
      ++with_slots;
      TRY_INT(o, sec.c_str(), "slot_offset_ns", 0, cycle_ns, nullptr);
      TRY_INT(l, sec.c_str(), "slot_length_ns", 1, cycle_ns, nullptr);
      sc.slots[static_cast<size_t>(k)] = {o, l};
    }
  }
  if (with_slots != 0 && with_slots != c.nodes)
    return Error{path + ": [node.K]: slot_offset_ns/slot_length_ns given for " + std::to_string(with_slots) + " of " +
                 std::to_string(c.nodes) + " nodes; give them for all or none (equal slots)"};
  auto sched = core::Schedule::create(sc);
  if (!sched) return Error{path + ": schedule: " + sched.error().message, sched.error().code};
  // A frame's clock reading lies in its slot after the decision margin: the delay must leave room.
  for (const core::SlotConfig& sl : sc.slots)
    if (c.delay_ns >= sl.length_ns - sc.decision_margin_ns)
      return rd.error("timing", "delay_ns", std::to_string(c.delay_ns) + ": not below a slot (" + std::to_string(sl.length_ns) +
                                                " ns) less the decision margin (" + std::to_string(sc.decision_margin_ns) + " ns)");

  // [limits]
  core::NodeConfig& n = c.node;
  const int64_t frame_d = static_cast<int64_t>(n.frame_bytes_max);
  const int64_t payload_d = static_cast<int64_t>(n.payload_bytes_max);
  const int64_t bm_d = static_cast<int64_t>(n.batch_msgs_max);
  TRY_INT(frame, "limits", "frame_bytes", 64, 9000, &frame_d);
  TRY_INT(payload, "limits", "payload_bytes", 1, 65535, &payload_d);
  TRY_INT(bmsgs, "limits", "batch_msgs", 1, static_cast<int64_t>(core::kBatchMsgsMax), &bm_d);
  // mars holds a batch queued until it is decided a cycle later: a queue of four batches keeps a
  // node from stalling on its own backlog (the defaults, 4096 messages and 1 MiB, unless a larger
  // batch_msgs asks for more).
  const int64_t qm_d = std::max<int64_t>(static_cast<int64_t>(n.queue_msgs_max), 4 * bmsgs);
  const int64_t qb_d = std::max<int64_t>(static_cast<int64_t>(n.queue_bytes_max), 4 * bmsgs * payload);
  TRY_INT(qmsgs, "limits", "queue_msgs", 1, 1 << 24, &qm_d);
  TRY_INT(qbytes, "limits", "queue_bytes", 1, int64_t{1} << 32, &qb_d);
  TRY_INT(slot_frames, "limits", "slot_frames", 0, core::kSlotFramesMax, &zero);

  // [clients]: applications attached through include/tob.h.
  const int64_t cmax_d = c.clients_max;
  const int64_t cring_d = c.client_ring;
  // The history holds four cycles of every node's largest batch (the defaults, 16384 deliveries,
  // unless a larger batch_msgs asks for more): a client that reads a cycle late does not lose
  // what it had not read yet (TOB_EOVERRUN).
  int64_t chist_d = c.history;
  while (chist_d < 4 * c.nodes * bmsgs && chist_d < (1 << 20)) chist_d *= 2;
  TRY_INT(cmax, "clients", "max", 0, 16, &cmax_d);
  TRY_INT(cring, "clients", "ring", 64, 65536, &cring_d);
  TRY_INT(chist, "clients", "history", 1024, 1 << 20, &chist_d);
  if ((cring & (cring - 1)) != 0) return rd.error("clients", "ring", std::to_string(cring) + " is not a power of two");
  if ((chist & (chist - 1)) != 0)
    return rd.error("clients", "history", std::to_string(chist) + " is not a power of two");
  c.clients_max = static_cast<int>(cmax);
  c.client_ring = static_cast<uint32_t>(cring);
  c.history = static_cast<uint32_t>(chist);

  // [security]: the key file is read now, so a bad key stops the daemon before the EAL starts.
  if (rte_cfgfile_has_section(file.get(), "security")) {
    const char* kf = rd.get("security", "key_file");
    if (kf == nullptr || *kf == '\0')
      return rd.error("security", "key_file", "missing (required): the file holding the 256-bit cluster key");
    c.key_file = kf;
    auto keys = security::read_key_file(c.key_file);
    if (!keys) return rd.error("security", "key_file", keys.error().message);
    c.keys = keys.value();
  }
  const size_t trailer = c.keys ? security::kAuthTrailerBytes : 0;
  if (static_cast<size_t>(frame) < core::kMinFrameBytes + trailer)
    return rd.error("limits", "frame_bytes", std::to_string(frame) + " leaves no room for the authentication trailer of [security]");
  // In-band synchronisation applied: the first copy of every slot frame carries the node's rate
  // window (section 14), appended by the daemon; the engine leaves room for it.
  const bool sends_window = c.sync == ClockSyncMode::inband || c.sync == ClockSyncMode::both;
  const size_t window_bytes = sends_window ? core::kClockWindowSectionBytes : 0;
  if (sends_window && static_cast<size_t>(frame) < core::kMinFrameBytes + trailer + window_bytes)
    return rd.error("limits", "frame_bytes", std::to_string(frame) + " leaves no room for the rate window of [timing] sync = " +
                                                 to_string(c.sync) + " (section 14, " + std::to_string(window_bytes) + " bytes)");

  n.schedule = sc;
  n.cluster_id = c.cluster_id;
  c.frame_bytes_on_wire = static_cast<size_t>(frame);
  n.frame_bytes_max = static_cast<size_t>(frame) - trailer - window_bytes;
  if (c.keys) n.frame_flags = core::kFlagAuthenticated;  // the engines mark every frame they encode
  n.payload_bytes_max = static_cast<size_t>(payload);
  n.queue_msgs_max = static_cast<size_t>(qmsgs);
  n.queue_bytes_max = static_cast<size_t>(qbytes);
  n.batch_msgs_max = static_cast<size_t>(bmsgs);
  n.two_member_wait_cycles = static_cast<int>(wait);
  n.rejoin_silence_cycles = static_cast<int>(silence);
  n.stall_limit_ns = stall;
  n.kappa = static_cast<int>(kappa);
  n.otfp_window = static_cast<int>(window);
  n.otfp_heard_ns = heard;
  n.otfp_recovery_ns = recovery;
  n.otfp_retry_ns = retry;
  n.rate_mbps = rate;
  n.slot_frames_max = static_cast<int>(slot_frames);

  // [storage]
  if (const char* p = rd.get("storage", "path")) c.log_path = p;
  if (const char* d = rd.get("storage", "durability")) {
    const std::string s = d;
    if (s == "sync") c.log_sync = true;
    else if (s == "none") c.log_sync = false;
    else return rd.error("storage", "durability", "'" + s + "': expected sync or none");
  }
  if (c.order == Order::otfp && c.log_path.empty())
    return rd.error("storage", "path", "missing: the otfp engine keeps its acceptor state in a log "
                                       "(e.g. path = /var/lib/dpdk-tob/acceptor-{node}.log)");
  auto ok = n.validate();
  if (!ok) return Error{path + ": " + ok.error().message, ok.error().code};

  // [ic]: interactive consistency, only when the section is there.
  if (rte_cfgfile_has_section(file.get(), "ic")) {
    auto ic = load_ic(file.get(), rd, c);
    if (!ic) return ic.error();
    c.ic = std::move(ic.value());
    c.ic_frames_per_slot = ic_frames_per_slot(*c.ic, c.nodes);
    // Its round data shares every slot with the engine's frames.
    n.aux_frames = static_cast<int>(std::min<size_t>(c.ic_frames_per_slot, INT32_MAX));
    if (auto b = n.validate_budget(); !b) return Error{path + ": " + b.error().message + " ([ic] adds " +
                                                       std::to_string(n.aux_frames) + " frames per slot)"};
  }
  return c;
}

size_t ic_frames_per_slot(const core::IcConfig& ic, int nodes) {
  // As core::IcNode provisions them: every round's message of N^(r-1) entries, in chunks.
  const size_t entry = core::kEigEntryHeaderBytes + ic.limits().batch_bytes_max();
  size_t frames = 0;
  size_t level = 1;
  for (int r = 1; r <= ic.f + 1; ++r) {
    frames += core::ic_chunk_count(level * entry, ic.chunk_bytes);
    level *= static_cast<size_t>(nodes);
  }
  return frames * static_cast<size_t>(ic.copies);
}

}  // namespace tob::dataplane
