#include "core/engine.h"

#include "core/otfp_node.h"

namespace tob::core {

const char* to_string(Order o) { return o == Order::mars ? "mars" : "otfp"; }

namespace {

// core::Node (MARS) behind the Engine interface.
class MarsEngine final : public Engine {
 public:
  explicit MarsEngine(Node node) : node_(std::move(node)) {}
  void on_time(int64_t now_ns) override { node_.on_time(now_ns); }
  FrameVerdict on_frame(const FrameView& f, int64_t rx_ns) override { return node_.on_frame(f, rx_ns); }
  SubmitResult submit(uint16_t client, std::span<const uint8_t> p, int64_t t) override {
    return node_.submit(client, p, t);
  }
  const Actions& take_actions() override { return node_.take_actions(); }
  void stop() override { node_.stop(); }
  int64_t next_deadline_ns() const override { return node_.next_deadline_ns(); }
  Order order() const override { return Order::mars; }
  NodeId self() const override { return node_.self(); }
  SelfState self_state() const override { return node_.self_state(); }
  uint64_t members() const override { return node_.members(); }
  int member_count() const override { return node_.member_count(); }
  Stage stage_of(NodeId n) const override { return node_.stage_of(n); }
  const Schedule& schedule() const override { return node_.schedule(); }
  const NodeCounters& counters() const override { return node_.counters(); }
  size_t queued() const override { return node_.queued(); }
  int64_t current_cycle() const override { return node_.current_cycle(); }

 private:
  Node node_;
};

}  // namespace

Result<std::unique_ptr<Engine>> make_engine(Order order, const NodeConfig& config, std::span<const uint8_t> log) {
  if (order == Order::mars) {
    auto node = Node::create(config);
    if (!node) return node.error();
    return std::unique_ptr<Engine>(new MarsEngine(std::move(node.value())));
  }
  auto node = OtfpNode::create(config, log);
  if (!node) return node.error();
  return std::unique_ptr<Engine>(std::move(node.value()));
}

}  // namespace tob::core
