// core::MarsNode driven directly, without the simulator: what it does with each kind of bad frame,
// backpressure, its first announcement, and a timing failure of its own driver.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "core/bytes.h"
#include "core/mars_node.h"

namespace tob::core {
namespace {

constexpr int64_t kCycle = 1'000'000;

NodeConfig config(NodeId self) {
  NodeConfig c;
  c.schedule = ScheduleConfig::equal_slots(4, kCycle);
  c.self = self;
  return c;
}

struct Built {
  std::vector<uint8_t> bytes;
  FrameView view() const {
    auto d = decode_frame(bytes);
    REQUIRE(d.ok());
    return d.view;
  }
};

Built frame(NodeId sender, uint64_t cycle, Stage stage = Stage::active, uint16_t cluster = 1,
            uint8_t flags = 0) {
  Built b;
  b.bytes.resize(256);
  FrameHeader h;
  h.cluster_id = cluster;
  h.sender = sender;
  h.cycle = cycle;
  h.stage = stage;
  h.flags = flags;
  h.view_vector = 0xF;
  FrameWriter w(b.bytes);
  w.begin(h);
  b.bytes.resize(w.finish());
  return b;
}

// A frame of cluster 1 from a joining sender with one section whose body is given raw.
Built frame_with_section(NodeId sender, uint64_t cycle, SectionType type, std::span<const uint8_t> body,
                         uint16_t segment_index = 0, uint16_t segment_count = 1, uint8_t flags = 0) {
  Built b;
  b.bytes.resize(512);
  FrameHeader h;
  h.cluster_id = 1;
  h.sender = sender;
  h.cycle = cycle;
  h.stage = Stage::active;
  h.flags = flags;
  h.segment_index = segment_index;
  h.segment_count = segment_count;
  FrameWriter w(b.bytes);
  w.begin(h);
  w.add_section(type, 0, body);
  b.bytes.resize(w.finish());
  return b;
}

Built frame_with_section(NodeId sender, uint64_t cycle, SectionType type, std::vector<uint8_t> body) {
  return frame_with_section(sender, cycle, type, std::span<const uint8_t>(body));
}

MarsNode make(NodeId self) {
  auto n = MarsNode::create(config(self));
  REQUIRE(n.ok());
  return std::move(n.value());
}

int64_t in_window(const MarsNode& n, int64_t cycle, NodeId sender) {
  return n.schedule().transmit_ns(cycle, sender) + 20'000;
}

// Four nodes on one timeline with a perfect network (each frame arrives 20 us after it left).
struct Cluster {
  std::vector<MarsNode> nodes;
  struct Pending {
    int64_t at;
    int from;
    std::vector<uint8_t> bytes;
  };
  std::vector<Pending> pending;
  int64_t now = 0;
  std::vector<MembershipEvent> events[4];

