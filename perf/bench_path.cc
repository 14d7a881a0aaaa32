// The control lcore's cost per message on the dataplane's path (issue 16's benchmark; not a test:
// run by hand, figures in perf/README.md). One iteration is one 40 ms cycle of a 4-node cluster
// of either engine on virtual time, slots of several 1500-byte frames at rate_mbps 1000, every
// node submitting M messages of B bytes. Timed is node 0's share, what its control lcore (and
// its RX and TX roles, one lcore in the shared-machine setup) does:
//   - the engine's submit of its M messages (the application's copy into the submit ring, on
//     the client's core, is not in it);
//   - every frame it sends: an mbuf from a pool, the Ethernet header, the frame copied in (the
//     control role's make_item), and freeing it (as the TX PMD does once it copied the frame);
//   - every frame it receives: an mbuf filled with the frame (as the RX PMD does), the decode,
//     the engine's on_frame, the mbuf freed;
//   - every delivery: ClientHub::record (an mbuf with the record and payload in the history)
//     and ClientHub::serve, which moves them into the rings of two attached clients.
// Not timed: the other three nodes, and the two clients draining their rings. ns_per_msg is
// node 0's time over the messages it delivered (each delivered once to each of the two clients).
// DPDK's EAL runs in memory, without hugepages, devices or shared files.
#include <benchmark/benchmark.h>
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_memzone.h>
#include <rte_ring.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/engine_factory.h"
#include "core/wire.h"
#include "dataplane/clients/client_hub.h"
#include "engine_cluster.h"

namespace {

using namespace tob::core;
using tob::dataplane::ClientHub;
using Clock = std::chrono::steady_clock;

constexpr int kNodes = 4;
constexpr int kClients = 2;
constexpr int64_t kCycleNs = 40'000'000;
constexpr size_t kEther = 14;
constexpr size_t kFrameBytes = 1500;

NodeConfig base_config(size_t batch_msgs, size_t payload) {
  NodeConfig c;
  c.schedule = ScheduleConfig::equal_slots(kNodes, kCycleNs);
  c.rate_mbps = 1000;
  c.batch_msgs_max = batch_msgs;
  c.payload_bytes_max = std::max<size_t>(payload, 64);
  c.queue_msgs_max = 4 * batch_msgs;
  c.queue_bytes_max = 4 * batch_msgs * (payload + 64);
  return c;
}

// The cluster with node 0 on the dataplane's path: its frames through mbufs, its deliveries
// through the client hub to two clients; node 0's work is timed (timed()).
class PathCluster final : public tob::perf::EngineCluster {
 public:
  PathCluster(Order order, size_t batch_msgs, size_t payload)
      : EngineCluster(order, kNodes, base_config(batch_msgs, payload)) {
    tob::dataplane::ClusterConfig cc;
    cc.name = "benchpath";
    cc.nodes = kNodes;
    cc.clients_max = kClients;
    cc.client_ring = 1024;
    cc.history = 1u << 16;
    cc.node = base_config(batch_msgs, payload);
    clock_.publish({1000, 1'000'000'000, 0.5});
    auto hub = ClientHub::create(cc, 0, clock_);
    if (!hub.ok()) fail(hub.error().message.c_str());
    hub_ = std::move(hub.value());
    for (int s = 0; s < kClients; ++s) {
      auto& slot = hub_->shared()->slots[s];
      slot.resume_after_seq.store(0);
      slot.state.store(static_cast<uint32_t>(tob::dataplane::SlotState::claimed));
      hub_->serve();
      rings_.push_back(rte_ring_lookup(slot.ring_name));
      if (rings_.back() == nullptr) fail("a client ring is missing");
    }
    frames_ = rte_pktmbuf_pool_create("bench_frames", 8191, 256, 0, static_cast<uint16_t>(kEther + kFrameBytes + 128),
                                      SOCKET_ID_ANY);
    if (frames_ == nullptr) fail("no frame pool");
    start();
  }
  ~PathCluster() override {
    hub_.reset();
    rte_mempool_free(rte_mempool_lookup(tob::dataplane::kDeliveryPoolName));
    rte_memzone_free(rte_memzone_lookup(tob::dataplane::kShmZoneName));
    rte_mempool_free(frames_);
  }

  uint64_t delivered0() const { return delivered0_; }
  uint64_t client_reads() const { return client_reads_; }
  Clock::duration timed() const { return timed_; }
  void add_timed(Clock::duration d) { timed_ += d; }

 private:
  // Node 0's RX: the PMD's copy into an mbuf, the decode, the engine, the mbuf freed.
  void receive(size_t j, const std::vector<uint8_t>& frame, const FrameView& view, int64_t at) override {
    if (j != 0) return EngineCluster::receive(j, frame, view, at);
    const auto t0 = Clock::now();
    rte_mbuf* m = rte_pktmbuf_alloc(frames_);
    if (m == nullptr) fail("frame pool empty");
    auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(kEther + frame.size())));
    std::memset(p, 0, kEther);
    std::memcpy(p + kEther, frame.data(), frame.size());
    const DecodeResult r = decode_frame(std::span<const uint8_t>(p + kEther, frame.size()));
    if (!r.ok()) fail("a frame does not decode");
    node(0).on_frame(r.view, at);
    rte_pktmbuf_free(m);
    timed_ += Clock::now() - t0;
  }

