// Ethernet II framing of slot frames (docs/wire-format.md): destination = the cluster's multicast MAC,
// optional 802.1Q tag with the cluster's PCP, EtherType 0x88B5, then the TOB payload.
// Plain byte code, no DPDK: the RX lcore classifies what it receives with parse_ether and the
// TX lcore prepends write_ether_header.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace tob::dataplane {

inline constexpr size_t kEtherHeaderBytes = 14;
inline constexpr size_t kVlanTagBytes = 4;
inline constexpr uint16_t kTpidVlan = 0x8100;

struct EtherParams {
  std::array<uint8_t, 6> dst{};
  std::array<uint8_t, 6> src{};
  uint16_t vlan = 0;  // 0: untagged
  uint8_t pcp = 5;
  uint16_t ether_type = 0x88B5;
};

// Writes the header; returns its length (14 or 18) or 0 when the buffer is too small.
size_t write_ether_header(std::span<uint8_t> out, const EtherParams& p);
size_t ether_header_bytes(const EtherParams& p);

enum class EtherVerdict : uint8_t {
  ours = 0,        // our EtherType (tagged or not): payload is a TOB frame candidate
  other_type,      // another protocol: count and drop
  wrong_vlan,      // our EtherType on another VLAN
  runt,            // shorter than an Ethernet header
};

struct EtherParse {
  EtherVerdict verdict;
  std::span<const uint8_t> payload;
  std::array<uint8_t, 6> src;
};

// expected_vlan 0 accepts untagged frames and frames tagged with VLAN 0 (priority tags).
EtherParse parse_ether(std::span<const uint8_t> frame, uint16_t expected_vlan, uint16_t ether_type = 0x88B5);

}  // namespace tob::dataplane
