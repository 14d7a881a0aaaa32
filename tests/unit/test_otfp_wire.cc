// Section bodies of the otfp engine (lib/core/otfp_wire.h, docs/protocol-otfp.md): round trips of
// every writer/reader pair, frozen byte layouts, readers refusing every body of the wrong length,
// writers refusing too small outputs, and the ballot encoding with its order.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/bytes.h"
#include "core/otfp_wire.h"
#include "hex.h"

namespace tob::core {
namespace {

using Bytes = std::vector<uint8_t>;
using tob::test::from_hex;
using tob::test::to_hex;

void check_vote(const OtfpVote& got, const OtfpVote& want) {
  CHECK(got.instance == want.instance);
  CHECK(got.ballot == want.ballot);
  CHECK(got.value == want.value);
}

void check_request(const OtfpRequest& got, const OtfpRequest& want) {
  CHECK(got.instance == want.instance);
  CHECK(got.sender == want.sender);
  CHECK(got.attempt == want.attempt);
  CHECK(got.target == want.target);
  CHECK(got.first == want.first);
  CHECK(got.last == want.last);
}

std::vector<OtfpVote> random_votes(std::mt19937_64& rng, size_t n) {
  std::vector<OtfpVote> v(n);
  for (OtfpVote& x : v) {
    x.instance = static_cast<int64_t>(rng());  // negative ones too: every bit must survive
    x.ballot = static_cast<uint32_t>(rng());
    x.value = {rng(), rng()};
  }
  return v;
}

Bytes votes_body(std::span<const OtfpVote> votes) {
  Bytes out(kOtfpListHeader + votes.size() * kOtfpVoteBytes);
  REQUIRE(write_votes(out, votes) == out.size());
  return out;
}

Bytes phase1b_body(const Phase1bPart& part, std::span<const OtfpVote> votes) {
  Bytes out(kOtfpPhase1bHeader + votes.size() * kOtfpVoteBytes);
  REQUIRE(write_phase1b(out, part, votes) == out.size());
  return out;
}

bool parses(const Bytes& body, size_t header = kOtfpListHeader) {
  VoteList l;
  return l.parse(body, header);
}

bool phase1b_parses(const Bytes& body) {
  Phase1b p;
  return read_phase1b(body, p);
}

bool requests_parse(const Bytes& body) {
  size_t count = 99;
  std::span<const uint8_t> entries;
  return read_requests(body, count, entries);
}

}  // namespace

// --- sizes ---------------------------------------------------------------------------------

static_assert(kOtfpVoteBytes == 8 + 4 + 8 + 8);
static_assert(kOtfpRequestBytes == 8 + 1 + 1 + 2 + 2 + 2);
static_assert(kOtfpPhase1bHeader == 4 + 1 + 1 + 2 + 8 + 8 + 8);
static_assert(kOtfpDataHeader == 1 + 1 + 2 + 8 + 2 + 2);
static_assert(kOtfpStateBytes == 8 + 4);
static_assert(kOtfpPhase1aBytes == 4 + 8 && kOtfpAnyBytes == 4 + 8);

// --- ballots -------------------------------------------------------------------------------

static_assert(ballot(0, false, 0) == 0);
static_assert(ballot(1, false, 0) == 0x80);
static_assert(ballot(1, true, 3) == 0x87);
static_assert(ballot(0x123456, true, 63) == (0x123456u << 7 | 63u << 1 | 1u));
static_assert(ballot_round(0x123456u << 7 | 0x7F) == 0x123456 && ballot_classic(0x123456u << 7 | 0x7F) &&
              ballot_coordinator(0x123456u << 7 | 0x7F) == 63);

TEST_CASE("ballot fields round trip through round, classic and coordinator", "[otfp_wire]") {
  const uint32_t rounds[] = {0, 1, 2, 255, 256, 0x10000, 0xFFFFFF, kBallotRoundMax};
  for (uint32_t r : rounds)
    for (int classic = 0; classic < 2; ++classic)
      for (int c = 0; c < kMaxNodes; ++c) {
        const uint32_t b = ballot(r, classic != 0, static_cast<NodeId>(c));
        INFO("round " << r << " classic " << classic << " coordinator " << c);
        CHECK(ballot_round(b) == r);
        CHECK(ballot_classic(b) == (classic != 0));
        CHECK(ballot_coordinator(b) == c);
      }
}

TEST_CASE("ballots order by round, then coordinator, then classic: recovery is fast + 1",
          "[otfp_wire]") {
  for (uint32_t r = 1; r < 5; ++r) {
    for (int c = 0; c < kMaxNodes; ++c) {
      const auto cn = static_cast<NodeId>(c);
      // The lowest ballot of round r + 1 is above every ballot of round r.
      CHECK(ballot(r + 1, false, 0) > ballot(r, true, cn));
      // A coordinator's recovery ballot is its fast ballot's immediate successor (seed 002 §5.3:
      // coordinated recovery uses the fast ballot's votes as the recovery ballot's phase 1b).
      CHECK(ballot(r, true, cn) == ballot(r, false, cn) + 1);
      // Nothing of another coordinator lies between them: every ballot of round r is below the
      // fast one or above the recovery one.
      for (int d = 0; d < kMaxNodes; ++d) {
        if (d == c) continue;
        const auto dn = static_cast<NodeId>(d);
        for (bool classic : {false, true}) {
          const uint32_t other = ballot(r, classic, dn);
          CHECK((other < ballot(r, false, cn) || other > ballot(r, true, cn)));
        }
      }
      if (c > 0) CHECK(ballot(r, false, cn) == ballot(r, true, static_cast<NodeId>(c - 1)) + 1);
    }
  }
  // Every 32-bit number is one ballot and they are all ordered: the largest fills the word.
  CHECK(ballot(kBallotRoundMax, true, 63) == UINT32_MAX);
  CHECK(ballot(1000, false, 0) > ballot(999, true, 63));
}

TEST_CASE("otfp values are equal only when mask and digest both are", "[otfp_wire]") {
  const OtfpValue a{0xF, 0x1234};
  CHECK(a == OtfpValue{0xF, 0x1234});
  CHECK_FALSE(a == OtfpValue{0xE, 0x1234});
  CHECK_FALSE(a == OtfpValue{0xF, 0x1235});
  CHECK_FALSE(a == OtfpValue{0x1234, 0xF});  // fields are not interchangeable
  CHECK(OtfpValue{} == OtfpValue{0, 0});
  CHECK(a != OtfpValue{});
}

// --- vote lists (phase 2b, 2a, decided) -------------------------------------------------------

TEST_CASE("vote list has the documented big-endian layout", "[otfp_wire]") {
  const std::vector<OtfpVote> votes = {
      {0x0102030405060708, 0x0A0B0C0D, {0x1112131415161718, 0x2122232425262728}},
      {-1, ballot(3, true, 5), {0xF, 0}},
  };
  const Bytes body = votes_body(votes);
  const Bytes want = from_hex(
      "0002 0000"                 // 0: count 2, reserved
      "0102030405060708"          // 4: instance
      "0a0b0c0d"                  // 12: ballot
      "1112131415161718"          // 16: mask
      "2122232425262728"          // 24: digest
      "ffffffffffffffff"          // 32: instance -1
      "0000018b"                  // 40: ballot (3, classic, 5)
      "000000000000000f"          // 44: mask: nodes 0..3
      "0000000000000000");        // 52: digest
  CHECK(to_hex(body) == to_hex(want));

  // write_vote alone writes one entry at the pointer and nothing else.
  Bytes one(kOtfpVoteBytes + 2, 0xEE);
  write_vote(one.data() + 1, votes[0]);
  CHECK(to_hex(one) == "ee" + to_hex(std::span<const uint8_t>(want).subspan(4, 28)) + "ee");
}

TEST_CASE("vote list round trips every field, empty and long lists included", "[otfp_wire]") {
  std::mt19937_64 rng(7);
  const size_t sizes[] = {0, 1, 2, 3, 17, 100, 1000};
  for (size_t n : sizes) {
    const std::vector<OtfpVote> votes = random_votes(rng, n);
    const Bytes body = votes_body(votes);
    CHECK(body.size() == kOtfpListHeader + n * kOtfpVoteBytes);
    VoteList l;
    REQUIRE(l.parse(body));
    REQUIRE(l.size() == n);
    for (size_t k = 0; k < n; ++k) {
      INFO("list of " << n << ", vote " << k);
      check_vote(l.at(k), votes[k]);
    }
  }
}

TEST_CASE("vote list reader refuses bodies of the wrong length or count", "[otfp_wire]") {
  std::mt19937_64 rng(8);
  const std::vector<OtfpVote> votes = random_votes(rng, 2);
  const Bytes good = votes_body(votes);
  REQUIRE(parses(good));

  SECTION("empty body and a body shorter than the header") {
    CHECK_FALSE(parses({}));
    CHECK_FALSE(parses({0x00}));
    CHECK_FALSE(parses({0x00, 0x00, 0x00}));
    CHECK(parses({0x00, 0x00, 0x00, 0x00}));  // an empty list is well formed
  }
  SECTION("one byte short or long") {
    Bytes shorter(good.begin(), good.end() - 1);
    CHECK_FALSE(parses(shorter));
    Bytes longer = good;
    longer.push_back(0);
    CHECK_FALSE(parses(longer));
    // An empty list with a stray byte.
    CHECK_FALSE(parses({0x00, 0x00, 0x00, 0x00, 0x00}));
  }
  SECTION("count not matching the entries") {
    Bytes more = good;
    store_be16(more.data(), 3);
    CHECK_FALSE(parses(more));
    Bytes fewer = good;
    store_be16(fewer.data(), 1);
    CHECK_FALSE(parses(fewer));
    Bytes zero = good;
    store_be16(zero.data(), 0);
    CHECK_FALSE(parses(zero));
    Bytes huge = good;
    store_be16(huge.data(), 0xFFFF);
    CHECK_FALSE(parses(huge));
  }
  SECTION("a refused body leaves an empty list behind") {
    VoteList l;
    REQUIRE(l.parse(good));
    REQUIRE(l.size() == 2);
    Bytes bad = good;
    store_be16(bad.data(), 1);
    CHECK_FALSE(l.parse(bad));
    CHECK(l.size() == 0);
  }
}

TEST_CASE("vote list writer refuses a too small output or more than 65535 votes", "[otfp_wire]") {
  std::mt19937_64 rng(9);
  const std::vector<OtfpVote> votes = random_votes(rng, 3);
  const size_t n = kOtfpListHeader + 3 * kOtfpVoteBytes;
  Bytes out(n - 1, 0xAB);
  CHECK(write_votes(out, votes) == 0);
  CHECK(out == Bytes(n - 1, 0xAB));  // nothing written
  Bytes empty_out;
  CHECK(write_votes(empty_out, {}) == 0);  // not even room for the header
  Bytes three(3);
  CHECK(write_votes(three, {}) == 0);
  Bytes exact(n);
  CHECK(write_votes(exact, votes) == n);
  Bytes larger(n + 10, 0xAB);
  CHECK(write_votes(larger, votes) == n);
  CHECK(larger[n] == 0xAB);  // nothing beyond the body

  // The count field has 16 bits: 65535 votes fit, 65536 do not.
  std::vector<OtfpVote> many(65536);
  for (size_t k = 0; k < many.size(); ++k) many[k].instance = static_cast<int64_t>(k);
  Bytes big(kOtfpListHeader + many.size() * kOtfpVoteBytes);
  CHECK(write_votes(big, many) == 0);
  const std::span<const OtfpVote> max_votes(many.data(), 65535);
  REQUIRE(write_votes(big, max_votes) == kOtfpListHeader + 65535 * kOtfpVoteBytes);
  VoteList l;
  REQUIRE(l.parse(std::span<const uint8_t>(big).first(kOtfpListHeader + 65535 * kOtfpVoteBytes)));
  CHECK(l.size() == 65535);
  CHECK(l.at(65534).instance == 65534);
}

// --- retransmission requests ------------------------------------------------------------------

TEST_CASE("request list has the documented layout and round trips", "[otfp_wire]") {
  const std::vector<OtfpRequest> reqs = {{0x10, 3, 2}, {-5, 63, 255, 7, 2, 9}, {0x7FFFFFFFFFFFFFFF, 0, 0, 0, 0x0102, 0x0304}};
  Bytes body(kOtfpListHeader + reqs.size() * kOtfpRequestBytes);
  REQUIRE(write_requests(body, reqs) == body.size());
  CHECK(to_hex(body) == to_hex(from_hex("0003 0000"
                                        "0000000000000010 03 02 ff 00 0000 ffff"  // target: the partition's; every segment
                                        "fffffffffffffffb 3f ff 07 00 0002 0009"
                                        "7fffffffffffffff 00 00 00 00 0102 0304")));
  size_t count = 0;
  std::span<const uint8_t> entries;
  REQUIRE(read_requests(body, count, entries));
  REQUIRE(count == reqs.size());
  CHECK(entries.size() == reqs.size() * kOtfpRequestBytes);
  for (size_t k = 0; k < count; ++k) check_request(request_at(entries, k), reqs[k]);

  Bytes empty(kOtfpListHeader);
  REQUIRE(write_requests(empty, {}) == kOtfpListHeader);
  REQUIRE(read_requests(empty, count, entries));
  CHECK(count == 0);
}

TEST_CASE("request list reader refuses bodies of the wrong length or count", "[otfp_wire]") {
  const std::vector<OtfpRequest> reqs = {{1, 1, 0}, {2, 2, 1}};
  Bytes good(kOtfpListHeader + 2 * kOtfpRequestBytes);
  REQUIRE(write_requests(good, reqs) == good.size());
  REQUIRE(requests_parse(good));
  CHECK_FALSE(requests_parse({}));
  CHECK_FALSE(requests_parse({0x00, 0x00, 0x00}));
  CHECK_FALSE(requests_parse(Bytes(good.begin(), good.end() - 1)));
  Bytes longer = good;
  longer.push_back(0);
  CHECK_FALSE(requests_parse(longer));
  Bytes more = good;
  store_be16(more.data(), 3);
  CHECK_FALSE(requests_parse(more));
  Bytes fewer = good;
  store_be16(fewer.data(), 1);
  CHECK_FALSE(requests_parse(fewer));
  // A request is 12 bytes, a vote 28: a vote list is not a request list.
  std::mt19937_64 rng(10);
  const std::vector<OtfpVote> votes = random_votes(rng, 2);
  CHECK_FALSE(requests_parse(votes_body(votes)));
}

TEST_CASE("request list writer refuses a too small output or more than 65535 requests", "[otfp_wire]") {
  const std::vector<OtfpRequest> reqs = {{1, 1, 0}, {2, 2, 1}};
  const size_t n = kOtfpListHeader + 2 * kOtfpRequestBytes;
  Bytes out(n - 1, 0x5A);
  CHECK(write_requests(out, reqs) == 0);
  CHECK(out == Bytes(n - 1, 0x5A));
  Bytes none;
  CHECK(write_requests(none, {}) == 0);
  std::vector<OtfpRequest> many(65536);
  Bytes big(kOtfpListHeader + many.size() * kOtfpRequestBytes);
  CHECK(write_requests(big, many) == 0);
  CHECK(write_requests(big, std::span<const OtfpRequest>(many.data(), 65535)) ==
        kOtfpListHeader + 65535 * kOtfpRequestBytes);
}

// --- state, phase 1a, any ------------------------------------------------------------------------

TEST_CASE("state section has the documented layout, round trips and refuses other lengths", "[otfp_wire]") {
  Bytes body(kOtfpStateBytes);
  REQUIRE(write_state(body, 0x0102030405060708, 0xA0B0C0D0) == kOtfpStateBytes);
  CHECK(to_hex(body) == "0102030405060708a0b0c0d0");
  int64_t low = 0;
  uint32_t ballot_seen = 0;
  REQUIRE(read_state(body, low, ballot_seen));
  CHECK(low == 0x0102030405060708);
  CHECK(ballot_seen == 0xA0B0C0D0);

  REQUIRE(write_state(body, -1, 0) == kOtfpStateBytes);
  REQUIRE(read_state(body, low, ballot_seen));
  CHECK(low == -1);
  CHECK(ballot_seen == 0);

  CHECK_FALSE(read_state({}, low, ballot_seen));
  CHECK_FALSE(read_state(Bytes(kOtfpStateBytes - 1), low, ballot_seen));
  CHECK_FALSE(read_state(Bytes(kOtfpStateBytes + 1), low, ballot_seen));

  Bytes small(kOtfpStateBytes - 1, 0x77);
  CHECK(write_state(small, 1, 1) == 0);
  CHECK(small == Bytes(kOtfpStateBytes - 1, 0x77));
  Bytes larger(kOtfpStateBytes + 4, 0x77);
  CHECK(write_state(larger, 1, 1) == kOtfpStateBytes);
  CHECK(larger[kOtfpStateBytes] == 0x77);
}

TEST_CASE("phase 1a / any body has the documented layout, round trips and refuses other lengths",
          "[otfp_wire]") {
  Bytes body(kOtfpPhase1aBytes);
  const uint32_t b = ballot(0x010203, true, 9);
  REQUIRE(write_ballot_instance(body, b, 0x1112131415161718) == kOtfpPhase1aBytes);
  CHECK(to_hex(body) == "00810193" "1112131415161718");
  uint32_t got_ballot = 0;
  int64_t instance = 0;
  REQUIRE(read_ballot_instance(body, got_ballot, instance));
  CHECK(got_ballot == b);
  CHECK(instance == 0x1112131415161718);

  // An activation point and a low instance of every sign.
  const int64_t instances[] = {0, 1, -1, INT64_MAX, INT64_MIN};
  for (int64_t i : instances) {
    REQUIRE(write_ballot_instance(body, ballot(7, false, 2), i) == kOtfpAnyBytes);
    REQUIRE(read_ballot_instance(body, got_ballot, instance));
    CHECK(instance == i);
    CHECK(got_ballot == ballot(7, false, 2));
  }

  CHECK_FALSE(read_ballot_instance({}, got_ballot, instance));
  CHECK_FALSE(read_ballot_instance(Bytes(kOtfpPhase1aBytes - 1), got_ballot, instance));
  CHECK_FALSE(read_ballot_instance(Bytes(kOtfpPhase1aBytes + 1), got_ballot, instance));
  Bytes small(kOtfpPhase1aBytes - 1, 0x33);
  CHECK(write_ballot_instance(small, 1, 1) == 0);
  CHECK(small == Bytes(kOtfpPhase1aBytes - 1, 0x33));
}

// --- phase 1b ---------------------------------------------------------------------------------

TEST_CASE("phase 1b has the documented big-endian layout", "[otfp_wire]") {
  const std::vector<OtfpVote> votes = {{9, ballot(2, false, 0), {0xB, 0xDEADBEEFCAFEBABE}}};
  const Bytes body = phase1b_body({ballot(2, false, 1), false, 0x1234, 7, 12}, votes);
  const Bytes want = from_hex(
      "00000102"                  // 0: ballot (2, fast, 1)
      "00 00 0001"                // 4: not the last part, reserved, count 1
      "0000000000001234"          // 8: highest
      "0000000000000007"          // 16: from
      "000000000000000c"          // 24: to
      "0000000000000009"          // 32: vote: instance 9
      "00000100"                  // 40: ballot (2, fast, 0)
      "000000000000000b"          // 44: mask
      "deadbeefcafebabe");        // 52: digest
  CHECK(to_hex(body) == to_hex(want));
  // The last part covers everything from `from` on: to is written as INT64_MAX.
  const Bytes last = phase1b_body({ballot(1, false, 3), true, -1, 0, 0}, {});
  CHECK(to_hex(last) ==
        to_hex(from_hex("00000086 01 00 0000 ffffffffffffffff 0000000000000000 7fffffffffffffff")));
}

TEST_CASE("phase 1b round trips its header fields and votes", "[otfp_wire]") {
  std::mt19937_64 rng(11);
  const size_t sizes[] = {0, 1, 5, 64};
  for (size_t n : sizes) {
    for (int last = 0; last < 2; ++last) {
      std::vector<OtfpVote> votes = random_votes(rng, n);
      const auto from = static_cast<int64_t>(rng() % 1000000);
      for (size_t k = 0; k < n; ++k) {
        votes[k].instance = from + 3 * static_cast<int64_t>(k);
        votes[k].ballot |= 1;  // never 0
      }
      const int64_t highest = from + 3 * static_cast<int64_t>(n) + static_cast<int64_t>(rng() % 5);
      const Phase1bPart part{ballot(static_cast<uint32_t>(rng() % 0xFFFFFF) + 1, rng() % 2 == 0,
                                    static_cast<NodeId>(rng() % kMaxNodes)),
                             last != 0, highest, from, last != 0 ? kOtfpRangeOpen : from + 3 * static_cast<int64_t>(n) + 1};
      const Bytes body = phase1b_body(part, votes);
      Phase1b p;
      REQUIRE(read_phase1b(body, p));
      INFO("votes " << n << " last " << last);
      CHECK(p.part.ballot == part.ballot);
      CHECK(p.part.last == (last != 0));
      CHECK(p.part.highest == highest);
      CHECK(p.part.from == from);
      CHECK(p.part.to == part.to);
      REQUIRE(p.votes.size() == n);
      for (size_t k = 0; k < n; ++k) check_vote(p.votes.at(k), votes[k]);
    }
  }
  // No vote at all: highest -1 survives.
  Phase1b p;
  REQUIRE(read_phase1b(phase1b_body({1, true, -1, 0, 0}, {}), p));
  CHECK(p.part.highest == -1);
  CHECK(p.part.last);
  CHECK(p.votes.size() == 0);
}

TEST_CASE("phase 1b reader refuses bodies of the wrong length or count", "[otfp_wire]") {
  const std::vector<OtfpVote> votes = {{10, 5, {1, 2}}, {12, 7, {3, 4}}};
  const Bytes good = phase1b_body({ballot(4, false, 2), true, 12, 3, 0}, votes);
  REQUIRE(phase1b_parses(good));
  CHECK_FALSE(phase1b_parses({}));
  CHECK_FALSE(phase1b_parses(Bytes(kOtfpPhase1bHeader - 1)));
  CHECK_FALSE(phase1b_parses(Bytes(good.begin(), good.end() - 1)));
  Bytes longer = good;
  longer.push_back(0);
  CHECK_FALSE(phase1b_parses(longer));
  // The count lives at offset 6.
  Bytes more = good;
  store_be16(more.data() + 6, 3);
  CHECK_FALSE(phase1b_parses(more));
  Bytes fewer = good;
  store_be16(fewer.data() + 6, 1);
  CHECK_FALSE(phase1b_parses(fewer));
  // A header-only body that claims one vote.
  Bytes claims(phase1b_body({1, true, -1, 0, 0}, {}));
  store_be16(claims.data() + 6, 1);
  CHECK_FALSE(phase1b_parses(claims));
}

TEST_CASE("phase 1b reader refuses ranges and votes that do not make sense", "[otfp_wire]") {
  const auto body = [](Phase1bPart part, std::vector<OtfpVote> votes, bool fix_to = true) {
    Bytes b = phase1b_body(part, votes);
    if (!fix_to) store_be64(b.data() + 24, static_cast<uint64_t>(part.to));  // write `to` as given
    return b;
  };
  const OtfpValue v{1, 2};
  CHECK(phase1b_parses(body({5, false, 9, 3, 10}, {{3, 1, v}, {9, 1, v}})));
  CHECK_FALSE(phase1b_parses(body({5, false, 9, 3, 10}, {{2, 1, v}})));          // before `from`
  CHECK_FALSE(phase1b_parses(body({5, false, 20, 3, 10}, {{10, 1, v}})));        // at `to`
  CHECK_FALSE(phase1b_parses(body({5, false, 9, 3, 10}, {{9, 1, v}, {4, 1, v}}))); // out of order
  CHECK_FALSE(phase1b_parses(body({5, false, 9, 3, 10}, {{4, 1, v}, {4, 2, v}}))); // twice
  CHECK_FALSE(phase1b_parses(body({5, true, 5, 3, 0}, {{6, 1, v}})));            // above `highest`
  CHECK_FALSE(phase1b_parses(body({5, true, 9, 3, 0}, {{4, 0, v}})));            // no ballot
  CHECK_FALSE(phase1b_parses(body({5, false, 9, 3, 3}, {})));                    // empty range
  CHECK_FALSE(phase1b_parses(body({5, false, 9, -1, 3}, {})));                   // negative from
  CHECK_FALSE(phase1b_parses(body({5, false, -2, 0, 3}, {})));                   // highest below -1
  CHECK_FALSE(phase1b_parses(body({5, false, 9, 3, kOtfpRangeOpen}, {}, false)));  // open, not last
  Bytes last = body({5, true, 9, 3, 0}, {});
  store_be64(last.data() + 24, 100);
  CHECK_FALSE(phase1b_parses(last));  // last, but closed
  last[4] = 2;
  CHECK_FALSE(phase1b_parses(last));  // a flag byte other than 0 or 1
}

TEST_CASE("phase 1b writer refuses a too small output or more than 65535 votes", "[otfp_wire]") {
  std::mt19937_64 rng(13);
  const std::vector<OtfpVote> votes = random_votes(rng, 2);
  const size_t n = kOtfpPhase1bHeader + 2 * kOtfpVoteBytes;
  Bytes out(n - 1, 0xC3);
  CHECK(write_phase1b(out, {1, true, 1, 1, 0}, votes) == 0);
  CHECK(out == Bytes(n - 1, 0xC3));
  Bytes header_short(kOtfpPhase1bHeader - 1);
  CHECK(write_phase1b(header_short, {1, true, 1, 1, 0}, {}) == 0);
  Bytes header_only(kOtfpPhase1bHeader);
  CHECK(write_phase1b(header_only, {1, true, 1, 1, 0}, {}) == kOtfpPhase1bHeader);
  std::vector<OtfpVote> many(65536);
  Bytes big(kOtfpPhase1bHeader + many.size() * kOtfpVoteBytes);
  CHECK(write_phase1b(big, {1, false, 0, 0, 1}, many) == 0);
}

// --- retransmission data -----------------------------------------------------------------------

TEST_CASE("data header has the documented layout and the batch follows it", "[otfp_wire]") {
  const Bytes batch = from_hex("0001 0000 0000000000000001 0000000000000002 0003 0001 ab");
  Bytes body(kOtfpDataHeader + batch.size());
  REQUIRE(write_data_header(body, {5, 0x0A0B, 2, 7}) == kOtfpDataHeader);
  std::copy(batch.begin(), batch.end(), body.begin() + kOtfpDataHeader);
  CHECK(to_hex(std::span<const uint8_t>(body).first(kOtfpDataHeader)) ==
        to_hex(from_hex("05 00 0002"             // 0: sender 5, reserved, segment index 2
                        "0000000000000a0b"       // 4: instance
                        "0007 0000")));          // 12: of 7 segments, reserved
  OtfpData d;
  std::span<const uint8_t> got;
  REQUIRE(read_data(body, d, got));
  CHECK(d.sender == 5);
  CHECK(d.instance == 0x0A0B);
  CHECK(d.index == 2);
  CHECK(d.count == 7);
  CHECK(Bytes(got.begin(), got.end()) == batch);
  CHECK(got.data() == body.data() + kOtfpDataHeader);  // a view into the body, not a copy

  // A header with an empty batch is read as such (the batch is validated by its own reader).
  Bytes bare(kOtfpDataHeader);
  REQUIRE(write_data_header(bare, {63, -2, 0, 1}) == kOtfpDataHeader);
  REQUIRE(read_data(bare, d, got));
  CHECK(d.sender == 63);
  CHECK(d.instance == -2);
  CHECK(got.empty());
}

TEST_CASE("data reader refuses a short body, a sender outside the node ids and bad segment numbers", "[otfp_wire]") {
  OtfpData d;
  std::span<const uint8_t> batch;
  CHECK_FALSE(read_data({}, d, batch));
  CHECK_FALSE(read_data(Bytes(kOtfpDataHeader - 1), d, batch));
  Bytes body(kOtfpDataHeader + 4);
  REQUIRE(write_data_header(body, {63, 1, 0, 1}) == kOtfpDataHeader);
  CHECK(read_data(body, d, batch));
  for (int s : {64, 65, 127, 128, 254, 255}) {
    INFO("sender " << s);
    body[0] = static_cast<uint8_t>(s);
    CHECK_FALSE(read_data(body, d, batch));
  }
  body[0] = 0;
  CHECK(read_data(body, d, batch));
  CHECK(d.sender == 0);
  REQUIRE(write_data_header(body, {1, 1, 3, 3}) == kOtfpDataHeader);  // index must be below count
  CHECK_FALSE(read_data(body, d, batch));
  REQUIRE(write_data_header(body, {1, 1, 0, 0}) == kOtfpDataHeader);
  CHECK_FALSE(read_data(body, d, batch));
}

TEST_CASE("data header writer refuses a too small output", "[otfp_wire]") {
  Bytes small(kOtfpDataHeader - 1, 0x99);
  CHECK(write_data_header(small, {1, 1, 0, 1}) == 0);
  CHECK(small == Bytes(kOtfpDataHeader - 1, 0x99));
  Bytes none;
  CHECK(write_data_header(none, {1, 1, 0, 1}) == 0);
}

// --- random bodies ---------------------------------------------------------------------------

TEST_CASE("readers never accept a random body whose length does not match its count", "[otfp_wire]") {
  // Random garbage: a reader accepts exactly when the length is what the count says.
  std::mt19937_64 rng(14);
  for (int iter = 0; iter < 20000; ++iter) {
    Bytes body(rng() % 120);
    for (uint8_t& b : body) b = static_cast<uint8_t>(rng());
    if (body.size() >= 2 && rng() % 2 == 0) {
      // Make the count plausible half of the time so the exact-fit path is reached.
      store_be16(body.data(), static_cast<uint16_t>(rng() % 5));
    }
    const size_t vote_count = body.size() >= 2 ? load_be16(body.data()) : 0;
    const bool votes_fit = body.size() >= kOtfpListHeader && body.size() == kOtfpListHeader + vote_count * kOtfpVoteBytes;
    const bool requests_fit =
        body.size() >= kOtfpListHeader && body.size() == kOtfpListHeader + vote_count * kOtfpRequestBytes;
    INFO("length " << body.size() << " count " << vote_count);
    CHECK(parses(body) == votes_fit);
    CHECK(requests_parse(body) == requests_fit);
    const size_t p1b_count = body.size() >= 8 ? load_be16(body.data() + 6) : 0;
    const bool p1b_fit =
        body.size() >= kOtfpPhase1bHeader && body.size() == kOtfpPhase1bHeader + p1b_count * kOtfpVoteBytes;
    CHECK(phase1b_parses(body) == p1b_fit);
    int64_t i = 0;
    uint32_t u = 0;
    CHECK(read_state(body, i, u) == (body.size() == kOtfpStateBytes));
    CHECK(read_ballot_instance(body, u, i) == (body.size() == kOtfpPhase1aBytes));
  }
}

}  // namespace tob::core
