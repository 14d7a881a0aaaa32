// Per-key reductions of a decision vector (seed 004 §II, §IV-C): majority of exact bytes,
// fault-tolerant median and midpoint of numbers; their quorums; faulty copies never decide.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/ic_reduce.h"

namespace tob::core {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes f64(double v) {
  Bytes b(8);
  encode_f64(v, b);
  return b;
}
Bytes i64(int64_t v) {
  Bytes b(8);
  encode_i64(v, b);
  return b;
}

struct Out {
  ReduceOutcome o;
  Bytes value;
};

Out reduce(Reduction r, int n, int f, const std::vector<Bytes>& copies) {
  std::vector<std::span<const uint8_t>> spans(copies.begin(), copies.end());
  Out out;
  out.value.assign(64, 0xEE);
  out.o = reduce_copies(r, n, f, spans, out.value);
  out.value.resize(out.o.value_bytes);
  return out;
}

double as_f64(const Bytes& b) {
  double d = 0;
  REQUIRE(decode_f64(b, d));
  return d;
}
int64_t as_i64(const Bytes& b) {
  int64_t v = 0;
  REQUIRE(decode_i64(b, v));
  return v;
}

}  // namespace

TEST_CASE("majority needs more than N/2 identical copies", "[ic][reduce]") {
  const Bytes a{1, 2, 3};
  const Bytes b{9};
  SECTION("3 of 4, one liar") {
    const Out r = reduce(Reduction::majority, 4, 1, {a, b, a, a});
    CHECK(r.o.status == ReduceStatus::ok);
    CHECK(r.value == a);
  }
  SECTION("3 of 4 with one copy missing (crashed node)") {
    CHECK(reduce(Reduction::majority, 4, 1, {a, a, a}).value == a);
  }
  SECTION("2 of 4 is no quorum, whatever the other copies") {
    CHECK(reduce(Reduction::majority, 4, 1, {a, a, b}).o.status == ReduceStatus::no_quorum);
    CHECK(reduce(Reduction::majority, 4, 1, {a, a}).o.status == ReduceStatus::no_quorum);
    CHECK(reduce(Reduction::majority, 4, 1, {}).o.status == ReduceStatus::no_quorum);
  }
  SECTION("N = 7: 4 copies decide, 3 do not") {
    CHECK(reduce(Reduction::majority, 7, 2, {b, a, a, b, a, a}).value == a);
    CHECK(reduce(Reduction::majority, 7, 2, {b, a, a, b, a}).o.status == ReduceStatus::no_quorum);
  }
  SECTION("empty values are values") {
    CHECK(reduce(Reduction::majority, 4, 1, {Bytes{}, Bytes{}, Bytes{}, a}).o.status == ReduceStatus::ok);
  }
}

TEST_CASE("fault-tolerant median: lower median of at least 2f+1 copies, inside the correct range",
          "[ic][reduce]") {
  SECTION("one wild liar (35.33 among 0.15s) cannot move it out of the correct range") {
    const Out r = reduce(Reduction::median_f64, 4, 1, {f64(0.15), f64(35.33), f64(0.16), f64(0.14)});
    REQUIRE(r.o.status == ReduceStatus::ok);
    CHECK(as_f64(r.value) == 0.15);
  }
  SECTION("two liars at both extremes with f = 2") {
    const Out r = reduce(Reduction::median_f64, 7, 2, {f64(-1e300), f64(1.0), f64(2.0), f64(3.0), f64(1e300)});
    CHECK(as_f64(r.value) == 2.0);
  }
  SECTION("2f copies are no quorum") {
    CHECK(reduce(Reduction::median_f64, 4, 1, {f64(1), f64(2)}).o.status == ReduceStatus::no_quorum);
    CHECK(reduce(Reduction::median_i64, 7, 2, {i64(1), i64(2), i64(3), i64(4)}).o.status == ReduceStatus::no_quorum);
  }
  SECTION("malformed copies count as missing") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const Out r = reduce(Reduction::median_f64, 4, 1, {f64(nan), Bytes{1, 2, 3}, f64(4), f64(5)});
    CHECK(r.o.status == ReduceStatus::no_quorum);
    CHECK(r.o.copies_used == 2);
    CHECK(reduce(Reduction::median_f64, 4, 1, {f64(std::numeric_limits<double>::infinity()), f64(1), f64(2), f64(3)}).value ==
          f64(2));
  }
  SECTION("i64, even count takes the lower median") {
    CHECK(as_i64(reduce(Reduction::median_i64, 4, 1, {i64(40), i64(10), i64(30), i64(20)}).value) == 20);
  }
}

