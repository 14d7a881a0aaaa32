// Ethernet/802.1Q framing of slot frames: byte-exact headers, and the receive side's
// classification of our frames, other protocols, other VLANs and runts.
#include <catch2/catch.hpp>

#include <vector>

#include "core/wire.h"
#include "dataplane/port/ether.h"

using namespace tob::dataplane;

namespace {

EtherParams params(uint16_t vlan) {
  EtherParams p;
  p.dst = {0x01, 0x1b, 0x19, 0x00, 0x00, 0x00};
  p.src = {0x02, 0x00, 0x00, 0x00, 0x00, 0x03};
  p.vlan = vlan;
  p.pcp = 5;
  return p;
}

}  // namespace

TEST_CASE("untagged header is dst, src, EtherType 0x88B5") {
  std::vector<uint8_t> b(14);
  REQUIRE(write_ether_header(b, params(0)) == 14);
  const std::vector<uint8_t> want = {0x01, 0x1b, 0x19, 0, 0, 0, 0x02, 0, 0, 0, 0, 0x03, 0x88, 0xB5};
  CHECK(b == want);
}

TEST_CASE("tagged header carries PCP 5 and the VLAN id") {
  std::vector<uint8_t> b(18);
  REQUIRE(write_ether_header(b, params(100)) == 18);
  // TCI = PCP 5 << 13 | VLAN 100 = 0xA064
  const std::vector<uint8_t> want = {0x01, 0x1b, 0x19, 0, 0, 0, 0x02, 0, 0, 0, 0, 0x03,
                                     0x81, 0x00, 0xA0, 0x64, 0x88, 0xB5};
  CHECK(b == want);
  std::vector<uint8_t> small(17);
  CHECK(write_ether_header(small, params(100)) == 0);
}

TEST_CASE("receive side finds the payload of tagged and untagged frames") {
  for (uint16_t vlan : {uint16_t{0}, uint16_t{100}}) {
    std::vector<uint8_t> f(64, 0xEE);
    const size_t h = write_ether_header(f, params(vlan));
    const EtherParse p = parse_ether(f, vlan);
    CHECK(p.verdict == EtherVerdict::ours);
    CHECK(p.payload.size() == f.size() - h);
    CHECK(p.src == params(vlan).src);
  }
  // A stripped tag (VLAN offload) still reaches us.
  std::vector<uint8_t> f(64);
  write_ether_header(f, params(0));
  CHECK(parse_ether(f, 100).verdict == EtherVerdict::ours);
}

TEST_CASE("other protocols, other VLANs and runts are classified for counting") {
  std::vector<uint8_t> f(64);
  EtherParams ip = params(0);
  ip.ether_type = 0x0800;
  write_ether_header(f, ip);
  CHECK(parse_ether(f, 0).verdict == EtherVerdict::other_type);
  write_ether_header(f, params(200));
  CHECK(parse_ether(f, 100).verdict == EtherVerdict::wrong_vlan);
  CHECK(parse_ether(std::span<const uint8_t>(f.data(), 13), 0).verdict == EtherVerdict::runt);
  CHECK(parse_ether(std::span<const uint8_t>(f.data(), 15), 200).verdict == EtherVerdict::runt);
}
