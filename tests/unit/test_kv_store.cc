// The time-aware store (seed 004 §IV-B): visibility exactly at t_pub, the freshness bound of
// read, the latest version in range, bounded retention with eviction, failed reductions, the
// first publication of (key, t_pub) standing, and a full store. Also the pending batch of writes.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/kv_batch.h"
#include "core/kv_store.h"

namespace tob::core {
namespace {

using Bytes = std::vector<uint8_t>;

std::span<const uint8_t> k(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

KvStore store(size_t keys = 8, size_t versions = 3) {
  auto s = KvStore::create({keys, versions, 16, 8});
  REQUIRE(s.ok());
  return std::move(s.value());
}

Bytes val(uint8_t x) { return Bytes{x, x}; }

}  // namespace

TEST_CASE("a published value becomes visible exactly at its publishing time", "[kv][store]") {
  KvStore s = store();
  const std::string key = "error";
  REQUIRE(s.publish(k(key), 1000, 7, true, val(1)) == KvPublish::stored);
  CHECK(s.read(k(key), 0, 999).status == KvStatus::not_fresh);
  const KvRead r = s.read(k(key), 0, 1000);
  REQUIRE(r.status == KvStatus::ok);
  CHECK(r.t_pub_ns == 1000);
  CHECK(r.instance == 7);
  CHECK(Bytes(r.value.begin(), r.value.end()) == val(1));
  CHECK(s.read(k("other"), 0, 5000).status == KvStatus::never_written);
}

TEST_CASE("read returns the latest version published no earlier than t_min", "[kv][store]") {
  KvStore s = store(8, 8);
  for (int v = 1; v <= 4; ++v) REQUIRE(s.publish(k("x"), v * 100, static_cast<uint64_t>(v), true, val(static_cast<uint8_t>(v))) == KvPublish::stored);
  CHECK(s.read(k("x"), 0, 250).t_pub_ns == 200);   // latest visible
  CHECK(s.read(k("x"), 0, 1000).t_pub_ns == 400);
  CHECK(s.read(k("x"), 300, 300).t_pub_ns == 300); // freshness = now: exactly that version
  CHECK(s.read(k("x"), 301, 399).status == KvStatus::not_fresh);  // freshness not met yet
  CHECK(s.read(k("x"), 500, 1000).status == KvStatus::not_fresh);
  // Insertion order does not matter: an older publishing time slots in between.
  REQUIRE(s.publish(k("x"), 150, 9, true, val(9)) == KvPublish::stored);
  CHECK(s.read(k("x"), 0, 199).value[0] == 9);
}

TEST_CASE("a failed reduction answers with an error, never an older value in range", "[kv][store]") {
  KvStore s = store();
  REQUIRE(s.publish(k("y"), 100, 1, true, val(1)) == KvPublish::stored);
  REQUIRE(s.publish(k("y"), 200, 2, false, {}) == KvPublish::stored);
  CHECK(s.read(k("y"), 0, 250).status == KvStatus::reduction_failed);
  CHECK(s.read(k("y"), 0, 250).t_pub_ns == 200);
  CHECK(s.read(k("y"), 0, 150).status == KvStatus::ok);
}

TEST_CASE("(key, t_pub) is published once: the first publication stands", "[kv][store]") {
  KvStore s = store();
  REQUIRE(s.publish(k("z"), 100, 1, true, val(1)) == KvPublish::stored);
  CHECK(s.publish(k("z"), 100, 2, true, val(2)) == KvPublish::duplicate);
  CHECK(s.publish(k("z"), 100, 2, false, {}) == KvPublish::duplicate);
  CHECK(s.read(k("z"), 0, 100).value[0] == 1);
  CHECK(s.counters().duplicates == 2);
}

TEST_CASE("bounded retention evicts the oldest publishing time and says so", "[kv][store]") {
  KvStore s = store(8, 3);
  for (int v = 1; v <= 3; ++v) REQUIRE(s.publish(k("w"), v * 100, 0, true, val(static_cast<uint8_t>(v))) == KvPublish::stored);
  REQUIRE(s.publish(k("w"), 400, 0, true, val(4)) == KvPublish::stored);  // evicts 100
  CHECK(s.read(k("w"), 0, 150).status == KvStatus::evicted);
  CHECK(s.read(k("w"), 0, 99).status == KvStatus::evicted);      // history up to 100 is gone
  CHECK(s.read(k("w"), 101, 199).status == KvStatus::not_fresh);  // after it: nothing in range
  CHECK(s.read(k("w"), 0, 250).t_pub_ns == 200);
  CHECK(s.publish(k("w"), 50, 0, true, val(5)) == KvPublish::too_old);  // older than all kept
  CHECK(s.read(k("w"), 0, 60).status == KvStatus::evicted);
  CHECK(s.counters().evictions == 2);
}

TEST_CASE("a full store refuses new keys but keeps serving and updating the old ones", "[kv][store]") {
  KvStore s = store(2, 2);
  REQUIRE(s.publish(k("a"), 1, 0, true, val(1)) == KvPublish::stored);
  REQUIRE(s.publish(k("b"), 1, 0, true, val(2)) == KvPublish::stored);
  CHECK(s.publish(k("c"), 1, 0, true, val(3)) == KvPublish::store_full);
  CHECK(s.publish(k("a"), 2, 0, true, val(4)) == KvPublish::stored);
  CHECK(s.read(k("c"), 0, 10).status == KvStatus::never_written);
  CHECK(s.read(k("a"), 0, 10).value[0] == 4);
  CHECK(s.keys() == 2);
}

TEST_CASE("store configuration bounds are checked", "[kv][store]") {
  CHECK_FALSE(KvStore::create({0, 1, 8, 8}).ok());
  CHECK_FALSE(KvStore::create({8, 0, 8, 8}).ok());
  CHECK_FALSE(KvStore::create({8, 1, 0, 8}).ok());
  CHECK_FALSE(KvStore::create({8, 1, 256, 8}).ok());
  CHECK_FALSE(KvStore::create({8, 1, 8, 0}).ok());
  CHECK(KvStore::create({1, 1, 1, 1}).ok());
}

TEST_CASE("pending writes: a second write of (key, t_pub) replaces the first; the bound holds",
          "[kv][batch]") {
  const KvLimits lim{3, 8, 4};
  KvPending p(lim);
  CHECK(p.add(k("a"), 10, val(1)) == KvPending::Add::added);
  CHECK(p.add(k("a"), 20, val(2)) == KvPending::Add::added);  // another publishing time
  CHECK(p.add(k("a"), 10, val(3)) == KvPending::Add::replaced);
  CHECK(p.add(k("b"), 10, {}) == KvPending::Add::added);
  CHECK(p.add(k("c"), 10, val(4)) == KvPending::Add::full);
  Bytes out(lim.batch_bytes_max());
  const size_t len = p.encode(out);
  out.resize(len);
  uint16_t count = 0;
  REQUIRE(validate_kv_batch(out, lim, &count));
  CHECK(count == 3);
  KvBatchReader r(out);
  KvEntry e;
  REQUIRE(r.next(e));
  CHECK(e.t_pub_ns == 10);
  CHECK(Bytes(e.value.begin(), e.value.end()) == val(3));
  p.clear();
  CHECK(p.count() == 0);
  CHECK(p.add(k("c"), 10, val(4)) == KvPending::Add::added);
}

TEST_CASE("batch validation refuses every malformed shape", "[kv][batch]") {
  const KvLimits lim{4, 8, 4};
  KvPending p(lim);
  REQUIRE(p.add(k("key"), 5, val(7)) == KvPending::Add::added);
  Bytes good(lim.batch_bytes_max());
  good.resize(p.encode(good));
  REQUIRE(validate_kv_batch(good, lim));
  auto bad = [&](auto patch) {
    Bytes b = good;
    patch(b);
    return !validate_kv_batch(b, lim);
  };
  CHECK(bad([](Bytes& b) { b[1] = 2; }));             // count above the entries
  CHECK(bad([](Bytes& b) { b[1] = 0; }));             // count below: trailing bytes
  CHECK(bad([](Bytes& b) { b[2] = 1; }));             // reserved
  CHECK(bad([](Bytes& b) { b[4 + 8] = 0; }));         // empty key
  CHECK(bad([](Bytes& b) { b[4 + 8] = 9; }));         // key above the bound
  CHECK(bad([](Bytes& b) { b[4 + 9] = 1; }));         // reserved in the entry
  CHECK(bad([](Bytes& b) { b[4 + 11] = 5; }));        // value above the bound
  CHECK(bad([](Bytes& b) { b.pop_back(); }));
  CHECK(bad([](Bytes& b) { b.push_back(0); }));
  CHECK(bad([](Bytes& b) { b.resize(3); }));
  CHECK(bad([](Bytes& b) { b[1] = 5; }));             // more than keys_max
  CHECK(validate_kv_batch(Bytes{0, 0, 0, 0}, lim));   // no writes this period
}

}  // namespace tob::core
