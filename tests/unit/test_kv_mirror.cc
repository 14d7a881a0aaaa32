// The shared key-value mirror that tob_kv_read reads (lib/dataplane/kv_mirror): it answers every
// read exactly as the core's store (core::KvStore, seed 004 §IV-B) does after the same
// publications, never hands out a version the daemon may not have published yet, and a reader
// racing the writer never sees a torn version.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/kv_store.h"
#include "dataplane/shm/kv_mirror.h"

using tob::core::KvPublish;
using tob::core::KvStatus;
using tob::core::KvStore;
using tob::core::KvStoreConfig;
using tob::dataplane::KvMirror;
using tob::dataplane::KvMirrorRead;
using tob::dataplane::KvMirrorStatus;

namespace {

std::span<const uint8_t> bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

// A mirror in ordinary memory: the same code runs on a memzone in the daemon.
struct Region {
  explicit Region(const KvStoreConfig& c) : words((KvMirror::bytes_for(c) + 7) / 8), mirror(KvMirror::format(words.data(), words.size() * 8, c)) {}
  std::vector<uint64_t> words;
  KvMirror mirror;
};

KvMirrorStatus expected_status(KvStatus s) {
  switch (s) {
    case KvStatus::ok: return KvMirrorStatus::ok;
    case KvStatus::never_written: return KvMirrorStatus::never_written;
    case KvStatus::not_fresh: return KvMirrorStatus::not_fresh;
    case KvStatus::evicted: return KvMirrorStatus::evicted;
    case KvStatus::reduction_failed: return KvMirrorStatus::reduction_failed;
  }
  return KvMirrorStatus::busy;
}

}  // namespace

TEST_CASE("the mirror answers every read as the core's store after the same publications", "[kv][mirror]") {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    KvStoreConfig c;
    c.keys_max = 1 + rng() % 12;
    c.versions_per_key = 1 + rng() % 4;
    c.key_bytes_max = 1 + rng() % 20;
    c.value_bytes_max = 1 + rng() % 24;
    auto store = KvStore::create(c);
    REQUIRE(store.ok());
    Region region(c);
    KvMirror& m = region.mirror;
    m.set_complete_below(INT64_MAX);
    // Keys of every length up to the bound, more distinct keys than the store holds.
    std::vector<std::string> keys;
    for (size_t k = 0; k < 2 * c.keys_max + 2; ++k) {
      std::string key = "k" + std::to_string(k);
      key.resize(1 + (k * 7 + seed) % c.key_bytes_max, static_cast<char>('a' + k % 26));
      keys.push_back(key);
    }
    INFO("seed " << seed << " keys " << c.keys_max << " versions " << c.versions_per_key);
    for (int step = 0; step < 600; ++step) {
      const std::string& key = keys[rng() % keys.size()];
      if (rng() % 3 != 0) {
        const int64_t t_pub = static_cast<int64_t>(rng() % 40) * 10;
        const bool ok = rng() % 5 != 0;
        std::vector<uint8_t> value(rng() % (c.value_bytes_max + 1));
        for (auto& b : value) b = static_cast<uint8_t>(rng());
        const auto instance = static_cast<uint64_t>(step);
        const KvPublish want = store.value().publish(bytes(key), t_pub, instance, ok, value);
        const KvPublish got = m.publish(bytes(key), t_pub, instance, ok, value);
        REQUIRE(static_cast<int>(got) == static_cast<int>(want));
      } else {
        const int64_t t_min = static_cast<int64_t>(rng() % 45) * 10 - 20;
        const int64_t now = t_min + static_cast<int64_t>(rng() % 200);
        const auto want = store.value().read(bytes(key), t_min, now);
        std::vector<uint8_t> out(c.value_bytes_max);
        const KvMirrorRead got = m.read(bytes(key), t_min, now, out);
        REQUIRE(got.status == expected_status(want.status));
        if (want.status == KvStatus::ok || want.status == KvStatus::reduction_failed) {
          CHECK(got.t_pub_ns == want.t_pub_ns);
          CHECK(got.instance == want.instance);
        }
        if (want.status == KvStatus::ok) {
          REQUIRE(got.value_bytes == want.value.size());
          CHECK(std::vector<uint8_t>(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(got.value_bytes)) ==
                std::vector<uint8_t>(want.value.begin(), want.value.end()));
        }
      }
    }
    const auto counters = m.counters();
    CHECK(counters.keys == store.value().keys());
    CHECK(counters.versions_stored == store.value().counters().versions_stored);
    CHECK(counters.evictions == store.value().counters().evictions);
    CHECK(counters.duplicates == store.value().counters().duplicates);
    CHECK(counters.store_full == store.value().counters().store_full);
  }
}

