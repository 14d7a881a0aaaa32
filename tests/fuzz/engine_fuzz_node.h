// An ordering engine (mars or otfp, core/engine.h) as a node of a fuzzed cluster
// (docs/fuzzing.md). The log of an otfp node is durable as soon as written (the simulator's
// fsync-free model). Checked on every output: deliveries never rewind (turn sequence and sender
// order), each (turn, sender) delivers one batch, payloads within their bound, outputs bounded;
// on the state: the submit queue within its capacity, the member set consistent with its count.
#pragma once

#include <memory>

#include "core/engine.h"
#include "core/otfp_node.h"
#include "fuzz_node.h"

namespace tob::fuzz {

class EngineFuzzNode final : public FuzzNode {
 public:
  EngineFuzzNode(std::unique_ptr<core::Engine> engine, const core::NodeConfig& config);

  void on_time(int64_t now_ns) override { engine_->on_time(now_ns); }
  void on_frame(const core::FrameView& frame, int64_t rx_ns) override { engine_->on_frame(frame, rx_ns); }
  int64_t next_deadline_ns() const override { return engine_->next_deadline_ns(); }
  void collect(std::vector<SentFrame>& out) override;
  void load(FuzzInput& in, int64_t now_ns) override;
  void check_state() override;
  void assign(const FuzzNode& other) override;

  const core::Engine& engine() const { return *engine_; }
  uint64_t delivered() const { return delivered_; }

 private:
  void check_delivery(const core::Delivery& d);
  void take(std::vector<SentFrame>& out);

  std::unique_ptr<core::Engine> engine_;
  core::NodeConfig config_;
  uint64_t persisted_ = 0;
  uint64_t delivered_ = 0;
  // The last delivery's place in the order: (turn, sender) never goes back, and a (turn, sender)
  // delivers the batch of one cycle.
  int64_t last_turn_seq_ = -1;
  int last_sender_ = -1;
  int64_t last_cycle_ = -1;
  int64_t last_deliver_ns_ = INT64_MIN;
  int64_t last_low_ = 0;  // otfp: the lowest undelivered instance last seen
};

// The engine configuration of node `self` in the fuzzed clusters (4 nodes, 100 us slots).
core::NodeConfig fuzz_node_config(core::Order order, core::NodeId self);
inline constexpr int kFuzzNodes = 4;
inline constexpr int64_t kFuzzCycleNs = 400'000;

}  // namespace tob::fuzz
