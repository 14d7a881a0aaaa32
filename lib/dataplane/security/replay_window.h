// Replay protection (docs/wire-format.md "Replay protection"): an authentic frame is taken once.
// Per sender, a window of the last kWindowCycles cycles from the highest cycle seen, each with one
// bit per frame the sender may send in a cycle (FrameIdLayout, from the configuration). A frame is
// refused as replayed when its bit is already set, when its cycle is older than the window, or
// when its cycle is before this node's floor (set at start: nothing sent before this node ran is
// fresh to it). Memory is fixed at start: nodes x kWindowCycles x bits per cycle; only
// authenticated frames reach it, so only a key holder moves a window.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/schedule.h"
#include "core/wire.h"

namespace tob::dataplane::security {

// Where a frame's bit lies among the frames one sender sends in one cycle.
struct FrameIdLayout {
  int copies = 2;                // sends_per_slot
  int segments = 1;              // frames per copy of the engine's batch (the most any node sends)
  int aux_frames = 0;            // otfp retransmission frames after the copies (copy index = copies)
  int ic_copies = 0;             // [ic] copies
  int ic_frames_per_copy = 0;    // [ic] frames per copy
  size_t bits() const;
  // The bit of a frame, or -1 when no correct sender sends such a frame.
  int64_t index(core::FrameKind kind, uint8_t copy, uint16_t segment) const;
};

class ReplayWindow {
 public:
  static constexpr uint64_t kWindowCycles = 64;
  enum class Verdict : uint8_t { fresh, replayed, out_of_range };

  ReplayWindow(int nodes, const FrameIdLayout& layout);  // allocates: at start only
  // Frames of cycles before `cycle` are refused from now on (each sender's floor).
  void set_floor(uint64_t cycle) { floor_ = cycle; }
  // Takes the frame when fresh (its bit is set); a replayed or out-of-range frame changes nothing.
  Verdict admit(core::NodeId sender, core::FrameKind kind, uint8_t copy, uint16_t segment, uint64_t cycle);
  const FrameIdLayout& layout() const { return layout_; }

 private:
  FrameIdLayout layout_;
  int nodes_;
  size_t words_per_cycle_;
  uint64_t floor_ = 0;
  std::vector<uint64_t> bits_;      // [sender][cycle % window][word]
  std::vector<uint64_t> cycle_of_;  // [sender][cycle % window]: the cycle those bits are for
  std::vector<uint64_t> highest_;   // [sender]: highest cycle taken
  std::vector<uint8_t> seen_;       // [sender]: anything taken yet
};

}  // namespace tob::dataplane::security
