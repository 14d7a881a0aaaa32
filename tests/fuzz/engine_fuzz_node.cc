#include "engine_fuzz_node.h"

#include "core/mars_node.h"

#include <bit>
#include <utility>

namespace tob::fuzz {

core::NodeConfig fuzz_node_config(core::Order order, core::NodeId self) {
  core::NodeConfig c;
  c.schedule = core::ScheduleConfig::equal_slots(kFuzzNodes, kFuzzCycleNs);
  c.self = self;
  c.queue_msgs_max = 64;  // small: the fuzzer fills it
  c.queue_bytes_max = 16 * 1024;
  c.payload_bytes_max = 256;
  c.batch_msgs_max = 16;
  c.frame_flags = core::kFlagAuthenticated;  // as with [security]: the driver seals every frame
  if (order == core::Order::otfp) c = core::OtfpNode::budget_config(c);
  return c;
}

EngineFuzzNode::EngineFuzzNode(std::unique_ptr<core::Engine> engine, const core::NodeConfig& config)
    : engine_(std::move(engine)), config_(config) {}

void EngineFuzzNode::collect(std::vector<SentFrame>& out) {
  take(out);
  // The log is durable at once: the engine hears so and may act on it (more outputs).
  if (engine_->order() != core::Order::otfp) return;
  const auto& otfp = static_cast<const core::OtfpNode&>(*engine_);
  for (int round = 0; otfp.durable_bytes() < persisted_; ++round) {
    check(round < 16, "the log catches up with durability in a few rounds");
    engine_->on_durable(persisted_);
    take(out);
  }
}

void EngineFuzzNode::take(std::vector<SentFrame>& out) {
  const core::Actions& a = engine_->take_actions();
  persisted_ += a.persist.size();
  for (const core::TxFrame& tx : a.tx) {
    check(tx.bytes.size() >= core::kMinFrameBytes && tx.bytes.size() <= config_.frame_bytes_max,
          "a frame the engine sends has a length within the frame bound");
    out.push_back({tx.tx_ns, config_.self, std::vector<uint8_t>(tx.bytes.begin(), tx.bytes.end())});
  }
  for (const core::Delivery& d : a.deliveries) check_delivery(d);
  check(a.tx.size() <= 64, "frames per call bounded");
  check(a.events.size() <= 4 * core::kMaxNodes, "membership events per call bounded");
}

void EngineFuzzNode::check_delivery(const core::Delivery& d) {
  check(d.sender < kFuzzNodes, "delivered from a node of the cluster");
  // Not payload_bytes_max: a node checks its own submissions against it, not its peers' batches
  // (docs/fuzzing.md "Findings").
  check(d.payload.size() <= core::kMaxFrameBytes, "delivered payload within one frame");
  check(d.turn_seq >= last_turn_seq_, "delivery order never goes back (turn)");
  if (d.turn_seq == last_turn_seq_) {
    check(d.sender >= last_sender_, "delivery order never goes back (sender within a turn)");
    if (d.sender == last_sender_) check(d.cycle == last_cycle_, "a (turn, sender) delivers the batch of one cycle");
  }
  check(d.deliver_ns >= last_deliver_ns_, "delivery instants never go back");
  last_turn_seq_ = d.turn_seq;
  last_sender_ = d.sender;
  last_cycle_ = d.cycle;
  last_deliver_ns_ = d.deliver_ns;
  ++delivered_;
}

void EngineFuzzNode::assign(const FuzzNode& other) {
  const auto& o = static_cast<const EngineFuzzNode&>(other);
  check(o.engine_->order() == engine_->order() && o.config_.self == config_.self, "assign: a node of the same kind");
  if (engine_->order() == core::Order::mars)
    static_cast<core::MarsNode&>(*engine_) = static_cast<const core::MarsNode&>(*o.engine_);
  else
    static_cast<core::OtfpNode&>(*engine_) = static_cast<const core::OtfpNode&>(*o.engine_);
  persisted_ = o.persisted_;
  delivered_ = o.delivered_;
  last_turn_seq_ = o.last_turn_seq_;
  last_sender_ = o.last_sender_;
  last_cycle_ = o.last_cycle_;
  last_deliver_ns_ = o.last_deliver_ns_;
  last_low_ = o.last_low_;
}

void EngineFuzzNode::load(FuzzInput& in, int64_t now_ns) {
  const uint16_t client = in.u8();
  const size_t len = in.u8() * 2u;  // up to 510 bytes: some above payload_bytes_max
  std::vector<uint8_t> payload(len, static_cast<uint8_t>(client));
  engine_->submit(client, payload, now_ns);
}

void EngineFuzzNode::check_state() {
  check(engine_->queued() <= config_.queue_msgs_max, "submit queue within its capacity");
  check(engine_->self() == config_.self, "the node keeps its identity");
  if (engine_->order() == core::Order::mars)
    check(engine_->member_count() == std::popcount(engine_->members()), "member count is the member set's");
  if (engine_->order() == core::Order::otfp) {
    const auto& otfp = static_cast<const core::OtfpNode&>(*engine_);
    check(otfp.durable_bytes() <= otfp.persisted_bytes(), "durable log within the log written");
    check(otfp.lowest_undelivered() >= last_low_, "the lowest undelivered instance never goes back");
    last_low_ = otfp.lowest_undelivered();
  }
}

}  // namespace tob::fuzz
