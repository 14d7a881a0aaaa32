// The checkers must catch what they claim to catch: hand-made records that break one property.
#include "sim_test_util.h"

using namespace tob;
using namespace tob::sim;

namespace {

struct Fixture {
  core::Schedule sched = core::Schedule::create(core::ScheduleConfig::equal_slots(4, 1'000'000)).value();
  Records rec;
  Fixture() {
    rec.lives.assign(4, NodeLife{});
    rec.end_ns = sched.cycle_start_ns(100);
    rec.final_turn_seq = 400;
    for (int i = 0; i < 4; ++i) {
      core::MembershipEvent e{core::EventKind::admitted, static_cast<core::NodeId>(i), core::Reason::none, 2,
                              sched.turn_of(2, static_cast<core::NodeId>(i)).seq, 0, 0xF};
      rec.events.push_back({static_cast<core::NodeId>(i), 0, e, sched.membership_point_ns(2, static_cast<core::NodeId>(i))});
    }
  }
  void send(int sender, uint64_t id, int64_t cycle) { rec.sent.push_back({static_cast<core::NodeId>(sender), 0, id, cycle}); }
  void deliver(int node, int sender, uint64_t id, int64_t cycle, int ordinal = 0, int64_t turn = -1) {
    if (turn < 0) turn = sched.turn_of(cycle + 1, static_cast<core::NodeId>(sender)).seq;
    rec.deliveries.push_back({static_cast<core::NodeId>(node), 0, static_cast<core::NodeId>(sender), cycle, turn,
                              ordinal, id, 0, true});
  }
  bool violated(const std::string& property) {
    const CheckReport r = check(sched, rec);
    for (const Violation& v : r.violations)
      if (v.property == property) return true;
    return false;
  }
};

}  // namespace

TEST_CASE("checker accepts a consistent run") {
  Fixture f;
  f.send(1, 0, 10);
  for (int i = 0; i < 4; ++i) f.deliver(i, 1, 0, 10);
  CHECK(check(f.sched, f.rec).ok());
}

TEST_CASE("checker catches a message a correct node missed (uniform agreement)") {
  Fixture f;
  f.send(1, 0, 10);
  for (int i = 0; i < 3; ++i) f.deliver(i, 1, 0, 10);
  CHECK(f.violated("uniform-agreement"));
}

TEST_CASE("checker catches duplicates and forged payloads (uniform integrity)") {
  Fixture f;
  f.send(1, 0, 10);
  for (int i = 0; i < 4; ++i) f.deliver(i, 1, 0, 10);
  f.deliver(2, 1, 0, 10, 1);
  CHECK(f.violated("uniform-integrity"));
  Fixture g;
  g.send(1, 0, 10);
  for (int i = 0; i < 4; ++i) g.deliver(i, 1, 0, 10);
  g.rec.deliveries[0].payload_ok = false;
  CHECK(g.violated("uniform-integrity"));
}

TEST_CASE("checker catches two nodes disagreeing on order (uniform total order)") {
  Fixture f;
  f.send(1, 0, 10);
  f.send(2, 0, 10);
  for (int i = 0; i < 4; ++i) {
    if (i == 3) {
      f.deliver(i, 2, 0, 10);
      f.deliver(i, 1, 0, 10);
    } else {
      f.deliver(i, 1, 0, 10);
      f.deliver(i, 2, 0, 10);
    }
  }
  CHECK(f.violated("uniform-total-order"));
}

TEST_CASE("checker catches FIFO inversions and gaps of correct senders") {
  Fixture f;
  f.send(1, 0, 10);
  f.send(1, 1, 10);
  f.send(1, 2, 11);
  for (int i = 0; i < 4; ++i) {
    f.deliver(i, 1, 0, 10, 0);
    f.deliver(i, 1, 2, 11, 0);
  }
  CHECK(f.violated("fifo-order"));
}

TEST_CASE("checker catches late delivery and a sender that never delivers its own message") {
  Fixture f;
  f.send(1, 0, 10);
  for (int i = 0; i < 4; ++i) f.deliver(i, 1, 0, 10, 0, f.sched.turn_of(12, 1).seq);
  CHECK(f.violated("delivery-within-one-cycle"));
  Fixture g;
  g.send(1, 0, 10);
  CHECK(g.violated("validity"));
}

TEST_CASE("checker catches a crash nobody detects and divergent membership views") {
  Fixture f;
  f.rec.lives[3].crashed = true;
  f.rec.lives[3].crash_ns.push_back(f.sched.cycle_start_ns(20));
  CHECK(f.violated("failure-detection"));
  Fixture g;
  core::MembershipEvent e{core::EventKind::removed, 3, core::Reason::sender_omission, 20,
                          g.sched.turn_of(20, 3).seq, 0, 0x7};
  g.rec.events.push_back({0, 0, e, g.sched.membership_point_ns(20, 3)});
  CHECK(g.violated("membership-agreement"));
}
