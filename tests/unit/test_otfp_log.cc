// The otfp acceptor log and the instances a node holds (lib/core/otfp_log.h, otfp_ring.h,
// docs/protocol-otfp.md "Durability", "Instances and memory"): records framed and checked, a log
// starting with its format and an older one refused with a message a person can act on, torn
// tails cut, a restarted node remembering its promises and votes, and the ring's floor below
// which a node neither votes nor reports. (That a node acts on its own vote only once durable is
// a scenario: tests/sim/testdata/otfp/crash_before_vote_durable.txt.)
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/bytes.h"
#include "core/otfp_log.h"
#include "core/otfp_node.h"
#include "core/otfp_ring.h"

namespace tob::core {
namespace {

using Bytes = std::vector<uint8_t>;

NodeConfig config(NodeId self) {
  NodeConfig c;
  c.schedule = ScheduleConfig::equal_slots(4, 1'000'000);
  c.self = self;
  return c;
}

Bytes vote_record(int64_t instance, uint32_t ballot, uint64_t mask) {
  Bytes out;
  uint8_t body[kOtfpVoteBytes];
  write_vote(body, {instance, ballot, {mask, 7}});
  otfp_log_append(out, OtfpRecord::vote, body);
  return out;
}

Bytes promise_record(uint32_t ballot) {
  Bytes out;
  uint8_t body[4];
  store_be32(body, ballot);
  otfp_log_append(out, OtfpRecord::promise, body);
  return out;
}

Bytes log_of(std::initializer_list<Bytes> records) {
  Bytes log;
  otfp_log_append_format(log);
  for (const Bytes& r : records) log.insert(log.end(), r.begin(), r.end());
  return log;
}

}  // namespace

TEST_CASE("an otfp log record is kind, length, body and a CRC32C that catches any changed byte", "[otfp_log]") {
  const Bytes r = promise_record(0x01020304);
  REQUIRE(r.size() == kOtfpRecordHeader + 4 + kOtfpRecordTrailer);
  CHECK(r[0] == static_cast<uint8_t>(OtfpRecord::promise));
  CHECK(load_be16(r.data() + 1) == 4);
  CHECK(load_be32(r.data() + 3) == 0x01020304);
  CHECK(otfp_log_valid_bytes(r) == r.size());
  for (size_t at = 0; at < r.size(); ++at) {
    Bytes bad = r;
    bad[at] ^= 0x10;
    INFO("byte " << at);
    CHECK(otfp_log_valid_bytes(bad) == 0);
  }
}

TEST_CASE("a torn or corrupt tail ends the log at the last good record", "[otfp_log]") {
  const Bytes log = log_of({promise_record(0x80), vote_record(5, 0x80, 3)});
  const size_t good = log.size();
  for (size_t cut = 0; cut < good; ++cut) {
    const Bytes torn(log.begin(), log.begin() + static_cast<std::ptrdiff_t>(cut));
    const size_t valid = otfp_log_valid_bytes(torn);
    CHECK(valid <= cut);
    CHECK(otfp_log_valid_bytes(std::span<const uint8_t>(torn).first(valid)) == valid);  // whole records only
  }
  Bytes corrupt = log;
  corrupt.back() ^= 1;  // the last record's CRC
  CHECK(otfp_log_valid_bytes(corrupt) == good - vote_record(5, 0x80, 3).size());
}

TEST_CASE("a new otfp node starts its log with the format record", "[otfp_log]") {
  auto node = OtfpNode::create(config(1));
  REQUIRE(node.ok());
  node.value()->on_time(0);
  const Actions& a = node.value()->take_actions();
  REQUIRE(a.persist.size() >= kOtfpRecordHeader + kOtfpFormatBytes + kOtfpRecordTrailer);
  CHECK(a.persist[0] == static_cast<uint8_t>(OtfpRecord::format));
  CHECK(load_be32(a.persist.data() + kOtfpRecordHeader) == kOtfpLogMagic);
  CHECK(load_be16(a.persist.data() + kOtfpRecordHeader + 4) == kOtfpLogVersion);
  auto again = OtfpNode::create(config(1), a.persist);  // its own log reads back
  REQUIRE(again.ok());
  CHECK(again.value()->log_replayed() == 1);
}

TEST_CASE("an acceptor log of an older format or version is refused with what to do", "[otfp_log]") {
  Bytes v1 = promise_record(0x100);  // format 1 had no format record
  auto old = OtfpNode::create(config(0), v1);
  REQUIRE_FALSE(old.ok());
  CHECK(old.error().message.find("older dpdk-tob") != std::string::npos);
  CHECK(old.error().message.find("remove their acceptor logs") != std::string::npos);
  Bytes v3;
  uint8_t body[kOtfpFormatBytes];
  store_be32(body, kOtfpLogMagic);
  store_be16(body + 4, kOtfpLogVersion + 1);
  otfp_log_append(v3, OtfpRecord::format, body);
  auto newer = OtfpNode::create(config(0), v3);
  REQUIRE_FALSE(newer.ok());
  CHECK(newer.error().message.find("format 3") != std::string::npos);
  Bytes unknown = log_of({});
  otfp_log_append(unknown, static_cast<OtfpRecord>(99), body);
  CHECK_FALSE(OtfpNode::create(config(0), unknown).ok());
  // A log torn before the end of its format record is an empty log: a fresh start.
  Bytes torn = log_of({});
  torn.pop_back();
  CHECK(OtfpNode::create(config(0), torn).ok());
}

TEST_CASE("a restarted acceptor remembers its promise, votes and the batches they name", "[otfp_log]") {
  Bytes batch(64);
  BatchWriter w(batch);
  const uint8_t payload[3] = {1, 2, 3};
  REQUIRE(w.add({9, 100, 2, payload}));
  batch.resize(w.finish());
  Bytes batch_record;
  uint8_t head[kOtfpBatchRecordHead];
  store_be64(head, 5);
  head[8] = 2;
  otfp_log_append(batch_record, OtfpRecord::batch, head, batch);
  const Bytes log = log_of({promise_record(ballot(3, false, 1)), batch_record, vote_record(5, ballot(3, false, 1), 0b100),
                            vote_record(5, ballot(2, true, 0), 0b1), vote_record(7, ballot(4, true, 2), 0)});
  auto node = OtfpNode::create(config(3), log);
  REQUIRE(node.ok());
  OtfpNode& n = *node.value();
  CHECK(n.log_replayed() == 6);
  CHECK(n.promised() == ballot(3, false, 1));
  CHECK(n.highest_voted() == 7);
  uint32_t b = 0;
  OtfpValue v;
  REQUIRE(n.voted(5, &b, &v));
  CHECK(b == ballot(3, false, 1));  // the later, lower vote record does not win
  CHECK(v.mask == 0b100);
  REQUIRE(n.voted(7, &b, &v));
  CHECK(b == ballot(4, true, 2));
  CHECK_FALSE(n.voted(6));
}

// Found by the otfp fuzz target (docs/fuzzing.md "Findings"): a ballot of the last round, which
// only a frame forged under a valid MAC (or such a promise in the log) brings, made a coordinator
// overflow the round counter and abort. It now stays acceptor and learner.
TEST_CASE("a promise of the last ballot round leaves the coordinator without a round, running", "[otfp_log]") {
  auto node = OtfpNode::create(config(0), log_of({promise_record(ballot(kBallotRoundMax, true, 0))}));
  REQUIRE(node.ok());
  OtfpNode& n = *node.value();
  REQUIRE(n.promised() == ballot(kBallotRoundMax, true, 0));
  const int64_t cycle = n.schedule().cycle_ns();
  for (int64_t c = 0; c < 100; ++c) {  // past the heard timeout: it would start a round
    n.on_time(c * cycle);
    n.take_actions();
    n.on_durable(n.persisted_bytes());
  }
  CHECK(n.self_state() == SelfState::member);
  CHECK(n.coordinator() == 0);  // it would lead: the lowest id, and the ballot names it
  CHECK_FALSE(n.coordinating());
  CHECK(n.promised() == ballot(kBallotRoundMax, true, 0));
}

TEST_CASE("the ring forgets what it moved past: below the floor nothing is held or opened", "[otfp_ring]") {
  OtfpRing ring(4, 256);
  CHECK(ring.floor() == 0);
  REQUIRE(ring.open(3) != nullptr);
  ring.open(3)->voted_ballot = 9;
  CHECK(ring.open(3)->voted_ballot == 9);  // opening again keeps it
  REQUIRE(ring.open(3 + kOtfpRing) != nullptr);  // the same slot
  CHECK(ring.floor() == 4);
  CHECK(ring.held(3) == nullptr);
  CHECK(ring.open(3) == nullptr);  // forgotten: must not come back as "never voted"
  CHECK(ring.open(2) == nullptr);
  CHECK(ring.open(4) != nullptr);  // the ring holds [floor, newest]
  REQUIRE(ring.open(1000) != nullptr);
  CHECK(ring.floor() == 1000 - kOtfpRing + 1);
  CHECK(ring.open(1000 - kOtfpRing) == nullptr);
  CHECK(ring.open(1000 - kOtfpRing + 1) != nullptr);
}

TEST_CASE("the ring stores a batch once, refuses what is not a batch, and digests values", "[otfp_ring]") {
  OtfpRing ring(4, 64);
  OtfpInstance& in = *ring.open(8);
  Bytes batch(64);
  BatchWriter w(batch);
  const uint8_t payload[2] = {7, 7};
  REQUIRE(w.add({1, 5, 0, payload}));
  batch.resize(w.finish());
  CHECK(ring.store(in, 2, batch));
  CHECK_FALSE(ring.store(in, 2, batch));  // already held
  CHECK_FALSE(ring.store(in, 9, batch));  // no such sender
  CHECK_FALSE(ring.store(in, 1, Bytes{1, 2, 3}));
  Bytes big(65, 0);
  CHECK_FALSE(ring.store(in, 1, big));
  CHECK(OtfpRing::holds_all(in, 0b100));
  CHECK_FALSE(OtfpRing::holds_all(in, 0b110));
  const OtfpValue v = ring.value_of(in, 0b100);
  CHECK(v.mask == 0b100);
  CHECK(v.digest != 0);
  CHECK(ring.value_of(in, 0) == OtfpValue{});
  CHECK(Bytes(ring.batch(in, 2).segment(0).begin(), ring.batch(in, 2).segment(0).end()) == batch);
}

}  // namespace tob::core
