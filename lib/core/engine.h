// The interface both ordering engines present to their drivers (DESIGN §3): the daemon and the
// simulator drive a core::Engine without knowing whether it is `mars` (core::Node, seed 000) or
// `otfp` (core::OtfpNode, seed 002). Inputs in, actions out; no clock, no I/O, no allocation
// after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/node.h"

namespace tob::core {

enum class Order : uint8_t { mars, otfp };
const char* to_string(Order o);

class Engine {
 public:
  virtual ~Engine() = default;

  virtual void on_time(int64_t now_ns) = 0;
  virtual FrameVerdict on_frame(const FrameView& frame, int64_t rx_ns) = 0;
  virtual SubmitResult submit(uint16_t client, std::span<const uint8_t> payload, int64_t submit_ns) = 0;
  // Outputs accumulated since the last call (a second call without an input in between returns
  // nothing new); valid until the next on_time/on_frame/stop.
  virtual const Actions& take_actions() = 0;
  virtual void stop() = 0;
  // Next instant at which on_time must be called.
  virtual int64_t next_deadline_ns() const = 0;
  // The driver made the first `persist_bytes` bytes of the log records this engine emitted
  // (Actions::persist, counted from its creation) durable. otfp acts on its own votes and
  // promises only from then on; mars emits no records.
  virtual void on_durable(uint64_t persist_bytes) { (void)persist_bytes; }

  virtual Order order() const = 0;
  virtual NodeId self() const = 0;
  virtual SelfState self_state() const = 0;
  virtual uint64_t members() const = 0;   // mars: the agreed membership; otfp: nodes heard recently
  virtual int member_count() const = 0;
  virtual Stage stage_of(NodeId n) const = 0;
  virtual const Schedule& schedule() const = 0;
  virtual const NodeCounters& counters() const = 0;
  virtual size_t queued() const = 0;
  virtual int64_t current_cycle() const = 0;
};

// Replays the acceptor log of an otfp node (its own earlier life); empty for mars or a fresh node.
Result<std::unique_ptr<Engine>> make_engine(Order order, const NodeConfig& config,
                                            std::span<const uint8_t> otfp_log = {});

}  // namespace tob::core
