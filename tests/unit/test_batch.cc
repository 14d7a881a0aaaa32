// Application batch section body (docs/wire-format.md, section type 1): writer/reader round
// trips and the validator rejecting bodies a correct sender never writes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "core/batch.h"
#include "core/bytes.h"

namespace tob::core {
namespace {

using Bytes = std::vector<uint8_t>;

struct Msg {
  uint64_t msg_id;
  int64_t submit_ns;
  uint16_t client;
  Bytes payload;
};

Bytes write_batch(const std::vector<Msg>& msgs, size_t body_bytes) {
  Bytes body(body_bytes);
  BatchWriter w(body);
  for (const Msg& m : msgs) REQUIRE(w.add({m.msg_id, m.submit_ns, m.client, m.payload}));
  const size_t len = w.finish();
  REQUIRE(len >= kBatchHeaderBytes);
  CHECK(w.count() == msgs.size());
  body.resize(len);
  return body;
}

std::vector<Msg> read_batch(std::span<const uint8_t> body) {
  std::vector<Msg> out;
  BatchReader r(body);
  for (AppMessage m; r.next(m);)
    out.push_back({m.msg_id, m.submit_ns, m.client, Bytes(m.payload.begin(), m.payload.end())});
  return out;
}

void check_same(const std::vector<Msg>& got, const std::vector<Msg>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("message " << i);
    CHECK(got[i].msg_id == want[i].msg_id);
    CHECK(got[i].submit_ns == want[i].submit_ns);
    CHECK(got[i].client == want[i].client);
    CHECK(got[i].payload == want[i].payload);
  }
}

}  // namespace

TEST_CASE("batch round trip returns every message in order, byte for byte", "[batch]") {
  std::mt19937_64 rng(1);
  for (int iter = 0; iter < 200; ++iter) {
    std::vector<Msg> msgs(rng() % 20);
    size_t bytes = kBatchHeaderBytes;
    for (Msg& m : msgs) {
      m.msg_id = rng();
      m.submit_ns = static_cast<int64_t>(rng());
      m.client = static_cast<uint16_t>(rng());
      m.payload.resize(rng() % 70);
      for (auto& b : m.payload) b = static_cast<uint8_t>(rng());
      bytes += kBatchEntryHeaderBytes + m.payload.size();
    }
    const Bytes body = write_batch(msgs, bytes + rng() % 16);
    CHECK(body.size() == bytes);
    uint16_t count = 0xFFFF;
    REQUIRE(validate_batch(body, &count));
    CHECK(count == msgs.size());
    check_same(read_batch(body), msgs);
  }
}

TEST_CASE("an empty batch is a four-byte body with count zero", "[batch]") {
  const Bytes body = write_batch({}, 64);
  CHECK(body == Bytes{0, 0, 0, 0});
  uint16_t count = 7;
  REQUIRE(validate_batch(body, &count));
  CHECK(count == 0);
  CHECK(read_batch(body).empty());
}

TEST_CASE("zero-length payloads round trip", "[batch]") {
  const std::vector<Msg> msgs = {{1, -5, 0, {}}, {2, 0, 0xFFFF, {}}, {3, INT64_MAX, 9, {0x42}}};
  const Bytes body = write_batch(msgs, 100);
  CHECK(body.size() == kBatchHeaderBytes + 3 * kBatchEntryHeaderBytes + 1);
  REQUIRE(validate_batch(body));
  check_same(read_batch(body), msgs);
}

TEST_CASE("a batch filling its body exactly is valid and refuses one more message", "[batch]") {
  const size_t body_bytes = kBatchHeaderBytes + 2 * (kBatchEntryHeaderBytes + 10);
  Bytes body(body_bytes);
  BatchWriter w(body);
  const Bytes payload(10, 0x5A);
  REQUIRE(w.add({1, 1, 1, payload}));
  REQUIRE(w.fits(10));
  REQUIRE(w.add({2, 2, 2, payload}));
  CHECK_FALSE(w.fits(0));
  CHECK_FALSE(w.add({3, 3, 3, {}}));  // refused: not even an empty entry fits
  CHECK(w.count() == 2);
  REQUIRE(w.finish() == body_bytes);
  REQUIRE(validate_batch(body));
  CHECK(read_batch(body).size() == 2);
}

