#include "dataplane/time/ptp4l_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <string>

namespace tob::dataplane {

namespace ptp_mgmt {
namespace {

// IEEE 1588-2008: the common header (§13.3), the management message (§15.4), its TLV (§15.5).
constexpr uint8_t kManagement = 0x0D;    // messageType
constexpr uint8_t kVersion = 0x02;       // versionPTP (ptp4l checks the major version only)
constexpr uint8_t kControlManagement = 0x04;
constexpr uint8_t kActionGet = 0;
constexpr uint8_t kActionResponse = 2;
constexpr uint16_t kTlvManagement = 0x0001;
constexpr uint16_t kTlvManagementErrorStatus = 0x0002;
constexpr size_t kHeaderBytes = 34;
constexpr size_t kTlvAt = kHeaderBytes + 14;  // after targetPortIdentity, hops, action, reserved
constexpr size_t kDataSetBytes = 18;          // stepsRemoved, offsetFromMaster, meanPathDelay

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
int64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
  return static_cast<int64_t>(v);
}
// TimeInterval: nanoseconds scaled by 2^16.
int64_t time_interval_ns(const uint8_t* p) { return static_cast<int64_t>(std::llround(static_cast<double>(get64(p)) / 65536.0)); }

}  // namespace

size_t encode_get_current_data_set(uint16_t sequence_id, std::span<uint8_t, kGetBytes> out) {
  uint8_t* p = out.data();
  std::memset(p, 0, kGetBytes);
  p[0] = kManagement;
  p[1] = kVersion;
  put16(p + 2, static_cast<uint16_t>(kGetBytes));
  // domainNumber 0, flags 0, correction 0; sourcePortIdentity: an identity of this process.
  const auto pid = static_cast<uint32_t>(getpid());
  p[20] = 0x02;  // locally administered, as an EUI-64 made up here
  p[24] = static_cast<uint8_t>(pid >> 24);
  p[25] = static_cast<uint8_t>(pid >> 16);
  p[26] = static_cast<uint8_t>(pid >> 8);
  p[27] = static_cast<uint8_t>(pid);
  put16(p + 28, 1);
  put16(p + 30, sequence_id);
  p[32] = kControlManagement;
  p[33] = 0x7f;
  std::memset(p + 34, 0xff, 10);  // targetPortIdentity: every clock, every port
  p[44] = 0;                      // startingBoundaryHops, boundaryHops: this ptp4l only
  p[45] = 0;
  p[46] = kActionGet;
  put16(p + kTlvAt, kTlvManagement);
  put16(p + kTlvAt + 2, static_cast<uint16_t>(2 + kDataSetBytes));
  put16(p + kTlvAt + 4, kCurrentDataSet);
  return kGetBytes;
}

core::Result<PtpCurrentDataSet> decode_current_data_set(std::span<const uint8_t> msg, uint16_t sequence_id) {
  const uint8_t* p = msg.data();
  if (msg.size() < kTlvAt + 6) return core::Error{"ptp4l: a reply of " + std::to_string(msg.size()) + " bytes, too short"};
  if ((p[0] & 0x0f) != kManagement) return core::Error{"ptp4l: not a management message"};
  if (get16(p + 30) != sequence_id) return core::Error{"ptp4l: a reply to another request"};
  const size_t length = std::min<size_t>(get16(p + 2), msg.size());
  const uint16_t tlv = get16(p + kTlvAt);
  if (tlv == kTlvManagementErrorStatus)
    return core::Error{"ptp4l: management error " + std::to_string(get16(p + kTlvAt + 4)) + " for CURRENT_DATA_SET"};
  if ((p[46] & 0x0f) != kActionResponse || tlv != kTlvManagement) return core::Error{"ptp4l: not a response"};
  if (get16(p + kTlvAt + 4) != kCurrentDataSet) return core::Error{"ptp4l: a response about another data set"};
  if (get16(p + kTlvAt + 2) < 2 + kDataSetBytes || length < kTlvAt + 6 + kDataSetBytes)
    return core::Error{"ptp4l: CURRENT_DATA_SET cut short"};
  const uint8_t* d = p + kTlvAt + 6;
  return PtpCurrentDataSet{get16(d), time_interval_ns(d + 2), time_interval_ns(d + 10)};
}

}  // namespace ptp_mgmt

core::Result<Ptp4lClient> Ptp4lClient::open(const std::string& server_path, const std::string& local_path) {
  sockaddr_un sa{};
  if (server_path.empty() || server_path.size() >= sizeof(sa.sun_path) || local_path.size() >= sizeof(sa.sun_path))
    return core::Error{"ptp4l socket '" + server_path + "': a path of 1.." + std::to_string(sizeof(sa.sun_path) - 1) + " characters"};
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return core::Error{std::string("ptp4l socket: ") + std::strerror(errno)};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, local_path.c_str(), sizeof(sa.sun_path) - 1);
  ::unlink(local_path.c_str());
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return core::Error{"ptp4l socket: cannot bind " + local_path + ": " + why};
  }
  return Ptp4lClient(fd, server_path, local_path);
}

Ptp4lClient::Ptp4lClient(Ptp4lClient&& o) noexcept
    : fd_(o.fd_), server_(std::move(o.server_)), local_(std::move(o.local_)), sequence_(o.sequence_) {
  o.fd_ = -1;
}

Ptp4lClient::~Ptp4lClient() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(local_.c_str());
}

core::Result<PtpCurrentDataSet> Ptp4lClient::current_data_set(int timeout_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint16_t seq = ++sequence_;
  std::array<uint8_t, ptp_mgmt::kGetBytes> req{};
  ptp_mgmt::encode_get_current_data_set(seq, req);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, server_.c_str(), sizeof(sa.sun_path) - 1);
  if (::sendto(fd_, req.data(), req.size(), 0, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) < 0)
    return core::Error{"ptp4l at " + server_ + ": " + std::strerror(errno)};
  // Answers to earlier requests that timed out may still be queued: skip them.
  for (int tries = 0; tries < 8; ++tries) {
    pollfd pfd{fd_, POLLIN, 0};
    const int r = ::poll(&pfd, 1, timeout_ms);
    if (r == 0) return core::Error{"ptp4l at " + server_ + ": no answer within " + std::to_string(timeout_ms) + " ms"};
    if (r < 0) return core::Error{"ptp4l at " + server_ + ": " + std::strerror(errno)};
    std::array<uint8_t, 1500> buf{};
    const ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
    if (n < 0) return core::Error{"ptp4l at " + server_ + ": " + std::strerror(errno)};
    auto ds = ptp_mgmt::decode_current_data_set(std::span<const uint8_t>(buf.data(), static_cast<size_t>(n)), seq);
    if (ds || ds.error().message != "ptp4l: a reply to another request") return ds;
  }
  return core::Error{"ptp4l at " + server_ + ": no answer to this request"};
}

}  // namespace tob::dataplane
