// Fixed-bucket histogram of signed nanosecond values (TX error, RX arrival offset, delivery
// latency). Log-linear buckets: exact below 16 ns, then 16 sub-buckets per power of two, so a
// percentile read from the buckets is within 1/32 (about 3%) of the true value. No allocation:
// the buckets are a fixed array. One thread records (an lcore); any thread reads, lock-free
// (relaxed atomics, and a release/acquire count: a reader that sees a sample counted also sees
// its bucket and the extremes it moved; never a torn word).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace tob::dataplane {

struct HistogramSummary {
  uint64_t count = 0;
  int64_t min = 0;
  int64_t max = 0;
  int64_t mean = 0;
  int64_t p50 = 0;
  int64_t p90 = 0;
  int64_t p99 = 0;
  int64_t p999 = 0;
};

class Histogram {
 public:
  static constexpr int kSubBits = 4;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kMaxExp = 42;  // |value| < 2^43 ns (about 2.4 hours) is bucketed exactly
  static constexpr int kBuckets = kSub + (kMaxExp - kSubBits + 1) * kSub;

  // Single writer.
  void record(int64_t value_ns);
  void reset();  // only while no thread records

  // Any thread.
  uint64_t count() const { return count_.load(std::memory_order_acquire); }
  int64_t quantile(double q) const;  // q in [0, 1]; 0 when empty
  HistogramSummary summary() const;
  // Number of samples strictly above `value_ns` (bucket resolution).
  uint64_t count_above(int64_t value_ns) const;

  // Bucket arithmetic, exposed for tests.
  static int bucket_of(uint64_t magnitude);
  static uint64_t bucket_low(int bucket);
  static uint64_t bucket_width(int bucket);

 private:
  void bump(std::atomic<uint64_t>& a, uint64_t by = 1) {
    a.store(a.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  int64_t value_at_rank(uint64_t rank) const;

  std::array<std::atomic<uint64_t>, kBuckets> positive_{};  // value >= 0
  std::array<std::atomic<uint64_t>, kBuckets> negative_{};  // value < 0, by magnitude
  std::atomic<uint64_t> count_{0};
  std::atomic<int64_t> min_{INT64_MAX};
  std::atomic<int64_t> max_{INT64_MIN};
  std::atomic<double> sum_{0.0};
};

}  // namespace tob::dataplane
