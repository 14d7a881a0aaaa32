#include "dataplane/port/port.h"

#include <net/if.h>
#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_mbuf_dyn.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace tob::dataplane {

namespace {

std::string why(int rc) { return std::string(rte_strerror(rc < 0 ? -rc : rc)); }

std::string mac_text(const rte_ether_addr& a) {
  Mac m;
  std::memcpy(m.data(), a.addr_bytes, 6);
  return format_mac(m);
}

// The MTU of a kernel interface (in the daemon's network namespace), 0 when unknown.
int kernel_mtu(const char* iface) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  ifreq req{};
  std::snprintf(req.ifr_name, sizeof req.ifr_name, "%s", iface);
  const int rc = ::ioctl(fd, SIOCGIFMTU, &req);
  ::close(fd);
  return rc == 0 ? req.ifr_mtu : 0;
}

PortFrameFacts frame_facts(uint16_t port_id, const rte_eth_dev_info& info) {
  PortFrameFacts f;
  f.ethdev_max_rx_pktlen = info.max_rx_pktlen;
  char name[IF_NAMESIZE] = {};
  if (info.if_index != 0 && if_indextoname(info.if_index, name) != nullptr) {
    f.kernel_iface = name;
    f.kernel_mtu = kernel_mtu(name);
  }
  const std::string driver = info.driver_name != nullptr ? info.driver_name : "";
  if (driver == "net_af_packet") {
    const rte_devargs* da = info.device != nullptr ? rte_dev_devargs(info.device) : nullptr;
    f.af_packet_framesz = af_packet_framesz_of(da != nullptr && da->args != nullptr ? da->args : "");
  }
  f.port = "port " + std::to_string(port_id) + " (" + driver + (f.kernel_iface.empty() ? "" : " on " + f.kernel_iface) + ")";
  return f;
}

}  // namespace

std::string list_ports() {
  std::string s;
  uint16_t id;
  RTE_ETH_FOREACH_DEV(id) {
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(id, &info) != 0) continue;
    s += (s.empty() ? "" : ", ") + std::to_string(id) + " (" + info.driver_name + ")";
  }
  return s.empty() ? "none (give one with EAL --vdev, e.g. net_af_packet0,iface=veth0)" : s;
}

core::Result<PortInfo> probe_port(uint16_t port_id) {
  if (!rte_eth_dev_is_valid_port(port_id))
    return core::Error{"port " + std::to_string(port_id) + " does not exist; ports: " + list_ports()};
  rte_eth_dev_info info{};
  if (int rc = rte_eth_dev_info_get(port_id, &info); rc != 0)
    return core::Error{"port " + std::to_string(port_id) + ": cannot read device info: " + why(rc)};
  PortInfo p;
  p.driver = info.driver_name;
  p.launch_time = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP) != 0;
  p.rx_timestamp = (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP) != 0;
  uint64_t clk = 0;
  p.read_clock = rte_eth_read_clock(port_id, &clk) == 0;
  rte_ether_addr a{};
  if (rte_eth_macaddr_get(port_id, &a) == 0) p.mac = mac_text(a);
  rte_eth_dev_get_mtu(port_id, &p.mtu);
  p.frame = frame_facts(port_id, info);
  return p;
}

