// An interactive-consistency node (core/ic_node.h) as a node of a fuzzed cluster
// (docs/fuzzing.md). Checked on every output: instances finish in order, once, at their finish
// instant; a decision vector has one entry of the configured size per node; publications are
// within the batch and key bounds, and a value needs f + 1 copies; on the state: the store within
// its key capacity, instances finished never more than started.
#pragma once

#include "core/ic_node.h"
#include "fuzz_node.h"

namespace tob::fuzz {

class IcFuzzNode final : public FuzzNode {
 public:
  explicit IcFuzzNode(core::IcNode node) : node_(std::move(node)) {}

  void on_time(int64_t now_ns) override { node_.on_time(now_ns); }
  void on_frame(const core::FrameView& frame, int64_t rx_ns) override { node_.on_frame(frame, rx_ns); }
  int64_t next_deadline_ns() const override { return node_.next_deadline_ns(); }
  void collect(std::vector<SentFrame>& out) override;
  void load(FuzzInput& in, int64_t now_ns) override;
  void check_state() override;
  void assign(const FuzzNode& other) override {
    const auto& o = static_cast<const IcFuzzNode&>(other);
    node_ = o.node_;
    last_instance_ = o.last_instance_;
  }

  const core::IcNode& node() const { return node_; }

 private:
  void check_decision(const core::IcDecision& d);

  core::IcNode node_;
  int64_t last_instance_ = -1;
};

// The IC configuration of the fuzzed clusters: f = 1 on 4 nodes, an instance every cycle.
core::IcConfig fuzz_ic_config();

}  // namespace tob::fuzz
