// Microbenchmarks of interactive consistency and the key-value store (seed 004; perf/README.md
// says what one iteration is and has the figures).
//   BM_EigReduce       EigTree::reduce() of one complete RT-EIGByz tree (all R = f + 1 rounds in)
//   BM_ReduceCopies    reduce_copies of one key over N copies: majority, median-f64, midpoint-f64
//   BM_KvMirrorRead    dataplane::KvMirror::read of a present key (hit, newest version)
//   BM_KvMirrorPublish dataplane::KvMirror::publish of a new version (evicts the oldest)
//   BM_KvStoreRead     core::KvStore::read, as BM_KvMirrorRead
//   BM_KvStorePublish  core::KvStore::publish, as BM_KvMirrorPublish
//   BM_IcBoundary      one IcNode::on_time() at the cycle boundary that finishes an instance of K
//                      keys in a cluster of 4 nodes (details at the benchmark)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/bytes.h"
#include "core/eig.h"
#include "core/ic_node.h"
#include "core/ic_reduce.h"
#include "core/kv_batch.h"
#include "core/kv_store.h"
#include "core/wire.h"
#include "dataplane/shm/kv_mirror.h"

namespace {

using namespace tob::core;
using tob::dataplane::KvMirror;
using tob::dataplane::KvMirrorRead;
using tob::dataplane::KvMirrorStatus;
using Bytes = std::vector<uint8_t>;
using Value = std::array<uint8_t, 8>;

// Keys and values as an application of the store writes them: 15-byte keys
// ("sensor/0000002a"), 8-byte values, in a configuration of 16-byte keys and 8-byte values.
constexpr size_t kKeyBytes = 15;
constexpr size_t kKeyBytesMax = 16;
constexpr size_t kValueBytes = 8;
constexpr size_t kVersionsPerKey = 4;
constexpr size_t kTreeBytesMax = 64u << 20;  // IcConfig's default limit
static_assert(kKeyBytes <= kKeyBytesMax && sizeof(Value) == kValueBytes);

class KeySet {
 public:
  explicit KeySet(size_t count) : bytes_(count * kKeyBytes) {
    static constexpr char kPrefix[] = "sensor/";
    static constexpr char kHex[] = "0123456789abcdef";
    constexpr size_t prefix_bytes = sizeof(kPrefix) - 1;
    for (size_t i = 0; i < count; ++i) {
      uint8_t* k = bytes_.data() + i * kKeyBytes;
      std::memcpy(k, kPrefix, prefix_bytes);
      for (size_t d = 0; d < kKeyBytes - prefix_bytes; ++d)
        k[kKeyBytes - 1 - d] = static_cast<uint8_t>(kHex[(i >> (4 * d)) & 0xF]);
    }
  }
  std::span<const uint8_t> operator[](size_t i) const { return {bytes_.data() + i * kKeyBytes, kKeyBytes}; }
  size_t size() const { return bytes_.size() / kKeyBytes; }

