// Makes the ordering engine a cluster's configuration names (`order = mars | otfp`), so that the
// interface (core/engine.h) includes no engine.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/engine.h"

namespace tob::core {

// Replays the acceptor log of an otfp node (its own earlier life); empty for mars or a fresh node.
Result<std::unique_ptr<Engine>> make_engine(Order order, const NodeConfig& config,
                                            std::span<const uint8_t> otfp_log = {});

}  // namespace tob::core
