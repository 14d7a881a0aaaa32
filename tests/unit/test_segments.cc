// A slot's batch in several frames (lib/core/segments): reassembly in any order, duplicates (the
// second copies), malformed segments refused alone, completion reported once,
// messages in segment order, and the batch's CRC streamed over the segments.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/batch.h"
#include "core/crc32c.h"
#include "core/segments.h"

using namespace tob::core;
using Add = Reassembly::Add;

namespace {

// A batch body with messages first..first+n-1, payload "m<id>".
std::vector<uint8_t> batch(uint64_t first, int n, size_t room = 1024) {
  std::vector<uint8_t> body(room);
  std::vector<std::string> payloads;
  for (int k = 0; k < n; ++k) payloads.push_back("m" + std::to_string(first + static_cast<uint64_t>(k)));
  BatchWriter w(body);
  for (int k = 0; k < n; ++k) {
    const std::string& p = payloads[static_cast<size_t>(k)];
    REQUIRE(w.add({first + static_cast<uint64_t>(k), 100, 7,
                   std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(p.data()), p.size())}));
  }
  body.resize(w.finish());
  return body;
}

std::vector<uint64_t> ids(const Reassembly& r) {
  std::vector<uint64_t> out;
  r.for_each_message([&](const AppMessage& m) { out.push_back(m.msg_id); });
  return out;
}

}  // namespace

