// The cases of seed 000 §5.3.2 and §6.2, one by one, on a 5-node cluster (turn order 0..4,
// so pred(3) = 2). Nodes start together: cycle 0 listen, cycle 1 announce, cycle 2 the first
// membership forms; faults are placed at cycle 20.
#include "sim_test_util.h"

using namespace tob;
using namespace tob::sim;
using namespace tob::sim::test;
using core::EventKind;
using core::Reason;

namespace {

Scenario with(Fault f, int nodes = 5, int64_t cycles = 40) {
  Scenario s = quiet_scenario(nodes, cycles);
  s.faults.push_back(f);
  return s;
}

void removed_by_all_within_two_cycles(const Run& r, int victim, int64_t failed_ns, Reason why) {
  for (int i = 0; i < r.sched().node_count(); ++i) {
    if (i == victim || r.rec().lives[static_cast<size_t>(i)].shut_down) continue;
    Reason reason = Reason::none;
    const int64_t at = r.event_ns(i, EventKind::removed, victim, &reason);
    INFO("observer " << i);
    REQUIRE(at >= failed_ns);
    CHECK(at - failed_ns <= 2 * r.cycle_ns());
    CHECK(reason == why);
  }
}

}  // namespace

TEST_CASE("first membership is created by the first active node and everyone is admitted") {
  const Run r = run(quiet_scenario(5, 10));
  REQUIRE(r.report.ok());
  // seed 000 §6.2.1: node 0 creates the membership at its membership point in cycle 2.
  const int64_t created = r.event_ns(0, EventKind::membership_created, 0);
  CHECK(created == r.sched().membership_point_ns(2, 0));
  for (int i = 1; i < 5; ++i) CHECK(r.event_ns(i, EventKind::admitted, i) == r.sched().membership_point_ns(2, static_cast<core::NodeId>(i)));
  // Service messages flow once three are members: node 2's batch of cycle 2 is the first.
  CHECK_FALSE(r.sent_in(1, 2));
  CHECK(r.sent_in(2, 2));
  for (int i = 0; i < 5; ++i) CHECK(r.delivered(i, 2, 2));
}

TEST_CASE("crash after sending: the last message is delivered and the node removed within two cycles") {
  Scenario s = quiet_scenario(5, 40);
  const int64_t slot_ns = s.cycle_ns / 5;
  Fault f{FaultKind::crash, 20, 2};
  f.offset_ns = 2 * slot_ns + slot_ns / 2;  // after both copies of node 2's frame are out
  s.faults.push_back(f);
  const Run r = run(s);
  INFO(r.violations());
  REQUIRE(r.report.ok());
  REQUIRE(r.sent_in(2, 20));
  for (int i : {0, 1, 3, 4}) CHECK(r.delivered(i, 2, 20));
  removed_by_all_within_two_cycles(r, 2, r.rec().lives[2].crash_ns.at(0), Reason::sender_omission);
}

TEST_CASE("outgoing link failure: the sender shuts itself down and its message is discarded") {
  const Run r = run(with({FaultKind::send_omission, 20, 2}));
  INFO(r.violations());
  REQUIRE(r.report.ok());
  Reason why = Reason::none;
  const int64_t down = r.event_ns(2, EventKind::self_shutdown, 2, &why);
  CHECK(down == r.sched().membership_point_ns(21, 2));
  CHECK(why == Reason::sender_omission);
  for (int i = 0; i < 5; ++i) CHECK_FALSE(r.delivered(i, 2, 20));
  bool reported = false;
  for (const UndeliveredRecord& u : r.rec().undelivered) reported |= u.sender == 2 && u.what.cycle == 20;
  CHECK(reported == r.sent_in(2, 20));
  removed_by_all_within_two_cycles(r, 2, r.sched().membership_point_ns(20, 2), Reason::sender_omission);
}

