#include "dataplane/cluster_config.h"

#include "dataplane/ini.h"
#include "dataplane/numbers.h"

#include <rte_cfgfile.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string_view>

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
    "rejoin_silence_cycles", "stall_limit_ns", "window"};
const std::set<std::string_view> kStorageKeys = {"path", "durability"};
const std::set<std::string_view> kLimitsKeys = {"frame_bytes", "payload_bytes", "queue_msgs", "queue_bytes",
                                                "batch_msgs"};
const std::set<std::string_view> kClientsKeys = {"max", "ring", "history"};
const std::set<std::string_view> kNodeKeys = {"mac", "slot_offset_ns", "slot_length_ns"};

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
    const auto dot = name.rfind('.');  // node.1.mac: section node.1, key mac
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

}  // namespace

std::string ClusterConfig::log_path_for(core::NodeId self) const {
  std::string p = log_path;
  for (size_t at = p.find("{node}"); at != std::string::npos; at = p.find("{node}", at))
    p.replace(at, 6, std::to_string(self));
  return p;
}

bool parse_mac(const std::string& text, Mac& out) {
  unsigned b[6];
  char tail;
  if (std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
    return false;
  if (text.size() != 17) return false;
  for (int i = 0; i < 6; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(b[i]);
  return true;
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
    else if (sec.rfind("node.", 0) == 0) {
      char* end = nullptr;
      const long k = std::strtol(sec.c_str() + 5, &end, 10);
      if (end == sec.c_str() + 5 || *end != '\0' || k < 0 || k > 63)
        return rd.error(sec, "", "node sections are [node.K] with K in 0..63");
      if (!node_sections.insert(static_cast<int>(k)).second)
        return rd.error(sec, "", "appears twice (as another spelling of node " + std::to_string(k) + ")");
      keys = &kNodeKeys;
    } else {
      return rd.error(sec, "", "unknown section (known: cluster, timing, limits, clients, storage, node.K)");
    }
    if (auto ok = check_ini_keys(file.get(), path, sec, *keys); !ok) return ok.error();
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
  const int64_t window_d = c.node.otfp_window;
  TRY_INT(window, "timing", "window", 4, 64, &window_d);
  const int64_t wait_d = c.node.two_member_wait_cycles;
  TRY_INT(wait, "timing", "two_member_wait_cycles", 1, 1'000'000, &wait_d);
  TRY_INT(silence, "timing", "rejoin_silence_cycles", 2, 1'000'000, &two);
  TRY_INT(stall, "timing", "stall_limit_ns", 0, INT64_MAX / 4, &zero);
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

  // [clients]: applications attached through include/tob.h.
  const int64_t cmax_d = c.clients_max;
  const int64_t cring_d = c.client_ring;
  const int64_t chist_d = c.history;
  TRY_INT(cmax, "clients", "max", 0, 16, &cmax_d);
  TRY_INT(cring, "clients", "ring", 64, 65536, &cring_d);
  TRY_INT(chist, "clients", "history", 1024, 1 << 20, &chist_d);
  if ((cring & (cring - 1)) != 0) return rd.error("clients", "ring", std::to_string(cring) + " is not a power of two");
  if ((chist & (chist - 1)) != 0)
    return rd.error("clients", "history", std::to_string(chist) + " is not a power of two");
  c.clients_max = static_cast<int>(cmax);
  c.client_ring = static_cast<uint32_t>(cring);
  c.history = static_cast<uint32_t>(chist);

  // [limits]
  core::NodeConfig& n = c.node;
  const int64_t frame_d = static_cast<int64_t>(n.frame_bytes_max);
  const int64_t payload_d = static_cast<int64_t>(n.payload_bytes_max);
  const int64_t qm_d = static_cast<int64_t>(n.queue_msgs_max);
  const int64_t qb_d = static_cast<int64_t>(n.queue_bytes_max);
  const int64_t bm_d = static_cast<int64_t>(n.batch_msgs_max);
  TRY_INT(frame, "limits", "frame_bytes", 64, 9000, &frame_d);
  TRY_INT(payload, "limits", "payload_bytes", 1, 65535, &payload_d);
  TRY_INT(qmsgs, "limits", "queue_msgs", 1, 1 << 24, &qm_d);
  TRY_INT(qbytes, "limits", "queue_bytes", 1, int64_t{1} << 32, &qb_d);
  TRY_INT(bmsgs, "limits", "batch_msgs", 1, 4096, &bm_d);
  n.schedule = sc;
  n.cluster_id = c.cluster_id;
  n.frame_bytes_max = static_cast<size_t>(frame);
  n.payload_bytes_max = static_cast<size_t>(payload);
  n.queue_msgs_max = static_cast<size_t>(qmsgs);
  n.queue_bytes_max = static_cast<size_t>(qbytes);
  n.batch_msgs_max = static_cast<size_t>(bmsgs);
  n.two_member_wait_cycles = static_cast<int>(wait);
  n.rejoin_silence_cycles = static_cast<int>(silence);
  n.stall_limit_ns = stall;
  n.kappa = static_cast<int>(kappa);
  n.otfp_window = static_cast<int>(window);

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
  return c;
}

}  // namespace tob::dataplane
