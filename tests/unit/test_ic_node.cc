// core::IcNode driven directly, a small cluster on a perfect network (no simulator): the
// instance timeline in cycles, writes refused at once when too late or out of bounds, values
// visible exactly at their publishing time on every node, pipelined instances, the test knobs
// (omit, lie, garble) against the correct nodes' agreement, and every kind of bad frame.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/bytes.h"
#include "core/crc32c.h"
#include "core/ic_fault.h"
#include "core/ic_node.h"

namespace tob::core {
namespace {

using Bytes = std::vector<uint8_t>;
constexpr int64_t kCycle = 1'000'000;

std::span<const uint8_t> k(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }
Bytes f64(double v) {
  Bytes b(8);
  encode_f64(v, b);
  return b;
}

NodeConfig node_config(int n, NodeId self) {
  NodeConfig c;
  c.schedule = ScheduleConfig::equal_slots(n, kCycle);
  c.self = self;
  return c;
}

IcConfig ic_config(int f, int period = 1) {
  IcConfig c;
  c.f = f;
  c.period_cycles = period;
  c.keys_per_period_max = 8;
  c.key_bytes_max = 16;
  c.value_bytes_max = 8;
  c.versions_per_key = 8;
  c.key_classes = {{"m/", Reduction::median_f64}};
  return c;
}

struct Pub {
  std::string key;
  int64_t t_pub;
  ReduceStatus status;
  Bytes value;
  bool operator==(const Pub&) const = default;
};

struct Cluster {
  int n;
  std::vector<IcNode> nodes;
  std::vector<bool> alive;
  int64_t now = 0;
  // Per node: instance -> decision entries and publications.
  std::vector<std::map<uint64_t, Bytes>> decisions;
  std::vector<std::map<uint64_t, uint64_t>> defaulted;  // IcDecision::defaulted per instance
  std::vector<std::map<uint64_t, std::vector<Pub>>> pubs;
  std::vector<std::map<uint64_t, int64_t>> finished_at;
  // Frames from `from` to `to`: return false to drop; may rewrite the bytes (resealed after).
  std::function<bool(int from, int to, Bytes& frame)> net;
  std::vector<std::vector<IcFrameVerdict>> verdicts;
  std::vector<std::optional<IcFaultInjector>> faults;  // test knobs: a node misbehaves (core/ic_fault.h)

  Cluster(int nodes_n, const IcConfig& ic, std::function<IcConfig(int)> per_node = nullptr) : n(nodes_n) {
    for (int i = 0; i < n; ++i) {
      auto node = IcNode::create(node_config(n, static_cast<NodeId>(i)), per_node ? per_node(i) : ic);
      REQUIRE(node.ok());
      nodes.push_back(std::move(node.value()));
    }
    alive.assign(static_cast<size_t>(n), true);
    decisions.resize(static_cast<size_t>(n));
    defaulted.resize(static_cast<size_t>(n));
    pubs.resize(static_cast<size_t>(n));
    finished_at.resize(static_cast<size_t>(n));
    verdicts.resize(static_cast<size_t>(n));
    faults.resize(static_cast<size_t>(n));
  }

  void set_fault(int i, IcTestFault f) {
    faults[static_cast<size_t>(i)].emplace(nodes[static_cast<size_t>(i)], node_config(n, static_cast<NodeId>(i)), f);
  }

  struct Tx {
    int64_t tx_ns;
    int from;
    Bytes bytes;
  };

  std::vector<Tx> inflight;  // sent, not yet delivered

  void collect(int i) {
    const IcActions& honest = nodes[static_cast<size_t>(i)].take_actions();
    const IcActions& a = faults[static_cast<size_t>(i)] ? faults[static_cast<size_t>(i)]->apply(honest) : honest;
    for (const IcDecision& d : a.decisions) {
      decisions[static_cast<size_t>(i)][d.instance] = Bytes(d.entries.begin(), d.entries.end());
      defaulted[static_cast<size_t>(i)][d.instance] = d.defaulted;
      finished_at[static_cast<size_t>(i)][d.instance] = d.finish_ns;
      auto& list = pubs[static_cast<size_t>(i)][d.instance];
      for (const IcPublication& p : d.publications)
        list.push_back({std::string(p.key.begin(), p.key.end()), p.t_pub_ns, p.status, Bytes(p.value.begin(), p.value.end())});
    }
    for (const TxFrame& t : a.tx) inflight.push_back({t.tx_ns, i, Bytes(t.bytes.begin(), t.bytes.end())});
  }