core::Result<PortSetup> start_port(uint16_t port_id, const PortProfile& profile, rte_mempool* pool,
                                   const Mac& node_mac, const PortFrameFacts& frame, size_t ether_bytes,
                                   size_t frame_bytes, bool launch_time) {
  const std::string port = "port " + std::to_string(port_id) + ": ";
  rte_eth_dev_info info{};
  if (int rc = rte_eth_dev_info_get(port_id, &info); rc != 0) return core::Error{port + "device info: " + why(rc)};
  rte_eth_conf conf{};
  if (launch_time) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP;
  if (int rc = rte_eth_dev_configure(port_id, 1, 1, &conf); rc != 0)
    return core::Error{port + "configure (1 RX, 1 TX queue" + (launch_time ? ", launch time" : "") + "): " + why(rc)};

  // The frame (TOB payload) must fit the MTU; raise it when the profile allows. A kernel
  // interface's port with frames above ethdev's maximum: the kernel MTU, checked, not set.
  if (auto misfit = frame_misfit(frame, ether_bytes, frame_bytes)) return core::Error{*misfit};
  uint16_t mtu = 0;
  rte_eth_dev_get_mtu(port_id, &mtu);
  const auto need = static_cast<uint16_t>(frame_bytes);
  const uint16_t want = profile.mtu != 0 ? profile.mtu : (mtu < need ? need : 0);
  if (kernel_mtu_governs(frame, frame_bytes)) {
    mtu = 0;  // ethdev's answer (1500 on af_packet) is not the port's; frame_misfit checked the kernel's
  } else if (want != 0 && want != mtu) {
    if (int rc = rte_eth_dev_set_mtu(port_id, want); rc != 0 && want >= need)
      return core::Error{port + "set MTU " + std::to_string(want) + " (frames of " + std::to_string(need) +
                         " bytes need it): " + why(rc)};
    rte_eth_dev_get_mtu(port_id, &mtu);
  }
  if (mtu != 0 && mtu < need)
    return core::Error{port + "MTU " + std::to_string(mtu) + " is below [limits] frame_bytes = " + std::to_string(need)};

  PortSetup s;
  s.rx_desc = profile.rx_desc;
  s.tx_desc = profile.tx_desc;
  if (int rc = rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &s.rx_desc, &s.tx_desc); rc != 0)
    return core::Error{port + "descriptor counts: " + why(rc)};
  const int socket = rte_eth_dev_socket_id(port_id);
  const auto sock = static_cast<unsigned>(socket < 0 ? 0 : socket);
  rte_eth_rxconf rxq = info.default_rxconf;
  if (int rc = rte_eth_rx_queue_setup(port_id, 0, s.rx_desc, sock, &rxq, pool); rc != 0)
    return core::Error{port + "RX queue: " + why(rc)};
  rte_eth_txconf txq = info.default_txconf;
  txq.offloads = conf.txmode.offloads;
  if (int rc = rte_eth_tx_queue_setup(port_id, 0, s.tx_desc, sock, &txq); rc != 0)
    return core::Error{port + "TX queue: " + why(rc)};
  if (launch_time) {
    if (int rc = rte_mbuf_dyn_tx_timestamp_register(&s.ts_offset, &s.ts_flag); rc != 0)
      return core::Error{port + "TX timestamp dynamic field: " + why(rte_errno)};
    s.launch_time = true;
  }

  // The node's address: its frames carry it as source (docs/wire-format.md). Best effort on virtual
  // ports.
  rte_ether_addr addr{};
  std::memcpy(addr.addr_bytes, node_mac.data(), 6);
  rte_ether_addr have{};
  rte_eth_macaddr_get(port_id, &have);
  s.mac_set = rte_is_same_ether_addr(&addr, &have) != 0 || rte_eth_dev_default_mac_addr_set(port_id, &addr) == 0;

  if (int rc = rte_eth_dev_start(port_id); rc != 0) return core::Error{port + "start: " + why(rc)};
  // Cluster frames go to a multicast address: receive all multicast, or everything.
  bool multicast = false;
  if (profile.allmulticast) multicast = rte_eth_allmulticast_enable(port_id) == 0 || rte_eth_allmulticast_get(port_id) == 1;
  if (profile.promiscuous || !multicast) {
    const int rc = rte_eth_promiscuous_enable(port_id);
    if (rc != 0 && rte_eth_promiscuous_get(port_id) != 1 && !multicast) {
      rte_eth_dev_stop(port_id);
      return core::Error{port + "can enable neither all-multicast nor promiscuous reception: " + why(rc)};
    }
  }
  return s;
}

void stop_port(uint16_t port_id) {
  rte_eth_dev_stop(port_id);
  rte_eth_dev_close(port_id);
}

}  // namespace tob::dataplane
