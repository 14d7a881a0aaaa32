// The daemon's side of tob.h (lib/dataplane/clients/client_hub, submit_intake), driven directly:
// the client slots are operated and the rings read and written as the client library does
// (lib/client/tob_client.cc). Needs DPDK's EAL for the memzones; main() starts it without
// hugepages, devices or shared files.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <rte_eal.h>
#include <rte_memzone.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "../../include/tob.h"
#include "dataplane/clients/client_hub.h"

using namespace tob::dataplane;

namespace {

constexpr int64_t kCycle = 1'000'000;
constexpr uint64_t kRecord = 64;  // every test delivery: a 56-byte head and 8 bytes of payload

ClusterConfig cluster_config(uint32_t ring, uint32_t history, int max_clients) {
  ClusterConfig c;
  c.name = "hubtest";
  c.nodes = 4;
  c.clients_max = max_clients;
  c.client_ring = ring;
  c.history = history;
  c.node.schedule = tob::core::ScheduleConfig::equal_slots(4, kCycle);
  c.node.payload_bytes_max = 64;
  return c;
}

// An engine that only queues: what the submit intake hands it, up to `room` messages.
class QueueEngine final : public tob::core::Engine {
 public:
  struct Msg {
    uint16_t client;
    std::string payload;
    int64_t submit_ns;
  };
  explicit QueueEngine(const tob::core::Schedule& s) : sched_(s) {}
  size_t room = 1u << 20;
  std::vector<Msg> got;
  tob::core::SubmitResult submit(uint16_t client, std::span<const uint8_t> p, int64_t ns) override {
    if (p.size() > 64) return {tob::core::SubmitStatus::too_large, 0};
    if (got.size() >= room) return {tob::core::SubmitStatus::backpressure, 0};
    got.push_back({client, std::string(p.begin(), p.end()), ns});
    return {tob::core::SubmitStatus::ok, got.size()};
  }
  void on_time(int64_t) override {}
  tob::core::FrameVerdict on_frame(const tob::core::FrameView&, int64_t) override { return {}; }
  const tob::core::Actions& take_actions() override { return actions_; }
  void stop() override {}
  int64_t next_deadline_ns() const override { return INT64_MAX; }
  tob::core::Order order() const override { return tob::core::Order::mars; }
  tob::core::NodeId self() const override { return 1; }
  tob::core::SelfState self_state() const override { return tob::core::SelfState::member; }
  uint64_t members() const override { return 0xF; }
  int member_count() const override { return 4; }
  tob::core::Stage stage_of(tob::core::NodeId) const override { return {}; }
  const tob::core::Schedule& schedule() const override { return sched_; }
  const tob::core::NodeCounters& counters() const override { return counters_; }
  size_t queued() const override { return got.size(); }
  int64_t current_cycle() const override { return 0; }

 private:
  const tob::core::Schedule& sched_;
  tob::core::Actions actions_;
  tob::core::NodeCounters counters_;
};

// One hub per test case; the memzones it names must go before the next one is made.
class Fixture {
 public:
  Fixture(uint32_t ring, uint32_t history, int max_clients = 4)
      : sched_(tob::core::Schedule::create(cluster_config(ring, history, max_clients).node.schedule).value()),
        engine_(sched_) {
    clock_.publish({1000, 1'000'000'000, 0.5});
    auto hub = ClientHub::create(cluster_config(ring, history, max_clients), 1, clock_);
    INFO((hub.ok() ? std::string() : hub.error().message));
    REQUIRE(hub.ok());
    hub_ = std::move(hub.value());
    readers_.resize(static_cast<size_t>(max_clients));
  }
  ~Fixture() {
    hub_.reset();
    // The hub leaves its memzones to the EAL (clients may map them); free them here so the next
    // test case can make objects of the same names.
    for (const char* z : {kShmZoneName, kDeliveryRingName, kSubmitRingsName}) rte_memzone_free(rte_memzone_lookup(z));
  }

  ClientHub& hub() { return *hub_; }
  Shm& shm() { return *hub_->shared(); }
  QueueEngine& engine() { return engine_; }
  uint64_t capacity() const { return hub_->shm().dlv_bytes; }

  // The delivery of message `msg_id` in `turn`, as the node hands it out (8-byte payloads).
  void deliver(int64_t turn, uint64_t msg_id) {
    char text[16];
    std::snprintf(text, sizeof text, "m%07llu", static_cast<unsigned long long>(msg_id % 10'000'000));
    payload_.assign(text, 8);
    const tob::core::Delivery d{0, turn / 4, turn, turn * 250'000, msg_id, 7, 0,
                                std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload_.data()),
                                                         payload_.size()),
                                sched_.cycle_start_ns(turn / 4 + 1)};
    hub_->record(d);
    hub_->publish();
  }