TEST_CASE("a refused message leaves the batch unchanged", "[batch]") {
  Bytes body(kBatchHeaderBytes + kBatchEntryHeaderBytes + 5);
  BatchWriter w(body);
  REQUIRE(w.add({1, 1, 1, Bytes(5, 1)}));
  const Bytes before = body;
  CHECK_FALSE(w.add({2, 2, 2, Bytes(1, 2)}));
  CHECK(body == before);
  CHECK(w.count() == 1);
  CHECK(w.finish() == body.size());
}

TEST_CASE("BatchWriter stops at 65535 messages, the most the count field holds", "[batch]") {
  Bytes body(kBatchHeaderBytes + (size_t{UINT16_MAX} + 1) * kBatchEntryHeaderBytes);
  BatchWriter w(body);
  for (uint32_t i = 0; i < UINT16_MAX; ++i) REQUIRE(w.add({i, 0, 0, {}}));
  CHECK_FALSE(w.add({UINT16_MAX, 0, 0, {}}));
  const size_t len = w.finish();
  uint16_t count = 0;
  REQUIRE(validate_batch(std::span<const uint8_t>(body).first(len), &count));
  CHECK(count == UINT16_MAX);
}

TEST_CASE("BatchWriter::finish reports 0 when the body cannot hold the header", "[batch]") {
  Bytes body(3);
  BatchWriter w(body);
  CHECK_FALSE(w.add({1, 1, 1, {}}));
  CHECK(w.finish() == 0);
}

TEST_CASE("validate_batch rejects malformed bodies", "[batch][malformed]") {
  const std::vector<Msg> msgs = {{1, 10, 1, {1, 2, 3}}, {2, 20, 2, {4, 5}}};
  const Bytes good = write_batch(msgs, 200);
  REQUIRE(validate_batch(good));

  SECTION("shorter than the batch header") {
    for (size_t n = 0; n < kBatchHeaderBytes; ++n)
      CHECK_FALSE(validate_batch(std::span<const uint8_t>(good).first(n)));
  }
  SECTION("count larger than the entries present") {
    Bytes b = good;
    store_be16(b.data(), 3);
    CHECK_FALSE(validate_batch(b));
    store_be16(b.data(), 0xFFFF);
    CHECK_FALSE(validate_batch(b));
  }
  SECTION("count smaller than the entries present (the rest is trailing garbage)") {
    Bytes b = good;
    store_be16(b.data(), 1);
    CHECK_FALSE(validate_batch(b));
    store_be16(b.data(), 0);
    CHECK_FALSE(validate_batch(b));
  }
  SECTION("an entry length past the end of the body") {
    Bytes b = good;
    const size_t second = kBatchHeaderBytes + kBatchEntryHeaderBytes + 3;
    store_be16(b.data() + second + 18, 3);  // claims 3 bytes, 2 present
    CHECK_FALSE(validate_batch(b));
    store_be16(b.data() + second + 18, 0xFFFF);
    CHECK_FALSE(validate_batch(b));
  }
  SECTION("an entry header cut short") {
    for (size_t cut = 1; cut <= kBatchEntryHeaderBytes + 2; ++cut) {
      INFO("cut " << cut);
      CHECK_FALSE(validate_batch(std::span<const uint8_t>(good).first(good.size() - cut)));
    }
  }
  SECTION("trailing garbage after the last entry") {
    for (size_t extra = 1; extra <= 25; ++extra) {
      Bytes b = good;
      b.resize(good.size() + extra, 0);
      INFO(extra << " trailing bytes");
      CHECK_FALSE(validate_batch(b));
    }
  }
}

TEST_CASE("validate_batch leaves the count untouched on a malformed body", "[batch][malformed]") {
  Bytes b = write_batch({{1, 1, 1, {}}}, 64);
  b.push_back(0);
  uint16_t count = 1234;
  CHECK_FALSE(validate_batch(b, &count));
  CHECK(count == 1234);
}

}  // namespace tob::core