 private:
  Bytes bytes_;
};

Value value_of(uint64_t v) {
  Value out;
  store_be64(out.data(), v);
  return out;
}

bool same_bytes(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

// The mean hides preemptions on a shared machine: the per-call median and p99 go with it.
void report_call_percentiles(benchmark::State& state, std::vector<double>& call_ns) {
  if (call_ns.empty()) return;
  std::sort(call_ns.begin(), call_ns.end());
  state.counters["call_p50_ns"] = call_ns[call_ns.size() / 2];
  state.counters["call_p99_ns"] = call_ns[call_ns.size() * 99 / 100];
}

// Times one call with a steady clock (manual time: includes one clock read, ~20 ns).
template <class F>
void time_call(benchmark::State& state, std::vector<double>& call_ns, F&& call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  const auto end = std::chrono::steady_clock::now();
  const std::chrono::duration<double> took = end - start;
  state.SetIterationTime(took.count());
  call_ns.push_back(took.count() * 1e9);
}

// ---------------------------------------------------------------------------------------------
// RT-EIGByz reduction.

// The batch node `node` puts into the root of its tree for one instance: K writes of the same
// keys every node writes, with this node's own values (seed 004 §IV-C).
Bytes batch_of(const KvLimits& limits, const KeySet& keys, int node) {
  KvPending pending(limits);
  for (size_t k = 0; k < keys.size(); ++k) {
    const Value v = value_of(uint64_t{k} << 8 | static_cast<uint64_t>(node));
    if (pending.add(keys[k], 3'000'000, v) != KvPending::Add::added) return {};
  }
  Bytes out(limits.batch_bytes_max());
  out.resize(pending.encode(out));
  return out;
}

// One iteration = EigTree::reduce() of node 0's tree for one instance of N nodes tolerating f
// faults, all R = f + 1 rounds received: levels R-1 .. 1 replaced by the strict majority of
// their valid children, level 1 then being the decision vector. Every node's root is a real
// batch of K keys (15-byte keys, 8-byte values: 36 B per key), so entries are as large as
// IcNode makes them (value_bytes_max = KvLimits::batch_bytes_max()). The tree is filled as the
// protocol fills it: N trees exchange their round messages (level r-1 to every node, itself
// included) on a perfect network, and node 0's received messages are kept. Fault-free, so every
// comparison of two children reads both entries in full: the most comparison work there is
// (a liar's or a crashed node's entries differ early or are ⊥). Each iteration refills node 0's
// tree (start + accept of every round message: untimed) and times only reduce() (manual time);
// afterwards (untimed) the decision vector must hold every node's batch, or the benchmark fails.
void BM_EigReduce(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int f = static_cast<int>(state.range(1));
  const auto keys_n = static_cast<size_t>(state.range(2));
  const KvLimits limits{keys_n, kKeyBytesMax, kValueBytes};
  const KeySet keys(keys_n);
  std::vector<Bytes> roots;
  for (int i = 0; i < n; ++i) {
    roots.push_back(batch_of(limits, keys, i));
    if (roots.back().empty()) {
      state.SkipWithError("batch did not encode");
      return;
    }
  }
  std::vector<EigTree> trees;
  for (int i = 0; i < n; ++i) {
    auto tree = EigTree::create(n, f, limits.batch_bytes_max(), kTreeBytesMax);
    if (!tree.ok()) {
      state.SkipWithError(tree.error().message.c_str());
      return;
    }
    trees.push_back(std::move(tree.value()));
    trees.back().start(roots[static_cast<size_t>(i)]);
  }
  const int rounds = f + 1;
  std::vector<std::vector<Bytes>> received;  // [round - 1][sender]: what node 0 got
  for (int r = 1; r <= rounds; ++r) {
    std::vector<Bytes> sent;
    for (const EigTree& t : trees) {
      const std::span<const uint8_t> m = t.round_message(r);
      sent.emplace_back(m.begin(), m.end());
    }
    for (EigTree& t : trees)
      for (int j = 0; j < n; ++j)
        if (!t.accept(r, static_cast<NodeId>(j), sent[static_cast<size_t>(j)])) {
          state.SkipWithError("round message refused");
          return;
        }
    received.push_back(std::move(sent));
  }
  trees.erase(trees.begin() + 1, trees.end());
  EigTree& tree = trees.front();

  std::vector<double> call_ns;
  call_ns.reserve(static_cast<size_t>(state.max_iterations));
  for (auto _ : state) {
    tree.start(roots[0]);
    bool filled = true;
    for (int r = 1; r <= rounds; ++r)
      for (int j = 0; j < n; ++j)
        filled = tree.accept(r, static_cast<NodeId>(j), received[static_cast<size_t>(r - 1)][static_cast<size_t>(j)]) && filled;
    if (!filled) {
      state.SkipWithError("round message refused");
      break;
    }
    time_call(state, call_ns, [&] { tree.reduce(); });
    bool decided = true;
    for (int a = 0; a < n; ++a) {
      std::span<const uint8_t> v;
      decided = decided && tree.decision(static_cast<NodeId>(a), v) && same_bytes(v, roots[static_cast<size_t>(a)]);
    }
    if (!decided) {
      state.SkipWithError("decision vector is not every node's batch");
      break;
    }
  }
  state.counters["entry_bytes"] = static_cast<double>(tree.entry_bytes());
  state.counters["tree_bytes"] = static_cast<double>(tree.total_bytes());
  report_call_percentiles(state, call_ns);
}
BENCHMARK(BM_EigReduce)
    ->Args({4, 1, 16})
    ->Args({4, 1, 256})
    ->Args({7, 2, 16})
    ->Args({7, 2, 256})
    ->ArgNames({"nodes", "f", "keys"})
    ->UseManualTime();

// ---------------------------------------------------------------------------------------------
// Per-key reduction.

// One iteration = reduce_copies of one key over N copies of 8 bytes, f = (N - 1) / 3, into a
// caller buffer. The f faulty copies come first in node order (majority then counts them before
// it reaches the correct value: its longest scan) and are far above the correct ones (so the
// sorted copies are the correct ones, then the faulty ones). majority: the N - f correct copies
// are one value; numeric: the correct copies are distinct readings 20.0 + 0.25 i. The result is
// checked against what seed 004's rules give for these copies (status in every iteration).
void BM_ReduceCopies(benchmark::State& state, Reduction reduction) {
  const int n = static_cast<int>(state.range(0));
  const int f = (n - 1) / 3;
  std::vector<Value> values(static_cast<size_t>(n));
  std::vector<double> correct;  // ascending
  for (int i = 0; i < n; ++i) {
    Value& v = values[static_cast<size_t>(i)];
    if (reduction == Reduction::majority) {
      store_be64(v.data(), i < f ? 0xBAD0u + static_cast<uint64_t>(i) : 0x0123456789ABCDEFu);
    } else {
      const double x = i < f ? 1e9 * (i + 1) : 20.0 + 0.25 * i;
      encode_f64(x, v);
      if (i >= f) correct.push_back(x);
    }
  }
  std::vector<std::span<const uint8_t>> copies(values.begin(), values.end());
  Value expected{};
  switch (reduction) {
    case Reduction::majority: store_be64(expected.data(), 0x0123456789ABCDEFu); break;
    case Reduction::median_f64: encode_f64(correct[static_cast<size_t>((n - 1) / 2)], expected); break;
    case Reduction::midpoint_f64:
      encode_f64(correct[static_cast<size_t>(f)] / 2 + correct[static_cast<size_t>(n - 1 - f)] / 2, expected);
      break;
    default: state.SkipWithError("not benchmarked"); return;
  }
  Value out{};
  ReduceOutcome o;
  for (auto _ : state) {
    benchmark::DoNotOptimize(copies.data());
    o = reduce_copies(reduction, n, f, copies, out);
    if (o.status != ReduceStatus::ok) {
      state.SkipWithError("no quorum");
      break;
    }
    benchmark::DoNotOptimize(out);
  }
  if (o.status == ReduceStatus::ok && (out != expected || o.value_bytes != kValueBytes || o.copies_used != n))
    state.SkipWithError("wrong reduced value");
}
BENCHMARK_CAPTURE(BM_ReduceCopies, majority, Reduction::majority)->Arg(4)->Arg(7)->ArgName("nodes");
BENCHMARK_CAPTURE(BM_ReduceCopies, median_f64, Reduction::median_f64)->Arg(4)->Arg(7)->ArgName("nodes");
BENCHMARK_CAPTURE(BM_ReduceCopies, midpoint_f64, Reduction::midpoint_f64)->Arg(4)->Arg(7)->ArgName("nodes");

// ---------------------------------------------------------------------------------------------
// The store: the shared mirror (dataplane) and the core's own (IcNode's).

KvStoreConfig store_config(size_t keys) { return {keys, kVersionsPerKey, kKeyBytesMax, kValueBytes}; }
int64_t t_pub_of(int64_t version) { return (version + 1) * 1'000'000; }  // one version per 1 ms cycle
uint64_t stored_value(size_t key, int64_t version) { return uint64_t{key} << 32 | static_cast<uint64_t>(version); }

class MirrorUnderTest {
 public:
  explicit MirrorUnderTest(const KvStoreConfig& c) : mem_((KvMirror::bytes_for(c) + 7) / 8) {
    if (mem_.empty()) return;
    mirror_ = KvMirror::format(mem_.data(), mem_.size() * 8, c);
  }
  bool ok() const { return mirror_.valid(); }
  size_t bytes() const { return mem_.size() * 8; }
  KvPublish publish(std::span<const uint8_t> key, int64_t t_pub_ns, int64_t version, const Value& v) {
    return mirror_.publish(key, t_pub_ns, static_cast<uint64_t>(version), true, v);
  }
  void set_complete_below(int64_t ns) { mirror_.set_complete_below(ns); }
  // Ok with a value of 8 bytes; its t_pub and value.
  bool read(std::span<const uint8_t> key, int64_t now_ns, int64_t& t_pub_ns, uint64_t& value) const {
    Value out;
    const KvMirrorRead r = mirror_.read(key, 0, now_ns, out);
    t_pub_ns = r.t_pub_ns;
    value = load_be64(out.data());
    return r.status == KvMirrorStatus::ok && r.value_bytes == kValueBytes;
  }
  uint64_t evictions() const { return mirror_.counters().evictions; }

 private:
  std::vector<uint64_t> mem_;  // 8-byte aligned, as a shared memory region is
  KvMirror mirror_;
};

class StoreUnderTest {
 public:
  explicit StoreUnderTest(const KvStoreConfig& c) {
    auto s = KvStore::create(c);
    if (s.ok()) store_.push_back(std::move(s.value()));
  }
  bool ok() const { return !store_.empty(); }
  size_t bytes() const { return 0; }
  KvPublish publish(std::span<const uint8_t> key, int64_t t_pub_ns, int64_t version, const Value& v) {
    return store_.front().publish(key, t_pub_ns, static_cast<uint64_t>(version), true, v);
  }
  void set_complete_below(int64_t) {}
  bool read(std::span<const uint8_t> key, int64_t now_ns, int64_t& t_pub_ns, uint64_t& value) const {
    const KvRead r = store_.front().read(key, 0, now_ns);
    t_pub_ns = r.t_pub_ns;
    if (r.status != KvStatus::ok || r.value.size() != kValueBytes) return false;
    value = load_be64(r.value.data());
    return true;
  }
  uint64_t evictions() const { return store_.front().counters().evictions; }

 private:
  std::vector<KvStore> store_;  // at most one: KvStore is only made by create()
};

// Every key with its full retention: versions 0 .. kVersionsPerKey-1 (t_pub 1, 2, 3, 4 ms).
template <class Store>
bool fill(Store& s, const KeySet& keys) {
  for (int64_t version = 0; version < static_cast<int64_t>(kVersionsPerKey); ++version)
    for (size_t k = 0; k < keys.size(); ++k)
      if (s.publish(keys[k], t_pub_of(version), version, value_of(stored_value(k, version))) != KvPublish::stored)
        return false;
  return true;
}

// One iteration = one read of a present key at a time after all its versions: the answer is
// its newest version (t_min 0, so the freshness bound never refuses). The keys are read in
// turn, key 0 .. K-1 and again; their cells are spread by the hash, so with 65536 keys the
// store does not fit in the caches. The mirror also copies the value out (the store returns a
// span). Status, publishing time and value are checked in every iteration.
template <class Store>
void BM_Read(benchmark::State& state) {
  const auto keys_n = static_cast<size_t>(state.range(0));
  const KeySet keys(keys_n);
  Store s(store_config(keys_n));
  if (!s.ok() || !fill(s, keys)) {
    state.SkipWithError("store did not take every key");
    return;
  }
  const int64_t newest = static_cast<int64_t>(kVersionsPerKey) - 1;
  const int64_t now_ns = t_pub_of(newest) + 1;
  s.set_complete_below(now_ns + 1);  // every version up to now published (the daemon's promise)
  size_t k = 0;
  for (auto _ : state) {
    int64_t t_pub_ns = 0;
    uint64_t value = 0;
    const bool ok = s.read(keys[k], now_ns, t_pub_ns, value);
    if (!ok || t_pub_ns != t_pub_of(newest) || value != stored_value(k, newest)) {
      state.SkipWithError("read did not answer the newest version");
      break;
    }
    k = k + 1 == keys_n ? 0 : k + 1;
  }
  if (s.bytes() > 0) state.counters["mirror_bytes"] = static_cast<double>(s.bytes());
}

// One iteration = one publish of a new version of a present key whose retention is full: the
// version with the next publishing time goes in and the oldest is evicted (the steady state of
// a store that IC instances keep publishing into). Keys in turn, as BM_Read; each pass over the
// keys is one version later. Checked: every publish stores, one eviction per publish, and the
// last version published is what a read answers.
template <class Store>
void BM_Publish(benchmark::State& state) {
  const auto keys_n = static_cast<size_t>(state.range(0));
  const KeySet keys(keys_n);
  Store s(store_config(keys_n));
  if (!s.ok() || !fill(s, keys)) {
    state.SkipWithError("store did not take every key");
    return;
  }
  const uint64_t evictions_before = s.evictions();
  size_t k = 0;
  auto version = static_cast<int64_t>(kVersionsPerKey);
  for (auto _ : state) {
    if (s.publish(keys[k], t_pub_of(version), version, value_of(stored_value(k, version))) != KvPublish::stored) {
      state.SkipWithError("new version not stored");
      break;
    }
    if (++k == keys_n) {
      k = 0;
      ++version;
    }
  }
  if (s.evictions() - evictions_before != static_cast<uint64_t>(state.iterations()))
    state.SkipWithError("not one eviction per publish");
  // The last publish was of key k-1 (or K-1 of the previous version).
  const size_t last_key = k == 0 ? keys_n - 1 : k - 1;
  const int64_t last_version = k == 0 ? version - 1 : version;
  const int64_t now_ns = t_pub_of(last_version) + 1;
  s.set_complete_below(now_ns + 1);
  int64_t t_pub_ns = 0;
  uint64_t value = 0;
  if (state.iterations() > 0 && (!s.read(keys[last_key], now_ns, t_pub_ns, value) ||
                                 t_pub_ns != t_pub_of(last_version) || value != stored_value(last_key, last_version)))
    state.SkipWithError("published version not readable");
  if (s.bytes() > 0) state.counters["mirror_bytes"] = static_cast<double>(s.bytes());
}

void BM_KvMirrorRead(benchmark::State& state) { BM_Read<MirrorUnderTest>(state); }
void BM_KvMirrorPublish(benchmark::State& state) { BM_Publish<MirrorUnderTest>(state); }
void BM_KvStoreRead(benchmark::State& state) { BM_Read<StoreUnderTest>(state); }
void BM_KvStorePublish(benchmark::State& state) { BM_Publish<StoreUnderTest>(state); }
BENCHMARK(BM_KvMirrorRead)->Arg(1024)->Arg(65536)->ArgName("keys");
BENCHMARK(BM_KvMirrorPublish)->Arg(1024)->Arg(65536)->ArgName("keys");
BENCHMARK(BM_KvStoreRead)->Arg(1024)->Arg(65536)->ArgName("keys");
BENCHMARK(BM_KvStorePublish)->Arg(1024)->Arg(65536)->ArgName("keys");

// ---------------------------------------------------------------------------------------------
// One IcNode boundary.

constexpr int64_t kIcCycleNs = 1'000'000;

// N IcNodes on one virtual timeline with perfect clocks and a lossless network: every frame
// reaches every other node exactly at its tx_ns. Every input is followed by one take_actions()
// (a second call would return nothing new), whose frames are queued.
class IcCluster {
 public:
  IcCluster(int n, const IcConfig& ic) {
    for (int i = 0; i < n; ++i) {
      NodeConfig c;
      c.schedule = ScheduleConfig::equal_slots(n, kIcCycleNs);
      c.self = static_cast<NodeId>(i);
      auto node = IcNode::create(c, ic);
      if (!node.ok()) {
        error_ = node.error().message;
        return;
      }
      nodes_.push_back(std::move(node.value()));
    }
  }
  const std::string& error() const { return error_; }
  IcNode& node(size_t i) { return nodes_[i]; }

  const IcActions& collect(size_t i) {
    const IcActions& a = nodes_[i].take_actions();
    for (const TxFrame& f : a.tx) pending_.push_back({f.tx_ns, i, Bytes(f.bytes.begin(), f.bytes.end())});
    return a;
  }

  // The boundary at t on every node but `skip`.
  void boundary(int64_t t, size_t skip) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (i == skip) continue;
      nodes_[i].on_time(t);
      collect(i);
    }
  }

