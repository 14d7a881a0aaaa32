// Bounded submit queue (lib/core/submit_queue.h): FIFO order, backpressure instead of drops,
// and the byte ring checked against a std::deque model over long random runs.
#include <catch2/catch.hpp>

#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "core/submit_queue.h"

namespace tob::core {
namespace {

using Bytes = std::vector<uint8_t>;

struct Model {
  uint64_t msg_id;
  int64_t submit_ns;
  uint16_t client;
  Bytes payload;
};

void check_front(const SubmitQueue& q, const Model& m) {
  const AppMessage f = q.front();
  CHECK(f.msg_id == m.msg_id);
  CHECK(f.submit_ns == m.submit_ns);
  CHECK(f.client == m.client);
  CHECK(Bytes(f.payload.begin(), f.payload.end()) == m.payload);
}

Bytes fill(size_t n, uint8_t v) { return Bytes(n, v); }

}  // namespace

TEST_CASE("submit queue returns messages in the order they were pushed", "[submit_queue]") {
  SubmitQueue q(8, 256, 32);
  CHECK(q.empty());
  for (uint8_t i = 0; i < 5; ++i)
    REQUIRE(q.push(i, fill(i, i), 100 + i, 1000 + i) == SubmitStatus::ok);
  CHECK(q.size() == 5);
  CHECK(q.payload_bytes() == 0 + 1 + 2 + 3 + 4);
  for (uint8_t i = 0; i < 5; ++i) {
    check_front(q, {1000u + i, 100 + i, i, fill(i, i)});
    q.pop();
  }
  CHECK(q.empty());
  CHECK(q.payload_bytes() == 0);
}

TEST_CASE("submit queue refuses at msgs_max and leaves its contents unchanged", "[submit_queue]") {
  SubmitQueue q(3, 1000, 10);
  for (uint8_t i = 0; i < 3; ++i) REQUIRE(q.push(i, fill(2, i), i, i) == SubmitStatus::ok);
  CHECK(q.push(9, fill(1, 9), 9, 9) == SubmitStatus::backpressure);
  CHECK(q.push(9, {}, 9, 9) == SubmitStatus::backpressure);  // even an empty message
  CHECK(q.size() == 3);
  CHECK(q.payload_bytes() == 6);
  check_front(q, {0, 0, 0, fill(2, 0)});
  q.pop();
  REQUIRE(q.push(3, fill(2, 3), 3, 3) == SubmitStatus::ok);  // room again after a pop
  for (uint8_t i = 1; i <= 3; ++i) {
    check_front(q, {i, i, i, fill(2, i)});
    q.pop();
  }
}

TEST_CASE("submit queue refuses at bytes_max and leaves its contents unchanged", "[submit_queue]") {
  SubmitQueue q(100, 20, 10);
  REQUIRE(q.push(1, fill(10, 1), 1, 1) == SubmitStatus::ok);
  REQUIRE(q.push(2, fill(8, 2), 2, 2) == SubmitStatus::ok);
  CHECK(q.push(3, fill(3, 3), 3, 3) == SubmitStatus::backpressure);  // 21 > 20
  CHECK(q.size() == 2);
  CHECK(q.payload_bytes() == 18);
  REQUIRE(q.push(4, fill(2, 4), 4, 4) == SubmitStatus::ok);  // exactly 20
  CHECK(q.push(5, fill(1, 5), 5, 5) == SubmitStatus::backpressure);
  CHECK(q.push(6, {}, 6, 6) == SubmitStatus::ok);  // an empty payload needs no bytes
  check_front(q, {1, 1, 1, fill(10, 1)});
  q.pop();
  // 10 bytes free at the start of the ring now: the next message wraps there.
  REQUIRE(q.push(7, fill(10, 7), 7, 7) == SubmitStatus::ok);
  CHECK(q.push(8, fill(1, 8), 8, 8) == SubmitStatus::backpressure);
  const std::vector<Model> want = {
      {2, 2, 2, fill(8, 2)}, {4, 4, 4, fill(2, 4)}, {6, 6, 6, {}}, {7, 7, 7, fill(10, 7)}};
  for (const Model& m : want) {
    check_front(q, m);
    q.pop();
  }
  CHECK(q.empty());
}

TEST_CASE("submit queue refuses a payload above the maximum as too large", "[submit_queue]") {
  SubmitQueue q(4, 100, 10);
  CHECK(q.push(1, fill(11, 1), 1, 1) == SubmitStatus::too_large);
  CHECK(q.empty());
  CHECK(q.push(1, fill(10, 1), 1, 1) == SubmitStatus::ok);
  CHECK(q.push(1, fill(11, 1), 1, 1) == SubmitStatus::too_large);
  CHECK(q.size() == 1);
  CHECK(std::string(to_string(SubmitStatus::too_large)) != to_string(SubmitStatus::backpressure));
}

TEST_CASE("submit queue send cursor: sent messages stay queued until acknowledged",
          "[submit_queue]") {
  SubmitQueue q(8, 64, 8);
  for (uint8_t i = 0; i < 4; ++i) REQUIRE(q.push(i, fill(1, i), i, i) == SubmitStatus::ok);
  REQUIRE(q.has_unsent());
  CHECK(q.next_unsent().msg_id == 0);
  q.mark_sent();
  CHECK(q.next_unsent().msg_id == 1);
  q.mark_sent();
  CHECK(q.in_flight() == 2);
  q.rewind();  // the batch was discarded by everyone: send again from the oldest
  CHECK(q.in_flight() == 0);
  CHECK(q.next_unsent().msg_id == 0);
  q.mark_sent();
  q.mark_sent();
  q.mark_sent();
  q.ack_in_flight(2);
  CHECK(q.size() == 2);
  CHECK(q.in_flight() == 1);
  CHECK(q.front().msg_id == 2);
  CHECK(q.next_unsent().msg_id == 3);
}

TEST_CASE("submit queue matches a deque model under long random push/pop runs",
          "[submit_queue]") {
  // Small rings relative to payloads force frequent wrap-around of the byte ring.
  struct Shape {
    size_t msgs_max, bytes_max, payload_max;
  };
  const Shape shapes[] = {{16, 64, 16}, {5, 40, 40}, {64, 100, 7}, {3, 17, 17}, {32, 1000, 255}};
  std::mt19937_64 rng(2024);
  for (const Shape& sh : shapes) {
    SubmitQueue q(sh.msgs_max, sh.bytes_max, sh.payload_max);
    std::deque<Model> model;
    size_t model_bytes = 0;
    uint64_t next_id = 0;
    size_t pushes_ok = 0;
    size_t refusals = 0;
    for (int step = 0; step < 50000; ++step) {
      const bool push = rng() % 100 < 55;
      if (push) {
        const size_t len = rng() % (sh.payload_max + 2);  // sometimes one too large
        Bytes payload(len);
        for (auto& b : payload) b = static_cast<uint8_t>(rng());
        const auto client = static_cast<uint16_t>(rng());
        const auto t = static_cast<int64_t>(step);
        const SubmitStatus st = q.push(client, payload, t, next_id);
        if (len > sh.payload_max) {
          REQUIRE(st == SubmitStatus::too_large);
        } else if (st == SubmitStatus::ok) {
          model.push_back({next_id++, t, client, payload});
          model_bytes += len;
          ++pushes_ok;
        } else {
          REQUIRE(st == SubmitStatus::backpressure);
          // An empty queue always has room, and an empty payload needs only an entry.
          REQUIRE_FALSE(model.empty());
          REQUIRE((model.size() == sh.msgs_max || len > 0));
          ++refusals;
        }
      } else if (!model.empty()) {
        check_front(q, model.front());
        q.pop();
        model_bytes -= model.front().payload.size();
        model.pop_front();
      }
      REQUIRE(q.size() == model.size());
      REQUIRE(q.payload_bytes() == model_bytes);
      REQUIRE(q.payload_bytes() <= sh.bytes_max);
      REQUIRE(q.size() <= sh.msgs_max);
      if (!model.empty()) check_front(q, model.front());
    }
    // Drain and compare the whole remaining content.
    while (!model.empty()) {
      check_front(q, model.front());
      q.pop();
      model.pop_front();
    }
    CHECK(q.empty());
    INFO("shape " << sh.msgs_max << "/" << sh.bytes_max << "/" << sh.payload_max);
    CHECK(pushes_ok > 10000);
    CHECK(refusals > 0);
  }
}

TEST_CASE("an empty queue accepts a message of the full ring size", "[submit_queue]") {
  SubmitQueue q(4, 16, 16);
  std::mt19937_64 rng(3);
  for (int round = 0; round < 100; ++round) {
    const size_t first = rng() % 17;
    REQUIRE(q.push(0, fill(first, 1), 0, 0) == SubmitStatus::ok);
    q.pop();
    // Whatever offset the ring was left at, an empty queue has all 16 bytes.
    REQUIRE(q.push(0, fill(16, 2), 0, 1) == SubmitStatus::ok);
    check_front(q, {1, 0, 0, fill(16, 2)});
    q.pop();
  }
}

}  // namespace tob::core