TEST_CASE("incoming link failure before pred(n): n finds its own failure at its membership point") {
  const Run r = run(with({FaultKind::receive_omission, 20, 3, 1}));  // node 3 misses node 1
  INFO(r.violations());
  REQUIRE(r.report.ok());
  Reason why = Reason::none;
  CHECK(r.event_ns(3, EventKind::self_shutdown, 3, &why) == r.sched().membership_point_ns(20, 3));
  CHECK(why == Reason::receiver_omission);
  // Node 3's message of cycle 19 was fine: the others deliver it.
  for (int i : {0, 1, 2, 4}) CHECK(r.delivered(i, 3, 19));
  CHECK_FALSE(r.delivered(3, 3, 19));
  removed_by_all_within_two_cycles(r, 3, r.sched().membership_point_ns(20, 3), Reason::sender_omission);
}

TEST_CASE("incoming link failure at pred(n): suspicion raised, then confirmed") {
  const Run r = run(with({FaultKind::receive_omission, 20, 3, 2}));  // node 3 misses pred(3) = 2
  INFO(r.violations());
  REQUIRE(r.report.ok());
  CHECK(r.event_ns(3, EventKind::suspicion_raised, 2) == r.sched().membership_point_ns(20, 3));
  // Node 2 stays a member at its membership point in cycle 21; node 3 lacks its message.
  Reason why = Reason::none;
  CHECK(r.event_ns(3, EventKind::self_shutdown, 3, &why) == r.sched().membership_point_ns(21, 2));
  CHECK(why == Reason::receiver_omission);
  for (int i : {0, 1, 2, 4}) {
    Reason removed_why = Reason::none;
    CHECK(r.event_ns(i, EventKind::removed, 3, &removed_why) == r.sched().membership_point_ns(21, 3));
    CHECK(removed_why == Reason::suspicion_confirmed);
    CHECK_FALSE(r.delivered(i, 3, 20));  // the suspecting node's message is discarded
  }
}

TEST_CASE("suspicion cleared: pred(n) really failed and n stays a member") {
  const Run r = run(with({FaultKind::send_omission, 20, 2}));  // everybody misses node 2
  INFO(r.violations());
  REQUIRE(r.report.ok());
  CHECK(r.event_ns(3, EventKind::suspicion_raised, 2) == r.sched().membership_point_ns(20, 3));
  for (int i : {0, 1, 3, 4}) CHECK(r.event_ns(i, EventKind::suspicion_cleared, 3) == r.sched().membership_point_ns(21, 3));
  CHECK(r.event_ns(3, EventKind::self_shutdown, 3) == -1);
  for (int i : {0, 1, 3, 4}) CHECK(r.delivered(i, 3, 20));
}

TEST_CASE("corrupted and late frames count as omissions") {
  for (FaultKind k : {FaultKind::corrupt, FaultKind::late_frame}) {
    const Run r = run(with({k, 20, 3, 1}));
    INFO(to_string(k) << "\n" << r.violations());
    REQUIRE(r.report.ok());
    Reason why = Reason::none;
    CHECK(r.event_ns(3, EventKind::self_shutdown, 3, &why) == r.sched().membership_point_ns(20, 3));
    CHECK(why == Reason::receiver_omission);
  }
}

TEST_CASE("join: a restarted node listens, announces itself and is admitted") {
  Fault f{FaultKind::crash, 10, 4};
  f.restart_after_cycles = 5;
  const Run r = run(with(f));
  INFO(r.violations());
  REQUIRE(r.report.ok());
  REQUIRE(r.rec().lives[4].incarnations == 2);
  const int64_t restart_ns = r.rec().lives[4].crash_ns.at(0) + 5 * r.cycle_ns();
  for (int i = 0; i < 5; ++i) {
    int64_t admitted = -1;
    for (const EventRecord& e : r.rec().events)
      if (e.node == i && e.event.kind == EventKind::admitted && e.event.node == 4 && e.virtual_ns > restart_ns)
        admitted = e.virtual_ns;
    INFO("observer " << i);
    CHECK(admitted > restart_ns);
    CHECK(admitted - restart_ns <= 3 * r.cycle_ns());  // listen one cycle, announce, admitted
  }
  CHECK(r.delivered(4, 0, 35));
}

