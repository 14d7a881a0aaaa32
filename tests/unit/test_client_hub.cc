// The daemon's side of tob.h (lib/dataplane/client_hub), driven directly: the client slots are
// operated as the client library does (lib/client/tob_client.cc), the rings read as a client
// would. Needs DPDK's EAL; main() starts it without hugepages, devices or shared files.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <memory>
#include <string>
#include <vector>

#include "../../include/tob.h"
#include "dataplane/clients/client_hub.h"

using namespace tob::dataplane;

namespace {

constexpr int64_t kCycle = 1'000'000;

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

// One hub per test case; the DPDK objects it names must go before the next one is made.
class Fixture {
 public:
  Fixture(uint32_t ring, uint32_t history, int max_clients = 4)
      : sched_(tob::core::Schedule::create(cluster_config(ring, history, max_clients).node.schedule).value()) {
    clock_.publish({1000, 1'000'000'000, 0.5});
    auto hub = ClientHub::create(cluster_config(ring, history, max_clients), 1, clock_);
    INFO((hub.ok() ? std::string() : hub.error().message));
    REQUIRE(hub.ok());
    hub_ = std::move(hub.value());
  }
  ~Fixture() {
    hub_.reset();
    // The hub leaves its pool and memzone to the EAL (clients may map them); free them here so
    // the next test case can create objects of the same names.
    rte_mempool_free(rte_mempool_lookup(kDeliveryPoolName));
    rte_memzone_free(rte_memzone_lookup(kShmZoneName));
  }

  ClientHub& hub() { return *hub_; }
  Shm& shm() { return *hub_->shared(); }

  // The delivery of message `k` of a turn, as the node hands it out.
  void deliver(int64_t turn, uint64_t msg_id) {
    payload_ = "m" + std::to_string(msg_id);
    const tob::core::Delivery d{0, turn / 4, turn, turn * 250'000, msg_id, 7, 0,
                                std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload_.data()),
                                                         payload_.size()),
                                sched_.cycle_start_ns(turn / 4 + 1)};
    hub_->record(d);
  }

  // A client's claim, as tob_attach writes it; the hub answers in serve().
  SlotState claim(int slot, uint64_t resume_after = 0) {
    ClientSlot& s = shm().slots[slot];
    s.resume_after_seq.store(resume_after);
    s.state.store(static_cast<uint32_t>(SlotState::claimed));
    hub_->serve();
    return static_cast<SlotState>(s.state.load());
  }

  void leave(int slot) {
    shm().slots[slot].state.store(static_cast<uint32_t>(SlotState::leaving));
    hub_->serve();
  }

  // Everything in the slot's ring: the seqs, in order (the references are released).
  std::vector<uint64_t> drain(int slot) {
    rte_ring* r = rte_ring_lookup(shm().slots[slot].ring_name);
    REQUIRE(r != nullptr);
    std::vector<uint64_t> seqs;
    for (void* m = nullptr; rte_ring_dequeue(r, &m) == 0;) {
      auto* mbuf = static_cast<rte_mbuf*>(m);
      seqs.push_back(rte_pktmbuf_mtod(mbuf, const DeliveryRecord*)->seq);
      rte_pktmbuf_free(mbuf);
    }
    return seqs;
  }

  static uint64_t seq(int64_t turn, uint16_t index = 0) { return static_cast<uint64_t>(turn) * kSeqPerTurn + index; }

 private:
  TscClock clock_;
  tob::core::Schedule sched_;
  std::unique_ptr<ClientHub> hub_;
  std::string payload_;
};

}  // namespace

TEST_CASE("a delivery record carries the global seq, the payload and the engine's release instant") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  f.deliver(41, 9);  // turn 41 = cycle 10, node 1's turn
  f.hub().serve();
  rte_ring* r = rte_ring_lookup(f.shm().slots[0].ring_name);
  void* m = nullptr;
  REQUIRE(rte_ring_dequeue(r, &m) == 0);
  const auto* rec = rte_pktmbuf_mtod(static_cast<rte_mbuf*>(m), const DeliveryRecord*);
  CHECK(rec->seq == Fixture::seq(41));
  CHECK(rec->msg_id == 9);
  CHECK(rec->cycle == 10);
  CHECK(rec->release_ns == 11 * kCycle);  // as the engine set it
  CHECK(rec->length == 2);
  CHECK(std::string(reinterpret_cast<const char*>(rec + 1), rec->length) == "m9");
  rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
}

