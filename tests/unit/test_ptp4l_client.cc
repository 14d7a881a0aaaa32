// ptp4l's management protocol (lib/dataplane/time/ptp4l_client.h): the GET the daemon sends,
// ptp4l's answers decoded, and one query against a stand-in for ptp4l on a Unix socket.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/time/ptp4l_client.h"

using namespace tob::dataplane;

namespace {

// ptp4l's RESPONSE to `req` (same header, action RESPONSE, the data set filled in).
std::vector<uint8_t> response_to(const uint8_t* req, uint16_t steps, int64_t offset_scaled, int64_t delay_scaled) {
  std::vector<uint8_t> r(req, req + ptp_mgmt::kGetBytes);
  r[46] = 2;  // RESPONSE
  uint8_t* d = r.data() + 54;
  d[0] = static_cast<uint8_t>(steps >> 8);
  d[1] = static_cast<uint8_t>(steps);
  for (int i = 0; i < 8; ++i) {
    d[2 + i] = static_cast<uint8_t>(static_cast<uint64_t>(offset_scaled) >> (56 - 8 * i));
    d[10 + i] = static_cast<uint8_t>(static_cast<uint64_t>(delay_scaled) >> (56 - 8 * i));
  }
  return r;
}

}  // namespace

TEST_CASE("ptp4l: the GET of CURRENT_DATA_SET is pmc's") {
  std::array<uint8_t, ptp_mgmt::kGetBytes> m{};
  REQUIRE(ptp_mgmt::encode_get_current_data_set(0x1234, m) == 72);
  CHECK(m[0] == 0x0D);                     // management
  CHECK((m[1] & 0x0f) == 2);               // PTP version 2
  CHECK((m[2] << 8 | m[3]) == 72);         // messageLength
  CHECK(m[4] == 0);                        // domain 0
  CHECK((m[30] << 8 | m[31]) == 0x1234);   // sequenceId
  CHECK(m[32] == 0x04);                    // controlField: management
  for (int i = 34; i < 44; ++i) CHECK(m[static_cast<size_t>(i)] == 0xff);  // every clock and port
  CHECK(m[44] == 0);                       // this ptp4l only (boundary hops 0)
  CHECK((m[46] & 0x0f) == 0);              // GET
  CHECK((m[48] << 8 | m[49]) == 0x0001);   // TLV management
  CHECK((m[50] << 8 | m[51]) == 20);       // id + 18 bytes
  CHECK((m[52] << 8 | m[53]) == 0x2001);   // CURRENT_DATA_SET
}

TEST_CASE("ptp4l: a response gives the offset, the path delay and the steps; anything else an error") {
  std::array<uint8_t, ptp_mgmt::kGetBytes> req{};
  ptp_mgmt::encode_get_current_data_set(7, req);
  const auto ok = response_to(req.data(), 1, -12345LL * 65536 - 30000, 6789LL * 65536);
  auto ds = ptp_mgmt::decode_current_data_set(ok, 7);
  REQUIRE(ds);
  CHECK(ds.value().steps_removed == 1);
  CHECK(ds.value().offset_from_master_ns == -12345);  // -12345.46 ns rounds to -12345
  CHECK(ds.value().mean_path_delay_ns == 6789);

  CHECK(ptp_mgmt::decode_current_data_set(ok, 8).error().message == "ptp4l: a reply to another request");
  CHECK(!ptp_mgmt::decode_current_data_set(std::span<const uint8_t>(ok.data(), 40), 7));
  CHECK(!ptp_mgmt::decode_current_data_set(std::span<const uint8_t>(ok.data(), 60), 7));  // data cut off
  auto get = ok;
  get[46] = 0;  // its own GET echoed: not a response
  CHECK(ptp_mgmt::decode_current_data_set(get, 7).error().message == "ptp4l: not a response");
  auto other = ok;
  other[53] = 0x00;  // DEFAULT_DATA_SET
  CHECK(!ptp_mgmt::decode_current_data_set(other, 7));
  auto err = ok;
  err[49] = 0x02;  // MANAGEMENT_ERROR_STATUS, managementErrorId 2 (NO_SUCH_ID)
  err[52] = 0x00;
  err[53] = 0x02;
  CHECK(ptp_mgmt::decode_current_data_set(err, 7).error().message.find("management error 2") != std::string::npos);
}

TEST_CASE("ptp4l: one query over a Unix datagram socket, and a silent server times out") {
  const std::string server = "/tmp/tob-unit-ptp4l." + std::to_string(getpid());
  const std::string local = server + ".client";
  const int s = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  REQUIRE(s >= 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, server.c_str(), sizeof(sa.sun_path) - 1);
  ::unlink(server.c_str());
  REQUIRE(::bind(s, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) == 0);
  auto client = Ptp4lClient::open(server, local);
  REQUIRE(client);
  std::thread ptp4l([s] {  // answers one GET, ignores the next
    uint8_t buf[256];
    sockaddr_un from{};
    socklen_t len = sizeof(from);
    const ssize_t n = ::recvfrom(s, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n != static_cast<ssize_t>(ptp_mgmt::kGetBytes)) return;
    const auto r = response_to(buf, 1, 250LL * 65536, 40000LL * 65536);
    ::sendto(s, r.data(), r.size(), 0, reinterpret_cast<const sockaddr*>(&from), len);
  });
  auto ds = client.value().current_data_set(2000);
  ptp4l.join();
  REQUIRE(ds);
  CHECK(ds.value().offset_from_master_ns == 250);
  CHECK(ds.value().mean_path_delay_ns == 40000);
  auto silent = client.value().current_data_set(50);
  CHECK(silent.error().message.find("no answer within 50 ms") != std::string::npos);
  ::close(s);
  ::unlink(server.c_str());
  CHECK(!Ptp4lClient::open("", local));
}
