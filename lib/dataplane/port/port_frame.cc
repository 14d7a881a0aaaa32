#include "dataplane/port/port_frame.h"

#include <algorithm>
#include <cstdlib>

namespace tob::dataplane {

namespace {

// rte_eth_af_packet.c (22.11) with TPACKET_V2: the kernel writes a received frame at
// TPACKET_ALIGN(TPACKET2_HDRLEN + 14) - 14 = 66 bytes into its ring slot, so a slot of framesz
// bytes holds framesz - 66 bytes of Ethernet frame; TX takes up to framesz - 32.
constexpr size_t kAfPacketRxOffset = 66;
constexpr size_t kAfPacketTxOffset = 32;
// ethdev's overhead between an MTU and a frame length: the Ethernet header and the FCS.
constexpr size_t kEthdevOverhead = 18;

std::string n(size_t v) { return std::to_string(v); }

}  // namespace

size_t af_packet_frame_max(uint32_t framesz, size_t ether_bytes) {
  if (framesz < kAfPacketRxOffset + ether_bytes) return 0;
  return framesz - kAfPacketRxOffset - ether_bytes;
}

bool kernel_mtu_governs(const PortFrameFacts& f, size_t frame_bytes) {
  return !f.kernel_iface.empty() && frame_bytes + kEthdevOverhead > f.ethdev_max_rx_pktlen;
}

std::optional<std::string> frame_misfit(const PortFrameFacts& f, size_t ether_bytes, size_t frame_bytes) {
  if (f.profile_frame_max != 0 && frame_bytes > f.profile_frame_max)
    return f.port + ": [limits] frame_bytes " + n(frame_bytes) + " is above the port profile's [port] frame_bytes_max " +
           n(f.profile_frame_max) + " (use a profile for larger frames, e.g. --profile af_packet_jumbo)";
  if (f.af_packet_framesz != 0) {
    const size_t max = af_packet_frame_max(f.af_packet_framesz, ether_bytes);
    if (frame_bytes > max)
      return f.port + ": frames of " + n(frame_bytes) + " bytes do not fit net_af_packet's ring slots of framesz=" +
             n(f.af_packet_framesz) + " (at most " + n(max) + " bytes after the " + n(ether_bytes) +
             "-byte Ethernet header; longer ones the PMD drops without a word): raise framesz in the vdev argument, "
             "e.g. framesz=10240,blocksz=40960 as in drivers_cfg/af_packet_jumbo.ini";
  }
  if (kernel_mtu_governs(f, frame_bytes)) {
    if (f.kernel_mtu <= 0)
      return f.port + ": frames of " + n(frame_bytes) + " bytes are above what ethdev configures (" +
             n(f.ethdev_max_rx_pktlen) + "-byte frames) and the MTU of " + f.kernel_iface + " cannot be read";
    if (static_cast<size_t>(f.kernel_mtu) < frame_bytes)
      return f.port + ": the kernel MTU of " + f.kernel_iface + " is " + n(static_cast<size_t>(f.kernel_mtu)) +
             ", below [limits] frame_bytes " + n(frame_bytes) + ": raise it on " + f.kernel_iface +
             ", its veth peer and the bridge (scripts/cluster.sh: TOB_MTU=9000)";
  }
  return std::nullopt;
}

size_t rx_data_room_min(const PortFrameFacts& f) {
  return f.af_packet_framesz > kAfPacketTxOffset ? f.af_packet_framesz - kAfPacketTxOffset : 0;
}

uint32_t af_packet_framesz_of(const std::string& devargs) {
  size_t at = 0;
  while (at <= devargs.size()) {
    const size_t end = std::min(devargs.find(',', at), devargs.size());
    const std::string item = devargs.substr(at, end - at);
    if (item.rfind("framesz=", 0) == 0) {
      const std::string v = item.substr(8);
      char* stop = nullptr;
      const unsigned long x = std::strtoul(v.c_str(), &stop, 10);
      if (v.empty() || *stop != '\0' || x == 0 || x > UINT32_MAX) return 0;
      return static_cast<uint32_t>(x);
    }
    at = end + 1;
  }
  return kAfPacketDefaultFramesz;
}

}  // namespace tob::dataplane