  // A client's claim, as tob_attach writes it; the hub answers in serve().
  SlotState claim(int slot, uint64_t resume_after = 0) {
    ClientSlot& s = shm().slots[slot];
    s.resume_after_seq.store(resume_after);
    s.polled.store(0);
    s.state.store(static_cast<uint32_t>(SlotState::claimed));
    hub_->serve();
    const auto st = static_cast<SlotState>(s.state.load());
    if (st == SlotState::attached) {
      Reader& r = readers_[static_cast<size_t>(slot)];
      r = Reader{};
      r.pos = r.held = s.dlv_start.load();
      const rte_memzone* sub = rte_memzone_lookup(kSubmitRingsName);
      REQUIRE(sub != nullptr);
      r.submit.init(static_cast<uint8_t*>(sub->addr) + shm().sub_bytes * static_cast<uint64_t>(slot), shm().sub_bytes,
                    &s.submit);
    }
    return st;
  }

  void leave(int slot) {
    shm().slots[slot].state.store(static_cast<uint32_t>(SlotState::leaving));
    hub_->serve();
  }

  // tob_poll's steps: let go of the last batch, read up to `max` records. The seqs, or
  // {TOB_EOVERRUN} when the slot is flagged.
  std::vector<uint64_t> poll(int slot, unsigned max = kPollBurstMax) {
    Reader& r = readers_[static_cast<size_t>(slot)];
    ClientSlot& s = shm().slots[slot];
    r.held = r.pos;
    s.dlv_cursor.store(r.held);
    const uint64_t end = shm().dlv_end.load();
    const rte_memzone* z = rte_memzone_lookup(kDeliveryRingName);
    std::vector<uint64_t> seqs;
    uint64_t pos = r.pos;
    while (seqs.size() < max) {
      const DeliveryRecord* d = delivery_at(static_cast<const uint8_t*>(z->addr), capacity(), pos, end);
      if (d == nullptr) break;
      seqs.push_back(d->seq);
      pos = next_delivery_pos(pos, *d);
    }
    if (s.overrun.load() != 0) return {static_cast<uint64_t>(TOB_EOVERRUN)};
    r.pos = pos;
    r.polled += seqs.size();
    s.polled.store(r.polled);
    return seqs;
  }
  // Polls until nothing comes.
  std::vector<uint64_t> drain(int slot) {
    std::vector<uint64_t> all;
    for (;;) {
      const auto part = poll(slot);
      if (part.empty()) return all;
      all.insert(all.end(), part.begin(), part.end());
    }
  }
  // tob_submit_burst's steps for one message.
  bool submit(int slot, const std::string& text, int64_t ns = 5) {
    Reader& r = readers_[static_cast<size_t>(slot)];
    if (!r.submit.put(text.data(), static_cast<uint32_t>(text.size()), ns)) return false;
    r.submit.publish();
    return true;
  }

  static uint64_t seq(int64_t turn, uint32_t index = 0) { return static_cast<uint64_t>(turn) * kSeqPerTurn + index; }

 private:
  struct Reader {
    uint64_t pos = 0;
    uint64_t held = 0;
    uint64_t polled = 0;
    SubmitRingProducer submit;
  };
  TscClock clock_;
  tob::core::Schedule sched_;
  QueueEngine engine_;
  std::unique_ptr<ClientHub> hub_;
  std::vector<Reader> readers_;
  std::string payload_;
};

}  // namespace

