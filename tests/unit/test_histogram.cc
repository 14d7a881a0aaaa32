// The log-linear histogram: bucket arithmetic, quantiles within the documented 1/32 relative
// error of the exact sample quantiles, exact count/min/max/mean, count_above at bucket
// resolution, reset, extreme values, and a reader racing the writer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "dataplane/observe/histogram.h"

using tob::dataplane::Histogram;
using tob::dataplane::HistogramSummary;

namespace {

constexpr uint64_t kExactLimit = uint64_t{1} << 43;  // |value| below this is bucketed exactly

// Deterministic generator (splitmix64): the same samples on every run and platform.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int64_t uniform(int64_t lo, int64_t hi) {  // [lo, hi]
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  double unit() { return static_cast<double>((next() >> 11) + 1) / 9007199254740993.0; }  // (0, 1]
};

uint64_t magnitude(int64_t v) { return v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }

// Nearest-rank quantile of sorted samples: the smallest value with at least q*n samples <= it.
int64_t exact_quantile(const std::vector<int64_t>& sorted, double q) {
  if (q <= 0) return sorted.front();
  if (q >= 1) return sorted.back();
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size()))) - 1;
  return sorted[rank];
}

// The estimate is in the exact value's bucket (same sign) and within 1/32 of it.
void check_quantile(const Histogram& h, const std::vector<int64_t>& sorted, double q) {
  const int64_t exact = exact_quantile(sorted, q);
  const int64_t est = h.quantile(q);
  INFO("q = " << q << ", exact " << exact << ", estimate " << est);
  CHECK((est < 0) == (exact < 0));
  CHECK(Histogram::bucket_of(magnitude(est)) == Histogram::bucket_of(magnitude(exact)));
  const uint64_t diff = est > exact ? static_cast<uint64_t>(est - exact) : static_cast<uint64_t>(exact - est);
  CHECK(32 * diff <= magnitude(exact));
}

void check_distribution(const std::vector<int64_t>& samples) {
  Histogram h;
  for (int64_t v : samples) h.record(v);
  std::vector<int64_t> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  int64_t sum = 0;
  for (int64_t v : samples) sum += v;

  const HistogramSummary s = h.summary();
  CHECK(s.count == samples.size());
  CHECK(h.count() == samples.size());
  CHECK(s.min == sorted.front());
  CHECK(s.max == sorted.back());
  CHECK(s.mean == sum / static_cast<int64_t>(samples.size()));
  CHECK(h.quantile(0) == sorted.front());
  CHECK(h.quantile(1) == sorted.back());
  for (double q : {0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999}) check_quantile(h, sorted, q);
  CHECK(s.p50 == h.quantile(0.5));
  CHECK(s.p90 == h.quantile(0.9));
  CHECK(s.p99 == h.quantile(0.99));
  CHECK(s.p999 == h.quantile(0.999));
  CHECK(s.min <= s.p50);
  CHECK(s.p50 <= s.p90);
  CHECK(s.p90 <= s.p99);
  CHECK(s.p99 <= s.p999);
  CHECK(s.p999 <= s.max);
}

}  // namespace

TEST_CASE("buckets tile [0, 2^43) without gaps or overlaps, in increasing order") {
  CHECK(Histogram::bucket_low(0) == 0);
  for (int b = 0; b < Histogram::kBuckets; ++b) {
    INFO("bucket " << b);
    const uint64_t low = Histogram::bucket_low(b);
    const uint64_t width = Histogram::bucket_width(b);
    REQUIRE(width >= 1);
    CHECK(Histogram::bucket_of(low) == b);
    CHECK(Histogram::bucket_of(low + width - 1) == b);
    // The width is at most 1/16 of the bucket's smallest value: the documented resolution.
    if (low >= static_cast<uint64_t>(Histogram::kSub)) CHECK(width * Histogram::kSub <= low);
    if (b + 1 < Histogram::kBuckets) CHECK(Histogram::bucket_low(b + 1) == low + width);
  }
  const int last = Histogram::kBuckets - 1;
  CHECK(Histogram::bucket_low(last) + Histogram::bucket_width(last) == kExactLimit);
}

TEST_CASE("values below 16 ns have a bucket of their own") {
  for (uint64_t m = 0; m < static_cast<uint64_t>(Histogram::kSub); ++m) {
    CHECK(Histogram::bucket_of(m) == static_cast<int>(m));
    CHECK(Histogram::bucket_low(static_cast<int>(m)) == m);
    CHECK(Histogram::bucket_width(static_cast<int>(m)) == 1);
  }
}

