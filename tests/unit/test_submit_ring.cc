// A client's submit ring (lib/dataplane/shm/submit_ring.h), without DPDK: FIFO across laps, a
// full ring refuses without writing, the consumer sees only what was published, and a producer
// and a consumer on two threads move a million records without a loss, a duplicate or a torn one.
#include <catch2/catch.hpp>

#include <random>
#include <thread>
#include <vector>

#include "dataplane/shm/submit_ring.h"

using namespace tob::dataplane;

namespace {

struct Pair {
  explicit Pair(uint64_t capacity) : bytes(capacity, 0) {
    prod.init(bytes.data(), capacity, &shared);
    cons.init(bytes.data(), capacity, &shared);
  }
  std::vector<uint8_t> bytes;
  SubmitRingShared shared;
  SubmitRingProducer prod;
  SubmitRingConsumer cons;
};

std::vector<uint8_t> payload_of(uint64_t n, uint32_t len) {
  std::vector<uint8_t> p(len);
  for (uint32_t k = 0; k < len; ++k) p[k] = static_cast<uint8_t>(n + k);
  return p;
}

bool payload_ok(const SubmitRecord& r, uint64_t n) {
  const auto* p = reinterpret_cast<const uint8_t*>(&r + 1);
  for (uint32_t k = 0; k < r.length; ++k)
    if (p[k] != static_cast<uint8_t>(n + k)) return false;
  return true;
}

}  // namespace

TEST_CASE("submit ring: the consumer sees records only once the producer publishes") {
  Pair q(1024);
  const auto p = payload_of(1, 10);
  REQUIRE(q.prod.put(p.data(), 10, 77));
  CHECK(q.cons.peek() == nullptr);
  q.prod.publish();
  const SubmitRecord* r = q.cons.peek();
  REQUIRE(r != nullptr);
  CHECK(r->length == 10);
  CHECK(r->submit_ns == 77);
  CHECK(payload_ok(*r, 1));
  q.cons.pop(*r);
  CHECK(q.cons.peek() == nullptr);
  CHECK(q.cons.empty());
}

TEST_CASE("submit ring: a full ring refuses a record until the consumer publishes its head") {
  Pair q(256);  // 16-byte heads: 10 records of 8 bytes (24 each) = 240
  const auto p = payload_of(0, 8);
  int put = 0;
  while (q.prod.put(p.data(), 8, 0)) ++put;
  CHECK(put == 10);
  q.prod.publish();
  const SubmitRecord* r = q.cons.peek();
  REQUIRE(r != nullptr);
  q.cons.pop(*r);
  CHECK_FALSE(q.prod.put(p.data(), 8, 0));  // taken, but the head is not published yet
  q.cons.publish();
  CHECK(q.prod.put(p.data(), 8, 0));         // 16 + 24 = 40 bytes of room: one more fits
  // A record larger than the whole room never fits, and nothing was written for it.
  CHECK_FALSE(q.prod.put(p.data(), 200, 0));
}

TEST_CASE("submit ring: records of random sizes stay in order across many laps") {
  std::mt19937_64 rng(3);
  Pair q(4096);
  uint64_t next_put = 0, next_get = 0;
  while (next_get < 50000) {
    const unsigned burst = static_cast<unsigned>(rng() % 40);
    for (unsigned k = 0; k < burst; ++k) {
      const uint32_t len = static_cast<uint32_t>(rng() % 300);
      const auto p = payload_of(next_put, len);
      if (!q.prod.put(p.data(), len, static_cast<int64_t>(next_put))) break;
      ++next_put;
    }
    q.prod.publish();
    const unsigned take = static_cast<unsigned>(rng() % 40);
    for (unsigned k = 0; k < take; ++k) {
      const SubmitRecord* r = q.cons.peek();
      if (r == nullptr) break;
      REQUIRE(r->submit_ns == static_cast<int64_t>(next_get));
      REQUIRE(payload_ok(*r, next_get));
      q.cons.pop(*r);
      ++next_get;
    }
    q.cons.publish();
  }
  CHECK(next_get <= next_put);
}

TEST_CASE("submit ring: a producer and a consumer thread move every record once, whole and in order") {
  Pair q(8192);
  constexpr uint64_t kRecords = 1'000'000;
  std::thread producer([&] {
    uint64_t n = 0;
    while (n < kRecords) {
      unsigned in_burst = 0;
      while (n < kRecords && in_burst < 32) {
        const uint32_t len = static_cast<uint32_t>(n % 61);
        const auto p = payload_of(n, len);
        if (!q.prod.put(p.data(), len, static_cast<int64_t>(n))) break;
        ++n;
        ++in_burst;
      }
      q.prod.publish();
      if (in_burst == 0) std::this_thread::yield();
    }
  });
  uint64_t got = 0;
  bool ok = true;
  while (got < kRecords && ok) {
    const SubmitRecord* r = q.cons.peek();
    if (r == nullptr) {
      q.cons.publish();
      std::this_thread::yield();
      continue;
    }
    ok = r->submit_ns == static_cast<int64_t>(got) && r->length == got % 61 && payload_ok(*r, got);
    q.cons.pop(*r);
    ++got;
    if (got % 16 == 0) q.cons.publish();
  }
  q.cons.publish();
  producer.join();
  CHECK(ok);
  CHECK(got == kRecords);
}