TEST_CASE("deliveries of one membership point get consecutive seqs in delivery order") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  f.deliver(5, 1);
  f.deliver(5, 2);
  f.deliver(6, 3);
  f.hub().serve();
  CHECK(f.drain(0) == std::vector<uint64_t>{Fixture::seq(5, 0), Fixture::seq(5, 1), Fixture::seq(6, 0)});
}

TEST_CASE("every attached client gets every delivery, one shared copy") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  REQUIRE(f.claim(1) == SlotState::attached);
  for (int t = 0; t < 10; ++t) f.deliver(t, static_cast<uint64_t>(t));
  f.hub().serve();
  const auto a = f.drain(0);
  CHECK(a.size() == 10);
  CHECK(a == f.drain(1));
  CHECK(f.hub().stats().deliveries == 10);
}

TEST_CASE("a client that does not read lags, is flagged, and loses nothing while the history holds") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  REQUIRE(f.claim(1) == SlotState::attached);
  for (int t = 0; t < 300; ++t) {
    f.deliver(t, static_cast<uint64_t>(t));
    f.hub().serve();
    f.drain(1);  // client 1 keeps up; client 0 does not read at all
  }
  ClientSlot& slow = f.shm().slots[0];
  CHECK(slow.lagging.load() == 1);  // more held back than its ring
  CHECK(slow.lagging_events.load() == 1);
  CHECK(slow.pending.load() == 300 - 63);  // its ring holds 63 (a ring of 64 keeps one free)
  CHECK(f.shm().slots[1].lagging.load() == 0);
  // It reads again: everything comes, in order, and the flag clears.
  std::vector<uint64_t> got;
  for (int round = 0; round < 10; ++round) {
    auto part = f.drain(0);
    got.insert(got.end(), part.begin(), part.end());
    f.hub().serve();
  }
  REQUIRE(got.size() == 300);
  for (int t = 0; t < 300; ++t) CHECK(got[static_cast<size_t>(t)] == Fixture::seq(t));
  CHECK(slow.lagging.load() == 0);
  CHECK(slow.overrun.load() == 0);
}

TEST_CASE("a client that falls behind the history is told it was overrun, never silently skipped") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  for (int t = 0; t < 1024 + 64 + 10; ++t) {
    f.deliver(t, static_cast<uint64_t>(t));
    f.hub().serve();
  }
  CHECK(f.shm().slots[0].overrun.load() == 1);
  CHECK(f.hub().stats().overruns == 1);
  // What it had in its ring is still there, in order, without a gap.
  const auto had = f.drain(0);
  REQUIRE(had.size() == 63);
  for (size_t k = 0; k < had.size(); ++k) CHECK(had[k] == Fixture::seq(static_cast<int64_t>(k)));
}

TEST_CASE("a delivery that leaves the history while a client holds it goes back to the pool from the hub, not the client") {
  // The client's free would be a put beside the control lcore's into the pool's ring: a client
  // preempted inside it would hold a SCHED_FIFO lcore spinning until the kernel throttles it.
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  for (int t = 0; t < 1024 + 64 + 10; ++t) {
    f.deliver(t, static_cast<uint64_t>(t));
    f.hub().serve();
  }
  CHECK(f.hub().stats().deferred == 63);  // its ring's 63 left the history
  rte_mempool* pool = rte_mempool_lookup(kDeliveryPoolName);
  REQUIRE(pool != nullptr);
  const unsigned before = rte_mempool_avail_count(pool);
  REQUIRE(f.drain(0).size() == 63);  // the client lets go of all of them
  CHECK(rte_mempool_avail_count(pool) == before);  // none freed by the client
  for (int k = 0; k < 4; ++k) f.hub().serve();    // 32 per step
  CHECK(rte_mempool_avail_count(pool) == before + 63);
}

