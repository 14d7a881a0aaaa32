// How large a frame a port carries (lib/dataplane/port/port_frame): net_af_packet's ring slots,
// the kernel MTU behind af_packet and tap ports (checked, never set through ethdev, whose
// maximum for af_packet is 1518-byte frames), the profile's maximum, and the messages that say
// what to change.
#include <catch2/catch.hpp>

#include "dataplane/port/port_frame.h"

using namespace tob::dataplane;

namespace {

PortFrameFacts af_packet(uint32_t framesz, int kernel_mtu) {
  PortFrameFacts f;
  f.port = "port 0 (net_af_packet on veth0)";
  f.ethdev_max_rx_pktlen = 1518;  // RTE_ETHER_MAX_LEN, what the 22.11 PMD reports
  f.kernel_iface = "veth0";
  f.kernel_mtu = kernel_mtu;
  f.af_packet_framesz = framesz;
  return f;
}

}  // namespace

TEST_CASE("framesz is read from the vdev arguments, with the PMD's default when absent") {
  CHECK(af_packet_framesz_of("iface=veth0,framecnt=4096,blocksz=65536,framesz=2048,qdisc_bypass=1") == 2048);
  CHECK(af_packet_framesz_of("framesz=10240,iface=veth3") == 10240);
  CHECK(af_packet_framesz_of("iface=veth0") == kAfPacketDefaultFramesz);
  CHECK(af_packet_framesz_of("") == kAfPacketDefaultFramesz);
  CHECK(af_packet_framesz_of("iface=veth0,framesz=") == 0);
  CHECK(af_packet_framesz_of("iface=veth0,framesz=12k") == 0);
  CHECK(af_packet_framesz_of("iface=veth0,xframesz=4096") == kAfPacketDefaultFramesz);
}

TEST_CASE("an af_packet ring slot holds its size less 66 bytes of Ethernet frame") {
  CHECK(af_packet_frame_max(2048, 14) == 2048 - 66 - 14);
  CHECK(af_packet_frame_max(10240, 14) == 10240 - 66 - 14);
  CHECK(af_packet_frame_max(10240, 18) == 10240 - 66 - 18);
  CHECK(af_packet_frame_max(64, 14) == 0);
  CHECK(rx_data_room_min(af_packet(10240, 9000)) == 10240 - 32);
  PortFrameFacts ring;
  CHECK(rx_data_room_min(ring) == 0);
}

TEST_CASE("standard frames on af_packet go through ethdev as before") {
  const PortFrameFacts f = af_packet(2048, 1500);
  CHECK_FALSE(kernel_mtu_governs(f, 1500));
  CHECK_FALSE(frame_misfit(f, 14, 1500).has_value());
}

TEST_CASE("jumbo frames on af_packet are checked against the kernel MTU, not set through ethdev") {
  const PortFrameFacts f = af_packet(10240, 9000);
  CHECK(kernel_mtu_governs(f, 8958));
  CHECK_FALSE(frame_misfit(f, 14, 8958).has_value());
  CHECK_FALSE(frame_misfit(f, 18, 9000).has_value());
}

TEST_CASE("a kernel MTU below the frame is refused with the interface and how to raise it") {
  const auto why = frame_misfit(af_packet(10240, 1500), 14, 8958);
  REQUIRE(why.has_value());
  CHECK_THAT(*why, Catch::Contains("port 0 (net_af_packet on veth0)") && Catch::Contains("kernel MTU of veth0 is 1500") &&
                       Catch::Contains("frame_bytes 8958") && Catch::Contains("TOB_MTU=9000"));
}

TEST_CASE("an unreadable kernel MTU is refused, not guessed") {
  const auto why = frame_misfit(af_packet(10240, 0), 14, 8958);
  REQUIRE(why.has_value());
  CHECK_THAT(*why, Catch::Contains("MTU of veth0 cannot be read"));
}

TEST_CASE("a frame longer than the af_packet ring slot is refused, never dropped on the wire") {
  // The 22.11 PMD would drop it on TX and count it as sent; the kernel would truncate it on RX.
  const auto why = frame_misfit(af_packet(2048, 9000), 14, 4000);
  REQUIRE(why.has_value());
  CHECK_THAT(*why, Catch::Contains("framesz=2048") && Catch::Contains("at most 1968") &&
                       Catch::Contains("af_packet_jumbo.ini"));
}

TEST_CASE("a frame above the profile's maximum is refused with the profile to use") {
  PortFrameFacts f = af_packet(2048, 1500);
  f.profile_frame_max = 1500;
  const auto why = frame_misfit(f, 14, 1600);
  REQUIRE(why.has_value());
  CHECK_THAT(*why, Catch::Contains("frame_bytes_max 1500") && Catch::Contains("af_packet_jumbo"));
  CHECK_FALSE(frame_misfit(f, 14, 1500).has_value());
}

TEST_CASE("a port without a kernel interface is left to ethdev") {
  PortFrameFacts f;
  f.port = "port 0 (net_ring)";
  f.ethdev_max_rx_pktlen = 1518;
  CHECK_FALSE(kernel_mtu_governs(f, 8958));
  CHECK_FALSE(frame_misfit(f, 14, 8958).has_value());  // start_port's ethdev MTU check decides
}
