// The sequence lock: nothing published until the first publish, a read returns the last
// published value whatever its size, and a reader racing the writer never sees a torn value.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

#include "dataplane/shm/seqlock.h"

using tob::dataplane::Seqlock;

namespace {

struct Fit {
  double ns_per_tick;
  int64_t offset_ns;
  uint64_t tsc;
};

struct Odd {  // 3 bytes: less than one word
  uint8_t a, b, c;
};

struct Words20 {  // 20 bytes: two whole words and part of a third
  uint32_t f[5];
};

// Eight words whose fields the writer always sets equal: a torn read shows as unequal fields.
struct Wide {
  uint64_t f[8];
};

struct Mixed {  // 9 uint32 = 36 bytes: the last word is half used
  uint32_t f[9];
};

template <class T>
bool all_equal(const T& v) {
  for (const auto& x : v.f)
    if (x != v.f[0]) return false;
  return true;
}

// One writer publishing `rounds` values whose fields all equal the round, `readers` readers
// counting torn and backward reads until the writer is done.
template <class T>
void race(int rounds, int readers) {
  Seqlock<T> lock;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> torn{0};
  std::atomic<uint64_t> backward{0};
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> last_seen_max{0};
  std::atomic<int> started{0};
  // Catch2 assertions are not thread-safe: readers count violations, the test checks them.
  std::vector<std::thread> threads;
  for (int r = 0; r < readers; ++r)
    threads.emplace_back([&] {
      uint64_t last = 0;
      uint64_t n = 0;
      started.fetch_add(1);
      // Reads until the writer is done, and once more after that: every reader reads at least
      // once however the threads are scheduled (a busy machine may run the writer to its end).
      for (bool finished = false; !finished;) {
        finished = done.load(std::memory_order_acquire);
        if (!lock.published()) continue;
        const T v = lock.read();
        if (!all_equal(v)) torn.fetch_add(1);
        if (static_cast<uint64_t>(v.f[0]) < last) backward.fetch_add(1);
        last = static_cast<uint64_t>(v.f[0]);
        ++n;
      }
      reads.fetch_add(n);
      uint64_t m = last_seen_max.load();
      while (last > m && !last_seen_max.compare_exchange_weak(m, last)) {}
    });
  threads.emplace_back([&] {
    while (started.load() < readers) std::this_thread::yield();  // race, not run before them
    T v{};
    for (int i = 1; i <= rounds; ++i) {
      for (auto& x : v.f) x = static_cast<std::remove_reference_t<decltype(x)>>(i);
      lock.publish(v);
    }
    done.store(true, std::memory_order_release);
  });
  for (auto& t : threads) t.join();
  CHECK(torn.load() == 0);
  CHECK(backward.load() == 0);
  CHECK(reads.load() > 0);
  CHECK(last_seen_max.load() <= static_cast<uint64_t>(rounds));
  const T final_value = lock.read();
  CHECK(all_equal(final_value));
  CHECK(static_cast<uint64_t>(final_value.f[0]) == static_cast<uint64_t>(rounds));
}

}  // namespace

TEST_CASE("nothing is published before the first publish") {
  Seqlock<Fit> lock;
  CHECK_FALSE(lock.published());
  lock.publish(Fit{0.4, -12, 99});
  CHECK(lock.published());
}

TEST_CASE("a read returns the last published value") {
  Seqlock<Fit> lock;
  lock.publish(Fit{0.4, -12, 99});
  Fit f = lock.read();
  CHECK(f.ns_per_tick == 0.4);
  CHECK(f.offset_ns == -12);
  CHECK(f.tsc == 99);

  lock.publish(Fit{0.25, INT64_MIN, UINT64_MAX});
  f = lock.read();
  CHECK(f.ns_per_tick == 0.25);
  CHECK(f.offset_ns == INT64_MIN);
  CHECK(f.tsc == UINT64_MAX);
  CHECK(lock.published());

  // Reading does not consume: a second read sees the same value.
  const Fit again = lock.read();
  CHECK(again.offset_ns == INT64_MIN);
  CHECK(again.tsc == UINT64_MAX);
}

TEST_CASE("values that are not a whole number of words round-trip") {
  Seqlock<Odd> odd;
  odd.publish(Odd{1, 2, 3});
  Odd o = odd.read();
  CHECK(o.a == 1);
  CHECK(o.b == 2);
  CHECK(o.c == 3);
  odd.publish(Odd{255, 0, 128});
  o = odd.read();
  CHECK(o.a == 255);
  CHECK(o.b == 0);
  CHECK(o.c == 128);

  Seqlock<Words20> w;
  w.publish(Words20{{10, 20, 30, 40, 0xdeadbeef}});
  const Words20 r = w.read();
  CHECK(r.f[0] == 10);
  CHECK(r.f[3] == 40);
  CHECK(r.f[4] == 0xdeadbeef);

  Seqlock<int64_t> scalar;
  scalar.publish(-5);
  CHECK(scalar.read() == -5);
  scalar.publish(INT64_MAX);
  CHECK(scalar.read() == INT64_MAX);
}

TEST_CASE("a reader racing the writer never observes a torn multi-word value") {
  race<Wide>(300'000, 1);
}

TEST_CASE("several readers racing the writer never observe a torn or older value") {
  race<Wide>(200'000, 2);
  race<Mixed>(200'000, 2);
}