TEST_CASE("a delivery record carries the global seq, the payload and the engine's release instant") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  f.deliver(41, 9);  // turn 41 = cycle 10, node 1's turn
  const rte_memzone* z = rte_memzone_lookup(kDeliveryRingName);
  REQUIRE(z != nullptr);
  uint64_t pos = f.shm().slots[0].dlv_start.load();
  const DeliveryRecord* rec = delivery_at(static_cast<const uint8_t*>(z->addr), f.capacity(), pos, f.shm().dlv_end.load());
  REQUIRE(rec != nullptr);
  CHECK(rec->seq == Fixture::seq(41));
  CHECK(rec->msg_id == 9);
  CHECK(rec->cycle == 10);
  CHECK(rec->release_ns == 11 * kCycle);  // as the engine set it
  CHECK(rec->length == 8);
  CHECK(std::string(reinterpret_cast<const char*>(rec + 1), rec->length) == "m0000009");
}

TEST_CASE("deliveries of one membership point get consecutive seqs in delivery order, beyond 4096 of them") {
  Fixture f(64, 1 << 16);
  REQUIRE(f.claim(0) == SlotState::attached);
  f.deliver(5, 1);
  f.deliver(5, 2);
  f.deliver(6, 3);
  CHECK(f.drain(0) == std::vector<uint64_t>{Fixture::seq(5, 0), Fixture::seq(5, 1), Fixture::seq(6, 0)});
  // One turn of 16 nodes x 4096 messages: seqs stay below the next turn's (ABI 3).
  for (uint64_t k = 0; k < 16 * 4096; ++k) f.deliver(7, k);
  f.deliver(8, 0);
  const auto got = f.drain(0);
  REQUIRE(got.size() == 16 * 4096 + 1);
  CHECK(got[5000] == Fixture::seq(7, 5000));
  CHECK(got[16 * 4096 - 1] == Fixture::seq(7, 16 * 4096 - 1));
  CHECK(got.back() == Fixture::seq(8, 0));
  for (size_t k = 1; k < got.size(); ++k) REQUIRE(got[k] > got[k - 1]);
}

TEST_CASE("every attached client reads every delivery from the one copy in the ring") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  REQUIRE(f.claim(1) == SlotState::attached);
  for (int t = 0; t < 10; ++t) f.deliver(t, static_cast<uint64_t>(t));
  const auto a = f.drain(0);
  CHECK(a.size() == 10);
  CHECK(a == f.drain(1));
  CHECK(f.hub().stats().deliveries == 10);
  CHECK(f.shm().dlv_end.load() - f.shm().slots[0].dlv_start.load() == 10 * kRecord);  // written once
}

TEST_CASE("a client that does not read lags, is flagged, and loses nothing while the ring holds") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  REQUIRE(f.claim(1) == SlotState::attached);
  for (int t = 0; t < 300; ++t) {
    f.deliver(t, static_cast<uint64_t>(t));
    f.hub().serve();
    f.drain(1);  // client 1 keeps up; client 0 does not read at all
  }
  f.hub().serve();
  ClientSlot& slow = f.shm().slots[0];
  CHECK(slow.lagging.load() == 1);  // more than [clients] ring = 64 unread
  CHECK(slow.lagging_events.load() == 1);
  CHECK(slow.pending.load() == 300);
  CHECK(f.shm().slots[1].lagging.load() == 0);
  CHECK(f.shm().slots[1].pending.load() == 0);
  // It reads again: everything comes, in order, and the flag clears.
  std::vector<uint64_t> got;
  for (int round = 0; round < 10; ++round) {
    auto part = f.poll(0, 50);
    got.insert(got.end(), part.begin(), part.end());
    f.hub().serve();
  }
  REQUIRE(got.size() == 300);
  for (int t = 0; t < 300; ++t) CHECK(got[static_cast<size_t>(t)] == Fixture::seq(t));
  CHECK(slow.lagging.load() == 0);
  CHECK(slow.overrun.load() == 0);
}

TEST_CASE("a client that falls a whole ring behind is told it was overrun, never silently skipped") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  REQUIRE(f.claim(1) == SlotState::attached);
  const auto per_ring = static_cast<int>(f.capacity() / kRecord);
  for (int t = 0; t < per_ring; ++t) {
    f.deliver(t, static_cast<uint64_t>(t));
    f.drain(1);
  }
  CHECK(f.shm().slots[0].overrun.load() == 0);  // the ring is full, nothing it holds overwritten yet
  f.deliver(per_ring, 0);                        // overwrites its first unread delivery
  CHECK(f.shm().slots[0].overrun.load() == 1);
  CHECK(f.hub().stats().overruns == 1);
  CHECK(f.poll(0) == std::vector<uint64_t>{static_cast<uint64_t>(TOB_EOVERRUN)});
  // The other client, which reads, goes on.
  CHECK(f.drain(1) == std::vector<uint64_t>{Fixture::seq(per_ring)});
  CHECK(f.shm().slots[1].overrun.load() == 0);
}