TEST_CASE("two-member deadlock: a two-member membership gives up after the bounded wait") {
  // N = 4. Nodes 3 and 2 crash (spaced), leaving {0, 1}; then node 1 crashes too. With two
  // members no decisions are taken, so node 1 stays in node 0's view and blocks node 2's
  // return; node 0 shuts down after two_member_wait_cycles. Node 3 and 1 return later and the
  // service resumes with three members.
  Scenario s = quiet_scenario(4, 80);
  s.node_template.two_member_wait_cycles = 6;
  Fault c3{FaultKind::crash, 10, 3};
  c3.restart_after_cycles = 30;
  Fault c2{FaultKind::crash, 14, 2};
  c2.restart_after_cycles = 5;  // back at 19, announces at 20, while node 0 still waits
  Fault c1{FaultKind::crash, 18, 1};
  c1.restart_after_cycles = 30;
  s.faults = {c3, c2, c1};
  const Run r = run(s);
  INFO(r.violations());
  REQUIRE(r.report.ok());
  Reason why = Reason::none;
  const int64_t gave_up = r.event_ns(0, EventKind::self_shutdown, 0, &why);
  CHECK(why == Reason::two_member_timeout);
  CHECK(gave_up > r.sched().cycle_start_ns(18));
  CHECK(gave_up <= r.sched().cycle_start_ns(18 + 6 + 2));
  // Node 2 returned at cycle 19 but node 1 (crashed) was still a member in node 0's view, and
  // node 0's frames kept naming it: node 2 waited for node 1's row and was refused, before node
  // 0 gave up. (With a return at 22, after node 0 had given up, this check used to pass only on
  // the rejoin livelock of issue 17, at cycle 43.)
  int64_t refused = -1;
  for (const EventRecord& e : r.rec().events)
    if (refused < 0 && e.node == 2 && e.event.kind == EventKind::self_shutdown && e.event.reason == Reason::not_admitted)
      refused = e.virtual_ns;
  CHECK(refused > 0);
  CHECK(refused < gave_up);
  // Service is back by the end: the three-member group delivers again.
  bool late_delivery = false;
  for (const DeliveryRecord& d : r.rec().deliveries) late_delivery |= d.cycle >= 70;
  CHECK(late_delivery);
}

TEST_CASE("outside the hypothesis: two receivers miss the same frame, a correct sender is excluded") {
  // Nodes 2 and 3 both miss node 1's frame of cycle 20: two failures in one cycle. The rule
  // "more than one node missed it" blames the sender, so node 1, which did nothing wrong, is
  // removed and shuts itself down. Safety holds (nobody delivers node 1's message); what the
  // protocol gives up is validity for node 1 (docs/protocol-mars.md).
  Scenario s = quiet_scenario(5, 40);
  s.faults = {{FaultKind::receive_omission, 20, 2, 1}, {FaultKind::receive_omission, 20, 3, 1}};
  const Run r = run(s);
  INFO(r.violations());
  REQUIRE(r.report.ok());
  Reason why = Reason::none;
  CHECK(r.event_ns(1, EventKind::self_shutdown, 1, &why) == r.sched().membership_point_ns(21, 1));
  CHECK(why == Reason::sender_omission);
  for (int i = 0; i < 5; ++i) CHECK_FALSE(r.delivered(i, 1, 20));
}

TEST_CASE("outside the hypothesis: a dead link makes the receiver shut down again and again, safely") {
  Scenario s = quiet_scenario(5, 60);
  Fault f{FaultKind::link_down, 20, 3, 1};
  f.cycles = 1000;
  s.faults = {f};
  const Run r = run(s);
  INFO(r.violations());
  REQUIRE(r.report.ok());
  int shutdowns = 0;
  for (const EventRecord& e : r.rec().events) shutdowns += e.node == 3 && e.event.kind == EventKind::self_shutdown;
  CHECK(shutdowns >= 3);
  for (int i : {0, 1, 2, 4}) {  // the others carry on
    int late = 0;
    for (const DeliveryRecord& d : r.rec().deliveries) late += d.node == i && d.cycle >= 50;
    CHECK(late > 20);
  }
}
