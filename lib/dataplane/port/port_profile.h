// Port profiles (drivers_cfg/*.ini): how the daemon sets up a port of one PMD or NIC family.
// Read with rte_cfgfile and validated like cluster.ini: unknown keys and bad values are errors
// that name the file, the key and the reason.
//
//   [profile] driver (rte_eth_dev_info driver name, required), description, vdev (EAL --vdev
//             template for scripts, {iface} is replaced)
//   [port]    rx_desc, tx_desc, rx_burst, allmulticast, promiscuous, mtu, frame_bytes_max (the
//             largest [limits] frame_bytes this family carries; 0: what the port reports)
//   [timing]  tx_method (auto|spin|sleep|hybrid|nic: used when --tx-method auto),
//             launch_time (the family offers RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP),
//             rx_hw_timestamp (the family offers RTE_ETH_RX_OFFLOAD_TIMESTAMP)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "dataplane/config/options.h"

namespace tob::dataplane {

struct PortProfile {
  std::string path;
  std::string name;         // file name without .ini
  std::string driver;
  std::string description;
  std::string vdev;
  uint16_t rx_desc = 1024;
  uint16_t tx_desc = 1024;
  uint16_t rx_burst = 32;
  bool allmulticast = true;
  bool promiscuous = false;
  uint16_t mtu = 0;          // 0: leave the port's MTU
  uint16_t frame_bytes_max = 0;  // largest [limits] frame_bytes; 0: the port's own limits only
  TxMethod tx_method = TxMethod::automatic;
  bool launch_time = false;
  bool rx_hw_timestamp = false;
};

core::Result<PortProfile> load_port_profile(const std::string& path);
// A profile by name (`af_packet`) or path (contains '/' or ends in .ini) in `dir`.
core::Result<PortProfile> find_port_profile(const std::string& name_or_path, const std::string& dir);
// The profile whose `driver` equals `driver_name`; an error lists the profiles in `dir`.
core::Result<PortProfile> profile_for_driver(const std::string& driver_name, const std::string& dir);
// The profile directory: $TOB_DRIVERS_CFG when set, else the one in the source tree.
std::string default_profile_dir();

}  // namespace tob::dataplane
