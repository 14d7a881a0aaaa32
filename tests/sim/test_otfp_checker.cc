// The otfp checkers (lib/sim/otfp_checker.h) must catch what they claim to catch: hand-made
// records that break one property each, the near misses that must not count (unsettled
// instances, crashed senders, runs with failures, warm-up), and a clean record set that passes.
#include <algorithm>
#include <string>
#include <vector>

#include "sim/otfp_checker.h"
#include "sim_test_util.h"

using namespace tob;
using namespace tob::sim;

namespace {

constexpr int kNodes = 4;
constexpr int64_t kEndCycle = 100;  // with settle_cycles 40: instances up to 60 are settled

struct OtfpFixture {
  core::Schedule sched = core::Schedule::create(core::ScheduleConfig::equal_slots(kNodes, 1'000'000)).value();
  Records rec;
  OtfpCheckParams params;

  OtfpFixture() {
    rec.lives.assign(kNodes, NodeLife{});
    rec.end_ns = sched.cycle_start_ns(kEndCycle);
  }
  void send(int sender, uint64_t id, int64_t cycle, int incarnation = 0) {
    rec.sent.push_back({static_cast<core::NodeId>(sender), incarnation, id, cycle});
  }
  // A delivery `after_ns` after the sender's transmit instant of `cycle` (one cycle by default).
  void deliver(int node, int sender, uint64_t id, int64_t cycle, int64_t after_ns = -1, int incarnation = 0) {
    if (after_ns < 0) after_ns = sched.cycle_ns();
    const int64_t at_ns = sched.transmit_ns(cycle, static_cast<core::NodeId>(sender)) + after_ns;
    rec.deliveries.push_back({static_cast<core::NodeId>(node), incarnation, static_cast<core::NodeId>(sender), cycle,
                              cycle, 0, id, at_ns, true});
  }
  void deliver_all(int sender, uint64_t id, int64_t cycle, int64_t after_ns = -1) {
    for (int i = 0; i < kNodes; ++i) deliver(i, sender, id, cycle, after_ns);
  }
  void crash(int node, int64_t cycle) {
    rec.lives[static_cast<size_t>(node)].crashed = true;
    rec.lives[static_cast<size_t>(node)].crash_ns.push_back(sched.cycle_start_ns(cycle));
  }
  CheckReport run() const { return check_otfp(sched, rec, params); }
  static uint64_t count(const CheckReport& r, const std::string& property) {
    return static_cast<uint64_t>(std::count_if(r.violations.begin(), r.violations.end(),
                                               [&](const Violation& v) { return v.property == property; }));
  }
  // Exactly `n` violations, all of `property`.
  void expect_only(const std::string& property, uint64_t n) const {
    const CheckReport r = run();
    INFO(describe(r));
    CHECK(r.violation_count == n);
    CHECK(count(r, property) == n);
    CHECK_FALSE(r.ok());
  }
  void expect_ok() const {
    const CheckReport r = run();
    INFO(describe(r));
    CHECK(r.ok());
    CHECK(r.violation_count == 0);
  }
  static std::string describe(const CheckReport& r) {
    std::string s;
    for (const Violation& v : r.violations) s += v.property + ": " + v.detail + "\n";
    return s;
  }
};

// Every node sends two messages in cycles 20 and 21; everybody delivers all of them in the same
// order, one cycle after sending.
void clean_run(OtfpFixture& f) {
  for (int64_t c = 20; c < 22; ++c)
    for (int s = 0; s < kNodes; ++s) f.send(s, static_cast<uint64_t>(c), c);
  for (int64_t c = 20; c < 22; ++c)
    for (int s = 0; s < kNodes; ++s) f.deliver_all(s, static_cast<uint64_t>(c), c);
}

}  // namespace

TEST_CASE("otfp checker names nine properties and accepts a clean run", "[otfp_checker]") {
  const std::vector<std::string> want = {"validity", "integrity", "total-order", "decisions", "agreement",
                                         "exactly-once", "pending", "liveness", "latency"};
  CHECK(otfp_property_names() == want);

  OtfpFixture f;
  f.params.failure_free = true;
  clean_run(f);
  const CheckReport r = f.run();
  INFO(OtfpFixture::describe(r));
  CHECK(r.ok());
  CHECK(r.stats.sent == 8);
  CHECK(r.stats.messages_delivered == 8);
  CHECK(r.stats.deliveries == 32);
  CHECK(r.stats.correct_nodes == 4);
}

