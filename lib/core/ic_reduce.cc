#include "core/ic_reduce.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/bytes.h"
#include "core/result.h"
#include "core/schedule.h"

namespace tob::core {

const char* to_string(Reduction r) {
  switch (r) {
    case Reduction::majority: return "majority";
    case Reduction::median_f64: return "median-f64";
    case Reduction::midpoint_f64: return "midpoint-f64";
    case Reduction::median_i64: return "median-i64";
    case Reduction::midpoint_i64: return "midpoint-i64";
  }
  return "unknown";
}

bool parse_reduction(std::string_view name, Reduction& out) {
  for (int i = 0; i < kReductionCount; ++i) {
    const auto r = static_cast<Reduction>(i);
    if (name == to_string(r)) {
      out = r;
      return true;
    }
  }
  return false;
}

bool is_numeric(Reduction r) { return r != Reduction::majority; }

const char* to_string(ReduceStatus s) { return s == ReduceStatus::ok ? "ok" : "no quorum"; }

void encode_f64(double v, std::span<uint8_t> out) {
  TOB_ASSERT(out.size() >= kNumericValueBytes);
  store_be64(out.data(), std::bit_cast<uint64_t>(v));
}

bool decode_f64(std::span<const uint8_t> in, double& v) {
  if (in.size() != kNumericValueBytes) return false;
  v = std::bit_cast<double>(load_be64(in.data()));
  return std::isfinite(v);
}

void encode_i64(int64_t v, std::span<uint8_t> out) {
  TOB_ASSERT(out.size() >= kNumericValueBytes);
  store_be64(out.data(), static_cast<uint64_t>(v));
}

bool decode_i64(std::span<const uint8_t> in, int64_t& v) {
  if (in.size() != kNumericValueBytes) return false;
  v = static_cast<int64_t>(load_be64(in.data()));
  return true;
}

bool valid_value(Reduction r, std::span<const uint8_t> value) {
  switch (r) {
    case Reduction::majority: return true;
    case Reduction::median_f64:
    case Reduction::midpoint_f64: {
      double d;
      return decode_f64(value, d);
    }
    case Reduction::median_i64:
    case Reduction::midpoint_i64: return value.size() == kNumericValueBytes;
  }
  return false;
}

namespace {

bool same(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

ReduceOutcome majority(int nodes, std::span<const std::span<const uint8_t>> copies, std::span<uint8_t> out) {
  ReduceOutcome o;
  o.copies_used = static_cast<int>(copies.size());
  // A value held by more than N/2 of the configured nodes: at most f < N/3 copies are faulty,
  // so it is a correct node's value, and no other value can also have a majority.
  for (size_t i = 0; i < copies.size(); ++i) {
    size_t count = 0;
    for (const auto& c : copies) count += same(c, copies[i]) ? size_t{1} : size_t{0};
    if (2 * count > static_cast<size_t>(nodes)) {
      TOB_ASSERT(out.size() >= copies[i].size());
      if (!copies[i].empty()) std::memcpy(out.data(), copies[i].data(), copies[i].size());
      o.status = ReduceStatus::ok;
      o.value_bytes = copies[i].size();
      return o;
    }
  }
  return o;
}

// Sorted values of the well-formed copies; with m >= 2f + 1 of them and at most f faulty, the
// values at ranks f .. m-1-f lie within the range of the correct copies.
template <class T>
ReduceOutcome numeric(bool median, int f, std::span<const std::span<const uint8_t>> copies, std::span<uint8_t> out,
                      bool (*decode)(std::span<const uint8_t>, T&), void (*encode)(T, std::span<uint8_t>),
                      T (*mid)(T, T)) {
  T v[kMaxNodes];
  size_t m = 0;
  for (const auto& c : copies) {
    TOB_ASSERT(m < static_cast<size_t>(kMaxNodes));
    if (decode(c, v[m])) ++m;
  }
  ReduceOutcome o;
  o.copies_used = static_cast<int>(m);
  const auto fz = static_cast<size_t>(f);
  if (m < 2 * fz + 1) return o;
  std::sort(v, v + m);
  const T result = median ? v[(m - 1) / 2] : mid(v[fz], v[m - 1 - fz]);
  encode(result, out);
  o.status = ReduceStatus::ok;
  o.value_bytes = kNumericValueBytes;
  return o;
}

// Halves first: no overflow for any two finite doubles.
double mid_f64(double a, double b) { return a / 2 + b / 2; }
// a <= b; rounds towards a. In unsigned arithmetic, so no overflow either.
int64_t mid_i64(int64_t a, int64_t b) {
  const uint64_t d = static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
  return static_cast<int64_t>(static_cast<uint64_t>(a) + d / 2);
}

}  // namespace

ReduceOutcome reduce_copies(Reduction r, int nodes, int f, std::span<const std::span<const uint8_t>> copies,
                            std::span<uint8_t> out) {
  TOB_ASSERT(nodes > 3 * f && f >= 0);
  TOB_ASSERT(copies.size() <= static_cast<size_t>(nodes));
  switch (r) {
    case Reduction::majority: return majority(nodes, copies, out);
    case Reduction::median_f64: return numeric<double>(true, f, copies, out, decode_f64, encode_f64, mid_f64);
    case Reduction::midpoint_f64: return numeric<double>(false, f, copies, out, decode_f64, encode_f64, mid_f64);
    case Reduction::median_i64: return numeric<int64_t>(true, f, copies, out, decode_i64, encode_i64, mid_i64);
    case Reduction::midpoint_i64: return numeric<int64_t>(false, f, copies, out, decode_i64, encode_i64, mid_i64);
  }
  return {};
}

Reduction reduction_for(std::span<const uint8_t> key, std::span<const IcKeyClass> classes, Reduction fallback) {
  size_t best = 0;
  Reduction r = fallback;
  for (const IcKeyClass& c : classes) {
    const size_t len = c.prefix.size();
    if (len == 0 || len > key.size() || len <= best) continue;
    if (std::memcmp(key.data(), c.prefix.data(), len) == 0) {
      best = len;
      r = c.reduction;
    }
  }
  return r;
}

}  // namespace tob::core
