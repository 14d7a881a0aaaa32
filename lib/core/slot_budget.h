// How many frames a node's slot carries (docs/plans/throughput.md §7.1; docs/configuration.md
// `[timing] rate_mbps`): from the slot's length, the schedule's margin, precision and copy gap,
// and the rate of the ports (the same on every node: a receiver sizes what it accepts from it).
//
//   air   = (frame + 42 bytes of Ethernet header with tag, FCS, preamble and gap) at rate_mbps
//   usable = slot length - decision margin - precision (the guard before the slot ends)
//            - aux frames (IC round data, retransmissions) x air
//   copy k of the slot's frames starts at transmit + k x copy gap (schedule.h) or when copy
//   k-1's frames are out, whichever is later: F frames per copy fit when
//       (S - 1) x max(copy gap, F x air) + F x air <= usable
//
// Without a rate (rate_mbps 0) a slot carries one frame per copy, as every engine does today,
// and nothing is checked here. A node whose slot cannot carry even that is refused with the
// node, what it needs and by how much it falls short.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/result.h"
#include "core/schedule.h"

namespace tob::core {

inline constexpr int kSlotFramesMax = 4096;          // frames per copy of one slot (u16 segment numbers)
inline constexpr size_t kWireOverheadBytes = 18 + 4 + 8 + 12;  // Ethernet + 802.1Q, FCS, preamble, gap
static_assert(kSlotFramesMax <= UINT16_MAX, "segment numbers are u16 on the wire");

struct WireBudget {
  int64_t rate_mbps = 0;      // 0: no rate given (one frame per copy, unchecked)
  size_t frame_bytes = 0;     // [limits] frame_bytes: the TOB frame, header to CRC
  int aux_frames = 0;         // frames per slot besides the copies (IC round data, retransmissions)
  int slot_frames_max = 0;    // [limits] slot_frames: a cap on frames per copy (0: none)
};

struct SlotBudget {
  int frames_per_copy = 1;
  int64_t air_ns = 0;         // one full frame on the wire
  int64_t usable_ns = 0;      // slot time for the copies (after margin, guard and aux frames)
  int64_t busy_ns = 0;        // what frames_per_copy full frames in every copy take of it
};

// One full frame's time on the wire, rounded up.
int64_t frame_airtime_ns(size_t frame_bytes, int64_t rate_mbps);

// Node n's budget; an error when its slot cannot carry one frame per copy and its aux frames.
Result<SlotBudget> slot_budget(const ScheduleConfig& schedule, NodeId node, const WireBudget& wire);

// "node 1: 344 frames per copy of 12.3 us (2 copies: 8.47 of 8.45 ms usable)": for the daemon's
// start-up line.
std::string describe(const SlotBudget& b, NodeId node, int copies);

}  // namespace tob::core