TEST_CASE("segments arriving out of order complete the batch once, messages in segment order") {
  Reassembly r(8, 1024);
  const auto s0 = batch(0, 3), s1 = batch(3, 2), s2 = batch(5, 4);
  CHECK(r.add(10, 2, 3, s2) == Add::fresh);
  CHECK(r.add(10, 0, 3, s0) == Add::fresh);
  CHECK_FALSE(r.complete());
  CHECK(r.have() == 2);
  CHECK(r.add(10, 1, 3, s1) == Add::complete);
  CHECK(r.complete());
  CHECK(r.messages() == 9);
  CHECK(r.bytes() == s0.size() + s1.size() + s2.size());
  CHECK(ids(r) == std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(r.add(10, 1, 3, s1) == Add::duplicate);  // the second copy: completion is not reported again
  CHECK(r.add(10, 2, 3, s2) == Add::duplicate);
}

TEST_CASE("a second copy of a segment is a duplicate before completion too") {
  Reassembly r(4, 1024);
  const auto s0 = batch(0, 1);
  CHECK(r.add(3, 0, 2, s0) == Add::fresh);
  CHECK(r.add(3, 0, 2, s0) == Add::duplicate);
  CHECK(r.have() == 1);
}

TEST_CASE("a one-segment batch completes with its only frame") {
  Reassembly r(4, 1024);
  CHECK(r.add(1, 0, 1, batch(0, 2)) == Add::complete);
  CHECK(ids(r) == std::vector<uint64_t>{0, 1});
}

TEST_CASE("the batch's CRC is the CRC of the segments' concatenation") {
  Reassembly r(4, 1024);
  const auto a = batch(0, 3), b = batch(3, 1), c = batch(4, 5);
  r.add(5, 1, 3, b);
  r.add(5, 2, 3, c);
  r.add(5, 0, 3, a);
  std::vector<uint8_t> all(a);
  all.insert(all.end(), b.begin(), b.end());
  all.insert(all.end(), c.begin(), c.end());
  CHECK(r.crc() == crc32c(all));
}

TEST_CASE("a segment whose count is unlike the first one's is refused alone; the batch completes from the others") {
  Reassembly r(8, 1024);
  CHECK(r.add(2, 0, 3, batch(0, 1)) == Add::fresh);
  CHECK(r.add(2, 1, 4, batch(1, 1)) == Add::malformed);
  CHECK(r.have() == 1);
  CHECK(r.add(2, 1, 3, batch(1, 1)) == Add::fresh);
  CHECK(r.add(2, 2, 3, batch(2, 1)) == Add::complete);
  CHECK(ids(r) == std::vector<uint64_t>{0, 1, 2});
}

TEST_CASE("a bad body is refused and its segment can still come in a good copy") {
  Reassembly r(4, 1024);
  std::vector<uint8_t> lying = batch(0, 2);
  lying[1] = 9;  // says 9 entries, holds 2
  CHECK(r.add(6, 0, 1, lying) == Add::malformed);
  CHECK(r.add(6, 0, 1, batch(0, 2)) == Add::complete);
}

TEST_CASE("an index or count out of range, an oversize or invalid body are malformed") {
  const auto ok = batch(0, 1);
  {
    Reassembly r(4, 1024);
    CHECK(r.add(1, 3, 3, ok) == Add::malformed);  // index >= count
  }
  {
    Reassembly r(4, 1024);
    CHECK(r.add(1, 0, 0, ok) == Add::malformed);  // count 0
  }
  {
    Reassembly r(4, 1024);
    CHECK(r.add(1, 0, 5, ok) == Add::malformed);  // more segments than the sender's budget
  }
  {
    Reassembly r(4, 16);
    CHECK(r.add(1, 0, 1, batch(0, 3)) == Add::malformed);  // longer than a segment can be
  }
  {
    Reassembly r(4, 1024);
    std::vector<uint8_t> lying = batch(0, 2);
    lying[1] = 9;  // says 9 entries, holds 2
    CHECK(r.add(1, 0, 1, lying) == Add::malformed);
  }
}

TEST_CASE("a new cycle starts afresh: a partial batch of the last one is dropped") {
  Reassembly r(4, 1024);
  CHECK(r.add(7, 0, 2, batch(0, 1)) == Add::fresh);
  CHECK(r.add(8, 0, 2, batch(10, 1)) == Add::fresh);
  CHECK(r.cycle() == 8);
  CHECK(r.have() == 1);
  CHECK(r.add(8, 1, 2, batch(11, 2)) == Add::complete);
  CHECK(ids(r) == std::vector<uint64_t>{10, 11, 12});
}

TEST_CASE("once complete, a bad frame of the same cycle does not undo the batch") {
  Reassembly r(4, 1024);
  CHECK(r.add(4, 0, 1, batch(0, 1)) == Add::complete);
  CHECK(r.add(4, 1, 2, batch(1, 1)) == Add::malformed);
  CHECK(r.complete());
  CHECK(ids(r) == std::vector<uint64_t>{0});
}

TEST_CASE("64 and more segments: the bitmap spans words") {
  Reassembly r(130, 64);
  const auto s = batch(0, 0, 64);
  for (uint16_t j = 0; j < 129; ++j) REQUIRE(r.add(1, j, 130, s) == Add::fresh);
  CHECK(r.add(1, 64, 130, s) == Add::duplicate);
  CHECK(r.add(1, 129, 130, s) == Add::complete);
  CHECK(r.messages() == 0);
}

TEST_CASE("a copy holds the same batch; an assignment of a partial one over a complete one reuses its storage") {
  const std::vector<uint8_t> a = batch(1, 2);
  const std::vector<uint8_t> b = batch(3, 2);
  Reassembly r(4, 1024);
  REQUIRE(r.add(5, 0, 2, a) == Add::fresh);
  REQUIRE(r.add(5, 1, 2, b) == Add::complete);
  const Reassembly copy(r);
  CHECK(copy.complete());
  CHECK(copy.crc() == r.crc());
  CHECK(ids(copy) == std::vector<uint64_t>{1, 2, 3, 4});
  Reassembly partial(4, 1024);
  REQUIRE(partial.add(6, 1, 2, a) == Add::fresh);
  r = partial;  // the engine fuzz targets copy warmed-up nodes this way (docs/fuzzing.md)
  CHECK_FALSE(r.complete());
  CHECK(r.cycle() == 6);
  CHECK(r.add(6, 1, 2, a) == Add::duplicate);
  CHECK(r.add(6, 0, 2, b) == Add::complete);
  CHECK(ids(r) == std::vector<uint64_t>{3, 4, 1, 2});
  CHECK(ids(copy) == std::vector<uint64_t>{1, 2, 3, 4});  // the copy is its own
}

TEST_CASE("a peer's message above the payload limit makes its segment malformed, as the sender's own would be refused") {
  // Payloads "m0".."m9" are 2 bytes, "m10" 3 bytes (docs/fuzzing.md: a peer's batch is held to
  // [limits] payload_bytes).
  Reassembly strict(4, 1024, 2);
  CHECK(strict.add(1, 0, 1, batch(9, 2)) == Add::malformed);  // m9, m10
  CHECK(strict.add(1, 0, 1, batch(0, 2)) == Add::complete);   // m0, m1
  Reassembly loose(4, 1024, 3);
  CHECK(loose.add(1, 0, 1, batch(9, 2)) == Add::complete);
  uint16_t count = 0;
  CHECK_FALSE(validate_batch(batch(9, 2), &count, 2));
  CHECK(validate_batch(batch(9, 2), &count, 3));
  CHECK(count == 2);
  Reassembly copy(strict);  // a copy keeps the limit
  copy.reset(5);
  CHECK(copy.add(5, 0, 1, batch(9, 2)) == Add::malformed);
}
