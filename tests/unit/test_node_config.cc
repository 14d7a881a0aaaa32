// MarsNode configuration validation (lib/core/node.h): every error names what to change, and the
// default configuration of a 4-node cluster creates a node.
#include <catch2/catch.hpp>

#include <string>

#include "core/mars_node.h"

namespace tob::core {
namespace {

NodeConfig default_config(NodeId self = 0) {
  NodeConfig c;
  c.schedule = ScheduleConfig::equal_slots(4, 1'000'000);
  c.self = self;
  return c;
}

void expect_error(const NodeConfig& c, const std::string& needle) {
  auto r = c.validate();
  REQUIRE_FALSE(r.ok());
  INFO("message: " << r.error().message);
  CHECK(r.error().message.find(needle) != std::string::npos);
  auto n = MarsNode::create(c);
  REQUIRE_FALSE(n.ok());
  CHECK(n.error().message == r.error().message);
}

// Header, trailer, membership section (4 + 8), batch section header, batch header, one entry.
constexpr size_t kOneMessageOverhead = kMinFrameBytes + 4 + 8 + 4 + kBatchHeaderBytes +
                                       kBatchEntryHeaderBytes;

}  // namespace

TEST_CASE("a default 4-node configuration validates and creates a node", "[node_config]") {
  for (NodeId self = 0; self < 4; ++self) {
    const NodeConfig c = default_config(self);
    REQUIRE(c.validate().ok());
    auto n = MarsNode::create(c);
    REQUIRE(n.ok());
    CHECK(n.value().self() == self);
    CHECK(n.value().self_state() == SelfState::listening);
    CHECK_FALSE(n.value().is_member());
    CHECK(n.value().member_count() == 0);
    CHECK(n.value().queued() == 0);
    CHECK(n.value().schedule().node_count() == 4);
  }
}

TEST_CASE("node config rejects a node id outside the schedule", "[node_config]") {
  expect_error(default_config(4), "node id 4 is not in the schedule (nodes 0..3)");
  expect_error(default_config(kNoNode), "is not in the schedule");
}

TEST_CASE("node config passes schedule errors through", "[node_config]") {
  NodeConfig c = default_config();
  c.schedule.slots.clear();
  expect_error(c, "schedule has no slots");
  c = default_config();
  c.schedule.precision_ns = c.schedule.decision_margin_ns + 1;
  expect_error(c, "exceeds the decision margin");
}

TEST_CASE("node config rejects a frame too small for one message of the maximum payload",
          "[node_config]") {
  NodeConfig c = default_config();
  c.payload_bytes_max = 1024;
  c.frame_bytes_max = kOneMessageOverhead + 1024 - 1;
  expect_error(c, "cannot carry one message of the maximum payload");
  c.frame_bytes_max = kOneMessageOverhead + 1024;  // exactly enough
  CHECK(c.validate().ok());
  CHECK(MarsNode::create(c).ok());
  c.frame_bytes_max = 9001;
  expect_error(c, "above 9000 bytes");
}

TEST_CASE("node config rejects bad payload, queue and batch limits", "[node_config]") {
  NodeConfig c = default_config();
  c.payload_bytes_max = 0;
  expect_error(c, "payload size must be 1..65535");
  c = default_config();
  c.payload_bytes_max = 65536;
  expect_error(c, "payload size must be 1..65535");
  c = default_config();
  c.queue_msgs_max = 0;
  expect_error(c, "queue must hold at least one message");
  c = default_config();
  c.queue_bytes_max = c.payload_bytes_max - 1;
  expect_error(c, "queue bytes must be at least the maximum payload");
  c = default_config();
  c.batch_msgs_max = 0;
  expect_error(c, "batch size must be 1..16384");
  c.batch_msgs_max = 16385;
  expect_error(c, "batch size must be 1..16384");
}

TEST_CASE("node config rejects bad membership timing knobs", "[node_config]") {
  NodeConfig c = default_config();
  c.two_member_wait_cycles = 0;
  expect_error(c, "two-member wait");
  c = default_config();
  c.rejoin_silence_cycles = 1;
  expect_error(c, "rejoin silence must be at least two cycles");
  c = default_config();
  c.stall_limit_ns = -1;
  expect_error(c, "stall limit must not be negative");
}

}  // namespace tob::core