TEST_CASE("fault-tolerant midpoint drops f from each end and halves the rest's range", "[ic][reduce]") {
  CHECK(as_f64(reduce(Reduction::midpoint_f64, 4, 1, {f64(1.0), f64(2.0), f64(4.0), f64(1000.0)}).value) == 3.0);
  CHECK(as_f64(reduce(Reduction::midpoint_f64, 4, 1, {f64(-1000.0), f64(2.0), f64(4.0)}).value) == 2.0);
  // -99, -5 | 10, 11 | 20, 99: the midpoint of 10 and 11, rounded towards the lower one.
  CHECK(as_i64(reduce(Reduction::midpoint_i64, 7, 2, {i64(-5), i64(10), i64(11), i64(20), i64(99), i64(-99)}).value) == 10);
  CHECK(as_i64(reduce(Reduction::midpoint_i64, 7, 2, {i64(-5), i64(10), i64(12), i64(20), i64(99), i64(-99)}).value) == 11);
  SECTION("extremes do not overflow") {
    const int64_t lo = std::numeric_limits<int64_t>::min();
    const int64_t hi = std::numeric_limits<int64_t>::max();
    CHECK(as_i64(reduce(Reduction::midpoint_i64, 4, 1, {i64(lo), i64(lo), i64(hi), i64(hi)}).value) == -1);
    const double big = std::numeric_limits<double>::max();
    CHECK(as_f64(reduce(Reduction::midpoint_f64, 4, 1, {f64(big), f64(big), f64(big)}).value) == big);
  }
  CHECK(reduce(Reduction::midpoint_f64, 4, 1, {f64(1), f64(2)}).o.status == ReduceStatus::no_quorum);
  SECTION("f = 0: midpoint of everything") {
    CHECK(as_i64(reduce(Reduction::midpoint_i64, 2, 0, {i64(2), i64(8)}).value) == 5);
  }
}

TEST_CASE("written values must suit the key's reduction", "[ic][reduce]") {
  CHECK(valid_value(Reduction::majority, Bytes{}));
  CHECK(valid_value(Reduction::median_f64, f64(1.5)));
  CHECK_FALSE(valid_value(Reduction::median_f64, f64(std::nan(""))));
  CHECK_FALSE(valid_value(Reduction::midpoint_f64, Bytes{1, 2, 3, 4}));
  CHECK(valid_value(Reduction::median_i64, i64(-3)));
  CHECK_FALSE(valid_value(Reduction::midpoint_i64, Bytes(9, 0)));
}

TEST_CASE("reduction by key class: longest matching prefix, else the default", "[ic][reduce]") {
  const std::vector<IcKeyClass> classes = {{"sensor/", Reduction::median_f64},
                                           {"sensor/temp/", Reduction::midpoint_f64},
                                           {"count", Reduction::median_i64}};
  const auto key = [](const std::string& s) { return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()); };
  CHECK(reduction_for(key("sensor/speed"), classes, Reduction::majority) == Reduction::median_f64);
  CHECK(reduction_for(key("sensor/temp/1"), classes, Reduction::majority) == Reduction::midpoint_f64);
  CHECK(reduction_for(key("counter"), classes, Reduction::majority) == Reduction::median_i64);
  CHECK(reduction_for(key("sens"), classes, Reduction::majority) == Reduction::majority);
  CHECK(reduction_for(key("state"), classes, Reduction::midpoint_i64) == Reduction::midpoint_i64);
  Reduction r;
  CHECK(parse_reduction("midpoint-f64", r));
  CHECK(r == Reduction::midpoint_f64);
  CHECK_FALSE(parse_reduction("mean", r));
}

}  // namespace tob::core
