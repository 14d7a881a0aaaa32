// The release-skew estimator (core/release_skew.h): wake-ups of the same instant from several
// nodes become one skew sample once the instant is old enough; late, stale and overflowing reports.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "core/release_skew.h"

namespace tob::core {
namespace {

struct Closed {
  int64_t skew;
  int reporters;
  int64_t self_late;
};

std::vector<Closed> close_all(ReleaseSkew& r, int64_t now) {
  std::vector<Closed> out;
  r.close(now, [&](int64_t skew, int reporters, int64_t self_late) { out.push_back({skew, reporters, self_late}); });
  return out;
}

constexpr int64_t kAfter = 50'000'000;
constexpr int64_t kR = 1'000'000'000;

TEST_CASE("the wake-ups of one instant give its spread once the instant is old enough", "[release]") {
  ReleaseSkew r(4, 0, kAfter);
  r.add(1, kR, kR + 50'000);
  r.add(0, kR, kR + 10'000);
  r.add(2, kR, kR + 30'000);
  CHECK(close_all(r, kR + kAfter - 1).empty());
  const auto c = close_all(r, kR + kAfter);
  REQUIRE(c.size() == 1);
  CHECK(c[0].skew == 40'000);
  CHECK(c[0].reporters == 3);
  CHECK(c[0].self_late == 10'000);
  CHECK(r.stats().instants_matched == 1);
  CHECK(r.stats().samples == 3);
}

TEST_CASE("a node's later wake-up for an instant replaces an earlier one, never the reverse", "[release]") {
  ReleaseSkew r(4, 3, kAfter);
  r.add(1, kR, kR + 5'000);
  r.add(2, kR, kR + 1'000);
  r.add(1, kR, kR + 9'000);  // another client of node 1 woke later
  r.add(1, kR, kR + 2'000);  // the same sample sent again in a later frame, or an earlier client
  const auto c = close_all(r, kR + kAfter);
  REQUIRE(c.size() == 1);
  CHECK(c[0].skew == 8'000);
  CHECK(c[0].reporters == 2);
  CHECK(c[0].self_late == INT64_MIN);  // node 3 did not wait for it
}

TEST_CASE("instants close oldest first; reports of closed instants are stale", "[release]") {
  ReleaseSkew r(3, 0, kAfter);
  r.add(0, kR + 2'000'000, kR + 2'000'100);
  r.add(1, kR + 2'000'000, kR + 2'000'300);
  r.add(0, kR, kR + 100);  // alone: no skew, but its own lateness
  const auto c = close_all(r, kR + 2'000'000 + kAfter);
  REQUIRE(c.size() == 2);
  CHECK(c[0].reporters == 1);
  CHECK(c[0].skew == 0);
  CHECK(c[0].self_late == 100);
  CHECK(c[1].reporters == 2);
  CHECK(c[1].skew == 200);
  CHECK(r.stats().instants_alone == 1);
  CHECK(r.stats().instants_matched == 1);
  r.add(2, kR + 2'000'000, kR + 2'000'000);  // arrives after its instant closed
  r.add(2, kR + 1'000'000, kR + 1'000'000);  // older than what closed
  CHECK(r.stats().samples_stale == 2);
  CHECK(close_all(r, kR + 10 * kAfter).empty());
}

TEST_CASE("a full table closes its oldest instant early and drops reports older than all", "[release]") {
  ReleaseSkew r(2, 0, kAfter);
  for (int i = 0; i < ReleaseSkew::kInstants; ++i) r.add(1, kR + i * 1000, kR + i * 1000);
  CHECK(r.stats().instants_early == 0);
  r.add(1, kR - 1000, kR);  // older than every open instant: no room made for it
  CHECK(r.stats().samples_stale == 1);
  r.add(1, kR + 64'000, kR + 64'000);
  CHECK(r.stats().instants_early == 1);
  r.add(0, kR, kR);  // the instant closed early: stale now
  CHECK(r.stats().samples_stale == 2);
  const auto c = close_all(r, kR + 64'000 + kAfter);
  CHECK(c.size() == static_cast<size_t>(ReleaseSkew::kInstants));
}

TEST_CASE("reports from beyond the cluster are ignored", "[release]") {
  ReleaseSkew r(2, 0, kAfter);
  r.add(5, kR, kR);
  CHECK(r.stats().samples == 0);
  CHECK(close_all(r, kR + kAfter).empty());
}

}  // namespace
}  // namespace tob::core
