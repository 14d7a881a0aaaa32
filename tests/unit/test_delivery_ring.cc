// The delivery ring's arithmetic (lib/dataplane/shm/delivery_ring.h), without DPDK: records of
// any size written across many laps read back whole and in order, the ends of laps skipped (with
// and without room for the marker), the oldest record tracked as the writer overwrites, and the
// resume search.
#include <catch2/catch.hpp>

#include <deque>
#include <random>
#include <vector>

#include "dataplane/shm/delivery_ring.h"

using namespace tob::dataplane;

namespace {

struct Ring {
  explicit Ring(uint64_t capacity) : bytes(capacity, 0xEE) { w.init(bytes.data(), capacity); }
  void put(uint64_t seq, uint32_t length) {
    std::vector<uint8_t> p(length, static_cast<uint8_t>(seq));
    DeliveryRecord r{length, 1, 2, seq, 3, seq * 10, 4, 5, 6};
    w.write(r, p.data());
  }
  // Every record from pos to the end: (seq, length), payload checked.
  std::vector<std::pair<uint64_t, uint32_t>> read(uint64_t pos) const {
    std::vector<std::pair<uint64_t, uint32_t>> out;
    while (const DeliveryRecord* r = delivery_at(bytes.data(), bytes.size(), pos, w.end())) {
      const auto* p = reinterpret_cast<const uint8_t*>(r + 1);
      for (uint32_t k = 0; k < r->length; ++k) REQUIRE(p[k] == static_cast<uint8_t>(r->seq));
      REQUIRE(r->msg_id == r->seq * 10);
      out.emplace_back(r->seq, r->length);
      pos = next_delivery_pos(pos, *r);
    }
    return out;
  }
  std::vector<uint8_t> bytes;
  DeliveryRingWriter w;
};

}  // namespace

TEST_CASE("delivery ring: records are 8-byte aligned, with the 56-byte head") {
  CHECK(delivery_record_bytes(0) == 56);
  CHECK(delivery_record_bytes(1) == 64);
  CHECK(delivery_record_bytes(8) == 64);
  CHECK(delivery_record_bytes(9) == 72);
}

TEST_CASE("delivery ring: a record that does not fit the rest of a lap starts the next one") {
  Ring r(1024);
  for (uint64_t s = 1; s <= 15; ++s) r.put(s, 8);  // 15 x 64 = 960: 64 bytes left in the lap
  CHECK(r.w.end() == 960);
  r.put(16, 16);  // 72 bytes: the lap's last 64 are skipped (marked)
  CHECK(r.w.end() == 1024 + 72);
  const auto got = r.read(r.w.oldest());
  REQUIRE(!got.empty());
  CHECK(got.back() == std::pair<uint64_t, uint32_t>{16, 16});
  // The new record took the next lap's first 72 bytes: records 1 (0..64) and 2 (64..128) are
  // overwritten, the oldest moved past both.
  CHECK(r.w.oldest_record()->seq == 3);
  CHECK(got.front().first == 3);
  CHECK(got.size() == 14);
}

TEST_CASE("delivery ring: a lap's end too short for a marker or a head is skipped by reader and writer") {
  for (const uint32_t tail_gap : {0u, 8u, 48u}) {  // bytes left at the end of the first lap
    INFO("tail gap " << tail_gap);
    Ring r(512);
    r.put(1, 512 - tail_gap - 56);  // one record up to the gap
    REQUIRE(r.w.end() == 512 - tail_gap);
    r.put(2, 0);                    // 56 bytes: the gap is skipped
    CHECK(r.w.end() == 512 + 56);
    r.put(3, 100);
    const auto got = r.read(r.w.oldest());
    CHECK(got == std::vector<std::pair<uint64_t, uint32_t>>{{2, 0}, {3, 100}});
  }
}

TEST_CASE("delivery ring: many laps of random sizes read back in order, the oldest always whole") {
  std::mt19937_64 rng(7);
  for (const uint64_t capacity : {uint64_t{256}, uint64_t{4096}, uint64_t{65536}}) {
    Ring r(capacity);
    std::deque<std::pair<uint64_t, uint32_t>> model;  // what the ring must still hold
    uint64_t model_bytes = 0;                           // their bytes, lap ends not counted
    const uint32_t max_payload = static_cast<uint32_t>(capacity / 2 - 56);
    for (uint64_t seq = 1; seq < 20000; ++seq) {
      const uint32_t len = static_cast<uint32_t>(rng() % (std::min<uint32_t>(max_payload, 300) + 1));
      r.put(seq, len);
      model.emplace_back(seq, len);
      model_bytes += delivery_record_bytes(len);
      if (seq % 97 != 0) continue;
      const auto got = r.read(r.w.oldest());
      REQUIRE(!got.empty());
      // What is held is a suffix of everything written, and it spans at most the capacity.
      while (!model.empty() && model.front().first < got.front().first) model.pop_front();
      REQUIRE(got.size() == model.size());
      CHECK(std::equal(got.begin(), got.end(), model.begin()));
      CHECK(r.w.end() - r.w.oldest() <= capacity);
      CHECK(r.w.count() == seq);
    }
    (void)model_bytes;
  }
}

TEST_CASE("delivery ring: find_after gives the first record after a seq, and its number") {
  Ring r(4096);
  for (uint64_t s = 1; s <= 200; ++s) r.put(s * 2, 40);  // 96 bytes each: 42 fit, the rest overwritten
  const DeliveryRecord* oldest = r.w.oldest_record();
  REQUIRE(oldest != nullptr);
  const uint64_t first_seq = oldest->seq;
  CHECK(first_seq > 2);
  const auto f = r.w.find_after(first_seq + 1);  // between two seqs: the next one
  uint64_t pos = f.pos;
  const DeliveryRecord* at = delivery_at(r.bytes.data(), r.bytes.size(), pos, r.w.end());
  REQUIRE(at != nullptr);
  CHECK(at->seq == first_seq + 2);
  CHECK(f.index == first_seq / 2);  // record numbers count from 0: seq 2k is record k - 1, the next k
  const auto none = r.w.find_after(400);
  CHECK(none.pos == r.w.end());
  CHECK(none.index == r.w.count());
}

TEST_CASE("delivery ring: an empty ring has no oldest record") {
  Ring r(1024);
  CHECK(r.w.oldest_record() == nullptr);
  CHECK(r.w.find_after(0).pos == 0);
  CHECK(r.read(0).empty());
}
