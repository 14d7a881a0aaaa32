// Cluster configuration file (docs/configuration.md, docs/configuration.md): INI read with DPDK's
// rte_cfgfile and validated completely before anything touches the wire. Every error names
// the file, the section and key, and the reason.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/engine.h"
#include "core/ic_node.h"
#include "core/engine.h"
#include "core/result.h"
#include "dataplane/security/key_file.h"
#include "dataplane/shm/shm_layout.h"

namespace tob::dataplane {

using Order = core::Order;
enum class ClockSource : uint8_t { tai, monotonic, ptp };
// [timing] sync (docs/configuration.md "Clock synchronisation: [timing] sync"): what corrects
// this node's global time. external: the clock source is trusted as it is (CLOCK_TAI disciplined
// by phc2sys, a PTP hardware clock, the one kernel clock of the netns cluster); the in-band
// estimate is measured and reported, never applied. inband: the in-band synchronisation corrects
// the node's map (lib/core/clock_sync.h) and its self-check withholds frames. both: in-band
// corrections on top of an externally disciplined source. off: nothing is measured.
enum class ClockSyncMode : uint8_t { off, external, inband, both };
const char* to_string(ClockSyncMode m);

using Mac = std::array<uint8_t, 6>;

// [ic] bounds the daemon adds to core::IcConfig::validate: the IC frames one node sends per
// slot (every copy; the TX ring, the RX ring and the slot must carry them), and the key classes
// (kIcClassesMax, kIcClassPrefixMax: shared with applications in a fixed table, shm_layout.h).
inline constexpr size_t kIcFramesPerSlotMax = 2048;

struct ClusterConfig {
  std::string path;
  std::string name;
  uint16_t cluster_id = 1;
  int nodes = 0;
  Order order = Order::mars;
  Mac multicast_mac{};
  uint16_t vlan = 0;  // 0: untagged
  uint8_t pcp = 5;
  ClockSource clock = ClockSource::tai;
  std::string ptp_device;  // clock = ptp:/dev/ptpN
  ClockSyncMode sync = ClockSyncMode::external;
  int64_t delay_ns = 0;    // [timing] delay_ns: the one-way delay, transmit instant -> receive stamp
  int64_t sync_rate_max_ppm = 500;  // [timing] sync_rate_max_ppm: the in-band rate correction's bound
  std::string ptp4l_socket;  // [timing] ptp4l_socket: ptp4l's management socket ({node}: the node id; sync = external | both)
  int kappa = 2;           // otfp: votes for cycle i travel in cycle i + kappa
  // [storage]: the otfp acceptor log ({node} in the path is replaced by the node id).
  std::string log_path;
  bool log_sync = true;    // durability = sync: votes leave once fdatasync made them durable; none: once written
  std::vector<Mac> node_macs;
  // [clients]: co-located applications (include/tob.h).
  int clients_max = 8;          // attached at once, 0..16
  uint32_t client_ring = 1024;  // deliveries queued per client (power of two)
  uint32_t history = 16384;     // latest deliveries kept for clients that resume (power of two)
  core::NodeConfig node;  // schedule and limits; `self` is set by the caller
  // [ic]: interactive consistency and the key-value store (docs/protocol-ic.md); none without
  // the section. (The daemon's --ic-fault is a test knob, not a file setting.)
  std::optional<core::IcConfig> ic;
  size_t ic_frames_per_slot = 0;  // IC frames a node sends per slot, every copy (0 without [ic])
  // [security]: the cluster key file (docs/configuration.md "[security]"); without the section
  // frames are not authenticated. With it every frame carries a 20-byte trailer within
  // [limits] frame_bytes: the engines fill node.frame_bytes_max = frame_bytes - 20.
  std::string key_file;
  std::optional<security::KeyFile> keys;
  size_t frame_bytes_on_wire = 0;  // [limits] frame_bytes: the TOB payload the port carries

  core::NodeConfig for_node(core::NodeId self) const {
    core::NodeConfig c = node;
    c.self = self;
    return c;
  }
  // log_path with {node} replaced; empty when no log is configured.
  std::string log_path_for(core::NodeId self) const;
  // ptp4l_socket with {node} replaced (each node asks its own ptp4l).
  std::string ptp4l_socket_for(core::NodeId self) const;
};

// SECTION.KEY=VALUE pairs applied over the file before validation (the daemon's --set).
using Overrides = std::vector<std::pair<std::string, std::string>>;
core::Result<ClusterConfig> load_cluster_config(const std::string& path, const Overrides& overrides = {});
// IC frames per slot for an [ic] configuration on `nodes` nodes: every round message of the
// instances that may be in flight at once, one chunk per frame at most, times the copies.
size_t ic_frames_per_slot(const core::IcConfig& ic, int nodes);
bool parse_mac(const std::string& text, Mac& out);
std::string format_mac(const Mac& mac);

}  // namespace tob::dataplane