  // The rest of cycle `cycle` after its boundary: every node writes the same K keys (just after
  // the boundary, value = key index << 32 | cycle), then every frame sent in the cycle reaches
  // every other node at its tx_ns, in time order. False (with error()) when anything is refused.
  bool run_cycle(int64_t cycle, const KeySet& keys) {
    const Schedule& sched = nodes_.front().schedule();
    const int64_t write_ns = sched.cycle_start_ns(cycle) + 1;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      IcNode& node = nodes_[i];
      const int64_t t_pub_ns = node.finish_ns(node.instance_of(write_ns));
      for (size_t k = 0; k < keys.size(); ++k) {
        const Value v = value_of(uint64_t{k} << 32 | static_cast<uint64_t>(cycle));
        const KvWriteResult w = node.kv_write(keys[k], t_pub_ns, v, write_ns);
        collect(i);
        if (w.status != KvWriteStatus::ok) return fail(std::string("write refused: ") + to_string(w.status));
      }
    }
    std::vector<Pending> frames = std::move(pending_);
    pending_.clear();
    std::stable_sort(frames.begin(), frames.end(), [](const Pending& a, const Pending& b) { return a.tx_ns < b.tx_ns; });
    for (const Pending& p : frames) {
      if (p.tx_ns >= sched.cycle_start_ns(cycle + 1)) return fail("a frame leaves after its cycle");
      const DecodeResult r = decode_frame(p.bytes);
      if (!r.ok()) return fail("a frame did not decode");
      for (size_t j = 0; j < nodes_.size(); ++j) {
        if (j == p.from) continue;
        const IcFrameVerdict v = nodes_[j].on_frame(r.view, p.tx_ns);
        collect(j);
        if (v != IcFrameVerdict::accepted) return fail(std::string("frame not accepted: ") + to_string(v));
      }
    }
    if (!pending_.empty()) return fail("on_frame sent frames");
    return true;
  }

 private:
  struct Pending {
    int64_t tx_ns;
    size_t from;
    Bytes bytes;
  };
  bool fail(std::string why) {
    error_ = std::move(why);
    return false;
  }
  std::vector<IcNode> nodes_;
  std::vector<Pending> pending_;
  std::string error_;
};

