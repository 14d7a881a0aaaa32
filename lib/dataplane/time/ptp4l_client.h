// ptp4l's measured offset, read through its management socket (issue 19; docs/operations.md
// "An external source: ptp4l"): the protocol of linuxptp's pmc, a PTP management message (IEEE
// 1588-2008 §15) over a Unix datagram socket. A GET of CURRENT_DATA_SET answers with ptp4l's
// offset from its master, the mean path delay and the steps removed, which the daemon reports in
// /tob/clock beside its in-band estimate ([timing] ptp4l_socket, with sync = external | both).
//
// Blocking system calls: telemetry's thread only, never an lcore.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>

#include "core/result.h"

namespace tob::dataplane {

struct PtpCurrentDataSet {
  uint16_t steps_removed = 0;
  int64_t offset_from_master_ns = 0;  // ptp4l's clock minus its master's (scaled ns / 2^16, rounded)
  int64_t mean_path_delay_ns = 0;
};

namespace ptp_mgmt {
inline constexpr uint16_t kCurrentDataSet = 0x2001;
inline constexpr size_t kGetBytes = 72;  // header 34, management 14, TLV 6 + 18 (pmc sends the data set's size)
// A GET of CURRENT_DATA_SET with this sequence id into `out` (kGetBytes); the bytes written.
size_t encode_get_current_data_set(uint16_t sequence_id, std::span<uint8_t, kGetBytes> out);
// ptp4l's RESPONSE to it, or an error naming what is wrong (another message, an error status TLV).
core::Result<PtpCurrentDataSet> decode_current_data_set(std::span<const uint8_t> msg, uint16_t sequence_id);
}  // namespace ptp_mgmt

class Ptp4lClient {
 public:
  // A datagram socket bound to a path of its own (local_path), to talk to ptp4l's `uds_address`.
  static core::Result<Ptp4lClient> open(const std::string& server_path, const std::string& local_path);
  Ptp4lClient(Ptp4lClient&& o) noexcept;
  Ptp4lClient& operator=(Ptp4lClient&&) = delete;
  Ptp4lClient(const Ptp4lClient&) = delete;
  ~Ptp4lClient();

  // One GET, its answer within timeout_ms (thread-safe: one query at a time).
  core::Result<PtpCurrentDataSet> current_data_set(int timeout_ms);
  const std::string& server_path() const { return server_; }

 private:
  Ptp4lClient(int fd, std::string server, std::string local) : fd_(fd), server_(std::move(server)), local_(std::move(local)) {}
  int fd_;
  std::string server_;
  std::string local_;
  uint16_t sequence_ = 0;
  std::mutex mu_;
};

}  // namespace tob::dataplane