TEST_CASE("otfp checker accepts a run with a crash, a restart and a re-proposed message", "[otfp_checker]") {
  OtfpFixture f;
  // Node 3 crashed in cycle 30: it delivered a prefix of the others' sequence before, and its
  // second incarnation delivers again from the start (integrity is per incarnation).
  f.crash(3, 30);
  f.rec.lives[3].incarnations = 2;
  f.send(0, 0, 20);
  f.send(1, 0, 20);
  f.send(3, 0, 25);  // a crashed node's message: nobody has to deliver it
  f.send(2, 0, 20);
  f.send(2, 0, 23);  // re-proposed after instance 20 was decided without it
  for (int i = 0; i < 3; ++i) {
    f.deliver(i, 0, 0, 20);
    f.deliver(i, 1, 0, 20);
    f.deliver(i, 2, 0, 23);
  }
  f.deliver(3, 0, 0, 20);  // incarnation 0: a prefix
  f.deliver(3, 0, 0, 20, -1, 1);
  f.deliver(3, 1, 0, 20, -1, 1);
  f.expect_ok();
  CHECK(f.run().stats.correct_nodes == 3);
  CHECK(f.run().stats.sent == 4);  // distinct messages: a re-proposal is not a new one
}

// --- validity ------------------------------------------------------------------------------

TEST_CASE("otfp checker catches a payload that is not the sender's (validity)", "[otfp_checker]") {
  OtfpFixture f;
  clean_run(f);
  f.rec.deliveries[5].payload_ok = false;
  f.expect_only("validity", 1);
}

TEST_CASE("otfp checker catches the delivery of a message never sent (validity)", "[otfp_checker]") {
  OtfpFixture f;
  clean_run(f);
  f.deliver_all(2, 99, 30);  // everybody agrees on it, in the same place: only validity breaks
  f.expect_only("validity", 4);
  // The right id from the wrong sender was never sent either. (1/50 is sent in an unsettled
  // instance, so that its absence breaks nothing else.)
  OtfpFixture g;
  clean_run(g);
  g.send(1, 50, 90);
  g.deliver_all(1, 50, 90);
  g.expect_ok();
  for (auto& d : g.rec.deliveries)
    if (d.msg_id == 50) d.sender = 3;
  g.expect_only("validity", 4);
}

// --- integrity -------------------------------------------------------------------------------

TEST_CASE("otfp checker catches a node incarnation delivering a message twice (integrity)", "[otfp_checker]") {
  OtfpFixture f;
  clean_run(f);
  f.deliver(2, 3, 21, 21);  // node 2 delivers its last message, 3/21, a second time
  f.expect_only("integrity", 1);
}

// --- total order ------------------------------------------------------------------------------

TEST_CASE("otfp checker catches two nodes delivering common messages in opposite orders (total-order)",
          "[otfp_checker]") {
  OtfpFixture f;
  f.send(1, 0, 20);
  f.send(2, 0, 20);
  for (int i = 0; i < 3; ++i) {
    f.deliver(i, 1, 0, 20);
    f.deliver(i, 2, 0, 20);
  }
  f.deliver(3, 2, 0, 20);
  f.deliver(3, 1, 0, 20);
  // Node 3 against each of the three others.
  f.expect_only("total-order", 3);

  // Common messages only: a node that lacks some (it crashed) is still held to their order.
  OtfpFixture g;
  g.crash(3, 40);
  g.send(1, 0, 20);
  g.send(2, 0, 20);
  g.send(0, 0, 20);
  for (int i = 0; i < 3; ++i) {
    g.deliver(i, 0, 0, 20);
    g.deliver(i, 1, 0, 20);
    g.deliver(i, 2, 0, 20);
  }
  g.deliver(3, 2, 0, 20);  // 0/0 missing, then 2 before 1
  g.deliver(3, 1, 0, 20);
  g.expect_only("total-order", 3);
  g.rec.deliveries.pop_back();  // node 3 delivered only 2/0: nothing to disagree on
  g.expect_ok();
}

// --- agreement -------------------------------------------------------------------------------

TEST_CASE("otfp checker catches a correct node missing a message of a settled instance (agreement)",
          "[otfp_checker]") {
  OtfpFixture f;
  clean_run(f);
  // Sender 1 crashed later, so exactly-once does not judge its message: only agreement does.
  f.crash(1, 50);
  f.send(1, 7, 30);
  for (int i = 0; i < 3; ++i) f.deliver(i, 1, 7, 30);  // node 3 never does
  f.expect_only("agreement", 1);

  // Delivered only by the crashed node itself: every correct node misses it, one report.
  OtfpFixture g;
  g.crash(1, 50);
  g.send(1, 7, 30);
  g.deliver(1, 1, 7, 30);
  g.expect_only("agreement", 1);
}