// One iteration = node 0's IcNode::on_time(t) at a cycle boundary t of a 4-node cluster (f = 1,
// R = 2, period P = 1 cycle) in which every node writes the same K keys every cycle (15-byte
// keys, 8-byte values, t_pub = the carrying instance's finish, reduction majority). With P = 1
// every boundary does the full work of an instance's end: round 2 of instance c-3 is final and
// that instance finishes (EigTree::reduce, the canonical decision vector, un-batching the four
// batches, sorting and grouping the 4K copies, K majority reductions and K KvStore publishes,
// each evicting a version once retention is full), round 1 of instance c-2 is final, instance
// c-1 starts (encoding the K pending writes into its root) and node 0 encodes its round data
// (round 1 of c-1, round 2 of c-2) into ic frames (K = 256: 33 frames of up to 1500 B).
// Untimed: the other nodes' boundaries, the writes, and the frames of the cycle handed to the
// other nodes with on_frame at their tx_ns. Timed with a steady clock around the call only
// (manual time). Checked per call: one decision reported with K publications, every one a
// value of this instance (majority reached) and stored; at the end: instances_finished grows by
// one per call, no round data defaulted or missed.
void BM_IcBoundary(benchmark::State& state) {
  const auto keys_n = static_cast<size_t>(state.range(0));
  constexpr int kNodes = 4;
  IcConfig ic;
  ic.f = 1;
  ic.period_cycles = 1;
  ic.keys_per_period_max = keys_n;
  ic.key_bytes_max = kKeyBytesMax;
  ic.value_bytes_max = kValueBytes;
  ic.store_keys_max = std::max<size_t>(1024, keys_n);
  ic.versions_per_key = kVersionsPerKey;
  IcCluster cluster(kNodes, ic);
  if (!cluster.error().empty()) {
    state.SkipWithError(cluster.error().c_str());
    return;
  }
  const KeySet keys(keys_n);
  IcNode& measured = cluster.node(0);
  const Schedule& sched = measured.schedule();
  // Instance 0 carries cycle 0's writes, runs its rounds in cycles 1 and 2 and finishes at the
  // boundary of cycle 3: from there on every boundary finishes one instance.
  int64_t cycle = 0;
  for (; cycle < 3; ++cycle) {
    cluster.boundary(sched.cycle_start_ns(cycle), SIZE_MAX);
    if (!cluster.run_cycle(cycle, keys)) {
      state.SkipWithError(cluster.error().c_str());
      return;
    }
  }
  const IcCounters before = measured.counters();
  std::vector<double> call_ns;
  call_ns.reserve(static_cast<size_t>(state.max_iterations));
  for (auto _ : state) {
    const int64_t t = sched.cycle_start_ns(cycle);
    if (measured.next_deadline_ns() != t) {
      state.SkipWithError("node 0 is not due at the boundary");
      break;
    }
    cluster.boundary(t, 0);
    time_call(state, call_ns, [&] { measured.on_time(t); });
    const IcActions& a = cluster.collect(0);
    bool published = a.decisions.size() == 1 && a.decisions.front().publications.size() == keys_n;
    if (published) {
      const IcDecision& d = a.decisions.front();
      for (const IcPublication& p : d.publications)
        published = published && p.status == ReduceStatus::ok && p.stored == KvPublish::stored &&
                    p.value.size() == kValueBytes && (load_be64(p.value.data()) & 0xFFFFFFFFu) == d.instance;
    }
    if (!published) {
      state.SkipWithError("the boundary did not publish the instance's K keys");
      break;
    }
    if (!cluster.run_cycle(cycle, keys)) {
      state.SkipWithError(cluster.error().c_str());
      break;
    }
    ++cycle;
  }
  const IcCounters& after = measured.counters();
  const auto calls = static_cast<uint64_t>(state.iterations());
  if (after.instances_finished - before.instances_finished != calls) state.SkipWithError("not one instance per call");
  if (after.messages_default != 0 || after.rounds_missed != 0) state.SkipWithError("round data defaulted or missed");
  if (calls > 0) {
    state.counters["publications_per_call"] =
        static_cast<double>(after.publications_ok - before.publications_ok) / static_cast<double>(calls);
    state.counters["frames_per_call"] = static_cast<double>(after.frames_tx - before.frames_tx) / static_cast<double>(calls);
  }
  state.counters["entry_bytes"] = static_cast<double>(measured.entry_bytes());
  report_call_percentiles(state, call_ns);
}
BENCHMARK(BM_IcBoundary)->Arg(16)->Arg(256)->ArgName("keys")->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
