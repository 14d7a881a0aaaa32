// The daemon's built-in load generators (docs/operations.md), run by the control role:
//   MessageGenerator  --gen-rate/--gen-size/--gen-count: messages submitted to the engine at a
//                     fixed rate, with a readable payload ("n<node> #<count>" then a pattern);
//   IcKeyGenerator    --ic-gen-keys: every key written once per IC period, published at the
//                     earliest instant (majority keys alike on every node, numeric ones slightly
//                     different per node, as replicated sensors are).
// Bounded work per call, no allocation after construction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine.h"
#include "core/ic_node.h"
#include "dataplane/config/options.h"
#include "dataplane/observe/stats.h"

namespace tob::dataplane {

class MessageGenerator {
 public:
  MessageGenerator(const DaemonOptions& options, core::NodeId self);
  // Submits what is due by now_ns (at most a burst); returns how many.
  unsigned generate(core::Engine& engine, int64_t now_ns, ControlStats& stats);
  // When it wants to run again; INT64_MAX when it is done, off, or waits for room in the
  // engine's queue (retried at the engine's next turn: a due time in the past would keep the
  // loop from ever idling).
  int64_t next_due_ns() const;

 private:
  const DaemonOptions& o_;
  core::NodeId self_;
  int64_t interval_ns_ = 0;
  int64_t next_ns_ = 0;
  bool blocked_ = false;  // the last submission met backpressure
  uint64_t count_ = 0;
  uint8_t payload_[65535];
};

// Key i of the built-in writer: "<class prefix>gen<i>", over the configured key classes in turn
// and then the default reduction.
std::string ic_gen_key(const core::IcConfig& c, size_t i);

class IcKeyGenerator {
 public:
  IcKeyGenerator(const core::IcConfig& config, size_t keys, core::NodeId self);
  // Once per IC period: writes every key for the period's earliest publishing instant.
  unsigned generate(core::IcNode& ic, const core::Schedule& schedule, int64_t now_ns, ControlStats& stats);

 private:
  core::NodeId self_;
  std::vector<std::string> keys_;
  std::vector<core::Reduction> reductions_;
  int64_t last_instance_ = -1;
};

}  // namespace tob::dataplane