TEST_CASE("a delivery that a client never lets go of does not stop the hub from freeing the others") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  for (int t = 0; t < 1024 + 64 + 10; ++t) {
    f.deliver(t, static_cast<uint64_t>(t));
    f.hub().serve();
  }
  rte_ring* r = rte_ring_lookup(f.shm().slots[0].ring_name);
  REQUIRE(r != nullptr);
  void* kept = nullptr;
  REQUIRE(rte_ring_dequeue(r, &kept) == 0);  // the oldest, held as by a client that died
  rte_mempool* pool = rte_mempool_lookup(kDeliveryPoolName);
  const unsigned before = rte_mempool_avail_count(pool);
  REQUIRE(f.drain(0).size() == 62);
  for (int k = 0; k < 8; ++k) f.hub().serve();
  CHECK(rte_mempool_avail_count(pool) == before + 62);
  rte_pktmbuf_free(static_cast<rte_mbuf*>(kept));
  for (int k = 0; k < 2; ++k) f.hub().serve();
  CHECK(rte_mempool_avail_count(pool) == before + 63);
}

TEST_CASE("a client resumes right after the last seq it handled") {
  Fixture f(64, 1024);
  for (int t = 0; t < 100; ++t) f.deliver(t, static_cast<uint64_t>(t));
  REQUIRE(f.claim(2, Fixture::seq(41)) == SlotState::attached);
  f.hub().serve();
  f.hub().serve();
  const auto got = f.drain(2);
  REQUIRE(got.size() == 58);  // turns 42..99
  CHECK(got.front() == Fixture::seq(42));
  CHECK(got.back() == Fixture::seq(99));
}

TEST_CASE("resuming from a seq older than the history is refused with TOB_ETOOLATE") {
  Fixture f(64, 1024);
  for (int t = 0; t < 2000; ++t) f.deliver(t, static_cast<uint64_t>(t));
  // The history holds turns 976..1999: resuming after 976 (the oldest held) works; after 974
  // it would need 975, which is gone.
  CHECK(f.claim(0, Fixture::seq(976)) == SlotState::attached);
  CHECK(f.claim(1, Fixture::seq(974)) == SlotState::refused);
  CHECK(f.shm().slots[1].status.load() == TOB_ETOOLATE);
  CHECK(f.hub().stats().refused_attaches == 1);
}

TEST_CASE("a resume position beyond what was delivered starts from now") {
  Fixture f(64, 1024);
  for (int t = 0; t < 10; ++t) f.deliver(t, static_cast<uint64_t>(t));
  REQUIRE(f.claim(0, Fixture::seq(500)) == SlotState::attached);
  f.hub().serve();
  CHECK(f.drain(0).empty());
  f.deliver(600, 1);
  f.hub().serve();
  CHECK(f.drain(0) == std::vector<uint64_t>{Fixture::seq(600)});
}

TEST_CASE("a slot that leaves is drained and freed, and a new client there starts fresh") {
  Fixture f(64, 1024);
  REQUIRE(f.claim(0) == SlotState::attached);
  for (int t = 0; t < 20; ++t) f.deliver(t, static_cast<uint64_t>(t));
  f.hub().serve();
  f.leave(0);
  CHECK(static_cast<SlotState>(f.shm().slots[0].state.load()) == SlotState::free);
  CHECK(f.drain(0).empty());
  CHECK(f.hub().stats().detaches == 1);
  REQUIRE(f.claim(0) == SlotState::attached);
  f.deliver(30, 1);
  f.hub().serve();
  CHECK(f.drain(0) == std::vector<uint64_t>{Fixture::seq(30)});
}

TEST_CASE("the pool never runs dry: history and every client ring full at once") {
  Fixture f(64, 1024, 4);
  for (int s = 0; s < 4; ++s) REQUIRE(f.claim(s) == SlotState::attached);
  for (int t = 0; t < 5000; ++t) {
    f.deliver(t, static_cast<uint64_t>(t));
    f.hub().serve();
  }
  CHECK(f.hub().stats().alloc_failed == 0);
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
