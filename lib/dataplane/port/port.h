// Port set-up from a profile (docs/architecture.md "Dataplane", drivers_cfg/): one RX and one TX
// queue, descriptor counts adjusted to the device's limits, multicast reception, the node's MAC,
// and the launch-time offload (RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP) when asked for and offered.
// Everything here runs once at start-up; errors are values with the reason.
#pragma once

#include <cstdint>
#include <string>

#include <rte_mempool.h>

#include "core/result.h"
#include "dataplane/config/cluster_config.h"
#include "dataplane/port/port_frame.h"
#include "dataplane/port/port_profile.h"

namespace tob::dataplane {

struct PortInfo {
  std::string driver;
  std::string mac;
  bool launch_time = false;     // the port offers SEND_ON_TIMESTAMP
  bool rx_timestamp = false;    // the port offers RX timestamps
  bool read_clock = false;      // rte_eth_read_clock works (needed to map TSC to the NIC clock)
  uint16_t mtu = 0;
  PortFrameFacts frame;         // how large a frame it carries (profile_frame_max: the daemon's)
};

// Which ports exist and what the chosen one offers. Before configuration.
core::Result<PortInfo> probe_port(uint16_t port_id);
std::string list_ports();

struct PortSetup {
  uint16_t rx_desc = 0;
  uint16_t tx_desc = 0;
  bool launch_time = false;
  int ts_offset = -1;
  uint64_t ts_flag = 0;
  bool mac_set = false;         // the node's MAC is the port's address now
};

// `frame` (PortInfo::frame with the profile's maximum) decides how the frame size is checked:
// through ethdev's MTU, or (a kernel interface's port, frames above ethdev's maximum) against
// the kernel MTU without calling rte_eth_dev_set_mtu (port_frame.h).
core::Result<PortSetup> start_port(uint16_t port_id, const PortProfile& profile, rte_mempool* pool,
                                   const Mac& node_mac, const PortFrameFacts& frame, size_t ether_bytes,
                                   size_t frame_bytes, bool launch_time);
void stop_port(uint16_t port_id);

}  // namespace tob::dataplane
