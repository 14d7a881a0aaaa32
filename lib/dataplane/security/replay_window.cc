#include "dataplane/security/replay_window.h"

#include <algorithm>

#include "core/result.h"

namespace tob::dataplane::security {

namespace {
constexpr uint64_t kNoCycle = UINT64_MAX;
}

size_t FrameIdLayout::bits() const {
  return static_cast<size_t>(copies) * static_cast<size_t>(segments) + static_cast<size_t>(aux_frames) +
         static_cast<size_t>(ic_copies) * static_cast<size_t>(ic_frames_per_copy);
}

int64_t FrameIdLayout::index(core::FrameKind kind, uint8_t copy, uint16_t segment) const {
  const int64_t seg = segment;
  if (kind == core::FrameKind::slot) {
    if (copy < copies) return seg < segments ? int64_t{copy} * segments + seg : -1;
    // otfp's retransmissions: aux frames carry the copy index sends_per_slot (core::TxFrame).
    if (copy == copies) return seg < aux_frames ? int64_t{copies} * segments + seg : -1;
    return -1;
  }
  if (kind == core::FrameKind::ic && copy < ic_copies && seg < ic_frames_per_copy)
    return int64_t{copies} * segments + aux_frames + int64_t{copy} * ic_frames_per_copy + seg;
  return -1;
}

ReplayWindow::ReplayWindow(int nodes, const FrameIdLayout& layout)
    : layout_(layout), nodes_(nodes), words_per_cycle_((layout.bits() + 63) / 64) {
  TOB_ASSERT(nodes > 0 && nodes <= static_cast<int>(core::kMaxNodes));
  TOB_ASSERT(layout.copies >= 1 && layout.segments >= 1 && layout.bits() > 0);
  const auto n = static_cast<size_t>(nodes);
  bits_.assign(n * kWindowCycles * words_per_cycle_, 0);
  cycle_of_.assign(n * kWindowCycles, kNoCycle);
  highest_.assign(n, 0);
  seen_.assign(n, 0);
}

ReplayWindow::Verdict ReplayWindow::admit(core::NodeId sender, core::FrameKind kind, uint8_t copy, uint16_t segment,
                                          uint64_t cycle) {
  const int64_t bit = layout_.index(kind, copy, segment);
  if (sender >= nodes_ || bit < 0) return Verdict::out_of_range;
  if (cycle < floor_) return Verdict::replayed;
  const uint64_t high = highest_[sender];
  if (seen_[sender] != 0 && high >= kWindowCycles && cycle <= high - kWindowCycles) return Verdict::replayed;
  const size_t slot = static_cast<size_t>(sender) * kWindowCycles + cycle % kWindowCycles;
  uint64_t* words = bits_.data() + slot * words_per_cycle_;
  if (cycle_of_[slot] != cycle) {
    // The slot holds an older cycle (one inside the window would be this one: they are
    // kWindowCycles apart), or none: its bits are for nothing fresh any more.
    if (cycle_of_[slot] != kNoCycle && cycle_of_[slot] > cycle) return Verdict::replayed;
    std::fill(words, words + words_per_cycle_, 0);
    cycle_of_[slot] = cycle;
  }
  const auto b = static_cast<size_t>(bit);
  const uint64_t mask = uint64_t{1} << (b % 64);
  if ((words[b / 64] & mask) != 0) return Verdict::replayed;
  words[b / 64] |= mask;
  highest_[sender] = seen_[sender] != 0 ? std::max(high, cycle) : cycle;
  seen_[sender] = 1;
  return Verdict::fresh;
}

}  // namespace tob::dataplane::security