  Cluster() {
    for (NodeId i = 0; i < 4; ++i) nodes.push_back(make(i));
  }
  void collect(int i) {
    const Actions& a = nodes[static_cast<size_t>(i)].take_actions();
    for (const TxFrame& tx : a.tx) pending.push_back({tx.tx_ns + 20'000, i, {tx.bytes.begin(), tx.bytes.end()}});
    for (const MembershipEvent& e : a.events) events[i].push_back(e);
  }
  void run_until(int64_t end, int skip = -1) {
    for (int i = 0; i < 4; ++i) {
      nodes[static_cast<size_t>(i)].on_time(now);
      collect(i);
    }
    while (true) {
      int64_t next = end + 1;
      for (int i = 0; i < 4; ++i)
        if (i != skip) next = std::min(next, nodes[static_cast<size_t>(i)].next_deadline_ns());
      auto it = std::min_element(pending.begin(), pending.end(),
                                 [](const Pending& a, const Pending& b) { return a.at < b.at; });
      if (it != pending.end() && it->at <= next && it->at <= end) {
        const Pending p = *it;
        pending.erase(it);
        now = p.at;
        const DecodeResult d = decode_frame(p.bytes);
        REQUIRE(d.ok());
        for (int i = 0; i < 4; ++i) {
          if (i == p.from || i == skip) continue;
          nodes[static_cast<size_t>(i)].on_frame(d.view, now);
          collect(i);
        }
        continue;
      }
      if (next > end) break;
      now = next;
      for (int i = 0; i < 4; ++i) {
        if (i == skip || nodes[static_cast<size_t>(i)].next_deadline_ns() > now) continue;
        nodes[static_cast<size_t>(i)].on_time(now);
        collect(i);
      }
    }
    now = end;
  }
};

}  // namespace

TEST_CASE("a node rejects frames of other clusters, unknown senders and its own frames") {
  MarsNode n = make(3);
  n.on_time(0);
  CHECK(n.on_frame(frame(1, 0, Stage::active, 2).view(), in_window(n, 0, 1)) == FrameVerdict::wrong_cluster);
  CHECK(n.on_frame(frame(9, 0).view(), in_window(n, 0, 1)) == FrameVerdict::unknown_sender);
  CHECK(n.on_frame(frame(1, 0).view(), in_window(n, 0, 1)) == FrameVerdict::accepted);
  CHECK(n.on_frame(frame(3, 0).view(), in_window(n, 0, 3)) == FrameVerdict::own_frame);
  CHECK(n.counters().frames_rx[static_cast<int>(FrameVerdict::accepted)] == 1);
  CHECK(n.counters().frames_rx[static_cast<int>(FrameVerdict::wrong_cluster)] == 1);
}

TEST_CASE("frames outside their sender's reception window are timing failures") {
  MarsNode n = make(3);
  n.on_time(0);
  const Window w = n.schedule().reception_window(0, 1);
  CHECK(n.on_frame(frame(1, 0).view(), w.open_ns - 1) == FrameVerdict::outside_window);   // early
  CHECK(n.on_frame(frame(2, 0).view(), in_window(n, 0, 1)) == FrameVerdict::outside_window);  // not its slot
  CHECK(n.on_frame(frame(1, 5).view(), in_window(n, 0, 1)) == FrameVerdict::outside_window);  // wrong cycle
  CHECK(n.on_frame(frame(1, 0).view(), w.close_ns) == FrameVerdict::outside_window);          // late
}

TEST_CASE("the second copy of a pair and repeats are duplicates") {
  MarsNode n = make(3);
  n.on_time(0);
  CHECK(n.on_frame(frame(1, 0).view(), in_window(n, 0, 1)) == FrameVerdict::accepted);
  CHECK(n.on_frame(frame(1, 0, Stage::active, 1, kFlagSecondCopy).view(), in_window(n, 0, 1) + 5000) ==
        FrameVerdict::duplicate);
}

TEST_CASE("a frame with a malformed batch or membership section counts as an omission") {
  MarsNode n = make(3);
  n.on_time(0);
  std::vector<uint8_t> bad_batch = {0, 2, 0, 0, 1, 2, 3};  // claims two entries, has none
  CHECK(n.on_frame(frame_with_section(1, 0, SectionType::app_batch, bad_batch).view(), in_window(n, 0, 1)) ==
        FrameVerdict::malformed_section);
  CHECK(n.on_frame(frame_with_section(2, 0, SectionType::membership, {1, 2, 3}).view(), in_window(n, 0, 2)) ==
        FrameVerdict::malformed_section);
  CHECK(n.stage_of(1) == Stage::inactive);  // nothing of the frame was taken
}

TEST_CASE("submission is refused with backpressure when the queue is full, never dropped") {
  NodeConfig c = config(0);
  c.queue_msgs_max = 2;
  auto made = MarsNode::create(c);
  REQUIRE(made.ok());
  MarsNode& n = made.value();
  const uint8_t p[8] = {};
  CHECK(n.submit(0, p, 0).status == SubmitStatus::ok);
  CHECK(n.submit(0, p, 0).msg_id == 1);
  CHECK(n.submit(0, p, 0).status == SubmitStatus::backpressure);
  CHECK(n.queued() == 2);
  std::vector<uint8_t> big(c.payload_bytes_max + 1);
  CHECK(n.submit(0, big, 0).status == SubmitStatus::too_large);
  CHECK(n.counters().msgs_refused == 2);
}

TEST_CASE("a new node listens one cycle, then announces itself twice in its slot") {
  MarsNode n = make(2);
  n.on_time(0);
  CHECK(n.take_actions().tx.empty());
  n.on_time(n.schedule().membership_point_ns(0, 2));
  CHECK(n.take_actions().tx.empty());  // still listening in cycle 0
  n.on_time(n.schedule().membership_point_ns(1, 2));
  const Actions& a = n.take_actions();
  REQUIRE(a.tx.size() == 2);
  CHECK(a.tx[0].tx_ns == n.schedule().transmit_ns(1, 2, 0));
  CHECK(a.tx[1].tx_ns == n.schedule().transmit_ns(1, 2, 1));
  const DecodeResult d0 = decode_frame(a.tx[0].bytes);
  const DecodeResult d1 = decode_frame(a.tx[1].bytes);
  REQUIRE(d0.ok());
  REQUIRE(d1.ok());
  CHECK(d0.view.header.stage == Stage::active);
  CHECK(d0.view.header.flags == 0);
  CHECK(d1.view.header.flags == kFlagSecondCopy);
  CHECK(n.self_state() == SelfState::joining);
}

TEST_CASE("four nodes form a membership; a member called too late shuts itself down") {
  Cluster c;
  c.run_until(5 * kCycle);
  for (const MarsNode& n : c.nodes) {
    CHECK(n.is_member());
    CHECK(n.member_count() == 4);
  }
  // MarsNode 3's driver stalls for two cycles: a timing failure it must not act through.
  c.nodes[3].on_time(c.now + 2 * kCycle);
  c.collect(3);
  REQUIRE_FALSE(c.events[3].empty());
  CHECK(c.events[3].back().kind == EventKind::self_shutdown);
  CHECK(c.events[3].back().reason == Reason::scheduling_delay);
  CHECK_FALSE(c.nodes[3].is_member());
}

TEST_CASE("a silent member is removed by the others within two cycles") {
  Cluster c;
  c.run_until(5 * kCycle);
  const int64_t silenced = c.now;
  c.run_until(8 * kCycle, /*skip=*/1);
  for (int i : {0, 2, 3}) {
    bool removed = false;
    for (const MembershipEvent& e : c.events[i])
      if (e.kind == EventKind::removed && e.node == 1) {
        removed = true;
        CHECK(e.reason == Reason::sender_omission);
        CHECK(e.at_ns - silenced <= 2 * kCycle);
      }
    CHECK(removed);
    CHECK(c.nodes[static_cast<size_t>(i)].member_count() == 3);
  }
}

}  // namespace tob::core

namespace tob::core {
namespace {

// A segment of sender's batch for `cycle`: a valid batch section with `msgs` messages.
Built segment_frame(NodeId sender, uint64_t cycle, uint16_t index, uint16_t count, int msgs, uint8_t flags = 0) {
  std::vector<uint8_t> body(256);
  BatchWriter bw(body);
  const uint8_t payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int k = 0; k < msgs; ++k) REQUIRE(bw.add({static_cast<uint64_t>(index * 10 + k), 0, 7, payload}));
  body.resize(bw.finish());
  return frame_with_section(sender, cycle, SectionType::app_batch, std::span<const uint8_t>(body), index, count, flags);
}

MarsNode make_segmented(NodeId self) {
  NodeConfig c = config(self);
  c.frame_bytes_max = 256;
  c.payload_bytes_max = 100;
  c.rate_mbps = 1000;  // 250 us slots: 44 frames of 256 bytes per copy
  auto n = MarsNode::create(c);
  REQUIRE(n.ok());
  return std::move(n.value());
}

}  // namespace

TEST_CASE("segments of a slot's batch: each taken once, copies are duplicates, a count beyond the sender's budget is malformed") {
  MarsNode n = make_segmented(3);
  n.on_time(0);
  const int64_t at = in_window(n, 0, 1);
  CHECK(n.on_frame(segment_frame(1, 0, 1, 3, 2).view(), at) == FrameVerdict::accepted);
  CHECK(n.on_frame(segment_frame(1, 0, 1, 3, 2, kFlagSecondCopy).view(), at + 1000) == FrameVerdict::duplicate);
  CHECK(n.on_frame(segment_frame(1, 0, 0, 3, 3).view(), at + 2000) == FrameVerdict::accepted);
  CHECK(n.on_frame(segment_frame(1, 0, 2, 4, 1).view(), at + 3000) == FrameVerdict::malformed_section);  // count
  CHECK(n.on_frame(segment_frame(1, 0, 2, 3, 1).view(), at + 4000) == FrameVerdict::accepted);  // complete
  CHECK(n.on_frame(segment_frame(1, 0, 0, 3, 3, kFlagSecondCopy).view(), at + 5000) == FrameVerdict::duplicate);
  CHECK(n.stage_of(1) == Stage::active);  // the completed frame was taken
  // More segments than node 2's slot can carry at 1 Gbit/s.
  CHECK(n.on_frame(segment_frame(2, 0, 0, 45, 1).view(), in_window(n, 0, 2)) == FrameVerdict::malformed_section);
}

TEST_CASE("a partial batch is not the sender's frame: nothing of it is taken") {
  MarsNode n = make_segmented(3);
  n.on_time(0);
  CHECK(n.on_frame(segment_frame(1, 0, 0, 2, 1).view(), in_window(n, 0, 1)) == FrameVerdict::accepted);
  CHECK(n.stage_of(1) == Stage::inactive);  // its header (stage active) counts only once complete
}

TEST_CASE("without a rate a slot is one frame: a segment count above 1 is malformed") {
  MarsNode n = make(3);
  n.on_time(0);
  CHECK(n.on_frame(segment_frame(1, 0, 0, 2, 1).view(), in_window(n, 0, 1)) == FrameVerdict::malformed_section);
  CHECK(n.on_frame(segment_frame(1, 0, 0, 1, 1).view(), in_window(n, 0, 1)) == FrameVerdict::accepted);
}

}  // namespace tob::core
