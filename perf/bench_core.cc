// Microbenchmarks of the core's per-frame and per-turn work (perf/README.md has the figures).
//   BM_Encode          header + membership section + app batch of N messages of 64 B
//   BM_Decode          decode_frame + validate_batch + reading every message of those frames
//   BM_Crc32c          CRC32C (SSE4.2 where available) and the portable table, 64 B and 1500 B
//   BM_MembershipPoint one MarsNode::on_time() call that processes exactly one membership point in
//                      a cluster of N members (details at the benchmark)
//   BM_EnginePerMessage a whole cycle of a 4-node cluster of either engine, in ns per message
//                      delivered at one node (submit, frame, decode, order, deliver)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "core/batch.h"
#include "core/bytes.h"
#include "core/crc32c.h"
#include "core/engine_factory.h"
#include "core/mars_node.h"
#include "core/wire.h"
#include "engine_cluster.h"

namespace {

using namespace tob::core;
using Bytes = std::vector<uint8_t>;

constexpr size_t kPayloadBytes = 64;
constexpr size_t kJumboBytes = 9000;  // 64 messages of 64 B need 5.5 kB: a jumbo frame

FrameHeader bench_header() {
  FrameHeader h;
  h.cluster_id = 1;
  h.sender = 3;
  h.cycle = 123456;
  h.view_vector = 0xFFFF;
  h.stage = Stage::member;
  return h;
}

// The work of MarsNode::transmit for one frame: header, membership section, app batch.
size_t encode_frame(std::span<uint8_t> buf, const Bytes& payload, int messages) {
  FrameWriter w(buf);
  w.begin(bench_header());
  uint8_t members[8];
  store_be64(members, 0xFFFF);
  w.add_section(SectionType::membership, 0, members);
  std::span<uint8_t> body = w.open_section(SectionType::app_batch, 0, w.room());
  BatchWriter bw(body);
  for (int i = 0; i < messages; ++i)
    bw.add({static_cast<uint64_t>(i), 1000 + i, static_cast<uint16_t>(i & 7), payload});
  w.close_section(bw.finish());
  return w.finish();
}

void BM_Encode(benchmark::State& state) {
  const int messages = static_cast<int>(state.range(0));
  Bytes buf(kJumboBytes);
  const Bytes payload(kPayloadBytes, 0xAB);
  size_t len = 0;
  for (auto _ : state) {
    len = encode_frame(buf, payload, messages);
    benchmark::DoNotOptimize(buf.data());
    benchmark::ClobberMemory();
  }
  if (len == 0) state.SkipWithError("frame did not fit");
  state.counters["frame_bytes"] = static_cast<double>(len);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}
BENCHMARK(BM_Encode)->Arg(1)->Arg(16)->Arg(64);

void BM_Decode(benchmark::State& state) {
  const int messages = static_cast<int>(state.range(0));
  Bytes buf(kJumboBytes);
  const Bytes payload(kPayloadBytes, 0xAB);
  const size_t len = encode_frame(buf, payload, messages);
  buf.resize(len);
  uint64_t read = 0;
  for (auto _ : state) {
    const DecodeResult r = decode_frame(buf);
    SectionView s;
    uint16_t count = 0;
    if (!r.ok() || !r.view.find_section(SectionType::app_batch, s) ||
        !validate_batch(s.body, &count)) {
      state.SkipWithError("golden frame did not decode");
      break;
    }
    BatchReader reader(s.body);
    for (AppMessage m; reader.next(m);) read += m.payload.size() + m.msg_id;
    benchmark::DoNotOptimize(read);
  }
  state.counters["frame_bytes"] = static_cast<double>(len);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}
BENCHMARK(BM_Decode)->Arg(1)->Arg(16)->Arg(64);

template <uint32_t (*Crc)(std::span<const uint8_t>, uint32_t)>
void BM_Crc(benchmark::State& state) {
  Bytes buf(static_cast<size_t>(state.range(0)));
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 31);
  for (auto _ : state) {
    benchmark::DoNotOptimize(buf.data());
    uint32_t c = Crc(buf, 0);
    benchmark::DoNotOptimize(c);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
void BM_Crc32c(benchmark::State& state) { BM_Crc<crc32c>(state); }
void BM_Crc32cPortable(benchmark::State& state) { BM_Crc<crc32c_portable>(state); }
BENCHMARK(BM_Crc32c)->Arg(64)->Arg(1500);
BENCHMARK(BM_Crc32cPortable)->Arg(64)->Arg(1500);

// A cluster of N nodes on one virtual timeline with perfect clocks and a lossless network:
// every frame reaches every other node exactly at its tx_ns.
class Cluster {
 public:
  explicit Cluster(int n) {
    const int64_t slot_ns = 100'000;
    for (int i = 0; i < n; ++i) {
      NodeConfig c;
      c.schedule = ScheduleConfig::equal_slots(n, slot_ns * n);
      c.self = static_cast<NodeId>(i);
      c.queue_bytes_max = 64 * 1024;
      auto node = MarsNode::create(c);
      if (!node.ok()) {
        std::fprintf(stderr, "bench: %s\n", node.error().message.c_str());
        std::abort();
      }
      nodes_.push_back(std::move(node.value()));
    }
    // Started just before the epoch: a first on_time() exactly at a membership point records
    // the time without processing that turn, leaving next_deadline_ns() at it.
    for (size_t i = 0; i < nodes_.size(); ++i) call_on_time(i, -1);
  }

  MarsNode& node(size_t i) { return nodes_[i]; }
  bool all_members() const {
    return std::all_of(nodes_.begin(), nodes_.end(), [](const MarsNode& x) { return x.is_member(); });
  }

  // Runs every event (frame arrival or on_time at a node's deadline) before t, skipping
  // node `skip`'s on_time calls (its frames from others are still delivered).
  void run_before(int64_t t, size_t skip) {
    for (;;) {
      int64_t e = INT64_MAX;
      for (size_t i = 0; i < nodes_.size(); ++i)
        if (i != skip) e = std::min(e, nodes_[i].next_deadline_ns());
      for (const Pending& p : pending_) e = std::min(e, p.tx_ns);
      if (e >= t) return;
      run_at(e, skip);
    }
  }

  // Delivers the frames sent at t, then calls on_time(t) on every node due at t but `skip`.
  void run_at(int64_t t, size_t skip) {
    for (size_t k = 0; k < pending_.size();) {
      if (pending_[k].tx_ns != t) {
        ++k;
        continue;
      }
      const Pending p = std::move(pending_[k]);
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(k));
      const DecodeResult r = decode_frame(p.bytes);
      if (!r.ok()) std::abort();
      for (size_t j = 0; j < nodes_.size(); ++j) {
        if (j == p.from) continue;
        nodes_[j].on_frame(r.view, t);
        collect(j);
      }
    }
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (i != skip && nodes_[i].next_deadline_ns() <= t) call_on_time(i, t);
  }

  void collect(size_t i) {
    const Actions& a = nodes_[i].take_actions();
    for (const TxFrame& f : a.tx)
      pending_.push_back({f.tx_ns, i, Bytes(f.bytes.begin(), f.bytes.end())});
  }

 private:
  void call_on_time(size_t i, int64_t t) {
    nodes_[i].on_time(t);
    collect(i);
  }

  struct Pending {
    int64_t tx_ns;
    size_t from;
    Bytes bytes;
  };
  std::vector<MarsNode> nodes_;
  std::vector<Pending> pending_;
};

// One iteration = node 0 of an N-member cluster processes exactly one turn: time advances to
// the next membership point (node 0's next_deadline_ns()), the frames the other nodes sent
// before it have been fed to node 0 with on_frame (untimed), and the timed part is the single
// node0.on_time(t) call. It evaluates that turn's membership point (decide: admission,
// removal, omission checks, delivery of the sender's last batch) and, on node 0's own turn
// (1 in N iterations), encodes and hands out its two frame copies. Second argument: messages
// of 64 B submitted to every node once per cycle (untimed, at node 0's turn); with 0 the
// batches are empty and this is the membership cost alone, with 16 each turn also delivers the
// sender's batch of 16 (and node 0's own turn builds one). Timed with a steady clock around
// the call (manual time, so it includes one clock read, ~20 ns); the other nodes' work happens
// outside it.
void BM_MembershipPoint(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int msgs_per_cycle = static_cast<int>(state.range(1));
  Cluster cluster(n);
  const Bytes payload(kPayloadBytes, 0x5A);
  for (int cycles = 0; cycles < 10 && !cluster.all_members(); ++cycles) {
    const int64_t until = cluster.node(0).next_deadline_ns() + cluster.node(0).schedule().cycle_ns();
    cluster.run_before(until, SIZE_MAX);
  }
  if (!cluster.all_members()) {
    state.SkipWithError("cluster did not form");
    return;
  }
  MarsNode& measured = cluster.node(0);
  const uint64_t points_before = measured.counters().membership_points;
  const uint64_t delivered_before = measured.counters().msgs_delivered;
  std::vector<double> call_ns;  // per call: the mean hides preemptions on a shared machine
  call_ns.reserve(static_cast<size_t>(state.max_iterations));
  for (auto _ : state) {
    const int64_t t = measured.next_deadline_ns();
    if (msgs_per_cycle > 0 && measured.schedule().next_turn_after(t - 1).node == 0) {
      for (int i = 0; i < n; ++i)
        for (int k = 0; k < msgs_per_cycle; ++k)
          if (cluster.node(static_cast<size_t>(i)).submit(1, payload, t).status != SubmitStatus::ok)
            state.SkipWithError("submit refused");
    }
    cluster.run_before(t, 0);
    const auto start = std::chrono::steady_clock::now();
    measured.on_time(t);
    const auto end = std::chrono::steady_clock::now();
    const std::chrono::duration<double> took = end - start;
    state.SetIterationTime(took.count());
    call_ns.push_back(took.count() * 1e9);
    cluster.collect(0);
    cluster.run_at(t, 0);
  }
  const uint64_t points = measured.counters().membership_points - points_before;
  if (points != static_cast<uint64_t>(state.iterations()))
    state.SkipWithError("not one membership point per call");
  if (!cluster.all_members()) state.SkipWithError("a node left the membership");
  state.counters["members"] = measured.member_count();
  if (!call_ns.empty()) {
    std::sort(call_ns.begin(), call_ns.end());
    state.counters["call_p50_ns"] = call_ns[call_ns.size() / 2];
    state.counters["call_p99_ns"] = call_ns[call_ns.size() * 99 / 100];
  }
  state.counters["delivered_per_call"] =
      static_cast<double>(measured.counters().msgs_delivered - delivered_before) /
      static_cast<double>(state.iterations());
}
BENCHMARK(BM_MembershipPoint)
    ->ArgsProduct({{4, 16, 64}, {0, 16}})
    ->ArgNames({"nodes", "msgs"})
    ->UseManualTime()
    ->Iterations(20000);

// One iteration = one cycle of a 4-node cluster: every node submits M messages of B bytes at
// the cycle's start (M = what one slot's frame carries: 16 of 64 B, 1 of 1 KB), then every
// frame, decode, vote, decision and delivery of the cycle runs. Reported: ns_per_msg = the
// cycle's time / the messages delivered at all nodes, i.e. the core's cost per message at one
// node's control lcore (each node delivers every message: its share of submit and framing, the
// decode of the frame that carries it, ordering, delivery). Core only: the dataplane's copies to
// and from clients and the port are not in it (docs/plans/throughput.md, stage 0).
template <Order order>
void BM_EnginePerMessage(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  const int per_node = size <= 64 ? 16 : 1;
  constexpr int kNodes = 4;
  constexpr int64_t kCycleNs = 4'000'000;
  NodeConfig base;
  base.schedule = ScheduleConfig::equal_slots(kNodes, kCycleNs);
  base.queue_bytes_max = 4u << 20;
  tob::perf::EngineCluster cluster(order, kNodes, base);
  cluster.start();
  const Bytes payload(size, 0x6B);
  int64_t t = 0;
  auto one_cycle = [&] {
    for (size_t i = 0; i < cluster.size(); ++i)
      for (int k = 0; k < per_node; ++k)
        if (cluster.node(i).submit(1, payload, t).status != SubmitStatus::ok) return false;
    t += kCycleNs;
    cluster.run_before(t);
    return true;
  };
  for (int c = 0; c < 40; ++c)  // the membership forms (mars), the coordinator activates (otfp)
    if (!one_cycle()) break;
  const uint64_t before = cluster.delivered();
  for (auto _ : state)
    if (!one_cycle()) state.SkipWithError("submit refused: the cluster does not keep up");
  const double delivered = static_cast<double>(cluster.delivered() - before);
  const double expected = static_cast<double>(state.iterations()) * kNodes * kNodes * per_node;
  if (delivered < 0.9 * expected) state.SkipWithError("fewer deliveries than submissions: not in steady state");
  state.counters["delivered_per_cycle"] = delivered / static_cast<double>(state.iterations());
  state.counters["ns_per_msg"] = benchmark::Counter(delivered, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_EnginePerMessage<Order::mars>)->ArgName("size")->Arg(64)->Arg(1024);
BENCHMARK(BM_EnginePerMessage<Order::otfp>)->ArgName("size")->Arg(64)->Arg(1024);

}  // namespace

BENCHMARK_MAIN();
