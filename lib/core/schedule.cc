#include "core/schedule.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace tob::core {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::string node_str(size_t n) { return "node " + std::to_string(n); }

}  // namespace

ScheduleConfig ScheduleConfig::equal_slots(int nodes, int64_t cycle_ns, int64_t epoch_ns) {
  ScheduleConfig c;
  c.epoch_ns = epoch_ns;
  c.cycle_ns = cycle_ns;
  if (nodes <= 0) return c;
  const int64_t slot_ns = cycle_ns / nodes;
  // A turn is membership | send | pause in seed 000; we keep a tenth of the slot as decision
  // margin, allow arrivals up to a twentieth early and space the copies by a twentieth.
  c.decision_margin_ns = slot_ns / 10;
  c.precision_ns = slot_ns / 20;
  c.copy_gap_ns = slot_ns / 20;
  for (int i = 0; i < nodes; ++i) c.slots.push_back({i * slot_ns, slot_ns});
  return c;
}

Result<Schedule> Schedule::create(const ScheduleConfig& config) {
  const size_t n = config.slots.size();
  if (n == 0) return Error{"schedule has no slots (need 1..64 nodes)", Errc::no_slots};
  if (n > static_cast<size_t>(kMaxNodes))
    return Error{"schedule has " + std::to_string(n) + " nodes; at most 64 are supported", Errc::too_many_nodes};
  if (config.cycle_ns <= 0) return Error{"cycle length must be positive", Errc::bad_cycle};
  if (config.decision_margin_ns < 0) return Error{"decision margin must not be negative", Errc::bad_margin};
  if (config.precision_ns < 0) return Error{"precision must not be negative", Errc::bad_precision};
  if (config.precision_ns > config.decision_margin_ns)
    return Error{"precision (" + std::to_string(config.precision_ns) +
                 " ns) exceeds the decision margin (" + std::to_string(config.decision_margin_ns) +
                 " ns): a frame could arrive before its sender's membership point", Errc::bad_precision};
  if (config.sends_per_slot < 1 || config.sends_per_slot > 4)
    return Error{"sends per slot must be 1..4", Errc::bad_sends_per_slot};
  if (config.copy_gap_ns < 0) return Error{"copy gap must not be negative", Errc::bad_copy_gap};

  for (size_t i = 0; i < n; ++i) {
    const SlotConfig& s = config.slots[i];
    if (s.length_ns <= 0) return Error{node_str(i) + ": slot length must be positive", Errc::zero_slot_length};
    if (s.offset_ns < 0) return Error{node_str(i) + ": slot offset must not be negative", Errc::negative_slot_offset};
    if (s.offset_ns + s.length_ns > config.cycle_ns)
      return Error{node_str(i) + ": slot [" + std::to_string(s.offset_ns) + ", " +
                   std::to_string(s.offset_ns + s.length_ns) + ") ns ends beyond the cycle (" +
                   std::to_string(config.cycle_ns) + " ns)", Errc::slot_beyond_cycle};
    const int64_t last_copy_ns =
        config.decision_margin_ns + config.copy_gap_ns * (config.sends_per_slot - 1);
    if (last_copy_ns >= s.length_ns)
      return Error{node_str(i) + ": slot length " + std::to_string(s.length_ns) +
                   " ns leaves no room after the decision margin and copies (" +
                   std::to_string(last_copy_ns) + " ns)", Errc::slot_too_short};
  }

  Schedule sched;
  sched.config_ = config;
  sched.node_count_ = static_cast<int>(n);
  std::vector<size_t> idx(n);
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return config.slots[a].offset_ns < config.slots[b].offset_ns;
  });
  for (size_t p = 0; p < n; ++p) {
    sched.order_[p] = static_cast<NodeId>(idx[p]);
    sched.position_[idx[p]] = static_cast<int>(p);
    if (p > 0) {
      const SlotConfig& prev = config.slots[idx[p - 1]];
      const SlotConfig& cur = config.slots[idx[p]];
      if (prev.offset_ns + prev.length_ns > cur.offset_ns)
        return Error{node_str(idx[p - 1]) + " and " + node_str(idx[p]) + ": slots overlap", Errc::slots_overlap};
    }
  }
  return sched;
}

int64_t Schedule::cycle_of(int64_t t_ns) const {
  return floor_div(t_ns - config_.epoch_ns, config_.cycle_ns);
}

int64_t Schedule::membership_point_ns(int64_t cycle, NodeId node) const {
  TOB_ASSERT(node < node_count_);
  return cycle_start_ns(cycle) + config_.slots[node].offset_ns;
}

int64_t Schedule::transmit_ns(int64_t cycle, NodeId node, int copy) const {
  return membership_point_ns(cycle, node) + config_.decision_margin_ns + copy * config_.copy_gap_ns;
}

int64_t Schedule::slot_end_ns(int64_t cycle, NodeId node) const {
  return membership_point_ns(cycle, node) + config_.slots[node].length_ns;
}

Window Schedule::reception_window(int64_t cycle, NodeId node) const {
  return {transmit_ns(cycle, node) - config_.precision_ns, slot_end_ns(cycle, node)};
}

int64_t Schedule::stamp_within(int64_t cycle, NodeId node, int64_t after_ns, int64_t polled_ns) const {
  const Window w = reception_window(cycle, node);
  if (polled_ns < w.close_ns || w.close_ns <= after_ns + 1 || w.open_ns > polled_ns) return polled_ns;
  return std::max(after_ns + 1, w.open_ns);
}

NodeId Schedule::previous_in_order(NodeId node) const {
  const int p = position_[node];
  return order_[static_cast<size_t>((p + node_count_ - 1) % node_count_)];
}

Turn Schedule::turn(int64_t seq) const {
  const int64_t cycle = floor_div(seq, node_count_);
  const auto pos = static_cast<size_t>(seq - cycle * node_count_);
  const NodeId node = order_[pos];
  return {seq, cycle, node, membership_point_ns(cycle, node)};
}

Turn Schedule::turn_of(int64_t cycle, NodeId node) const {
  return turn(cycle * node_count_ + position_[node]);
}

Turn Schedule::next_turn_after(int64_t t_ns) const {
  const int64_t c = cycle_of(t_ns);
  // Turns of cycle c in order; the first with a membership point after t, else cycle c + 1.
  for (int p = 0; p < node_count_; ++p) {
    const Turn tr = turn(c * node_count_ + p);
    if (tr.membership_point_ns > t_ns) return tr;
  }
  return turn((c + 1) * node_count_);
}

}  // namespace tob::core