  void call_on_time(size_t i, int64_t t) override {
    const auto t0 = Clock::now();
    node(i).on_time(t);
    if (i == 0) timed_ += Clock::now() - t0;
    collect(i);
  }

  // Node 0's TX (make_item and the PMD's free) and deliveries (the hub, to two clients).
  void actions(size_t i, const Actions& a) override {
    if (i != 0) return;
    const auto t0 = Clock::now();
    for (const TxFrame& f : a.tx) make_item(f);
    for (const Delivery& d : a.deliveries) hub_->record(d);
    delivered0_ += a.deliveries.size();
    timed_ += Clock::now() - t0;
    if (!a.deliveries.empty()) serve_clients();
  }

  void make_item(const TxFrame& f) {
    rte_mbuf* m = rte_pktmbuf_alloc(frames_);
    if (m == nullptr) fail("frame pool empty");
    auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(kEther + f.bytes.size())));
    std::memset(p, 0, kEther);
    std::memcpy(p + kEther, f.bytes.data(), f.bytes.size());
    benchmark::DoNotOptimize(p);
    rte_pktmbuf_free(m);
  }

  // The hub moves deliveries into the two clients' rings (timed); the clients read and release
  // them (not timed), until every delivery reached both.
  void serve_clients() {
    for (;;) {
      const auto t0 = Clock::now();
      const unsigned moved = hub_->serve();
      timed_ += Clock::now() - t0;
      void* got[512];
      unsigned read = 0;
      for (rte_ring* r : rings_)
        for (unsigned n; (n = rte_ring_dequeue_burst(r, got, 512, nullptr)) > 0;) {
          for (unsigned k = 0; k < n; ++k) rte_pktmbuf_free(static_cast<rte_mbuf*>(got[k]));
          read += n;
        }
      client_reads_ += read;
      if (moved == 0 && read == 0) return;
    }
  }

  tob::dataplane::TscClock clock_;
  std::unique_ptr<ClientHub> hub_;
  std::vector<rte_ring*> rings_;
  rte_mempool* frames_ = nullptr;
  uint64_t delivered0_ = 0;
  uint64_t client_reads_ = 0;
  Clock::duration timed_{};
};

template <Order order>
void BM_ControlPerMessage(benchmark::State& state) {
  const auto size = static_cast<size_t>(state.range(0));
  const auto per_node = static_cast<size_t>(state.range(1));
  PathCluster cluster(order, per_node, size);
  const std::vector<uint8_t> payload(size, 0x6B);
  int64_t t = 0;
  auto one_cycle = [&] {
    for (int i = 0; i < kNodes; ++i)
      for (size_t k = 0; k < per_node; ++k) {
        const auto t0 = Clock::now();
        const bool ok = cluster.node(static_cast<size_t>(i)).submit(1, payload, t).status == SubmitStatus::ok;
        if (i == 0) cluster.add_timed(Clock::now() - t0);
        if (!ok) return false;
      }
    t += kCycleNs;
    cluster.run_before(t);
    return true;
  };
  for (int c = 0; c < 20; ++c) {  // the membership forms (mars), the coordinator activates (otfp)
    t += kCycleNs;
    cluster.run_before(t);
  }
  for (int c = 0; c < 10; ++c)  // steady state: every node's queue drains each cycle
    if (!one_cycle()) break;
  const uint64_t before = cluster.delivered0();
  const uint64_t reads_before = cluster.client_reads();
  for (auto _ : state) {
    const auto timed_before = cluster.timed();
    if (!one_cycle()) state.SkipWithError("submit refused: the cluster does not keep up");
    state.SetIterationTime(std::chrono::duration<double>(cluster.timed() - timed_before).count());
  }
  const double delivered = static_cast<double>(cluster.delivered0() - before);
  const double expected = static_cast<double>(state.iterations()) * kNodes * static_cast<double>(per_node);
  if (delivered < 0.9 * expected) state.SkipWithError("fewer deliveries than submissions: not in steady state");
  if (cluster.client_reads() - reads_before < static_cast<uint64_t>(kClients * delivered))
    state.SkipWithError("the clients did not read every delivery");
  state.counters["delivered_per_cycle"] = delivered / static_cast<double>(state.iterations());
  state.counters["ns_per_msg"] = benchmark::Counter(delivered, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ControlPerMessage<Order::mars>)->ArgNames({"size", "msgs"})->Args({64, 256})->Args({64, 4096})->Args({1024, 256})
    ->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ControlPerMessage<Order::otfp>)->ArgNames({"size", "msgs"})->Args({64, 256})->Args({64, 4096})->Args({1024, 256})
    ->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  // No hugepages, no devices, no shared runtime files (as tests/unit/test_client_hub.cc).
  const char* eal[] = {"bench-path", "--no-huge", "--no-shconf", "--no-pci", "-l", "0",
                       "--log-level", "lib.*:error", "-m", "1024"};
  if (rte_eal_init(static_cast<int>(sizeof eal / sizeof eal[0]), const_cast<char**>(eal)) < 0) {
    std::fprintf(stderr, "bench-path: rte_eal_init failed\n");
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  rte_eal_cleanup();
  return 0;
}
