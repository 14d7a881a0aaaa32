#include "core/engine_factory.h"

#include "core/mars_node.h"
#include "core/otfp_node.h"

namespace tob::core {

Result<std::unique_ptr<Engine>> make_engine(Order order, const NodeConfig& config, std::span<const uint8_t> log) {
  if (order == Order::mars) {
    auto node = MarsNode::create(config);
    if (!node) return node.error();
    return std::unique_ptr<Engine>(new MarsNode(std::move(node.value())));
  }
  auto node = OtfpNode::create(config, log);
  if (!node) return node.error();
  return std::unique_ptr<Engine>(std::move(node.value()));
}

}  // namespace tob::core