TEST_CASE("otfp checker does not judge agreement in an unsettled instance near the end", "[otfp_checker]") {
  OtfpFixture f;
  clean_run(f);
  f.crash(1, 95);
  f.send(1, 7, 90);  // 90 > 100 - 40
  for (int i = 0; i < 3; ++i) f.deliver(i, 1, 7, 90);
  f.expect_ok();
  // The boundary: instance 60 is the last settled one.
  OtfpFixture g;
  g.crash(1, 95);
  g.send(1, 7, 60);
  for (int i = 0; i < 3; ++i) g.deliver(i, 1, 7, 60);
  g.expect_only("agreement", 1);
  OtfpFixture h;
  h.crash(1, 95);
  h.send(1, 7, 61);
  for (int i = 0; i < 3; ++i) h.deliver(i, 1, 7, 61);
  h.expect_ok();
}

// --- exactly once ----------------------------------------------------------------------------

TEST_CASE("otfp checker catches a correct node's early message that nobody delivers (exactly-once)",
          "[otfp_checker]") {
  OtfpFixture f;
  clean_run(f);
  f.send(2, 7, 30);
  f.expect_only("exactly-once", 1);

  // Delivered by three of four correct nodes: that is agreement's, reported once.
  OtfpFixture g;
  clean_run(g);
  g.send(2, 7, 30);
  for (int i = 0; i < 3; ++i) g.deliver(i, 2, 7, 30);
  g.expect_only("agreement", 1);
}

TEST_CASE("otfp checker does not judge exactly-once for crashed senders or late messages", "[otfp_checker]") {
  OtfpFixture f;
  clean_run(f);
  f.crash(2, 35);
  f.send(2, 7, 30);  // its sender crashed: the message may be lost with it
  f.expect_ok();

  OtfpFixture g;
  clean_run(g);
  g.send(2, 7, 61);  // not early enough to settle before the end
  g.expect_ok();
  g.rec.sent.back().cycle = 60;
  g.expect_only("exactly-once", 1);

  // Sent, excluded, sent again later and delivered in the later instance: once is enough.
  OtfpFixture h;
  clean_run(h);
  h.send(2, 7, 30);
  h.send(2, 7, 33);
  h.deliver_all(2, 7, 33);
  h.expect_ok();
  // Sent twice and never delivered: one message, one violation.
  h.rec.deliveries.resize(h.rec.deliveries.size() - kNodes);
  h.expect_only("exactly-once", 1);
}

// --- latency -----------------------------------------------------------------------------------

TEST_CASE("otfp checker catches a delivery later than kappa + 1 cycles in a failure-free run (latency)",
          "[otfp_checker]") {
  OtfpFixture f;
  f.params.failure_free = true;
  clean_run(f);
  const int64_t bound_ns = (f.params.kappa + 1) * f.sched.cycle_ns();
  f.send(3, 7, 30);
  for (int i = 0; i < 3; ++i) f.deliver(i, 3, 7, 30, bound_ns);  // exactly on the bound
  f.deliver(3, 3, 7, 30, bound_ns + 1);                           // one nanosecond late
  f.expect_only("latency", 1);

  // With kappa 3 the same delivery is in time.
  f.params.kappa = 3;
  f.expect_ok();
  // And with a clock tolerance covering the nanosecond.
  f.params.kappa = 2;
  f.params.tolerance_ns = 1;
  f.expect_ok();
}

TEST_CASE("otfp checker does not judge latency with failures, before warm-up, or for re-proposals",
          "[otfp_checker]") {
  const int64_t late_ns = 10 * 1'000'000;  // ten cycles
  OtfpFixture f;
  clean_run(f);
  f.send(3, 7, 30);
  f.deliver_all(3, 7, 30, late_ns);
  f.params.failure_free = false;
  f.expect_ok();
  f.params.failure_free = true;
  f.expect_only("latency", 4);

  OtfpFixture g;
  g.params.failure_free = true;
  clean_run(g);
  g.send(3, 7, 11);  // warm-up_cycles 12: the bound holds from cycle 12 on
  g.deliver_all(3, 7, 11, late_ns);
  g.expect_ok();
  g.rec.sent.back().cycle = 12;
  for (auto& d : g.rec.deliveries)
    if (d.msg_id == 7) d.cycle = 12;
  g.expect_only("latency", 4);

  // A message first sent in 30 and delivered in instance 33 was re-proposed: the bound is for
  // the fast path only.
  OtfpFixture h;
  h.params.failure_free = true;
  clean_run(h);
  h.send(3, 7, 30);
  h.send(3, 7, 33);
  h.deliver_all(3, 7, 33, late_ns);
  h.expect_ok();
}

