#include "dataplane/observe/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tob::dataplane {

int Histogram::bucket_of(uint64_t m) {
  if (m < static_cast<uint64_t>(kSub)) return static_cast<int>(m);
  const int e = 63 - std::countl_zero(m);  // >= kSubBits
  if (e > kMaxExp) return kBuckets - 1;
  const auto sub = static_cast<int>((m >> (e - kSubBits)) & (kSub - 1));
  return kSub + (e - kSubBits) * kSub + sub;
}

uint64_t Histogram::bucket_low(int b) {
  if (b < kSub) return static_cast<uint64_t>(b);
  const int e = (b - kSub) / kSub + kSubBits;
  const auto sub = static_cast<uint64_t>((b - kSub) % kSub);
  return (uint64_t{1} << e) + (sub << (e - kSubBits));
}

uint64_t Histogram::bucket_width(int b) {
  if (b < kSub) return 1;
  const int e = (b - kSub) / kSub + kSubBits;
  return uint64_t{1} << (e - kSubBits);
}

void Histogram::record(int64_t v) {
  if (v >= 0) {
    bump(positive_[static_cast<size_t>(bucket_of(static_cast<uint64_t>(v)))]);
  } else {
    const uint64_t m = v == INT64_MIN ? uint64_t{1} << 63 : static_cast<uint64_t>(-v);
    bump(negative_[static_cast<size_t>(bucket_of(m))]);
  }
  if (v < min_.load(std::memory_order_relaxed)) min_.store(v, std::memory_order_relaxed);
  if (v > max_.load(std::memory_order_relaxed)) max_.store(v, std::memory_order_relaxed);
  // A double: no overflow however large the values (the mean only needs 53 bits).
  sum_.store(sum_.load(std::memory_order_relaxed) + static_cast<double>(v), std::memory_order_relaxed);
  // Release: a reader that sees the new count also sees the bucket, min and max (acquire in count()).
  count_.store(count_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

void Histogram::reset() {
  for (auto& a : positive_) a.store(0, std::memory_order_relaxed);
  for (auto& a : negative_) a.store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  min_.store(INT64_MAX, std::memory_order_relaxed);
  max_.store(INT64_MIN, std::memory_order_relaxed);
  sum_.store(0.0, std::memory_order_relaxed);
}

// The sample of the given rank (0-based, ascending), as its bucket's midpoint clamped to the
// recorded extremes.
int64_t Histogram::value_at_rank(uint64_t rank) const {
  uint64_t seen = 0;
  int64_t v = 0;
  bool found = false;
  for (int b = kBuckets - 1; b >= 0 && !found; --b) {  // most negative first
    seen += negative_[static_cast<size_t>(b)].load(std::memory_order_relaxed);
    if (seen > rank) {
      v = -static_cast<int64_t>(bucket_low(b) + bucket_width(b) / 2);
      found = true;
    }
  }
  for (int b = 0; b < kBuckets && !found; ++b) {
    seen += positive_[static_cast<size_t>(b)].load(std::memory_order_relaxed);
    if (seen > rank) {
      v = static_cast<int64_t>(bucket_low(b) + bucket_width(b) / 2);
      found = true;
    }
  }
  const int64_t lo = min_.load(std::memory_order_relaxed);
  const int64_t hi = max_.load(std::memory_order_relaxed);
  if (!found) return hi;
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  return v;
}

int64_t Histogram::quantile(double q) const {
  const uint64_t n = count();
  if (n == 0) return 0;
  if (q <= 0) return min_.load(std::memory_order_relaxed);
  if (q >= 1) return max_.load(std::memory_order_relaxed);
  const auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(n))) - 1;
  return value_at_rank(rank);
}

uint64_t Histogram::count_above(int64_t value_ns) const {
  uint64_t above = 0;
  if (value_ns < 0) {
    const uint64_t magnitude = value_ns == INT64_MIN ? uint64_t{1} << 63 : static_cast<uint64_t>(-value_ns);
    const int limit = bucket_of(magnitude);
    for (int b = 0; b < limit; ++b) above += negative_[static_cast<size_t>(b)].load(std::memory_order_relaxed);
    for (int b = 0; b < kBuckets; ++b) above += positive_[static_cast<size_t>(b)].load(std::memory_order_relaxed);
    return above;
  }
  for (int b = bucket_of(static_cast<uint64_t>(value_ns)) + 1; b < kBuckets; ++b)
    above += positive_[static_cast<size_t>(b)].load(std::memory_order_relaxed);
  return above;
}

HistogramSummary Histogram::summary() const {
  HistogramSummary s;
  s.count = count();
  if (s.count == 0) return s;
  s.min = min_.load(std::memory_order_relaxed);
  s.max = max_.load(std::memory_order_relaxed);
  const double mean = sum_.load(std::memory_order_relaxed) / static_cast<double>(s.count);
  s.mean = mean >= 0x1p63 ? INT64_MAX : static_cast<int64_t>(std::max(mean, -0x1p63));  // truncated, as integer division
  s.p50 = quantile(0.5);
  s.p90 = quantile(0.9);
  s.p99 = quantile(0.99);
  s.p999 = quantile(0.999);
  return s;
}

}  // namespace tob::dataplane