TEST_CASE("the batch a client holds from its last poll is not overwritten without the overrun flag") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  const auto per_ring = static_cast<int>(f.capacity() / kRecord);
  for (int t = 0; t < 10; ++t) f.deliver(t, static_cast<uint64_t>(t));
  REQUIRE(f.poll(0).size() == 10);  // holds records 0..9 (positions 0..640) until its next poll
  for (int t = 10; t < per_ring; ++t) f.deliver(t, static_cast<uint64_t>(t));
  CHECK(f.shm().slots[0].overrun.load() == 0);
  f.deliver(per_ring, 0);  // would overwrite record 0, which the client still holds
  CHECK(f.shm().slots[0].overrun.load() == 1);
}

TEST_CASE("a client resumes right after the last seq it handled") {
  Fixture f(64, 1024);
  for (int t = 0; t < 100; ++t) f.deliver(t, static_cast<uint64_t>(t));
  REQUIRE(f.claim(2, Fixture::seq(41)) == SlotState::attached);
  const auto got = f.drain(2);
  REQUIRE(got.size() == 58);  // turns 42..99
  CHECK(got.front() == Fixture::seq(42));
  CHECK(got.back() == Fixture::seq(99));
  f.hub().serve();
  CHECK(f.shm().slots[2].pending.load() == 0);
}

TEST_CASE("resuming from a seq older than the ring is refused with TOB_ETOOLATE") {
  Fixture f(64, 1024);
  const auto per_ring = static_cast<int>(f.capacity() / kRecord);
  for (int t = 0; t < per_ring + 100; ++t) f.deliver(t, static_cast<uint64_t>(t));
  // The ring holds turns 100..per_ring+99: resuming after 100 (the oldest held) works; after 98
  // it would need 99, which is gone.
  f.hub().serve();
  CHECK(f.hub().stats().oldest_seq == Fixture::seq(100));
  CHECK(f.claim(0, Fixture::seq(100)) == SlotState::attached);
  CHECK(f.claim(1, Fixture::seq(98)) == SlotState::refused);
  CHECK(f.shm().slots[1].status.load() == TOB_ETOOLATE);
  CHECK(f.hub().stats().refused_attaches == 1);
  CHECK(f.drain(0).size() == static_cast<size_t>(per_ring - 1));
}

TEST_CASE("a resume position beyond what was delivered starts from now") {
  Fixture f(64, 1024);
  for (int t = 0; t < 10; ++t) f.deliver(t, static_cast<uint64_t>(t));
  REQUIRE(f.claim(0, Fixture::seq(500)) == SlotState::attached);
  CHECK(f.drain(0).empty());
  f.deliver(600, 1);
  CHECK(f.drain(0) == std::vector<uint64_t>{Fixture::seq(600)});
}

TEST_CASE("a client's submissions reach the engine in order, with its client id and instants") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  REQUIRE(f.claim(3) == SlotState::attached);
  for (int k = 0; k < 5; ++k) REQUIRE(f.submit(0, "a" + std::to_string(k), 100 + k));
  REQUIRE(f.submit(3, "b", 7));
  const IntakeCounts c = f.hub().intake().take(f.engine(), 64);
  CHECK(c.taken == 6);
  CHECK(c.backpressure == 0);
  const auto& got = f.engine().got;
  REQUIRE(got.size() == 6);
  std::vector<std::string> from0;
  for (const auto& m : got)
    if (m.client == kFirstSlotClientId) from0.push_back(m.payload);
  CHECK(from0 == std::vector<std::string>{"a0", "a1", "a2", "a3", "a4"});
  for (const auto& m : got)
    if (m.client == kFirstSlotClientId + 3) CHECK((m.payload == "b" && m.submit_ns == 7));
}

TEST_CASE("backpressure from the engine keeps a client's message first in its ring, nothing lost") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  for (int k = 0; k < 10; ++k) REQUIRE(f.submit(0, std::to_string(k)));
  f.engine().room = 4;
  IntakeCounts c = f.hub().intake().take(f.engine(), 64);
  CHECK(c.taken == 4);
  CHECK(c.backpressure == 1);
  f.engine().room = 100;
  c = f.hub().intake().take(f.engine(), 64);
  CHECK(c.taken == 6);
  std::vector<std::string> all;
  for (const auto& m : f.engine().got) all.push_back(m.payload);
  CHECK(all == std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"});
}

