// One writer publishes a small trivially copyable value; any number of readers on other threads
// read a consistent copy without locks (a sequence lock). The value is stored as atomic words,
// so a reader that races the writer reads torn words only to discard them, never undefined
// behaviour. Used for the TSC fit, node status and counter snapshots that the telemetry and
// I/O threads read while lcores run.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace tob::dataplane {

template <class T>
class Seqlock {
  static_assert(std::is_trivially_copyable_v<T>);
  static constexpr size_t kWords = (sizeof(T) + 7) / 8;

 public:
  // Writer side: only one thread may call publish().
  void publish(const T& value) {
    uint64_t words[kWords] = {};
    std::memcpy(words, &value, sizeof(T));
    const uint64_t s = seq_.load(std::memory_order_relaxed);
    seq_.store(s + 1, std::memory_order_relaxed);  // odd: write in progress
    std::atomic_thread_fence(std::memory_order_release);
    for (size_t i = 0; i < kWords; ++i) words_[i].store(words[i], std::memory_order_relaxed);
    seq_.store(s + 2, std::memory_order_release);
  }

  // False until the first publish().
  bool published() const { return seq_.load(std::memory_order_acquire) != 0; }

  // Reader side: retries while a write is in progress.
  T read() const {
    uint64_t words[kWords];
    for (;;) {
      const uint64_t s1 = seq_.load(std::memory_order_acquire);
      if ((s1 & 1) != 0) continue;
      for (size_t i = 0; i < kWords; ++i) words[i] = words_[i].load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (seq_.load(std::memory_order_relaxed) == s1) break;
    }
    T value;
    std::memcpy(&value, words, sizeof(T));
    return value;
  }

 private:
  std::atomic<uint64_t> seq_{0};
  std::atomic<uint64_t> words_[kWords] = {};
};

}  // namespace tob::dataplane