  // Advances cycle by cycle to `t`: boundaries on every node, then the cycle's frames in time
  // order, each arriving 1 us after it was sent.
  void run_to(int64_t t) {
    while (now < t) {
      const int64_t next = std::min(t, (now / kCycle + 1) * kCycle);
      for (int i = 0; i < n; ++i) {
        if (!alive[static_cast<size_t>(i)]) continue;
        nodes[static_cast<size_t>(i)].on_time(now);
        collect(i);
      }
      std::stable_sort(inflight.begin(), inflight.end(), [](const Tx& a, const Tx& b) { return a.tx_ns < b.tx_ns; });
      std::vector<Tx> frames;
      std::vector<Tx> later;
      for (Tx& f : inflight) (f.tx_ns < next ? frames : later).push_back(std::move(f));
      inflight = std::move(later);
      for (const Tx& f : frames) {
        for (int to = 0; to < n; ++to) {
          if (to == f.from || !alive[static_cast<size_t>(to)]) continue;
          Bytes b = f.bytes;
          if (net && !net(f.from, to, b)) continue;
          const size_t end = b.size() - kTrailerBytes;
          store_be32(b.data() + end, crc32c(std::span<const uint8_t>(b).first(end)));
          const DecodeResult d = decode_frame(b);
          if (!d.ok()) continue;  // a mutation broke the section framing: an omission
          verdicts[static_cast<size_t>(to)].push_back(nodes[static_cast<size_t>(to)].on_frame(d.view, f.tx_ns + 1000));
          collect(to);
        }
      }
      now = next;
    }
    for (int i = 0; i < n; ++i)
      if (alive[static_cast<size_t>(i)]) {
        nodes[static_cast<size_t>(i)].on_time(now);
        collect(i);
      }
  }