TEST_CASE("every magnitude below 2^43 falls in [low, low + width) of its bucket") {
  std::vector<uint64_t> values;
  for (int e = 0; e < 44; ++e) {
    const uint64_t p = uint64_t{1} << e;
    for (uint64_t v : {p - 1, p, p + 1, p + p / 2, p + p / 3}) values.push_back(v);
  }
  Rng rng{42};
  for (int i = 0; i < 100'000; ++i) values.push_back(rng.next() >> (21 + rng.next() % 43));  // all magnitudes
  int previous_bucket = 0;
  uint64_t previous = 0;
  std::sort(values.begin(), values.end());
  for (uint64_t m : values) {
    if (m >= kExactLimit) continue;
    INFO("magnitude " << m);
    const int b = Histogram::bucket_of(m);
    REQUIRE(b >= 0);
    REQUIRE(b < Histogram::kBuckets);
    CHECK(Histogram::bucket_low(b) <= m);
    CHECK(m < Histogram::bucket_low(b) + Histogram::bucket_width(b));
    if (m >= previous) CHECK(b >= previous_bucket);  // monotonic
    previous = m;
    previous_bucket = b;
  }
}

TEST_CASE("magnitudes of 2^43 and above saturate in the last bucket") {
  const int last = Histogram::kBuckets - 1;
  CHECK(Histogram::bucket_of(kExactLimit - 1) == last);
  CHECK(Histogram::bucket_of(kExactLimit) == last);
  CHECK(Histogram::bucket_of(kExactLimit * 5) == last);
  CHECK(Histogram::bucket_of(uint64_t{1} << 63) == last);
  CHECK(Histogram::bucket_of(UINT64_MAX) == last);
}

TEST_CASE("an empty histogram reports zeros") {
  Histogram h;
  CHECK(h.count() == 0);
  CHECK(h.quantile(0) == 0);
  CHECK(h.quantile(0.5) == 0);
  CHECK(h.quantile(1) == 0);
  CHECK(h.count_above(-1'000'000) == 0);
  CHECK(h.count_above(0) == 0);
  const HistogramSummary s = h.summary();
  CHECK(s.count == 0);
  CHECK(s.min == 0);
  CHECK(s.max == 0);
  CHECK(s.mean == 0);
  CHECK(s.p50 == 0);
  CHECK(s.p90 == 0);
  CHECK(s.p99 == 0);
  CHECK(s.p999 == 0);
}

TEST_CASE("count, min, max and mean are exact, the mean truncating toward zero") {
  Histogram h;
  for (int64_t v : {1, 2, 4}) h.record(v);
  auto s = h.summary();
  CHECK(s.count == 3);
  CHECK(s.min == 1);
  CHECK(s.max == 4);
  CHECK(s.mean == 2);  // 7 / 3

  Histogram n;
  for (int64_t v : {-1, -2, -4}) n.record(v);
  s = n.summary();
  CHECK(s.min == -4);
  CHECK(s.max == -1);
  CHECK(s.mean == -2);  // -7 / 3

  Histogram one;
  one.record(123'456'789);
  s = one.summary();
  CHECK(s.count == 1);
  CHECK(s.min == 123'456'789);
  CHECK(s.max == 123'456'789);
  CHECK(s.mean == 123'456'789);
  // A single sample: every quantile is clamped to it exactly.
  CHECK(s.p50 == 123'456'789);
  CHECK(s.p999 == 123'456'789);
}

TEST_CASE("small values are counted exactly, so their quantiles are exact") {
  Histogram h;
  std::vector<int64_t> sorted;
  for (int64_t v = -15; v <= 15; ++v)
    for (int64_t k = 0; k <= v + 15; ++k) {  // more of the larger values
      h.record(v);
      sorted.push_back(v);
    }
  std::sort(sorted.begin(), sorted.end());
  for (double q : {0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99}) CHECK(h.quantile(q) == exact_quantile(sorted, q));
}

TEST_CASE("quantiles of uniform samples are within 1/32 of the exact ones") {
  Rng rng{1};
  std::vector<int64_t> v;
  for (int i = 0; i < 50'000; ++i) v.push_back(rng.uniform(0, 1'000'000));
  check_distribution(v);
}

TEST_CASE("quantiles of a long-tailed (exponential) distribution are within 1/32") {
  Rng rng{2};
  std::vector<int64_t> v;
  for (int i = 0; i < 50'000; ++i) v.push_back(static_cast<int64_t>(-20'000.0 * std::log(rng.unit())));
  check_distribution(v);
}

TEST_CASE("quantiles of negative samples are within 1/32") {
  Rng rng{3};
  std::vector<int64_t> v;
  for (int i = 0; i < 50'000; ++i) v.push_back(rng.uniform(-5'000'000, -1));
  check_distribution(v);
}

TEST_CASE("quantiles of mixed-sign samples (a TX error around zero) are within 1/32") {
  Rng rng{4};
  std::vector<int64_t> v;
  for (int i = 0; i < 50'000; ++i) {
    // Mostly small errors either side of zero, a few large ones, some exact zeros.
    const int64_t scale = rng.next() % 100 == 0 ? 10'000'000 : 2'000;
    v.push_back(rng.next() % 50 == 0 ? 0 : rng.uniform(-scale, scale));
  }
  check_distribution(v);
}

TEST_CASE("quantiles of samples spread over many orders of magnitude are within 1/32") {
  Rng rng{5};
  std::vector<int64_t> v;
  for (int i = 0; i < 50'000; ++i) {
    const auto m = static_cast<int64_t>(rng.next() >> (22 + rng.next() % 42));  // up to 2^42
    v.push_back(rng.next() % 2 == 0 ? m : -m);
  }
  check_distribution(v);
}

TEST_CASE("count_above counts the samples in buckets above the value's bucket") {
  Histogram h;
  const std::vector<int64_t> samples = {-100, -5, -1, 0, 3, 17, 1000};
  for (int64_t v : samples) h.record(v);
  CHECK(h.count_above(-1'000'000) == 7);
  CHECK(h.count_above(-200) == 7);
  CHECK(h.count_above(-100) == 6);
  CHECK(h.count_above(-6) == 6);
  CHECK(h.count_above(-5) == 5);
  CHECK(h.count_above(-1) == 4);
  CHECK(h.count_above(0) == 3);
  CHECK(h.count_above(3) == 2);
  CHECK(h.count_above(16) == 2);
  CHECK(h.count_above(17) == 1);
  CHECK(h.count_above(1000) == 0);
  CHECK(h.count_above(INT64_MAX) == 0);
  CHECK(h.count_above(INT64_MIN + 1) == 7);
}

TEST_CASE("count_above is exact below 16 ns and bucket-rounded above") {
  Rng rng{6};
  std::vector<int64_t> samples;
  Histogram h;
  for (int i = 0; i < 20'000; ++i) {
    const int64_t v = rng.next() % 4 == 0 ? rng.uniform(-15, 15) : rng.uniform(-3'000'000, 3'000'000);
    samples.push_back(v);
    h.record(v);
  }
  auto exact_above = [&](int64_t t) {
    return static_cast<uint64_t>(std::count_if(samples.begin(), samples.end(), [t](int64_t v) { return v > t; }));
  };
  for (int64_t t = -15; t <= 15; ++t) CHECK(h.count_above(t) == exact_above(t));
  for (int i = 0; i < 200; ++i) {
    const int64_t t = rng.uniform(-3'000'000, 3'000'000);
    INFO("threshold " << t);
    const int b = Histogram::bucket_of(magnitude(t));
    const uint64_t got = h.count_above(t);
    // Never more than the true count, and exactly those beyond the threshold's bucket.
    CHECK(got <= exact_above(t));
    if (t >= 0) {
      CHECK(got == exact_above(static_cast<int64_t>(Histogram::bucket_low(b) + Histogram::bucket_width(b)) - 1));
    } else {
      CHECK(got == exact_above(-static_cast<int64_t>(Histogram::bucket_low(b))));
    }
  }
}

TEST_CASE("reset empties the histogram and forgets the extremes") {
  Histogram h;
  for (int64_t v : {-100, 5, 70'000}) h.record(v);
  REQUIRE(h.count() == 3);
  h.reset();
  CHECK(h.count() == 0);
  CHECK(h.quantile(0.5) == 0);
  CHECK(h.count_above(-1'000) == 0);
  auto s = h.summary();
  CHECK(s.count == 0);
  CHECK(s.min == 0);
  CHECK(s.max == 0);
  CHECK(s.mean == 0);

  h.record(40);
  h.record(50);
  s = h.summary();
  CHECK(s.count == 2);
  CHECK(s.min == 40);  // not -100 from before the reset
  CHECK(s.max == 50);  // not 70'000
  CHECK(s.mean == 45);
  CHECK(h.count_above(-1'000) == 2);
  CHECK(h.count_above(60'000) == 0);
}

TEST_CASE("extreme values keep exact min, max and count; far quantiles saturate") {
  Histogram h;
  h.record(0);
  h.record(INT64_MAX);
  h.record(INT64_MIN);
  auto s = h.summary();
  CHECK(s.count == 3);
  CHECK(s.min == INT64_MIN);
  CHECK(s.max == INT64_MAX);
  CHECK(s.mean == 0);  // (INT64_MIN + INT64_MAX) / 3 = -1 / 3
  CHECK(h.quantile(0) == INT64_MIN);
  CHECK(h.quantile(1) == INT64_MAX);
  CHECK(h.quantile(0.5) == 0);
  // Beyond 2^43 the buckets saturate: the estimate is at least the last bucket's low end.
  CHECK(h.quantile(0.999) >= static_cast<int64_t>(Histogram::bucket_low(Histogram::kBuckets - 1)));
  CHECK(h.quantile(0.2) <= -static_cast<int64_t>(Histogram::bucket_low(Histogram::kBuckets - 1)));
  CHECK(h.count_above(0) == 1);
  CHECK(h.count_above(-1) == 2);
}

TEST_CASE("values above 2^43 are counted and clamped to the recorded extremes") {
  const auto big = static_cast<int64_t>(kExactLimit * 3);
  Histogram h;
  for (int i = 0; i < 10; ++i) h.record(big);
  auto s = h.summary();
  CHECK(s.count == 10);
  CHECK(s.min == big);
  CHECK(s.max == big);
  CHECK(s.mean == big);
  CHECK(s.p50 == big);  // the saturated bucket's midpoint is clamped to min = max
  CHECK(s.p999 == big);
  CHECK(h.count_above(static_cast<int64_t>(kExactLimit) / 2) == 10);

  Histogram n;
  for (int i = 0; i < 10; ++i) n.record(-big);
  s = n.summary();
  CHECK(s.min == -big);
  CHECK(s.max == -big);
  CHECK(s.p50 == -big);
  CHECK(n.count_above(0) == 0);
  CHECK(n.count_above(-big - 1) == 0);  // same (saturated) bucket: bucket resolution
}

TEST_CASE("quantile outside [0, 1] returns the extremes") {
  Histogram h;
  for (int64_t v : {-7, 3, 900}) h.record(v);
  CHECK(h.quantile(-0.5) == -7);
  CHECK(h.quantile(0) == -7);
  CHECK(h.quantile(1) == 900);
  CHECK(h.quantile(2) == 900);
}

TEST_CASE("a reader racing the writer never sees the count go back or min above max") {
  constexpr int kRecords = 400'000;
  Histogram h;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> count_went_back{0};
  std::atomic<uint64_t> min_above_max{0};
  std::atomic<uint64_t> reads{0};
  std::atomic<bool> started{false};
  // Catch2 assertions are not thread-safe: the reader counts violations, the test checks them.
  std::thread reader([&] {
    uint64_t last = 0;
    started.store(true);
    while (!done.load(std::memory_order_acquire)) {
      const HistogramSummary s = h.summary();
      if (s.count < last) count_went_back.fetch_add(1);
      if (s.count > 0 && s.min > s.max) min_above_max.fetch_add(1);
      last = s.count;
      reads.fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::thread writer([&] {
    while (!started.load()) std::this_thread::yield();  // race, not run before the reader
    Rng rng{7};
    for (int i = 0; i < kRecords; ++i) h.record(rng.uniform(-1'000'000, 1'000'000));
    done.store(true, std::memory_order_release);
  });
  writer.join();
  reader.join();
  CHECK(count_went_back.load() == 0);
  CHECK(min_above_max.load() == 0);
  CHECK(reads.load() > 0);
  const HistogramSummary s = h.summary();
  CHECK(s.count == kRecords);
  CHECK(s.min >= -1'000'000);
  CHECK(s.max <= 1'000'000);
  CHECK(s.min < s.max);
}

TEST_CASE("extreme values neither overflow the mean nor break count_above") {
  Histogram h;
  h.record(INT64_MAX);
  h.record(INT64_MAX);
  CHECK(h.summary().mean == INT64_MAX);  // saturates; a wrapped sum would give -1
  Histogram n;
  n.record(INT64_MIN);
  n.record(INT64_MIN);
  CHECK(n.summary().mean == INT64_MIN);
  CHECK(n.count_above(INT64_MIN) == 0);
  n.record(-5);
  CHECK(n.count_above(INT64_MIN) == 1);
}