TEST_CASE("a step takes at most its budget, and a client's full ring refuses until the control takes") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(1) == SlotState::attached);
  int put = 0;
  while (f.submit(1, "12345678")) ++put;
  CHECK(static_cast<uint64_t>(put) == f.shm().sub_bytes / 24);  // 16-byte head + 8 bytes each
  CHECK(f.hub().intake().take(f.engine(), 100).taken == 100);
  CHECK(f.submit(1, "12345678"));  // room again
  CHECK(f.hub().intake().take(f.engine(), 1u << 20).taken == static_cast<unsigned>(put - 100 + 1));
}

TEST_CASE("a leaving client's slot is freed only once its submissions are taken") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  REQUIRE(f.submit(0, "last words"));
  f.engine().room = 0;
  f.hub().intake().take(f.engine(), 64);
  f.leave(0);
  CHECK(static_cast<SlotState>(f.shm().slots[0].state.load()) == SlotState::leaving);
  f.engine().room = 10;
  f.hub().intake().take(f.engine(), 64);
  f.hub().serve();
  CHECK(static_cast<SlotState>(f.shm().slots[0].state.load()) == SlotState::free);
  REQUIRE(f.engine().got.size() == 1);
  CHECK(f.engine().got[0].payload == "last words");
  CHECK(f.hub().stats().detaches == 1);
}

TEST_CASE("a new client in a freed slot starts fresh: no old deliveries, an empty submit ring") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  for (int t = 0; t < 20; ++t) f.deliver(t, static_cast<uint64_t>(t));
  REQUIRE(f.submit(0, "old"));
  f.hub().intake().take(f.engine(), 64);
  f.leave(0);
  REQUIRE(static_cast<SlotState>(f.shm().slots[0].state.load()) == SlotState::free);
  REQUIRE(f.claim(0) == SlotState::attached);
  CHECK(f.drain(0).empty());
  f.deliver(30, 1);
  CHECK(f.drain(0) == std::vector<uint64_t>{Fixture::seq(30)});
  REQUIRE(f.submit(0, "new"));
  f.hub().intake().take(f.engine(), 64);
  CHECK(f.engine().got.back().payload == "new");
  CHECK(f.engine().got.size() == 2);
}

TEST_CASE("ring sizes: four cycles of every node's batches, the history, and 10 ms of own load") {
  ClusterConfig c = cluster_config(1024, 16384, 8);
  const ClientRingBytes small = client_ring_bytes(c, 0);
  CHECK(small.delivery == 2u << 20);      // 16384 x 120 bytes -> 2 MiB
  CHECK(small.submit == 64u << 10);       // the floor
  c.node.batch_msgs_max = 4096;
  c.node.payload_bytes_max = 1024;
  c.node.frame_bytes_max = 9000;
  c.node.rate_mbps = 3000;
  c.node.schedule = tob::core::ScheduleConfig::equal_slots(4, 40'000'000);
  const ClientRingBytes big = client_ring_bytes(c, 0);
  CHECK(big.delivery >= 4u * 4 * 4096 * 80);  // at least four cycles of 4096 small records per node
  CHECK((big.delivery & (big.delivery - 1)) == 0);
  CHECK(big.delivery <= (uint64_t{1} << 30));
  CHECK(big.submit > (64u << 10));
  CHECK(big.submit <= (4u << 20));
}

int main(int argc, char** argv) {
  // No hugepages, no devices, no shared runtime files (DPDK 22.11 EAL).
  const char* eal[] = {"client-hub-tests", "--no-huge", "--no-shconf", "--no-pci", "-l", "0",
                       "--log-level", "lib.*:error", "-m", "256"};
  if (rte_eal_init(static_cast<int>(sizeof eal / sizeof eal[0]), const_cast<char**>(eal)) < 0) {
    std::fprintf(stderr, "client-hub-tests: EAL initialisation failed\n");
    return 1;
  }
  const int rc = Catch::Session().run(argc, argv);
  rte_eal_cleanup();
  return rc;
}
