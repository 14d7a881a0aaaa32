// The control lcore's cost per message on the dataplane's path (issue 16's benchmark; not a test:
// run by hand, figures in perf/README.md). One iteration is one 40 ms cycle of a 4-node cluster
// of either engine on virtual time, slots of several 1500-byte frames at rate_mbps 1000, every
// node submitting M messages of B bytes. Timed is node 0's share, what its control lcore (and
// its RX and TX roles, one lcore in the shared-machine setup) does:
//   - taking its M messages from a client's submit ring into the engine (SubmitIntake; the
//     application's copy into the ring, on the client's core, is not in it);
//   - every frame it sends: an mbuf from a pool, the Ethernet header, the frame copied in (the
//     control role's make_item), and freeing it (as the TX PMD does once it copied the frame);
//   - every frame it receives: an mbuf filled with the frame (as the RX PMD does), the decode,
//     the engine's on_frame, the mbuf freed;
//   - every delivery: ClientHub::record (the record and payload written once into the delivery
//     ring), publish, and ClientHub::serve (two attached clients' lag).
// Not timed: the other three nodes, and the two clients reading the ring. ns_per_msg is
// node 0's time over the messages it delivered (each delivered once to each of the two clients).
// With auth=1 ([security], issue 21) node 0 also seals every frame it sends (the control role's
// seal_frame into the mbuf) and verifies every frame it receives (verify_frame and the replay
// window, as the RX role does), the other nodes' frames sealed beforehand, untimed: mac_share is
// the GMAC's part of node 0's timed work (seal and verify calls over everything timed),
// mac_ns_per_frame the GMAC per frame sent or received. The PMD's system calls (af_packet's send
// and receive, several us per burst) are not in the timed work: the share of a frame's whole CPU
// is lower than mac_share.
// DPDK's EAL runs in memory, without hugepages, devices or shared files.
#include <benchmark/benchmark.h>
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_memzone.h>

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
#include "dataplane/security/auth_trailer.h"
#include "dataplane/security/frame_auth.h"
#include "dataplane/security/replay_window.h"
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
  PathCluster(Order order, size_t batch_msgs, size_t payload, bool auth)
      : EngineCluster(order, kNodes, base_config(batch_msgs, payload)), auth_(auth) {
    if (auth_) {
      tob::dataplane::security::KeyFile kf;
      kf.count = 1;
      kf.keys[0].bytes.fill(0x42);
      kf.keys[0].id = tob::dataplane::security::key_id(kf.keys[0].bytes);
      keys_ = tob::dataplane::security::KeySet(kf);
      others_ = tob::dataplane::security::KeySet(kf);
      // Generous: every copy, segment and aux frame the benchmark's slots may hold.
      replay_ = std::make_unique<tob::dataplane::security::ReplayWindow>(
          kNodes, tob::dataplane::security::FrameIdLayout{2, 64, 64, 0, 0});
    }
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
      if (slot.state.load() != static_cast<uint32_t>(tob::dataplane::SlotState::attached)) fail("a client did not attach");
      cursors_.push_back(slot.dlv_start.load());
      polled_.push_back(0);
    }
    const rte_memzone* sub = rte_memzone_lookup(tob::dataplane::kSubmitRingsName);
    const rte_memzone* dlv = rte_memzone_lookup(tob::dataplane::kDeliveryRingName);
    if (sub == nullptr || dlv == nullptr) fail("a ring memzone is missing");
    dlv_ = static_cast<const uint8_t*>(dlv->addr);
    producer_.init(static_cast<uint8_t*>(sub->addr), hub_->shm().sub_bytes, &hub_->shared()->slots[0].submit);
    frames_ = rte_pktmbuf_pool_create("bench_frames", 8191, 256, 0, static_cast<uint16_t>(kEther + kFrameBytes + 128 + 32),
                                      SOCKET_ID_ANY);
    if (frames_ == nullptr) fail("no frame pool");
    start();
  }
  ~PathCluster() override {
    hub_.reset();
    for (const char* z : {tob::dataplane::kShmZoneName, tob::dataplane::kDeliveryRingName, tob::dataplane::kSubmitRingsName})
      rte_memzone_free(rte_memzone_lookup(z));
    rte_mempool_free(frames_);
  }

  uint64_t delivered0() const { return delivered0_; }
  Clock::duration mac_time() const { return mac_time_; }
  uint64_t mac_frames() const { return mac_frames_; }
  uint64_t client_reads() const { return client_reads_; }
  Clock::duration timed() const { return timed_; }
  void add_timed(Clock::duration d) { timed_ += d; }

  // Node 0's application submits n messages through its submit ring (not timed) and the control
  // lcore takes them into the engine (timed). False when the engine refuses (backpressure).
  bool submit0(const std::vector<uint8_t>& payload, int64_t at, size_t n) {
    while (n > 0) {
      size_t put = 0;
      while (put < n && producer_.put(payload.data(), static_cast<uint32_t>(payload.size()), at)) ++put;
      producer_.publish();
      const auto t0 = Clock::now();
      const tob::dataplane::IntakeCounts c = hub_->intake().take(node(0), 1u << 20);
      timed_ += Clock::now() - t0;
      if (c.backpressure > 0 || c.taken != put) return false;
      n -= put;
    }
    return true;
  }

 private:
  // Node 0's RX: the PMD's copy into an mbuf, the decode, (auth: the tag and the replay window,)
  // the engine, the mbuf freed.
  void receive(size_t j, const std::vector<uint8_t>& frame, const FrameView& view, int64_t at) override {
    if (j != 0) return EngineCluster::receive(j, frame, view, at);
    size_t bytes = frame.size();
    const uint8_t* src = frame.data();
    if (auth_) {  // the sender's seal, not node 0's work
      sealed_.assign(frame.begin(), frame.end());
      sealed_.resize(frame.size() + tob::dataplane::security::kAuthTrailerBytes);
      const uint8_t copy = (view.header.flags & kFlagAux) != 0 ? 2 : (view.header.flags & kFlagSecondCopy) != 0 ? 1 : 0;
      if (tob::dataplane::security::seal_frame(sealed_, frame.size(), copy, others_) != sealed_.size()) fail("seal failed");
      src = sealed_.data();
      bytes = sealed_.size();
    }
    const auto t0 = Clock::now();
    rte_mbuf* m = rte_pktmbuf_alloc(frames_);
    if (m == nullptr) fail("frame pool empty");
    auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(kEther + bytes)));
    std::memset(p, 0, kEther);
    std::memcpy(p + kEther, src, bytes);
    const std::span<const uint8_t> payload(p + kEther, bytes);
    const DecodeResult r = decode_frame(payload);
    if (!r.ok()) fail("a frame does not decode");
    if (auth_) {
      const auto m0 = Clock::now();
      const auto a = tob::dataplane::security::verify_frame(payload, r.view, keys_);
      mac_time_ += Clock::now() - m0;
      ++mac_frames_;
      if (a.verdict != tob::dataplane::security::AuthVerdict::ok) fail("a frame does not verify");
      const FrameHeader& h = r.view.header;
      benchmark::DoNotOptimize(replay_->admit(h.sender, h.kind, a.copy, h.segment_index, h.cycle));
    }
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
    hub_->publish();
    delivered0_ += a.deliveries.size();
    timed_ += Clock::now() - t0;
    if (!a.deliveries.empty()) serve_clients();
  }

  void make_item(const TxFrame& f) {
    rte_mbuf* m = rte_pktmbuf_alloc(frames_);
    if (m == nullptr) fail("frame pool empty");
    const size_t bytes = f.bytes.size() + (auth_ ? tob::dataplane::security::kAuthTrailerBytes : 0);
    auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(kEther + bytes)));
    std::memset(p, 0, kEther);
    std::memcpy(p + kEther, f.bytes.data(), f.bytes.size());
    if (auth_) {
      const auto m0 = Clock::now();
      if (tob::dataplane::security::seal_frame(std::span<uint8_t>(p + kEther, bytes), f.bytes.size(), f.copy, keys_) != bytes)
        fail("seal failed");
      mac_time_ += Clock::now() - m0;
      ++mac_frames_;
    }
    benchmark::DoNotOptimize(p);
    rte_pktmbuf_free(m);
  }

  // The hub checks the clients' lag (timed); the two clients read the ring to its end and
  // publish their cursors, as tob_poll does (not timed).
  void serve_clients() {
    const auto t0 = Clock::now();
    hub_->serve();
    timed_ += Clock::now() - t0;
    const uint64_t end = hub_->shm().dlv_end.load(std::memory_order_acquire);
    const uint64_t capacity = hub_->shm().dlv_bytes;
    for (size_t c = 0; c < cursors_.size(); ++c) {
      uint64_t pos = cursors_[c];
      uint64_t sum = 0;
      while (const tob::dataplane::DeliveryRecord* r = tob::dataplane::delivery_at(dlv_, capacity, pos, end)) {
        sum += r->seq;
        pos = tob::dataplane::next_delivery_pos(pos, *r);
        ++client_reads_;
        ++polled_[c];
      }
      benchmark::DoNotOptimize(sum);
      cursors_[c] = pos;
      auto& slot = hub_->shared()->slots[c];
      slot.dlv_cursor.store(pos, std::memory_order_release);
      slot.polled.store(polled_[c], std::memory_order_relaxed);
      if (slot.overrun.load() != 0) fail("a client was overrun");
    }
  }

  tob::dataplane::TscClock clock_;
  std::unique_ptr<ClientHub> hub_;
  std::vector<uint64_t> cursors_;  // per client: its position in the delivery ring
  std::vector<uint64_t> polled_;
  const uint8_t* dlv_ = nullptr;
  tob::dataplane::SubmitRingProducer producer_;
  rte_mempool* frames_ = nullptr;
  uint64_t delivered0_ = 0;
  uint64_t client_reads_ = 0;
  Clock::duration timed_{};
  bool auth_ = false;
  tob::dataplane::security::KeySet keys_;    // node 0's (seal and verify)
  tob::dataplane::security::KeySet others_;  // the other nodes' seal, untimed
  std::unique_ptr<tob::dataplane::security::ReplayWindow> replay_;
  std::vector<uint8_t> sealed_;
  Clock::duration mac_time_{};
  uint64_t mac_frames_ = 0;
};

