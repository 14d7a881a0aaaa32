// How many frames a slot carries (lib/core/slot_budget): the worked numbers of
// docs/plans/throughput.md §7.1, the copy gap, aux frames, the [limits] slot_frames cap, the
// legacy answer without a rate, and the refusal that names the node and the shortfall.
#include <catch2/catch.hpp>

#include "core/engine.h"
#include "core/slot_budget.h"

using namespace tob::core;

namespace {

// 4 nodes, 40 ms cycle: 10 ms slots, margin 1 ms, precision 0.5 ms, copy gap 0.5 ms, 2 copies.
ScheduleConfig four_by_ten_ms() { return ScheduleConfig::equal_slots(4, 40'000'000); }

SlotBudget ok(const ScheduleConfig& s, NodeId n, const WireBudget& w) {
  auto b = slot_budget(s, n, w);
  INFO((b.ok() ? std::string() : b.error().message));
  REQUIRE(b.ok());
  return b.value();
}

}  // namespace

TEST_CASE("a frame's airtime counts header, tag, FCS, preamble and gap, rounded up") {
  CHECK(frame_airtime_ns(1500, 1000) == 12'336);   // 1542 bytes at 1 Gbit/s
  CHECK(frame_airtime_ns(9000, 1000) == 72'336);
  CHECK(frame_airtime_ns(1500, 10'000) == 1'234);  // 1233.6 up
  CHECK(frame_airtime_ns(1500, 0) == 0);
}

TEST_CASE("the worked numbers: 344 frames of 1500 bytes or 58 of 9000 per copy in a 10 ms slot at 1 Gbit/s") {
  const ScheduleConfig s = four_by_ten_ms();
  const SlotBudget std_ = ok(s, 2, {1000, 1500, 0, 0});
  CHECK(std_.frames_per_copy == 344);
  CHECK(std_.usable_ns == 8'500'000);
  CHECK(std_.busy_ns == 2 * 344 * 12'336);
  CHECK(ok(s, 2, {1000, 9000, 0, 0}).frames_per_copy == 58);
}

TEST_CASE("a copy gap longer than a copy's frames spaces the copies, not the frames") {
  ScheduleConfig s = four_by_ten_ms();
  s.copy_gap_ns = 8'000'000;  // copy 1 starts 8 ms after copy 0: 0.5 ms left for its frames
  const SlotBudget b = ok(s, 0, {1000, 1500, 0, 0});
  CHECK(b.frames_per_copy == 500'000 / 12'336);  // 40
  CHECK(b.busy_ns == 8'000'000 + 40 * 12'336);
}

TEST_CASE("aux frames come out of the copies' room") {
  const ScheduleConfig s = four_by_ten_ms();
  const SlotBudget b = ok(s, 1, {1000, 1500, 100, 0});
  CHECK(b.usable_ns == 8'500'000 - 100 * 12'336);
  CHECK(b.frames_per_copy == (8'500'000 - 100 * 12'336) / (2 * 12'336));
}

TEST_CASE("[limits] slot_frames caps the frames per copy") {
  CHECK(ok(four_by_ten_ms(), 3, {1000, 1500, 0, 16}).frames_per_copy == 16);
  CHECK(ok(four_by_ten_ms(), 3, {1000, 1500, 0, 1000}).frames_per_copy == 344);
}

TEST_CASE("a fast port is capped at the segment numbers' limit") {
  CHECK(ok(four_by_ten_ms(), 0, {400'000, 64, 0, 0}).frames_per_copy == kSlotFramesMax);
}

TEST_CASE("without a rate a slot carries one frame per copy and nothing is checked") {
  ScheduleConfig s = ScheduleConfig::equal_slots(4, 40'000);  // 10 us slots
  const SlotBudget b = ok(s, 0, {0, 9000, 50, 0});
  CHECK(b.frames_per_copy == 1);
  CHECK(b.air_ns == 0);
}

TEST_CASE("a slot that cannot carry one frame per copy is refused with the node and how much is missing") {
  // 1 ms cycle, 4 nodes: 250 us slots, 25 us margin, 12.5 us precision, 12.5 us copy gap.
  const ScheduleConfig s = ScheduleConfig::equal_slots(4, 1'000'000);
  auto b = slot_budget(s, 2, {1000, 9000, 3, 0});  // 2 x 72.3 us + 3 x 72.3 us > 212.5 us
  REQUIRE_FALSE(b.ok());
  const std::string& m = b.error().message;
  CHECK_THAT(m, Catch::Contains("node 2") && Catch::Contains("1000 Mbit/s") && Catch::Contains("3 aux frames") &&
                    Catch::Contains("need 361.68 us of the 212.50 us") && Catch::Contains("149.18 us short") &&
                    Catch::Contains("[timing] rate_mbps"));
  CHECK(slot_budget(s, 2, {1000, 9000, 0, 0}).ok());  // without the aux frames it fits
}

TEST_CASE("the node configuration checks every node's budget") {
  NodeConfig c;
  c.schedule = ScheduleConfig::equal_slots(4, 1'000'000);
  c.frame_bytes_max = 9000;
  c.rate_mbps = 1000;
  CHECK(c.validate().ok());
  c.aux_frames = 3;
  auto r = c.validate();
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("node 0"));
  c.aux_frames = 0;
  c.rate_mbps = 400'001;
  CHECK_FALSE(c.validate().ok());
  c.rate_mbps = 1000;
  c.slot_frames_max = kSlotFramesMax + 1;
  CHECK_FALSE(c.validate().ok());
}

TEST_CASE("the budget line says what a slot carries") {
  const SlotBudget b = ok(four_by_ten_ms(), 1, {1000, 1500, 0, 0});
  CHECK(describe(b, 1, 2) == "node 1: 344 frames per copy of 12.34 us (2 copies: 8487.17 of 8500.00 us usable)");
  CHECK(describe(SlotBudget{}, 1, 2) == "node 1: 1 frame per copy (no [timing] rate_mbps)");
}
