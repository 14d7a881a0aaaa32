// TDMA schedule arithmetic and validation (docs/architecture.md "Time and schedule", seed 000 §6.2).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "core/schedule.h"

namespace tob::core {
namespace {

Schedule make(const ScheduleConfig& c) {
  auto s = Schedule::create(c);
  INFO((s.ok() ? std::string("ok") : s.error().message));
  REQUIRE(s.ok());
  return s.value();
}

// Expects creation to fail with a message containing `needle`.
void expect_error(const ScheduleConfig& c, const std::string& needle) {
  auto s = Schedule::create(c);
  REQUIRE_FALSE(s.ok());
  INFO("message: " << s.error().message);
  CHECK(s.error().message.find(needle) != std::string::npos);
}

// Three nodes whose turn order differs from their ids: node 1, node 2, node 0, then an idle
// gap [900, 1000) before the next cycle.
ScheduleConfig custom_config() {
  ScheduleConfig c;
  c.epoch_ns = 10'000;
  c.cycle_ns = 1000;
  c.decision_margin_ns = 30;
  c.precision_ns = 10;
  c.copy_gap_ns = 20;
  c.sends_per_slot = 2;
  c.slots = {{600, 300}, {0, 300}, {300, 300}};
  return c;
}

}  // namespace

TEST_CASE("equal_slots divides the cycle and scales margin, precision and copy gap",
          "[schedule]") {
  const ScheduleConfig c = ScheduleConfig::equal_slots(4, 1'000'000, 500);
  CHECK(c.epoch_ns == 500);
  CHECK(c.cycle_ns == 1'000'000);
  REQUIRE(c.slots.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(c.slots[i].offset_ns == static_cast<int64_t>(i) * 250'000);
    CHECK(c.slots[i].length_ns == 250'000);
  }
  CHECK(c.decision_margin_ns == 25'000);
  CHECK(c.precision_ns == 12'500);
  CHECK(c.copy_gap_ns == 12'500);
  CHECK(c.sends_per_slot == 2);
  CHECK(ScheduleConfig::equal_slots(0, 1000).slots.empty());
}

TEST_CASE("equal slots: membership point, transmit instants, slot end and reception window",
          "[schedule]") {
  const Schedule s = make(ScheduleConfig::equal_slots(4, 1'000'000, 500));
  CHECK(s.node_count() == 4);
  CHECK(s.cycle_start_ns(3) == 500 + 3'000'000);
  CHECK(s.membership_point_ns(3, 2) == 500 + 3'000'000 + 500'000);
  CHECK(s.transmit_ns(3, 2) == 500 + 3'000'000 + 500'000 + 25'000);
  CHECK(s.transmit_ns(3, 2, 1) == 500 + 3'000'000 + 500'000 + 25'000 + 12'500);
  CHECK(s.slot_end_ns(3, 2) == 500 + 3'000'000 + 750'000);
  const Window w = s.reception_window(3, 2);
  CHECK(w.open_ns == 500 + 3'000'000 + 500'000 + 25'000 - 12'500);
  CHECK(w.close_ns == 500 + 3'000'000 + 750'000);
  CHECK(w.contains(w.open_ns));
  CHECK_FALSE(w.contains(w.open_ns - 1));
  CHECK(w.contains(w.close_ns - 1));
  CHECK_FALSE(w.contains(w.close_ns));
  // The window opens after the membership point: no frame is accepted before n's decision.
  CHECK(w.open_ns > s.membership_point_ns(3, 2));
  // Negative cycles (before the epoch) use the same arithmetic.
  CHECK(s.membership_point_ns(-1, 0) == 500 - 1'000'000);
}

TEST_CASE("cycle_of floors, also before the epoch and at exact boundaries", "[schedule]") {
  const Schedule s = make(ScheduleConfig::equal_slots(4, 1000, 500));
  CHECK(s.cycle_of(500) == 0);
  CHECK(s.cycle_of(1499) == 0);
  CHECK(s.cycle_of(1500) == 1);
  CHECK(s.cycle_of(499) == -1);
  CHECK(s.cycle_of(-500) == -1);
  CHECK(s.cycle_of(-501) == -2);
  CHECK(s.cycle_of(500 - 5000) == -5);
  CHECK(s.cycle_of(500 - 5001) == -6);
  for (int64_t c = -3; c <= 3; ++c) {
    CHECK(s.cycle_of(s.cycle_start_ns(c)) == c);
    CHECK(s.cycle_of(s.cycle_start_ns(c) - 1) == c - 1);
  }
}

TEST_CASE("turn order follows slot offsets, not node ids", "[schedule]") {
  const Schedule s = make(custom_config());
  CHECK(s.node_at(0) == 1);
  CHECK(s.node_at(1) == 2);
  CHECK(s.node_at(2) == 0);
  CHECK(s.position_of(1) == 0);
  CHECK(s.position_of(2) == 1);
  CHECK(s.position_of(0) == 2);
  CHECK(s.previous_in_order(1) == 0);  // wraps to the last turn of the previous cycle
  CHECK(s.previous_in_order(2) == 1);
  CHECK(s.previous_in_order(0) == 2);
}

TEST_CASE("turn(seq) and turn_of map sequence numbers to cycles and nodes", "[schedule]") {
  const Schedule s = make(custom_config());
  struct Want {
    int64_t seq, cycle;
    NodeId node;
    int64_t mp_ns;
  };
  const Want wants[] = {
      {0, 0, 1, 10'000},       {1, 0, 2, 10'300},     {2, 0, 0, 10'600},
      {3, 1, 1, 11'000},       {5, 1, 0, 11'600},     {-1, -1, 0, 9'600},
      {-3, -1, 1, 9'000},      {-4, -2, 0, 8'600},    {300, 100, 1, 110'000},
  };
  for (const Want& w : wants) {
    INFO("seq " << w.seq);
    const Turn t = s.turn(w.seq);
    CHECK(t.seq == w.seq);
    CHECK(t.cycle == w.cycle);
    CHECK(t.node == w.node);
    CHECK(t.membership_point_ns == w.mp_ns);
    CHECK(s.turn_of(w.cycle, w.node).seq == w.seq);
  }
  // Consecutive turns have increasing membership points.
  for (int64_t seq = -10; seq < 10; ++seq)
    CHECK(s.turn(seq).membership_point_ns < s.turn(seq + 1).membership_point_ns);
}

TEST_CASE("next_turn_after returns the first membership point strictly after t", "[schedule]") {
  const Schedule s = make(custom_config());
  CHECK(s.next_turn_after(9'999).seq == 0);
  CHECK(s.next_turn_after(10'000).seq == 1);  // exactly at a point: the next one
  CHECK(s.next_turn_after(10'299).seq == 1);
  CHECK(s.next_turn_after(10'300).seq == 2);
  CHECK(s.next_turn_after(10'600).seq == 3);  // last turn of cycle 0: first of cycle 1
  CHECK(s.next_turn_after(10'950).seq == 3);  // in the idle gap
  CHECK(s.next_turn_after(10'999).seq == 3);
  CHECK(s.next_turn_after(9'700).seq == 0);   // before the epoch
  CHECK(s.next_turn_after(9'599).seq == -1);
  CHECK(s.next_turn_after(-1'000'000).membership_point_ns > -1'000'000);
  for (int64_t t = 8'000; t < 12'000; t += 37) {
    const Turn n = s.next_turn_after(t);
    CHECK(n.membership_point_ns > t);
    CHECK(s.turn(n.seq - 1).membership_point_ns <= t);
  }
}

TEST_CASE("schedule validation rejects bad configurations with a reason", "[schedule]") {
  const ScheduleConfig good = custom_config();
  REQUIRE(Schedule::create(good).ok());

  SECTION("no nodes") {
    ScheduleConfig c = good;
    c.slots.clear();
    expect_error(c, "no slots");
  }
  SECTION("65 nodes") {
    expect_error(ScheduleConfig::equal_slots(65, 65'000'000), "at most 64");
    CHECK(Schedule::create(ScheduleConfig::equal_slots(64, 64'000'000)).ok());
  }
  SECTION("zero and negative cycle length") {
    ScheduleConfig c = good;
    c.cycle_ns = 0;
    expect_error(c, "cycle length must be positive");
    c.cycle_ns = -1000;
    expect_error(c, "cycle length must be positive");
  }
  SECTION("zero and negative slot length") {
    ScheduleConfig c = good;
    c.slots[2].length_ns = 0;
    expect_error(c, "node 2: slot length must be positive");
    c.slots[2].length_ns = -5;
    expect_error(c, "node 2: slot length must be positive");
  }
  SECTION("negative offset") {
    ScheduleConfig c = good;
    c.slots[1].offset_ns = -1;
    expect_error(c, "node 1: slot offset must not be negative");
  }
  SECTION("negative margin, precision and copy gap") {
    ScheduleConfig c = good;
    c.decision_margin_ns = -1;
    expect_error(c, "decision margin must not be negative");
    c = good;
    c.precision_ns = -1;
    expect_error(c, "precision must not be negative");
    c = good;
    c.copy_gap_ns = -1;
    expect_error(c, "copy gap must not be negative");
  }
  SECTION("sends per slot outside 1..4") {
    ScheduleConfig c = good;
    c.sends_per_slot = 0;
    expect_error(c, "sends per slot");
    c.sends_per_slot = 5;
    expect_error(c, "sends per slot");
    c.sends_per_slot = 1;
    CHECK(Schedule::create(c).ok());
  }
  SECTION("slot ending beyond the cycle") {
    ScheduleConfig c = good;
    c.slots[0].length_ns = 401;  // [600, 1001)
    expect_error(c, "node 0: slot [600, 1001) ns ends beyond the cycle (1000 ns)");
    c.slots[0].length_ns = 400;  // ends exactly at the cycle end
    CHECK(Schedule::create(c).ok());
  }
  SECTION("overlapping slots") {
    ScheduleConfig c = good;
    c.slots[1].length_ns = 301;  // node 1 [0, 301) overlaps node 2 [300, 600)
    expect_error(c, "node 1 and node 2: slots overlap");
    c = good;
    c.slots[0].offset_ns = 300;  // same offset as node 2
    expect_error(c, "slots overlap");
  }
  SECTION("precision larger than the decision margin") {
    ScheduleConfig c = good;
    c.precision_ns = 31;
    expect_error(c, "exceeds the decision margin");
    c.precision_ns = 30;  // equal is allowed: earliest arrival at the membership point
    CHECK(Schedule::create(c).ok());
  }
  SECTION("margin and copies not fitting in a slot") {
    ScheduleConfig c = good;
    c.slots[2].length_ns = 50;  // margin 30 + one copy gap 20 = 50: no room left
    c.slots[0].offset_ns = 600;
    expect_error(c, "node 2: slot length 50 ns leaves no room");
    c.slots[2].length_ns = 51;
    CHECK(Schedule::create(c).ok());
    c.sends_per_slot = 3;  // 30 + 2 * 20 = 70 > 51
    expect_error(c, "leaves no room");
  }
}

}  // namespace tob::core

TEST_CASE("schedule errors are typed", "[schedule]") {
  using tob::core::Errc;
  using tob::core::Schedule;
  using tob::core::ScheduleConfig;
  const auto code = [](const ScheduleConfig& c) {
    auto r = Schedule::create(c);
    REQUIRE_FALSE(r.ok());
    return r.error().code;
  };
  ScheduleConfig c = ScheduleConfig::equal_slots(4, 1'000'000);
  c.slots.clear();
  CHECK(code(c) == Errc::no_slots);
  CHECK(code(ScheduleConfig::equal_slots(65, 65'000'000)) == Errc::too_many_nodes);
  c = ScheduleConfig::equal_slots(4, 1'000'000);
  c.slots[2].length_ns = 0;
  CHECK(code(c) == Errc::zero_slot_length);
  c = ScheduleConfig::equal_slots(4, 1'000'000);
  c.slots[3].offset_ns = 900'000;
  CHECK(code(c) == Errc::slot_beyond_cycle);
  c = ScheduleConfig::equal_slots(4, 1'000'000);
  c.slots[1].offset_ns = 200'000;
  CHECK(code(c) == Errc::slots_overlap);
  c = ScheduleConfig::equal_slots(4, 1'000'000);
  c.precision_ns = c.decision_margin_ns + 1;
  CHECK(code(c) == Errc::bad_precision);
}

TEST_CASE("a frame polled late after a stall is stamped in its window when it may have come in time", "[schedule]") {
  // 4 nodes, 1 ms cycle: node 1's slot is [250, 500) us of each cycle, its window opens
  // precision (slot/20 = 12.5 us) before its transmit instant and closes at the slot's end.
  using tob::core::Schedule;
  using tob::core::ScheduleConfig;
  using tob::core::Window;
  const Schedule s = Schedule::create(ScheduleConfig::equal_slots(4, 1'000'000)).value();
  const Window w = s.reception_window(7, 1);
  const int64_t polled = w.close_ns + 300'000;  // found 300 us after the window closed
  // The poll before came while the window was open: it may have arrived just after that poll.
  CHECK(s.stamp_within(7, 1, w.open_ns + 1000, polled) == w.open_ns + 1001);
  // ... or before the window opened: the earliest instant in the window.
  CHECK(s.stamp_within(7, 1, w.open_ns - 50'000, polled) == w.open_ns);
  // The poll before came after the window closed: late for certain.
  CHECK(s.stamp_within(7, 1, w.close_ns, polled) == polled);
  CHECK(s.stamp_within(7, 1, w.close_ns - 1, polled) == polled);  // only the close instant itself left
  // Polled in time, or early (before the window opened): unchanged.
  CHECK(s.stamp_within(7, 1, w.open_ns - 50'000, w.open_ns + 10) == w.open_ns + 10);
  CHECK(s.stamp_within(7, 1, w.open_ns - 50'000, w.open_ns - 10) == w.open_ns - 10);
  // A frame of an earlier cycle found after a stall across the cycle boundary: same rule.
  const Window w6 = s.reception_window(6, 1);
  CHECK(s.stamp_within(6, 1, w6.close_ns - 5000, polled) == w6.close_ns - 4999);
}