template <Order order>
void BM_ControlPerMessage(benchmark::State& state) {
  const auto size = static_cast<size_t>(state.range(0));
  const auto per_node = static_cast<size_t>(state.range(1));
  const bool auth = state.range(2) != 0;
  PathCluster cluster(order, per_node, size, auth);
  const std::vector<uint8_t> payload(size, 0x6B);
  int64_t t = 0;
  auto one_cycle = [&] {
    if (!cluster.submit0(payload, t, per_node)) return false;
    for (int i = 1; i < kNodes; ++i)
      for (size_t k = 0; k < per_node; ++k)
        if (cluster.node(static_cast<size_t>(i)).submit(1, payload, t).status != SubmitStatus::ok) return false;
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
  const auto mac_before = cluster.mac_time();
  const uint64_t mac_frames_before = cluster.mac_frames();
  Clock::duration timed_total{};
  for (auto _ : state) {
    const auto timed_before = cluster.timed();
    if (!one_cycle()) state.SkipWithError("submit refused: the cluster does not keep up");
    state.SetIterationTime(std::chrono::duration<double>(cluster.timed() - timed_before).count());
    timed_total += cluster.timed() - timed_before;
  }
  if (auth) {
    const double mac_ns = std::chrono::duration<double, std::nano>(cluster.mac_time() - mac_before).count();
    const auto frames = static_cast<double>(cluster.mac_frames() - mac_frames_before);
    state.counters["mac_share"] = mac_ns / std::chrono::duration<double, std::nano>(timed_total).count();
    state.counters["mac_ns_per_frame"] = frames > 0 ? mac_ns / frames : 0;
    state.counters["frames_per_cycle"] = frames / static_cast<double>(state.iterations());
  }
  const double delivered = static_cast<double>(cluster.delivered0() - before);
  const double expected = static_cast<double>(state.iterations()) * kNodes * static_cast<double>(per_node);
  if (delivered < 0.9 * expected) state.SkipWithError("fewer deliveries than submissions: not in steady state");
  if (cluster.client_reads() - reads_before < static_cast<uint64_t>(kClients * delivered))
    state.SkipWithError("the clients did not read every delivery");
  state.counters["delivered_per_cycle"] = delivered / static_cast<double>(state.iterations());
  state.counters["ns_per_msg"] = benchmark::Counter(delivered, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ControlPerMessage<Order::mars>)->ArgNames({"size", "msgs", "auth"})
    ->ArgsProduct({{64, 1024}, {256}, {0, 1}})->Args({64, 4096, 0})->Args({64, 4096, 1})
    ->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ControlPerMessage<Order::otfp>)->ArgNames({"size", "msgs", "auth"})
    ->ArgsProduct({{64, 1024}, {256}, {0, 1}})->Args({64, 4096, 0})->Args({64, 4096, 1})
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
