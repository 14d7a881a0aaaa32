// The otfp acceptor log on disk (docs/protocol-otfp.md "Durability"). The control
// lcore appends the engine's records (Actions::persist) to an in-memory byte ring, never
// blocking; a control thread (`tob-log`) writes them to the file as they come and, with
// durability sync, fdatasync()s once something awaits them (a vote or a promise: one sync per
// round, group commit; batch records alone are written, and made durable with the next vote),
// then publishes how far the file is durable. The engine puts a vote or a promise into a frame
// only once it is durable, and the TX role checks that the records a frame names are.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "dataplane/observe/histogram.h"

namespace tob::dataplane {

class AcceptorLog {
 public:
  static constexpr size_t kRingBytes = size_t{16} << 20;

  // Opens (creates) the file and reads what an earlier life of the node wrote, up to the first
  // torn or corrupt record; a damaged tail is cut off the file (discarded_on_open()).
  static core::Result<std::unique_ptr<AcceptorLog>> open(const std::string& path, bool sync,
                                                          std::vector<uint8_t>& existing);
  ~AcceptorLog();
  AcceptorLog(const AcceptorLog&) = delete;
  AcceptorLog& operator=(const AcceptorLog&) = delete;

  bool start();  // the writer thread
  void stop();   // writes and syncs what is left, then joins

  // Control lcore: false when the ring is full (the writer fell behind by kRingBytes). `awaited`:
  // something waits for these records to be durable (Actions::persist_awaited): sync soon.
  bool append(std::span<const uint8_t> records, bool awaited = true);
  uint64_t appended() const { return appended_.load(std::memory_order_relaxed); }
  // Bytes something waits to see durable (the control lcore polls durable() until then).
  uint64_t awaited() const { return awaited_.load(std::memory_order_relaxed); }
  // Any thread: bytes durable (written and, with sync, flushed to the device).
  uint64_t durable() const { return durable_.load(std::memory_order_acquire); }

  const Histogram& sync_latency() const { return sync_ns_; }
  uint64_t syncs() const { return syncs_.load(std::memory_order_relaxed); }
  uint64_t write_errors() const { return write_errors_.load(std::memory_order_relaxed); }
  const std::string& path() const { return path_; }
  size_t discarded_on_open() const { return discarded_on_open_; }  // bytes of a damaged tail cut off

 private:
  AcceptorLog(int fd, std::string path, bool sync);
  static void* entry(void* self);
  void run();
  size_t flush_once(bool sync_all = false);  // 0 when there was nothing to do (or a write failed)

  int fd_;
  std::string path_;
  bool sync_;
  std::vector<uint8_t> ring_;
  std::atomic<uint64_t> appended_{0};  // producer: bytes put in the ring
  std::atomic<uint64_t> awaited_{0};   // producer: bytes that must become durable soon
  std::atomic<uint64_t> durable_{0};   // consumer: bytes durable
  std::atomic<uint64_t> written_{0};   // consumer: bytes written to the file (their room is free)
  std::atomic<bool> running_{false};
  pthread_t thread_{};
  bool started_ = false;
  Histogram sync_ns_;                  // written by the writer thread only
  std::atomic<uint64_t> syncs_{0};
  std::atomic<uint64_t> write_errors_{0};
  size_t discarded_on_open_ = 0;
};

}  // namespace tob::dataplane
