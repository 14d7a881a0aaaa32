#include "dataplane/port/ether.h"

#include <cstring>

#include "core/bytes.h"

namespace tob::dataplane {

size_t ether_header_bytes(const EtherParams& p) {
  return kEtherHeaderBytes + (p.vlan != 0 ? kVlanTagBytes : 0);
}

size_t write_ether_header(std::span<uint8_t> out, const EtherParams& p) {
  const size_t len = ether_header_bytes(p);
  if (out.size() < len) return 0;
  uint8_t* b = out.data();
  std::memcpy(b, p.dst.data(), 6);
  std::memcpy(b + 6, p.src.data(), 6);
  size_t off = 12;
  if (p.vlan != 0) {
    core::store_be16(b + off, kTpidVlan);
    core::store_be16(b + off + 2, static_cast<uint16_t>((p.pcp & 0x7u) << 13 | (p.vlan & 0x0FFFu)));
    off += kVlanTagBytes;
  }
  core::store_be16(b + off, p.ether_type);
  return len;
}

EtherParse parse_ether(std::span<const uint8_t> frame, uint16_t expected_vlan, uint16_t ether_type) {
  EtherParse r{EtherVerdict::runt, {}, {}};
  if (frame.size() < kEtherHeaderBytes) return r;
  std::memcpy(r.src.data(), frame.data() + 6, 6);
  size_t off = 12;
  uint16_t type = core::load_be16(frame.data() + off);
  uint16_t vlan = 0;
  if (type == kTpidVlan) {
    if (frame.size() < kEtherHeaderBytes + kVlanTagBytes) return r;
    vlan = core::load_be16(frame.data() + off + 2) & 0x0FFFu;
    off += kVlanTagBytes;
    type = core::load_be16(frame.data() + off);
  }
  off += 2;
  if (type != ether_type) {
    r.verdict = EtherVerdict::other_type;
    return r;
  }
  // A NIC or veth may strip the tag (VLAN offload); an untagged frame of our type is accepted.
  if (vlan != 0 && vlan != expected_vlan) {
    r.verdict = EtherVerdict::wrong_vlan;
    return r;
  }
  r.verdict = EtherVerdict::ours;
  r.payload = frame.subspan(off);
  return r;
}

}  // namespace tob::dataplane