TEST_CASE("a read at or after the first boundary the daemon has not processed answers `behind`", "[kv][mirror]") {
  KvStoreConfig c;
  Region region(c);
  KvMirror& m = region.mirror;
  std::vector<uint8_t> out(16);
  // Nothing is readable before the daemon first says how far it got.
  CHECK(m.read(bytes("x"), 0, 0, out).status == KvMirrorStatus::behind);
  const std::vector<uint8_t> v = {1, 2, 3};
  REQUIRE(m.publish(bytes("x"), 1000, 7, true, v) == KvPublish::stored);
  m.set_complete_below(1000);
  // The version is visible by time at 1000, but the daemon may still owe versions published
  // then: no answer rather than a possibly stale one.
  CHECK(m.read(bytes("x"), 0, 999, out).status == KvMirrorStatus::not_fresh);
  CHECK(m.read(bytes("x"), 0, 1000, out).status == KvMirrorStatus::behind);
  m.set_complete_below(2000);
  const KvMirrorRead r = m.read(bytes("x"), 1000, 1000, out);
  REQUIRE(r.status == KvMirrorStatus::ok);
  CHECK(r.t_pub_ns == 1000);
  CHECK(r.instance == 7);
  CHECK(r.value_bytes == 3);
  CHECK(out[2] == 3);
}

TEST_CASE("a value longer than the reader's buffer is reported with its length, not cut", "[kv][mirror]") {
  KvStoreConfig c;
  Region region(c);
  KvMirror& m = region.mirror;
  m.set_complete_below(INT64_MAX);
  const std::vector<uint8_t> v(10, 0xAB);
  REQUIRE(m.publish(bytes("long"), 5, 1, true, v) == KvPublish::stored);
  std::vector<uint8_t> out(9, 0);
  const KvMirrorRead r = m.read(bytes("long"), 0, 10, out);
  CHECK(r.status == KvMirrorStatus::too_small);
  CHECK(r.value_bytes == 10);
  CHECK(out[0] == 0);  // nothing copied
  // A key longer than any stored one was never written.
  CHECK(m.read(bytes(std::string(c.key_bytes_max + 1, 'k')), 0, 10, out).status == KvMirrorStatus::never_written);
}

TEST_CASE("attach refuses memory that holds no mirror or is shorter than its geometry", "[kv][mirror]") {
  KvStoreConfig c;
  c.keys_max = 8;
  Region region(c);
  KvMirror view;
  CHECK(KvMirror::attach(region.words.data(), region.words.size() * 8, view));
  CHECK(view.config().keys_max == 8);
  CHECK_FALSE(KvMirror::attach(region.words.data(), region.words.size() * 8 - 8, view));
  std::vector<uint64_t> zeros(region.words.size(), 0);
  CHECK_FALSE(KvMirror::attach(zeros.data(), zeros.size() * 8, view));
  CHECK_FALSE(KvMirror::attach(nullptr, 0, view));
  KvStoreConfig huge;
  huge.keys_max = 1u << 24;
  huge.versions_per_key = 1024;
  huge.value_bytes_max = 65535;
  CHECK(KvMirror::bytes_for(huge) == 0);  // beyond any sane shared memory: refused, not overflowed
}

TEST_CASE("readers racing the writer never see a torn version", "[kv][mirror]") {
  KvStoreConfig c;
  c.keys_max = 4;
  c.versions_per_key = 3;
  c.key_bytes_max = 8;
  c.value_bytes_max = 40;
  Region region(c);
  KvMirror& writer = region.mirror;
  writer.set_complete_below(INT64_MAX);
  const std::vector<std::string> keys = {"a", "bb", "ccc", "dddd"};
  // Every value is derived from (key, t_pub) and as long as t_pub says: a mix of two versions
  // or of a version's metadata with another's bytes shows up as a mismatch.
  const auto value_of = [](size_t key, int64_t t_pub) {
    std::vector<uint8_t> v(static_cast<size_t>(8 + t_pub % 33));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(key * 31 + static_cast<size_t>(t_pub) * 7 + i);
    return v;
  };
  std::atomic<bool> done{false};
  std::atomic<uint64_t> torn{0}, reads{0}, found{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      KvMirror view;
      if (!KvMirror::attach(region.words.data(), region.words.size() * 8, view)) {
        torn.fetch_add(1000000);
        return;
      }
      std::mt19937_64 rng(static_cast<uint64_t>(r) + 100);
      std::vector<uint8_t> out(c.value_bytes_max);
      while (!done.load(std::memory_order_relaxed)) {
        const size_t k = rng() % keys.size();
        const KvMirrorRead got = view.read(bytes(keys[k]), 0, INT64_MAX - 1, out);
        reads.fetch_add(1, std::memory_order_relaxed);
        if (got.status != KvMirrorStatus::ok) continue;
        found.fetch_add(1, std::memory_order_relaxed);
        const auto want = value_of(k, got.t_pub_ns);
        if (got.value_bytes != want.size() || std::memcmp(out.data(), want.data(), want.size()) != 0 ||
            got.instance != static_cast<uint64_t>(got.t_pub_ns) * 3)
          torn.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int64_t t = 1; t < 200000; ++t) {
    const size_t k = static_cast<size_t>(t) % keys.size();
    const auto v = value_of(k, t);
    writer.publish(bytes(keys[k]), t, static_cast<uint64_t>(t) * 3, true, v);
  }
  // Keep going until the readers have had a fair share of reads.
  for (int64_t t = 200000; reads.load() < 20000 && t < 2000000; ++t) {
    const size_t k = static_cast<size_t>(t) % keys.size();
    writer.publish(bytes(keys[k]), t, static_cast<uint64_t>(t) * 3, true, value_of(k, t));
  }
  done.store(true);
  for (auto& t : readers) t.join();
  INFO("reads " << reads.load() << ", with a value " << found.load());
  CHECK(torn.load() == 0);
  CHECK(found.load() > 0);
}
