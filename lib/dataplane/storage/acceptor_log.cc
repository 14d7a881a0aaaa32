#include "dataplane/storage/acceptor_log.h"

#include <fcntl.h>
#include <rte_lcore.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "core/otfp_node.h"

namespace tob::dataplane {

core::Result<std::unique_ptr<AcceptorLog>> AcceptorLog::open(const std::string& path, bool sync,
                                                             std::vector<uint8_t>& existing) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return core::Error{path + ": cannot open the acceptor log: " + std::strerror(errno)};
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return core::Error{path + ": " + why};
  }
  existing.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < existing.size()) {
    const ssize_t n = ::pread(fd, existing.data() + got, existing.size() - got, static_cast<off_t>(got));
    if (n <= 0) {
      const std::string why = n == 0 ? "unexpected end of file" : std::strerror(errno);
      ::close(fd);
      return core::Error{path + ": cannot read the acceptor log: " + why};
    }
    got += static_cast<size_t>(n);
  }
  // A torn or corrupt tail (a crash during a write) is cut off: it held nothing a sent frame
  // depended on (frames carry only durable state), and records appended later must not sit behind it.
  const size_t valid = core::otfp_log_valid_bytes(existing);
  const size_t discarded = existing.size() - valid;
  if (discarded > 0) {
    if (::ftruncate(fd, static_cast<off_t>(valid)) != 0 || ::fdatasync(fd) != 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return core::Error{path + ": cannot cut the damaged tail off the acceptor log: " + why};
    }
    existing.resize(valid);
  }
  auto log = std::unique_ptr<AcceptorLog>(new AcceptorLog(fd, path, sync));
  log->discarded_on_open_ = discarded;
  return log;
}

AcceptorLog::AcceptorLog(int fd, std::string path, bool sync)
    : fd_(fd), path_(std::move(path)), sync_(sync), ring_(kRingBytes) {}

AcceptorLog::~AcceptorLog() {
  stop();
  if (fd_ >= 0) ::close(fd_);
}

bool AcceptorLog::start() {
  running_.store(true, std::memory_order_release);
  started_ = rte_ctrl_thread_create(&thread_, "tob-log", nullptr, &AcceptorLog::entry, this) == 0;
  return started_;
}

void AcceptorLog::stop() {
  if (!started_) return;
  running_.store(false, std::memory_order_release);
  pthread_join(thread_, nullptr);
  started_ = false;
  flush_once(true);
}

void* AcceptorLog::entry(void* self) {
  static_cast<AcceptorLog*>(self)->run();
  return nullptr;
}

bool AcceptorLog::append(std::span<const uint8_t> records, bool awaited) {
  if (records.empty()) return true;
  const uint64_t head = appended_.load(std::memory_order_relaxed);
  const uint64_t tail = written_.load(std::memory_order_acquire);  // the writer frees after write()
  if (head + records.size() - tail > ring_.size()) return false;
  size_t at = static_cast<size_t>(head % ring_.size());
  size_t left = records.size();
  const uint8_t* src = records.data();
  while (left > 0) {
    const size_t n = std::min(left, ring_.size() - at);
    std::memcpy(ring_.data() + at, src, n);
    src += n;
    left -= n;
    at = 0;
  }
  appended_.store(head + records.size(), std::memory_order_release);
  if (awaited) awaited_.store(head + records.size(), std::memory_order_release);
  return true;
}

size_t AcceptorLog::flush_once(bool sync_all) {
  // Write what was appended; sync when something awaits it (or at stop): batch records alone
  // need not be durable before the vote that names them, which is after them in the file.
  const uint64_t head = appended_.load(std::memory_order_acquire);
  uint64_t pos = written_.load(std::memory_order_relaxed);
  const bool wrote = pos < head;
  while (pos < head) {
    const size_t at = static_cast<size_t>(pos % ring_.size());
    const size_t n = static_cast<size_t>(std::min<uint64_t>(head - pos, ring_.size() - at));
    const ssize_t w = ::write(fd_, ring_.data() + at, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      write_errors_.fetch_add(1, std::memory_order_relaxed);
      return 0;  // retried on the next round; frames keep waiting for durability
    }
    pos += static_cast<uint64_t>(w);
    written_.store(pos, std::memory_order_release);
  }
  const uint64_t durable = durable_.load(std::memory_order_relaxed);
  if (pos == durable) return wrote ? 1 : 0;
  if (sync_) {
    if (!sync_all && awaited_.load(std::memory_order_acquire) <= durable) return wrote ? 1 : 0;
    const auto t0 = std::chrono::steady_clock::now();
    if (::fdatasync(fd_) != 0) {
      write_errors_.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
    sync_ns_.record(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    syncs_.fetch_add(1, std::memory_order_relaxed);
  }
  durable_.store(pos, std::memory_order_release);
  return 1;
}

void AcceptorLog::run() {
  // Group commit: everything appended since the last round goes in one write and one sync.
  while (running_.load(std::memory_order_acquire)) {
    if (flush_once() == 0) {
      const timespec ts{0, 50'000};
      nanosleep(&ts, nullptr);
    }
  }
}

}  // namespace tob::dataplane
