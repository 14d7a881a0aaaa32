#include "core/slot_budget.h"

#include <algorithm>
#include <cstdio>

namespace tob::core {

namespace {

std::string us(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(ns) / 1e3);
  return buf;
}

// Slot time that F frames per copy take, copies spaced by the copy gap or back to back.
int64_t busy_ns(int64_t frames, int64_t air_ns, int copies, int64_t copy_gap_ns) {
  const int64_t group = frames * air_ns;
  return static_cast<int64_t>(copies - 1) * std::max(copy_gap_ns, group) + group;
}

}  // namespace

int64_t frame_airtime_ns(size_t frame_bytes, int64_t rate_mbps) {
  if (rate_mbps <= 0) return 0;
  const auto bits = static_cast<int64_t>(frame_bytes + kWireOverheadBytes) * 8;
  return (bits * 1000 + rate_mbps - 1) / rate_mbps;  // bits / (rate_mbps * 1e6 /s), in ns
}

Result<SlotBudget> slot_budget(const ScheduleConfig& schedule, NodeId node, const WireBudget& wire) {
  SlotBudget b;
  if (wire.rate_mbps <= 0) return b;
  if (node >= schedule.slots.size())
    return Error{"node " + std::to_string(node) + " is not in the schedule", Errc::node_not_in_schedule};
  const int copies = schedule.sends_per_slot;
  b.air_ns = frame_airtime_ns(wire.frame_bytes, wire.rate_mbps);
  const int64_t length = schedule.slots[node].length_ns;
  const int64_t aux_ns = static_cast<int64_t>(wire.aux_frames) * b.air_ns;
  b.usable_ns = length - schedule.decision_margin_ns - schedule.precision_ns - aux_ns;
  const int64_t one = busy_ns(1, b.air_ns, copies, schedule.copy_gap_ns);
  if (b.usable_ns < one) {
    const int64_t need = one + aux_ns;
    const int64_t have = length - schedule.decision_margin_ns - schedule.precision_ns;
    return Error{"node " + std::to_string(node) + ": its slot of " + std::to_string(length) +
                 " ns cannot carry its frames at " + std::to_string(wire.rate_mbps) + " Mbit/s: " +
                 std::to_string(copies) + " copies of 1 frame (" +
                 std::to_string(wire.frame_bytes + kWireOverheadBytes) + " wire bytes, " + us(b.air_ns) +
                 " us each" + (copies > 1 ? ", copies " + us(schedule.copy_gap_ns) + " us apart" : "") + ") + " +
                 std::to_string(wire.aux_frames) + " aux frames need " + us(need) + " us of the " + us(have) +
                 " us after the decision margin and before the precision guard: " + us(need - have) +
                 " us short (lengthen the slot, raise [timing] rate_mbps, lower [limits] frame_bytes or the [ic] load)"};
  }
  // The largest F with busy(F) <= usable: busy grows with F, so search the bound directly.
  int64_t lo = 1;
  int64_t hi = wire.slot_frames_max > 0 ? std::min(wire.slot_frames_max, kSlotFramesMax) : kSlotFramesMax;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (busy_ns(mid, b.air_ns, copies, schedule.copy_gap_ns) <= b.usable_ns) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  b.frames_per_copy = static_cast<int>(lo);
  b.busy_ns = busy_ns(lo, b.air_ns, copies, schedule.copy_gap_ns);
  return b;
}

std::string describe(const SlotBudget& b, NodeId node, int copies) {
  if (b.air_ns == 0) return "node " + std::to_string(node) + ": 1 frame per copy (no [timing] rate_mbps)";
  return "node " + std::to_string(node) + ": " + std::to_string(b.frames_per_copy) + " frames per copy of " +
         us(b.air_ns) + " us (" + std::to_string(copies) + " copies: " + us(b.busy_ns) + " of " + us(b.usable_ns) +
         " us usable)";
}

}  // namespace tob::core
