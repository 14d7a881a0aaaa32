// The I/O thread (a DPDK control thread, not an lcore): everything that may block happens here,
// never on the lcores. It drains the log ring into the deliveries and events files and the ic
// pub ring into the --published file, logs membership changes through rte_log, keeps the latest
// deliveries and events for telemetry, prints the periodic one-line status and ends the run
// after --duration.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "dataplane/context.h"
#include "dataplane/observe/deliveries_file.h"
#include "dataplane/shm/shm_layout.h"

namespace tob::dataplane {

class IoThread {
 public:
  static constexpr size_t kRecent = kRecentDeliveries;
  explicit IoThread(DaemonContext& ctx);
  ~IoThread();

  core::Result<bool> open_files();
  // Slots of applications that exit without tob_detach are given back (checked every second).
  void watch_clients(Shm* shm) { shm_ = shm; }
  bool start();
  // After the lcores stopped: drain what is left, flush, close the files.
  void finish();

  std::vector<LogRecord> recent_deliveries() const;
  std::vector<std::string> recent_events() const;
  std::string status_line() const;

  // One membership event or undelivered record as text (events file and logs).
  static std::string describe(const LogRecord& r);
  // One publication as a --published line, `instance node key value` (tob-sim --ic
  // --published): the key as is when it is printable without spaces ('%' and other bytes as
  // %XX), the value `-` for a failed reduction, decimal for numeric reductions, 0x.. hex else.
  static std::string describe_publication(const IcPubRecord& r, std::span<const uint8_t> key,
                                          std::span<const uint8_t> value, unsigned node);

 private:
  static void* entry(void* self);
  void run();
  size_t drain();
  size_t drain_publications();
  void write(const LogRecord& r);
  void keep_recent(std::span<const LogRecord> records);
  void reclaim_dead_clients();

  DaemonContext& ctx_;
  pthread_t thread_{};
  bool started_ = false;
  std::atomic<bool> finishing_{false};
  Shm* shm_ = nullptr;
  std::FILE* deliveries_ = nullptr;
  std::unique_ptr<DeliveriesWriter> dlv_;  // renders a drain's deliveries for one write
  std::FILE* events_ = nullptr;
  std::FILE* published_ = nullptr;
  uint64_t commented_instance_ = UINT64_MAX;  // the last instance whose defaulted senders were written
  std::vector<uint8_t> pub_batch_;  // ic pub ring elements, drained in bursts
  mutable std::mutex mu_;  // guards the recent lists (I/O and telemetry threads only)
  std::deque<LogRecord> recent_deliveries_;
  std::deque<std::string> recent_events_;
};

}  // namespace tob::dataplane
