// The I/O thread (a DPDK control thread, not an lcore): everything that may block happens here,
// never on the lcores. It drains the log ring into the deliveries and events files, logs
// membership changes through rte_log, keeps the latest deliveries and events for telemetry,
// prints the periodic one-line status and ends the run after --duration.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "core/result.h"
#include "dataplane/context.h"
#include "dataplane/shm_layout.h"

namespace tob::dataplane {

class IoThread {
 public:
  static constexpr size_t kRecent = 64;
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

 private:
  static void* entry(void* self);
  void run();
  size_t drain();
  void write(const LogRecord& r);
  void reclaim_dead_clients();

  DaemonContext& ctx_;
  pthread_t thread_{};
  bool started_ = false;
  std::atomic<bool> finishing_{false};
  Shm* shm_ = nullptr;
  std::FILE* deliveries_ = nullptr;
  std::FILE* events_ = nullptr;
  mutable std::mutex mu_;  // guards the recent lists (I/O and telemetry threads only)
  std::deque<LogRecord> recent_deliveries_;
  std::deque<std::string> recent_events_;
};

}  // namespace tob::dataplane
