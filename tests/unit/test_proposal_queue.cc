// A proposer's messages under otfp (lib/core/proposal_queue.h, docs/protocol-otfp.md
// "Exactly-once delivery"): batches filled oldest first, messages re-proposed after an instance
// decided without their batch, done ones leaving only from the head, backpressure, and a long
// random run against a std::deque model that checks every message is delivered exactly once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <vector>

#include "core/batch.h"
#include "core/proposal_queue.h"

namespace tob::core {
namespace {

using Bytes = std::vector<uint8_t>;

struct Msg {
  uint64_t msg_id;
  int64_t submit_ns;
  uint16_t client;
  Bytes payload;
};

// Fills one batch body of `body_bytes` for `instance` and returns what the batch carries, read
// back through the batch reader.
std::vector<Msg> fill(ProposalQueue& q, int64_t instance, size_t max_msgs, size_t body_bytes = 4096) {
  Bytes body(body_bytes);
  BatchWriter w(body);
  const uint16_t taken = q.fill(w, instance, max_msgs);
  CHECK(taken == w.count());
  const size_t len = w.finish();
  REQUIRE(len >= kBatchHeaderBytes);
  body.resize(len);
  uint16_t count = 0;
  REQUIRE(validate_batch(body, &count));
  REQUIRE(count == taken);
  std::vector<Msg> out;
  BatchReader r(body);
  for (AppMessage m; r.next(m);)
    out.push_back({m.msg_id, m.submit_ns, m.client, Bytes(m.payload.begin(), m.payload.end())});
  return out;
}

std::vector<uint64_t> ids(const std::vector<Msg>& msgs) {
  std::vector<uint64_t> out;
  for (const Msg& m : msgs) out.push_back(m.msg_id);
  return out;
}

Bytes payload_of(uint64_t id, size_t len) {
  Bytes p(len);
  for (size_t k = 0; k < len; ++k) p[k] = static_cast<uint8_t>(id * 31 + k * 7 + 1);
  return p;
}

// Pushes ids [from, to) with `len`-byte payloads; client = id, submit_ns = 1000 + id.
void push_range(ProposalQueue& q, uint64_t from, uint64_t to, size_t len = 3) {
  for (uint64_t id = from; id < to; ++id)
    REQUIRE(q.push(static_cast<uint16_t>(id), payload_of(id, len), 1000 + static_cast<int64_t>(id), id) ==
            SubmitStatus::ok);
}

using Ids = std::vector<uint64_t>;

}  // namespace

TEST_CASE("fill takes unsent messages oldest first, at most max_msgs, and keeps their bytes",
          "[proposal_queue]") {
  ProposalQueue q(16, 1024, 64);
  CHECK(q.empty());
  push_range(q, 0, 5, 7);
  CHECK(q.size() == 5);
  CHECK(q.in_flight() == 0);

  const std::vector<Msg> first = fill(q, 10, 3);
  CHECK(ids(first) == Ids{0, 1, 2});
  for (const Msg& m : first) {
    CHECK(m.client == m.msg_id);
    CHECK(m.submit_ns == 1000 + static_cast<int64_t>(m.msg_id));
    CHECK(m.payload == payload_of(m.msg_id, 7));
  }
  CHECK(q.in_flight() == 3);
  CHECK(q.size() == 5);  // in flight stays queued until decided

  // In-flight messages are not proposed again; the next batch starts after them.
  CHECK(ids(fill(q, 11, 10)) == Ids{3, 4});
  CHECK(q.in_flight() == 5);
  CHECK(fill(q, 12, 10).empty());  // nothing unsent left
  CHECK(fill(q, 13, 0).empty());
  CHECK(q.in_flight() == 5);
}

TEST_CASE("fill stops at the first message that does not fit: nothing younger jumps ahead",
          "[proposal_queue]") {
  ProposalQueue q(16, 4096, 200);
  REQUIRE(q.push(0, payload_of(0, 10), 0, 0) == SubmitStatus::ok);
  REQUIRE(q.push(0, payload_of(1, 100), 0, 1) == SubmitStatus::ok);
  REQUIRE(q.push(0, payload_of(2, 1), 0, 2) == SubmitStatus::ok);
  // Room for the header, message 0 (20 + 10) and message 2 (20 + 1), but not message 1 (20 + 100).
  const size_t body = kBatchHeaderBytes + 30 + 21;
  CHECK(ids(fill(q, 1, 10, body)) == Ids{0});
  CHECK(q.in_flight() == 1);
  // Message 1 alone does not fit either; message 2 must still wait behind it.
  CHECK(fill(q, 2, 10, body).empty());
  CHECK(q.in_flight() == 1);
  // A batch just large enough for exactly message 1.
  CHECK(ids(fill(q, 3, 10, kBatchHeaderBytes + kBatchEntryHeaderBytes + 100)) == Ids{1});
  CHECK(ids(fill(q, 4, 10, body)) == Ids{2});
  CHECK(q.in_flight() == 3);
  // A body that holds only the batch header takes nothing.
  push_range(q, 3, 4, 0);
  CHECK(fill(q, 5, 10, kBatchHeaderBytes).empty());
  CHECK(ids(fill(q, 6, 10, kBatchHeaderBytes + kBatchEntryHeaderBytes)) == Ids{3});  // an empty payload
}

TEST_CASE("decided with the batch pops done messages, but only from the head", "[proposal_queue]") {
  ProposalQueue q(16, 1024, 16);
  push_range(q, 0, 6);
  CHECK(ids(fill(q, 10, 2)) == Ids{0, 1});
  CHECK(ids(fill(q, 11, 2)) == Ids{2, 3});
  CHECK(ids(fill(q, 12, 2)) == Ids{4, 5});
  CHECK(q.in_flight() == 6);

  // Instance 11 decided first: its messages are done but stay behind 0 and 1 in flight.
  q.decided(11, true);
  CHECK(q.in_flight() == 4);
  CHECK(q.size() == 6);
  // in_flight() < size() here, yet nothing is unsent: the done ones wait behind the head.
  CHECK(fill(q, 20, 10).empty());
  CHECK(q.in_flight() == 4);
  // Instance 12 too: still nothing leaves.
  q.decided(12, true);
  CHECK(q.in_flight() == 2);
  CHECK(q.size() == 6);
  // The head's instance decides: everything done leaves at once.
  q.decided(10, true);
  CHECK(q.in_flight() == 0);
  CHECK(q.size() == 0);
  CHECK(q.empty());
  // Done messages are never proposed again.
  CHECK(fill(q, 13, 10).empty());
}

TEST_CASE("decided without the batch makes its messages unsent, first in the next batch",
          "[proposal_queue]") {
  ProposalQueue q(16, 1024, 16);
  push_range(q, 0, 3);
  CHECK(ids(fill(q, 10, 2)) == Ids{0, 1});
  push_range(q, 3, 5);
  q.decided(10, false);
  CHECK(q.in_flight() == 0);
  CHECK(q.size() == 5);
  // The re-proposed messages come before the newer unsent ones.
  const std::vector<Msg> again = fill(q, 11, 3);
  CHECK(ids(again) == Ids{0, 1, 2});
  for (const Msg& m : again) CHECK(m.payload == payload_of(m.msg_id, 3));
  CHECK(q.in_flight() == 3);
  q.decided(11, true);
  CHECK(q.size() == 2);
  CHECK(ids(fill(q, 12, 10)) == Ids{3, 4});
}

TEST_CASE("interleaved instances: a later one decided with, an earlier one without its batch",
          "[proposal_queue]") {
  ProposalQueue q(16, 1024, 16);
  push_range(q, 0, 6);
  CHECK(ids(fill(q, 10, 2)) == Ids{0, 1});
  CHECK(ids(fill(q, 11, 2)) == Ids{2, 3});
  q.decided(11, true);
  CHECK(q.size() == 6);  // 2 and 3 are done but 0 and 1 are ahead of them
  CHECK(q.in_flight() == 2);
  q.decided(10, false);
  CHECK(q.in_flight() == 0);
  CHECK(q.size() == 6);  // the head is unsent again: nothing leaves
  // Instance 12 carries the messages of 10 again, not the done ones, then the unsent tail.
  CHECK(ids(fill(q, 12, 10)) == Ids{0, 1, 4, 5});
  CHECK(q.in_flight() == 4);
  q.decided(12, true);
  CHECK(q.empty());
  CHECK(q.in_flight() == 0);
}

TEST_CASE("a message excluded again and again is proposed until an instance includes it",
          "[proposal_queue]") {
  ProposalQueue q(4, 64, 16);
  push_range(q, 0, 1);
  for (int64_t i = 0; i < 50; ++i) {
    CHECK(ids(fill(q, i, 10)) == Ids{0});
    q.decided(i, false);
    CHECK(q.size() == 1);
  }
  CHECK(ids(fill(q, 50, 10)) == Ids{0});
  q.decided(50, true);
  CHECK(q.empty());
}

TEST_CASE("decided for an instance with nothing of ours, or a second time, changes nothing",
          "[proposal_queue]") {
  ProposalQueue q(16, 1024, 16);
  push_range(q, 0, 4);
  CHECK(ids(fill(q, 10, 2)) == Ids{0, 1});
  q.decided(9, true);   // an instance this proposer carried nothing in
  q.decided(11, false);
  q.decided(12, true);
  CHECK(q.in_flight() == 2);
  CHECK(q.size() == 4);
  q.decided(10, true);
  CHECK(q.size() == 2);
  CHECK(q.in_flight() == 0);
  q.decided(10, true);  // duplicate decision
  q.decided(10, false);  // and a contradicting late one: the messages are gone already
  CHECK(q.size() == 2);
  CHECK(q.in_flight() == 0);
  CHECK(ids(fill(q, 13, 10)) == Ids{2, 3});
  // An empty batch (nothing taken) decided either way.
  CHECK(fill(q, 14, 10).empty());
  q.decided(14, false);
  q.decided(14, true);
  CHECK(q.in_flight() == 2);
}

TEST_CASE("resend_all makes every in-flight message unsent and keeps done ones done",
          "[proposal_queue]") {
  ProposalQueue q(16, 1024, 16);
  push_range(q, 0, 6);
  CHECK(ids(fill(q, 10, 2)) == Ids{0, 1});
  CHECK(ids(fill(q, 11, 2)) == Ids{2, 3});
  q.decided(11, true);  // done, behind the head
  CHECK(ids(fill(q, 12, 1)) == Ids{4});
  CHECK(q.in_flight() == 3);
  q.resend_all();
  CHECK(q.in_flight() == 0);
  CHECK(q.size() == 6);
  // A late decision of an abandoned instance no longer moves anything.
  q.decided(10, true);
  q.decided(12, false);
  CHECK(q.in_flight() == 0);
  CHECK(q.size() == 6);
  // Everything not done goes out again, oldest first; 2 and 3 are not proposed again.
  CHECK(ids(fill(q, 20, 10)) == Ids{0, 1, 4, 5});
  CHECK(q.in_flight() == 4);
  q.decided(20, true);
  CHECK(q.empty());
  q.resend_all();  // on an empty queue
  CHECK(q.empty());
  CHECK(q.in_flight() == 0);
}

TEST_CASE("proposal queue refuses at msgs_max, at bytes_max and above the payload maximum",
          "[proposal_queue]") {
  SECTION("message count") {
    ProposalQueue q(3, 1000, 10);
    push_range(q, 0, 3);
    CHECK(q.push(0, payload_of(3, 1), 0, 3) == SubmitStatus::backpressure);
    CHECK(q.push(0, {}, 0, 3) == SubmitStatus::backpressure);
    CHECK(q.size() == 3);
    // In-flight messages still occupy their places.
    CHECK(ids(fill(q, 1, 10)) == Ids{0, 1, 2});
    CHECK(q.push(0, payload_of(3, 1), 0, 3) == SubmitStatus::backpressure);
    // An exclusion does not free anything either.
    q.decided(1, false);
    CHECK(q.push(0, payload_of(3, 1), 0, 3) == SubmitStatus::backpressure);
    CHECK(ids(fill(q, 2, 1)) == Ids{0});
    q.decided(2, true);
    CHECK(q.size() == 2);
    CHECK(q.push(3, payload_of(3, 3), 1003, 3) == SubmitStatus::ok);
    CHECK(ids(fill(q, 3, 10)) == Ids{1, 2, 3});
  }
  SECTION("payload bytes") {
    ProposalQueue q(100, 20, 10);
    REQUIRE(q.push(0, payload_of(0, 10), 0, 0) == SubmitStatus::ok);
    REQUIRE(q.push(0, payload_of(1, 8), 0, 1) == SubmitStatus::ok);
    CHECK(q.push(0, payload_of(2, 3), 0, 2) == SubmitStatus::backpressure);
    CHECK(q.size() == 2);
    CHECK(q.push(0, payload_of(2, 2), 0, 2) == SubmitStatus::ok);  // exactly 20 bytes
    CHECK(q.push(0, {}, 0, 3) == SubmitStatus::ok);                 // no bytes needed
    CHECK(ids(fill(q, 5, 1)) == Ids{0});
    q.decided(5, true);
    // 10 bytes free at the start of the ring: a 10-byte message wraps there.
    REQUIRE(q.push(0, payload_of(4, 10), 0, 4) == SubmitStatus::ok);
    CHECK(q.push(0, payload_of(5, 1), 0, 5) == SubmitStatus::backpressure);
    const std::vector<Msg> rest = fill(q, 6, 10);
    CHECK(ids(rest) == Ids{1, 2, 3, 4});
    const size_t lens[] = {8, 2, 0, 10};
    for (size_t k = 0; k < rest.size(); ++k) CHECK(rest[k].payload == payload_of(rest[k].msg_id, lens[k]));
  }
  SECTION("too large") {
    ProposalQueue q(4, 100, 10);
    CHECK(q.push(0, payload_of(0, 11), 0, 0) == SubmitStatus::too_large);
    CHECK(q.empty());
    CHECK(q.push(0, payload_of(0, 10), 0, 0) == SubmitStatus::ok);
    CHECK(q.push(0, payload_of(1, 11), 0, 1) == SubmitStatus::too_large);
    CHECK(q.size() == 1);
    CHECK(ids(fill(q, 0, 10)) == Ids{0});
  }
  SECTION("a refused push leaves no trace among the unsent messages") {
    ProposalQueue q(2, 100, 10);
    push_range(q, 0, 2);
    CHECK(q.push(0, payload_of(9, 1), 0, 9) == SubmitStatus::backpressure);
    CHECK(ids(fill(q, 1, 10)) == Ids{0, 1});
    q.decided(1, true);
    CHECK(q.empty());
    push_range(q, 2, 4);
    CHECK(ids(fill(q, 2, 10)) == Ids{2, 3});
  }
}

TEST_CASE("proposal queue delivers every message exactly once over long random runs (deque model)",
          "[proposal_queue]") {
  // The model: messages in submit order with their state; instances in flight with their ids.
  // Small rings relative to the run force thousands of wrap-arounds of the message and byte
  // rings, with instances decided out of order, exclusions and restarts.
  struct Shape {
    size_t msgs_max, bytes_max, payload_max;
  };
  const Shape shapes[] = {{16, 200, 24}, {5, 40, 40}, {64, 300, 9}, {3, 17, 17}, {33, 2000, 255}};
  constexpr int64_t kUnsent = -1;
  constexpr int64_t kDone = -2;
  struct Entry {
    uint64_t msg_id;
    int64_t submit_ns;
    uint16_t client;
    Bytes payload;
    int64_t state;  // instance in flight, kUnsent or kDone
  };
  std::mt19937_64 rng(2025);
  for (const Shape& sh : shapes) {
    INFO("shape " << sh.msgs_max << "/" << sh.bytes_max << "/" << sh.payload_max);
    ProposalQueue q(sh.msgs_max, sh.bytes_max, sh.payload_max);
    std::deque<Entry> model;
    std::map<int64_t, Ids> open;           // instances filled and not decided
    std::vector<int> delivered;            // per msg_id: times included in a decided instance
    uint64_t next_id = 0;
    int64_t next_instance = 0;
    size_t exclusions = 0;
    size_t multi_in_flight = 0;

    auto model_in_flight = [&] {
      return static_cast<size_t>(std::count_if(model.begin(), model.end(), [](const Entry& e) { return e.state >= 0; }));
    };
    auto decide = [&](int64_t instance, bool included) {
      q.decided(instance, included);
      for (Entry& e : model)
        if (e.state == instance) e.state = included ? kDone : kUnsent;
      auto it = open.find(instance);
      if (it != open.end()) {
        if (included)
          for (uint64_t id : it->second) ++delivered[id];
        open.erase(it);
      }
      while (!model.empty() && model.front().state == kDone) model.pop_front();
    };
    auto do_fill = [&](size_t max_msgs, size_t body_bytes) {
      const int64_t instance = next_instance++;
      // What the model expects: unsent ones oldest first, stopping at the first that does not fit.
      Ids want;
      size_t used = kBatchHeaderBytes;
      for (Entry& e : model) {
        if (want.size() >= max_msgs) break;
        if (e.state != kUnsent) continue;
        if (used + kBatchEntryHeaderBytes + e.payload.size() > body_bytes) break;
        used += kBatchEntryHeaderBytes + e.payload.size();
        want.push_back(e.msg_id);
        e.state = instance;
      }
      const std::vector<Msg> got = fill(q, instance, max_msgs, body_bytes);
      REQUIRE(ids(got) == want);
      for (const Msg& m : got) {
        const auto e = std::find_if(model.begin(), model.end(), [&](const Entry& x) { return x.msg_id == m.msg_id; });
        REQUIRE(e != model.end());
        REQUIRE(m.payload == e->payload);
        REQUIRE(m.client == e->client);
        REQUIRE(m.submit_ns == e->submit_ns);
      }
      if (!want.empty()) open[instance] = want;
    };

    for (int step = 0; step < 40000; ++step) {
      const uint64_t op = rng() % 100;
      if (op < 45) {
        const size_t len = rng() % (sh.payload_max + 2);  // sometimes one too large
        Bytes payload(len);
        for (auto& b : payload) b = static_cast<uint8_t>(rng());
        const auto client = static_cast<uint16_t>(rng());
        const SubmitStatus st = q.push(client, payload, step, next_id);
        if (len > sh.payload_max) {
          REQUIRE(st == SubmitStatus::too_large);
        } else if (st == SubmitStatus::ok) {
          model.push_back({next_id, step, client, payload, kUnsent});
          delivered.push_back(0);
          ++next_id;
        } else {
          REQUIRE(st == SubmitStatus::backpressure);
          REQUIRE_FALSE(model.empty());
          REQUIRE((model.size() == sh.msgs_max || len > 0));
        }
      } else if (op < 75) {
        // A batch of random capacity: sometimes too small for the oldest unsent message.
        do_fill(1 + rng() % 6, kBatchHeaderBytes + rng() % (3 * (kBatchEntryHeaderBytes + sh.payload_max)));
      } else if (op < 99) {
        if (open.empty()) continue;
        if (open.size() > 1) ++multi_in_flight;
        // Any open instance, not only the oldest: decisions arrive out of order.
        auto it = open.begin();
        std::advance(it, static_cast<long>(rng() % open.size()));
        const bool included = rng() % 4 != 0;
        if (!included) ++exclusions;
        decide(it->first, included);
      } else {
        q.resend_all();
        for (Entry& e : model)
          if (e.state >= 0) e.state = kUnsent;
        // The abandoned instances may still be decided late; that must move nothing.
        for (const auto& [instance, _] : open) q.decided(instance, rng() % 2 == 0);
        open.clear();
      }
      REQUIRE(q.size() == model.size());
      REQUIRE(q.in_flight() == model_in_flight());
      REQUIRE(q.empty() == model.empty());
    }

    // Drain: decide everything open, then propose and include until nothing is left.
    while (!open.empty()) decide(open.begin()->first, true);
    for (int rounds = 0; !model.empty(); ++rounds) {
      REQUIRE(rounds < 100000);
      do_fill(8, 4096);
      if (!open.empty()) decide(open.begin()->first, true);
    }
    CHECK(q.empty());
    CHECK(q.in_flight() == 0);
    CHECK(next_id > 4000);  // thousands of messages through rings of 3 to 64 entries
    CHECK(exclusions > 500);
    CHECK(multi_in_flight > 100);
    // Exactly once: every accepted message was in exactly one instance decided with its batch.
    for (uint64_t id = 0; id < next_id; ++id) {
      INFO("message " << id);
      REQUIRE(delivered[id] == 1);
    }
  }
}

TEST_CASE("abandon_before makes the messages of skipped instances unsent, and only those",
          "[proposal_queue]") {
  // A node that fell further behind than its peers keep records a gap: its messages in flight in
  // the instances it skipped go out again (docs/protocol-otfp.md "Catch-up").
  ProposalQueue q(16, 1024, 16);
  push_range(q, 0, 6);
  CHECK(ids(fill(q, 10, 2)) == Ids{0, 1});
  CHECK(ids(fill(q, 11, 2)) == Ids{2, 3});
  CHECK(ids(fill(q, 12, 1)) == Ids{4});
  q.abandon_before(12);  // instances 10 and 11 skipped; 12 still pending
  CHECK(q.in_flight() == 1);
  CHECK(q.has_unsent());
  CHECK(ids(fill(q, 13, 10)) == Ids{0, 1, 2, 3, 5});
  q.decided(12, true);
  q.decided(13, true);
  CHECK(q.empty());
  q.abandon_before(100);  // nothing in flight: nothing moves
  CHECK(q.in_flight() == 0);
}

}  // namespace tob::core