// --- decisions, the drain, liveness ------------------------------------------------------------

TEST_CASE("otfp checker catches two incarnations deciding different values for one instance",
          "[otfp_checker]") {
  OtfpFixture f;
  clean_run(f);
  f.rec.decisions.push_back({0, 0, 40, 0x80, 0xF, 1});
  f.rec.decisions.push_back({1, 0, 40, 0x80, 0xF, 1});  // the same value: fine
  f.rec.decisions.push_back({2, 1, 40, 0x81, 0x7, 2});  // another one, in another ballot
  f.expect_only("decisions", 1);
  OtfpFixture g;
  clean_run(g);
  g.rec.decisions.push_back({0, 0, 40, 0x80, 0xF, 1});
  g.rec.decisions.push_back({1, 0, 40, 0x80, 0xF, 2});  // same senders, other bodies
  g.expect_only("decisions", 1);
  OtfpFixture h;
  clean_run(h);
  h.rec.engine_totals.decision_conflicts = 3;
  h.expect_only("decisions", 1);
}

// A drained run: node 3 is correct but did not deliver node 0's message of instance 50.
OtfpFixture drained_missing(int64_t node3_low) {
  OtfpFixture f;
  f.params.drained = true;
  f.rec.final_state.assign(kNodes, FinalState{true, 99, 0});
  f.rec.final_state[3].low = node3_low;
  f.send(0, 5, 50);
  f.rec.submitted.push_back({0, 0, 5, 0});
  for (int i = 0; i < 3; ++i) f.deliver(i, 0, 5, 50);
  return f;
}

TEST_CASE("otfp checker tells a message never delivered from one not delivered yet after a drain",
          "[otfp_checker]") {
  drained_missing(51).expect_only("agreement", 1);  // it moved past instance 50: never
  drained_missing(50).expect_only("pending", 1);    // instance 50 is still ahead of it
  drained_missing(12).expect_only("pending", 1);
  // Without a drain, an instance this close to the end is not judged at all.
  OtfpFixture f = drained_missing(51);
  f.params.drained = false;
  f.params.settle_cycles = 60;
  f.expect_ok();
  // With the drain, even the last instances are judged.
  OtfpFixture g = drained_missing(99);
  g.send(1, 1, 98);
  g.deliver(0, 1, 1, 98);
  const CheckReport r = g.run();
  CHECK(OtfpFixture::count(r, "agreement") == 2);  // one per message: 1/1 (nodes 1-3 miss it) and 0/5
}

TEST_CASE("otfp checker reports a message nobody delivered: lost when its sender dropped it, pending when held",
          "[otfp_checker]") {
  OtfpFixture f;
  f.params.drained = true;
  f.rec.final_state.assign(kNodes, FinalState{true, 99, 0});
  f.rec.submitted.push_back({2, 0, 9, 0});  // submitted, never sent, never delivered
  f.expect_only("exactly-once", 1);
  f.rec.final_state[2].queued = 1;  // its sender still holds something: not yet
  f.expect_only("pending", 1);
  f.crash(2, 50);  // a crashed sender's messages may be lost with it
  f.expect_ok();
}

TEST_CASE("otfp checker holds every correct node to the liveness bound from submission", "[otfp_checker]") {
  OtfpFixture f;
  f.params.liveness_cycles = 10;
  const int64_t cycle = f.sched.cycle_ns();
  f.send(1, 0, 20);
  f.rec.submitted.push_back({1, 0, 0, f.sched.cycle_start_ns(20)});
  for (int i = 0; i < kNodes; ++i) f.deliver(i, 1, 0, 20, 3 * cycle);  // about 3 cycles: fine
  f.expect_ok();
  CHECK(f.run().stats.latency_judged == 1);
  CHECK(f.run().stats.latency_cycles_max_x1000 >= 3000);
  f.rec.deliveries.back().virtual_ns = f.sched.cycle_start_ns(20) + 11 * cycle;  // node 3: 11 cycles
  f.expect_only("liveness", 1);
  f.rec.deliveries.pop_back();  // node 3: never (agreement's too)
  CHECK(OtfpFixture::count(f.run(), "liveness") == 1);
  // A submission too close to the end to be judged, or of a sender that crashed, is not.
  OtfpFixture g;
  g.params.liveness_cycles = 10;
  g.rec.submitted.push_back({1, 0, 0, g.sched.cycle_start_ns(kEndCycle - 5)});
  g.rec.submitted.push_back({2, 0, 0, g.sched.cycle_start_ns(20)});
  g.crash(2, 30);
  g.send(1, 0, kEndCycle - 5);
  g.expect_ok();
  CHECK(g.run().stats.latency_judged == 0);
}
