// How large a frame a port carries (docs/operations.md "Jumbo frames"): the facts the daemon reads
// from the port before it starts it, and the one check that says whether `[limits] frame_bytes`
// fits them, with what to change when it does not.
//
// DPDK 22.11's net_af_packet reports a maximum frame of 1518 bytes to ethdev whatever the kernel
// interface allows, so `rte_eth_dev_set_mtu` above 1500 fails in ethdev before the PMD is asked,
// and `rte_eth_dev_get_mtu` answers 1500. Its real limits are the kernel interface's MTU (the
// kernel refuses to send a longer frame) and the vdev's `framesz` (the PMD silently drops a
// longer TX frame and the kernel truncates a longer RX frame). For a port bound to a kernel
// interface (af_packet, tap) whose frame is longer than ethdev's maximum, the daemon therefore
// checks the kernel MTU itself and never calls `rte_eth_dev_set_mtu`; it does not set the kernel
// MTU either (the veth's peer and the bridge need it too: scripts/cluster.sh TOB_MTU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace tob::dataplane {

struct PortFrameFacts {
  std::string port;                  // "port 0 (net_af_packet on veth0)", for messages
  uint32_t ethdev_max_rx_pktlen = 0; // rte_eth_dev_info.max_rx_pktlen (Ethernet frame, with header and FCS)
  std::string kernel_iface;          // the kernel interface behind the port, "" when none
  int kernel_mtu = 0;                // its MTU (SIOCGIFMTU), 0 when unknown
  uint32_t af_packet_framesz = 0;    // net_af_packet's `framesz` (vdev argument or its default), else 0
  uint32_t profile_frame_max = 0;    // the profile's [port] frame_bytes_max, 0 when it sets none
};

// The largest TOB frame (header to CRC, docs/wire-format.md) a net_af_packet ring slot of
// `framesz` bytes carries both ways, after `ether_bytes` of Ethernet header.
size_t af_packet_frame_max(uint32_t framesz, size_t ether_bytes);

// The PMD's own default when the vdev names no framesz (rte_eth_af_packet.c, 22.11).
inline constexpr uint32_t kAfPacketDefaultFramesz = 2048;

// True when the frame is longer than ethdev lets the port configure and the port is a kernel
// interface's: its MTU is the kernel's, checked instead of set.
bool kernel_mtu_governs(const PortFrameFacts& f, size_t frame_bytes);

// Why `frame_bytes` (with `ether_bytes` of Ethernet header) cannot go through this port, with the
// setting to change; nullopt when it fits. `kernel_mtu_governs` decides whether the kernel MTU is
// part of the check (otherwise ethdev's MTU is, in start_port).
std::optional<std::string> frame_misfit(const PortFrameFacts& f, size_t ether_bytes, size_t frame_bytes);

// The smallest mbuf data room the port's RX queue accepts (net_af_packet: framesz - 32).
size_t rx_data_room_min(const PortFrameFacts& f);

// `framesz` out of a net_af_packet vdev argument string ("iface=veth0,framesz=2048,..."), or the
// PMD's default when absent; 0 when the value is not a number.
uint32_t af_packet_framesz_of(const std::string& devargs);

}  // namespace tob::dataplane