  KvWriteResult write(int i, const std::string& key, int64_t t_pub, const Bytes& v, int64_t at) {
    const KvWriteResult r = nodes[static_cast<size_t>(i)].kv_write(k(key), t_pub, v, at);
    collect(i);
    return r;
  }
  KvRead read(int i, const std::string& key, int64_t t_min, int64_t at) {
    const KvRead r = nodes[static_cast<size_t>(i)].kv_read(k(key), t_min, at);
    return r;
  }
};

}  // namespace

TEST_CASE("instance p carries period p's writes and finishes R cycles after the period ends", "[ic][node]") {
  Cluster c(4, ic_config(1, 2));  // P = 2, R = 2
  const IcNode& a = c.nodes[0];
  CHECK(a.rounds() == 2);
  CHECK(a.instance_of(0) == 0);
  CHECK(a.instance_of(2 * kCycle - 1) == 0);
  CHECK(a.instance_of(2 * kCycle) == 1);
  CHECK(a.start_cycle(0) == 2);
  CHECK(a.finish_ns(0) == 4 * kCycle);
  CHECK(a.finish_ns(3) == 10 * kCycle);
  c.run_to(1);
  CHECK(c.nodes[0].next_deadline_ns() == kCycle);
}

TEST_CASE("every node publishes the same value, visible exactly at its publishing time", "[ic][node]") {
  Cluster c(4, ic_config(1));
  const int64_t t_pub = c.nodes[0].finish_ns(0);  // cycle 3: period 0, rounds in cycles 1 and 2
  REQUIRE(t_pub == 3 * kCycle);
  for (int i = 0; i < 4; ++i) {
    const KvWriteResult w = c.write(i, "state", t_pub, {1, 2, 3}, 100'000 + i * 1000);
    REQUIRE(w.status == KvWriteStatus::ok);
    CHECK(w.instance == 0);
    CHECK(w.finish_ns == t_pub);
    REQUIRE(c.write(i, "m/speed", t_pub + kCycle / 2, f64(10.0 + i), 200'000).status == KvWriteStatus::ok);
  }
  c.run_to(t_pub - 1);
  for (int i = 0; i < 4; ++i) CHECK(c.read(i, "state", 0, t_pub - 1).status == KvStatus::never_written);
  c.run_to(5 * kCycle);
  for (int i = 0; i < 4; ++i) {
    INFO("node " << i);
    CHECK(c.finished_at[static_cast<size_t>(i)].at(0) == t_pub);
    CHECK(c.pubs[static_cast<size_t>(i)].at(0) == c.pubs[0].at(0));
    CHECK(c.decisions[static_cast<size_t>(i)].at(0) == c.decisions[0].at(0));
    CHECK(c.defaulted[static_cast<size_t>(i)].at(0) == 0);  // every round data on time
    const KvRead before = c.read(i, "state", 0, t_pub - 1);
    CHECK(before.status == KvStatus::not_fresh);
    const KvRead at = c.read(i, "state", t_pub, t_pub);
    REQUIRE(at.status == KvStatus::ok);
    CHECK(Bytes(at.value.begin(), at.value.end()) == Bytes{1, 2, 3});
    CHECK(c.read(i, "m/speed", t_pub, t_pub + kCycle / 2 - 1).status == KvStatus::not_fresh);
    const KvRead speed = c.read(i, "m/speed", 0, t_pub + kCycle / 2);
    REQUIRE(speed.status == KvStatus::ok);
    double v = 0;
    REQUIRE(decode_f64(speed.value, v));
    CHECK(v == 11.0);  // lower median of 10, 11, 12, 13
  }
  // An instance with no writes still runs (empty batches) and publishes nothing.
  CHECK(c.pubs[0].count(1) == 1);
  CHECK(c.pubs[0].at(1).empty());
}

TEST_CASE("writes are refused at once: too late, over the bounds, not a number", "[ic][node]") {
  Cluster c(4, ic_config(1));
  const int64_t fin = c.nodes[0].finish_ns(0);
  const KvWriteResult late = c.write(0, "x", fin - 1, {1}, 10);
  CHECK(late.status == KvWriteStatus::too_late);
  CHECK(late.finish_ns == fin);
  CHECK(c.write(0, "", fin, {1}, 10).status == KvWriteStatus::empty_key);
  CHECK(c.write(0, std::string(17, 'k'), fin, {1}, 10).status == KvWriteStatus::key_too_long);
  CHECK(c.write(0, "x", fin, Bytes(9, 0), 10).status == KvWriteStatus::value_too_long);
  CHECK(c.write(0, "m/x", fin, Bytes{1, 2}, 10).status == KvWriteStatus::bad_number);
  for (int key = 0; key < 8; ++key) REQUIRE(c.write(0, "k" + std::to_string(key), fin, {1}, 10).status == KvWriteStatus::ok);
  CHECK(c.write(0, "k0", fin, {2}, 10).status == KvWriteStatus::ok);  // same (key, t_pub): replaced
  CHECK(c.write(0, "k8", fin, {1}, 10).status == KvWriteStatus::too_many_keys);
  // The next period starts a new batch.
  CHECK(c.write(0, "k8", c.nodes[0].finish_ns(1), {1}, kCycle).status == KvWriteStatus::ok);
  CHECK(c.nodes[0].counters().writes_refused == 6);
  c.nodes[1].stop();
  CHECK(c.write(1, "x", fin, {1}, 10).status == KvWriteStatus::stopped);
}

TEST_CASE("IC configuration errors name the bound", "[ic][node]") {
  const NodeConfig nc = node_config(4, 0);
  const auto err = [&](IcConfig ic) {
    auto r = IcNode::create(nc, ic);
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  IcConfig ic = ic_config(1);
  ic.f = 2;
  CHECK(err(ic).find("N > 3f") != std::string::npos);
  ic = ic_config(1);
  ic.value_bytes_max = 4;
  CHECK(err(ic).find("numeric reductions need values of 8 bytes") != std::string::npos);
  ic = ic_config(1);
  ic.chunk_bytes = 1441;
  CHECK(err(ic).find("chunk size") != std::string::npos);
  ic = ic_config(1);
  ic.tree_bytes_max = 1000;
  CHECK(err(ic).find("EIG tree") != std::string::npos);
  ic = ic_config(1);
  ic.keys_per_period_max = 0;
  CHECK(err(ic).find("keys per period") != std::string::npos);
  ic = ic_config(1);
  ic.period_cycles = 0;
  CHECK(err(ic).find("period") != std::string::npos);
  ic = ic_config(1);
  ic.key_classes.push_back({"", Reduction::majority});
  CHECK(err(ic).find("prefix") != std::string::npos);
  ic = ic_config(1);
  ic.copies = 5;
  CHECK(err(ic).find("copies") != std::string::npos);
}

TEST_CASE("pipelined instances: P = 1 with R = 3 keeps three in flight, one finishing per cycle",
          "[ic][node]") {
  Cluster c(7, ic_config(2, 1));
  CHECK(c.nodes[0].rounds() == 3);
  for (int p = 0; p < 4; ++p) {
    c.run_to(p * kCycle + 10);
    for (int i = 0; i < 7; ++i)
      REQUIRE(c.write(i, "s", c.nodes[0].finish_ns(static_cast<uint64_t>(p)), {static_cast<uint8_t>(p)}, c.now)
                  .status == KvWriteStatus::ok);
  }
  c.run_to(8 * kCycle);
  for (uint64_t p = 0; p < 4; ++p) {
    INFO("instance " << p);
    CHECK(c.finished_at[3].at(p) == static_cast<int64_t>(p + 1 + 3) * kCycle);
    REQUIRE(c.pubs[3].at(p).size() == 1);
    CHECK(c.pubs[3].at(p)[0].value == Bytes{static_cast<uint8_t>(p)});
    for (int i = 0; i < 7; ++i) CHECK(c.pubs[static_cast<size_t>(i)].at(p) == c.pubs[3].at(p));
  }
  // At t = 4 cycles + 1: instance 0 done; reads with freshness at its t_pub see value 0.
  CHECK(c.read(5, "s", 0, 4 * kCycle).value[0] == 0);
  CHECK(c.read(5, "s", 0, 7 * kCycle).value[0] == 3);
}

TEST_CASE("an omitting node is the default everywhere; the others' values still publish", "[ic][node][byzantine]") {
  Cluster c(4, ic_config(1));
  c.set_fault(3, {IcFaultMode::omit, 0});
  for (int i = 0; i < 4; ++i) REQUIRE(c.write(i, "v", c.nodes[0].finish_ns(0), {9}, 5).status == KvWriteStatus::ok);
  c.run_to(4 * kCycle);
  for (int i = 0; i < 3; ++i) {
    IcDecision d;
    const Bytes& e = c.decisions[static_cast<size_t>(i)].at(0);
    d.entries = e;
    d.nodes = 4;
    d.entry_bytes = e.size() / 4;
    std::span<const uint8_t> v;
    CHECK_FALSE(d.value(3, v));
    CHECK(d.value(0, v));
    CHECK(e == c.decisions[0].at(0));
    REQUIRE(c.pubs[static_cast<size_t>(i)].at(0).size() == 1);
    CHECK(c.pubs[static_cast<size_t>(i)].at(0)[0].status == ReduceStatus::ok);
    // The decision names the sender taken as ⊥, and only it (docs/protocol-ic.md "Agreement and
    // the fault hypothesis").
    CHECK(c.defaulted[static_cast<size_t>(i)].at(0) == uint64_t{1} << 3);
  }
  // Node 3's rounds finalised by cycle 4: instance 0 rounds 1-2, instance 1 rounds 1-2, instance 2 round 1.
  CHECK(c.nodes[0].counters().messages_default == 5);
}

TEST_CASE("a lying or garbling node (test knobs) cannot split the correct nodes", "[ic][node][byzantine]") {
  for (IcFaultMode mode : {IcFaultMode::lie, IcFaultMode::garble}) {
    Cluster c(4, ic_config(1));
    c.set_fault(1, {mode, 12345});
    for (int p = 0; p < 3; ++p) {
      c.run_to(p * kCycle + 5);
      for (int i = 0; i < 4; ++i) {
        REQUIRE(c.write(i, "v", c.nodes[0].finish_ns(static_cast<uint64_t>(p)), {static_cast<uint8_t>(p)}, c.now).status ==
                KvWriteStatus::ok);
        REQUIRE(c.write(i, "m/t", c.nodes[0].finish_ns(static_cast<uint64_t>(p)), f64(20.0 + 0.01 * i), c.now).status ==
                KvWriteStatus::ok);
      }
    }
    c.run_to(6 * kCycle);
    for (uint64_t p = 0; p < 3; ++p) {
      INFO("mode " << static_cast<int>(mode) << " instance " << p);
      for (int i : {0, 2, 3}) {
        CHECK(c.decisions[static_cast<size_t>(i)].at(p) == c.decisions[0].at(p));
        CHECK(c.pubs[static_cast<size_t>(i)].at(p) == c.pubs[0].at(p));
      }
      for (const Pub& pub : c.pubs[0].at(p)) {
        CHECK(pub.status == ReduceStatus::ok);
        if (pub.key == "v") CHECK(pub.value == Bytes{static_cast<uint8_t>(p)});
        if (pub.key == "m/t") {
          double v = 0;
          REQUIRE(decode_f64(pub.value, v));
          CHECK(v >= 20.0);
          CHECK(v <= 20.03);
        }
      }
    }
  }
}

TEST_CASE("a node that starts late takes part from the next instance on", "[ic][node]") {
  Cluster c(4, ic_config(1));
  c.alive[2] = false;
  c.run_to(kCycle + kCycle / 2);  // instance 0 started at cycle 1 without node 2
  c.alive[2] = true;
  c.run_to(6 * kCycle);
  CHECK(c.decisions[2].count(0) == 0);
  CHECK(c.decisions[2].count(1) == 1);
  CHECK(c.decisions[2].at(1) == c.decisions[0].at(1));
  CHECK(c.nodes[2].counters().frames_rx[static_cast<int>(IcFrameVerdict::stale)] > 0);
}

TEST_CASE("frames the IC node must refuse, each with its verdict", "[ic][node][malformed]") {
  auto made = IcNode::create(node_config(4, 0), ic_config(1));
  REQUIRE(made.ok());
  IcNode node = std::move(made.value());
  const Schedule& s = node.schedule();
  node.on_time(kCycle);  // instance 0 starts: round 1 in cycle 1
  (void)node.take_actions();
  const size_t msg1 = node.entry_bytes();
  Bytes message(msg1, 0);
  store_be32(message.data(), kEigBottom);

  const auto frame = [&](NodeId sender, uint64_t cycle, uint64_t instance, uint8_t round, const Bytes& m,
                         uint16_t cluster = 1) {
    IcFrameParams p;
    p.cluster_id = cluster;
    p.sender = sender;
    p.cycle = cycle;
    Bytes out(4 * 1500);
    size_t lengths[4];
    const IcMessage msgs[] = {{instance, round, m}};
    REQUIRE(encode_ic_frames(msgs, p, out, lengths) == 1);
    out.resize(lengths[0]);
    return out;
  };
  const auto deliver = [&](const Bytes& b, int64_t rx) {
    const DecodeResult d = decode_frame(b);
    REQUIRE(d.ok());
    const IcFrameVerdict v = node.on_frame(d.view, rx);
    (void)node.take_actions();
    return v;
  };
  const int64_t in_window = s.transmit_ns(1, 2, 2);
  CHECK(deliver(frame(2, 1, 0, 1, message, 9), in_window) == IcFrameVerdict::wrong_cluster);
  CHECK(deliver(frame(0, 1, 0, 1, message), in_window) == IcFrameVerdict::own_frame);
  CHECK(deliver(frame(5, 1, 0, 1, message), in_window) == IcFrameVerdict::unknown_sender);
  CHECK(deliver(frame(2, 1, 0, 1, message), s.slot_end_ns(1, 2)) == IcFrameVerdict::outside_window);  // late
  CHECK(deliver(frame(2, 1, 0, 1, message), s.transmit_ns(1, 1, 2)) == IcFrameVerdict::outside_window);  // 1's slot
  CHECK(deliver(frame(2, 1, 7, 1, message), in_window) == IcFrameVerdict::stale);       // no such instance
  CHECK(deliver(frame(2, 1, 0, 2, Bytes(4 * msg1, 0)), in_window) == IcFrameVerdict::malformed);  // round 2 now?
  CHECK(deliver(frame(2, 1, 0, 1, Bytes(msg1 + 1, 0)), in_window) == IcFrameVerdict::malformed);  // wrong length
  CHECK(deliver(frame(2, 1, 0, 1, message), in_window) == IcFrameVerdict::accepted);
  CHECK(deliver(frame(2, 1, 0, 1, message), in_window + 10) == IcFrameVerdict::duplicate);  // second copy
  {
    Bytes slot = frame(3, 1, 0, 1, message);
    slot[3] = 1;  // a slot frame is the ordering engine's
    store_be32(slot.data() + slot.size() - 4, crc32c(std::span<const uint8_t>(slot).first(slot.size() - 4)));
    CHECK(deliver(slot, s.transmit_ns(1, 3, 2)) == IcFrameVerdict::not_ic);
  }
  {
    // A chunk index beyond the message's chunks.
    Bytes f = frame(3, 1, 0, 1, message);
    store_be16(f.data() + kHeaderBytes + kSectionHeaderBytes + 10, 1);
    store_be32(f.data() + f.size() - 4, crc32c(std::span<const uint8_t>(f).first(f.size() - 4)));
    CHECK(deliver(f, s.transmit_ns(1, 3, 2)) == IcFrameVerdict::malformed);
  }
  CHECK(node.counters().frames_rx[static_cast<int>(IcFrameVerdict::accepted)] == 1);
}

TEST_CASE("randomly mutated round data from one node never crashes a node or splits the others",
          "[ic][node][byzantine]") {
  std::mt19937_64 rng(11);
  Cluster c(4, ic_config(1));
  c.net = [&](int from, int, Bytes& b) {
    if (from != 2) return true;
    if (rng() % 8 == 0) return false;
    const int flips = static_cast<int>(rng() % 6);
    for (int i = 0; i < flips; ++i) {
      const size_t at = kHeaderBytes + rng() % (b.size() - kHeaderBytes - kTrailerBytes);
      b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    return true;
  };
  for (int p = 0; p < 20; ++p) {
    c.run_to(p * kCycle + 7);
    for (int i = 0; i < 4; ++i)
      REQUIRE(c.write(i, "v", c.nodes[0].finish_ns(static_cast<uint64_t>(p)), {static_cast<uint8_t>(p), 1}, c.now).status ==
              KvWriteStatus::ok);
  }
  c.run_to(24 * kCycle);
  for (uint64_t p = 0; p < 20; ++p)
    for (int i : {1, 3}) {
      CHECK(c.decisions[static_cast<size_t>(i)].at(p) == c.decisions[0].at(p));
      CHECK(c.pubs[static_cast<size_t>(i)].at(p) == c.pubs[0].at(p));
      REQUIRE(c.pubs[0].at(p).size() == 1);
      CHECK(c.pubs[0].at(p)[0].value == Bytes{static_cast<uint8_t>(p), 1});
    }
  CHECK(c.nodes[0].counters().chunks_malformed + c.nodes[0].counters().messages_default > 0);
}

}  // namespace tob::core

namespace tob::core {

TEST_CASE("random ic frames (valid CRC, random sections and chunk headers) never break a node",
          "[ic][node][malformed]") {
  auto made = IcNode::create(node_config(4, 0), ic_config(1));
  REQUIRE(made.ok());
  IcNode node = std::move(made.value());
  const Schedule& s = node.schedule();
  std::mt19937_64 rng(99);
  node.on_time(kCycle);
  (void)node.take_actions();
  uint64_t seen[kIcFrameVerdictCount] = {};
  for (int trial = 0; trial < 20000; ++trial) {
    const int64_t cycle = 1 + trial / 2000;  // time moves on: instances start, finish, publish
    const auto sender = static_cast<NodeId>(1 + rng() % 3);
    FrameHeader h;
    h.kind = FrameKind::ic;
    h.cluster_id = 1;
    h.sender = sender;
    h.cycle = static_cast<uint64_t>(cycle + static_cast<int64_t>(rng() % 8 == 0 ? 1 : 0));
    Bytes buf(1500);
    FrameWriter w(buf);
    REQUIRE(w.begin(h));
    const int sections = static_cast<int>(rng() % 4);
    for (int k = 0; k < sections; ++k) {
      Bytes body(rng() % 200, 0);
      for (auto& b : body) b = static_cast<uint8_t>(rng());
      if (body.size() >= kIcChunkHeaderBytes && rng() % 2 == 0) {
        // Plausible headers: an instance in flight, a small round and chunk, the right length.
        store_be64(body.data(), static_cast<uint64_t>(cycle - 1 - static_cast<int64_t>(rng() % 2)));
        body[8] = static_cast<uint8_t>(1 + rng() % 3);
        body[9] = 0;
        store_be16(body.data() + 10, static_cast<uint16_t>(rng() % 3));
        store_be32(body.data() + 12, static_cast<uint32_t>(node.entry_bytes() * (rng() % 2 == 0 ? 1 : 4)));
      }
      REQUIRE(w.add_section(rng() % 5 == 0 ? SectionType::app_batch : SectionType::ic_round, 0, body));
    }
    const size_t len = w.finish();
    REQUIRE(len > 0);
    const DecodeResult d = decode_frame(std::span<const uint8_t>(buf).first(len));
    REQUIRE(d.ok());
    const int64_t rx = s.transmit_ns(cycle, sender, 2) + static_cast<int64_t>(rng() % 1000);
    const IcFrameVerdict v = node.on_frame(d.view, rx);
    REQUIRE(static_cast<int>(v) < kIcFrameVerdictCount);
    ++seen[static_cast<int>(v)];
    (void)node.take_actions();
  }
  node.on_time(20 * kCycle);
  const IcActions& a = node.take_actions();
  CHECK(node.counters().instances_finished >= 15);
  CHECK(seen[static_cast<int>(IcFrameVerdict::malformed)] > 0);
  CHECK(seen[static_cast<int>(IcFrameVerdict::stale)] + seen[static_cast<int>(IcFrameVerdict::outside_window)] > 0);
  (void)a;
}

}  // namespace tob::core

namespace tob::core {

TEST_CASE("a node called after its transmit instant skips that round's data instead of sending it late",
          "[ic][node]") {
  auto made = IcNode::create(node_config(4, 0), ic_config(1));
  REQUIRE(made.ok());
  IcNode node = std::move(made.value());
  node.on_time(0);
  (void)node.take_actions();
  const int64_t tx = node.schedule().transmit_ns(1, 0, 2);
  node.on_time(tx + 1);  // boundary 1 (instance 0, round 1) processed only now
  const IcActions& a = node.take_actions();
  CHECK(a.tx.empty());
  CHECK(a.rounds.empty());
  CHECK(node.counters().rounds_missed == 1);
  node.on_time(2 * kCycle);  // on time again: round 2 goes out
  const IcActions& b = node.take_actions();
  REQUIRE(b.rounds.size() == 2);  // instance 0 round 2, instance 1 round 1
  const IcMessage msgs[] = {{b.rounds[0].instance, 2, b.rounds[0].message}, {b.rounds[1].instance, 1, b.rounds[1].message}};
  IcFrameParams p;
  CHECK(b.tx.size() == ic_frame_count(msgs, p));  // 4 x 296 + 296 bytes: two frames
  for (const TxFrame& t : b.tx) CHECK(t.tx_ns == node.schedule().transmit_ns(2, 0, 2));
}

// The control lcore asks for actions after every input and once more per loop turn: a second
// call without an input in between must not hand out the same frames and decisions again (it
// did, and the daemon sent every IC frame many times over and published decisions twice).
TEST_CASE("take_actions hands out each output once", "[ic][node]") {
  auto made = IcNode::create(node_config(4, 0), ic_config(1));
  REQUIRE(made.ok());
  IcNode node = std::move(made.value());
  node.on_time(kCycle);  // instance 0 starts: round 1 frames in cycle 1
  const size_t frames = node.take_actions().tx.size();
  CHECK(frames > 0);
  CHECK(node.take_actions().tx.empty());
  CHECK(node.take_actions().decisions.empty());
  node.on_time(kCycle);  // an input with nothing new
  CHECK(node.take_actions().tx.empty());
}

}  // namespace tob::core
