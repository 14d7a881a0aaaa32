// TDMA schedule and time arithmetic (docs/architecture.md "Time and schedule", seed 000 §6.2).
//
// Time is int64 nanoseconds on the global (TAI) scale. Cycle c starts at epoch + c * cycle.
// Node n owns the slot [offset_n, offset_n + length_n) of every cycle. A node's *turn*:
//   membership point  = slot start (every node evaluates n's last message here)
//   transmit instant  = slot start + decision margin (n sends; the second copy follows)
//   guard             = the rest of the slot (propagation and reception)
// A frame of n is accepted only inside n's reception window
//   [transmit instant - precision, slot end)
// and anything outside it is a timing failure, treated as an omission.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/result.h"

namespace tob::core {

inline constexpr int kMaxNodes = 64;
using NodeId = uint8_t;
inline constexpr NodeId kNoNode = 0xFF;

struct SlotConfig {
  int64_t offset_ns = 0;
  int64_t length_ns = 0;
};

struct ScheduleConfig {
  int64_t epoch_ns = 0;
  int64_t cycle_ns = 0;
  int64_t decision_margin_ns = 0;  // membership point -> transmit instant
  int64_t precision_ns = 0;        // clock precision: how early a frame may arrive
  int64_t copy_gap_ns = 0;         // between the copies of a send-twice pair
  int sends_per_slot = 2;          // seed 000 §5.1: every message is sent twice
  std::vector<SlotConfig> slots;   // index = node id

  // N equal slots filling the cycle; margin, precision and copy gap scaled to the slot.
  static ScheduleConfig equal_slots(int nodes, int64_t cycle_ns, int64_t epoch_ns = 0);
};

struct Window {
  int64_t open_ns;   // inclusive
  int64_t close_ns;  // exclusive
  bool contains(int64_t t_ns) const { return t_ns >= open_ns && t_ns < close_ns; }
};

// A turn is identified by a global sequence number: seq = cycle * N + position in turn order.
struct Turn {
  int64_t seq;
  int64_t cycle;
  NodeId node;
  int64_t membership_point_ns;
};

class Schedule {
 public:
  static Result<Schedule> create(const ScheduleConfig& config);

  int node_count() const { return node_count_; }
  int64_t epoch_ns() const { return config_.epoch_ns; }
  int64_t cycle_ns() const { return config_.cycle_ns; }
  int sends_per_slot() const { return config_.sends_per_slot; }
  const ScheduleConfig& config() const { return config_; }

  // Cycle containing t (floor division, so instants before the epoch give negative cycles).
  int64_t cycle_of(int64_t t_ns) const;
  int64_t cycle_start_ns(int64_t cycle) const { return config_.epoch_ns + cycle * config_.cycle_ns; }

  int64_t membership_point_ns(int64_t cycle, NodeId node) const;
  int64_t transmit_ns(int64_t cycle, NodeId node, int copy = 0) const;
  int64_t slot_end_ns(int64_t cycle, NodeId node) const;
  Window reception_window(int64_t cycle, NodeId node) const;
  // A frame of (cycle, node) that a receiver found at polled_ns arrived after its poll before,
  // after_ns. When it looks late (polled after the window closed) but the window was still open
  // after after_ns, it may have come in time: the earliest instant in the window after after_ns.
  // Otherwise polled_ns itself (docs/architecture.md "Time and schedule").
  int64_t stamp_within(int64_t cycle, NodeId node, int64_t after_ns, int64_t polled_ns) const;

  // Turn order: nodes sorted by slot offset.
  int position_of(NodeId node) const { return position_[node]; }
  NodeId node_at(int position) const { return order_[static_cast<size_t>(position)]; }
  // Previous node in turn order (wrapping), whatever its stage.
  NodeId previous_in_order(NodeId node) const;

  Turn turn(int64_t seq) const;
  Turn turn_of(int64_t cycle, NodeId node) const;
  // The first turn whose membership point is strictly after t.
  Turn next_turn_after(int64_t t_ns) const;

 private:
  ScheduleConfig config_;
  int node_count_ = 0;
  std::array<NodeId, kMaxNodes> order_{};
  std::array<int, kMaxNodes> position_{};
};

}  // namespace tob::core
