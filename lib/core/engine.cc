#include "core/engine.h"

#include <algorithm>
#include <string>

#include "core/otfp_limits.h"

namespace tob::core {

namespace {

// A mars slot frame: header, trailer, the membership section and the batch section's headers.
// (otfp checks its own, larger, overhead when it is created.)
constexpr size_t kFrameOverhead = kMinFrameBytes + 2 * kSectionHeaderBytes + kMembershipBodyBytes;

}  // namespace

const char* to_string(Order o) { return o == Order::mars ? "mars" : "otfp"; }

const char* to_string(Reason r) {
  switch (r) {
    case Reason::none: return "none";
    case Reason::sender_omission: return "sender omission";
    case Reason::receiver_omission: return "receiver omission";
    case Reason::suspicion_confirmed: return "suspicion confirmed";
    case Reason::not_admitted: return "not admitted";
    case Reason::two_member_timeout: return "two-member timeout";
    case Reason::scheduling_delay: return "scheduling delay";
    case Reason::view_disagreement: return "membership view disagreement";
    case Reason::left: return "left";
    case Reason::too_few_members: return "too few members";
  }
  return "unknown";
}

const char* to_string(EventKind k) {
  switch (k) {
    case EventKind::membership_created: return "membership-created";
    case EventKind::admitted: return "admitted";
    case EventKind::removed: return "removed";
    case EventKind::self_shutdown: return "self-shutdown";
    case EventKind::suspicion_raised: return "suspicion-raised";
    case EventKind::suspicion_cleared: return "suspicion-cleared";
    case EventKind::rejoin_started: return "rejoin-started";
    case EventKind::instances_skipped: return "instances-skipped";
    case EventKind::round_started: return "round-started";
    case EventKind::round_activated: return "round-activated";
  }
  return "unknown";
}

const char* to_string(FrameVerdict v) {
  switch (v) {
    case FrameVerdict::accepted: return "accepted";
    case FrameVerdict::duplicate: return "duplicate";
    case FrameVerdict::wrong_cluster: return "wrong-cluster";
    case FrameVerdict::own_frame: return "own-frame";
    case FrameVerdict::unknown_sender: return "unknown-sender";
    case FrameVerdict::outside_window: return "outside-window";
    case FrameVerdict::malformed_section: return "malformed-section";
    case FrameVerdict::not_running: return "not-running";
  }
  return "unknown";
}

const char* to_string(SelfState s) {
  switch (s) {
    case SelfState::listening: return "listening";
    case SelfState::joining: return "joining";
    case SelfState::member: return "member";
    case SelfState::silent: return "silent";
    case SelfState::stopped: return "stopped";
  }
  return "unknown";
}

Result<bool> NodeConfig::validate() const {
  auto s = Schedule::create(schedule);
  if (!s) return s.error();
  const auto n = static_cast<int>(schedule.slots.size());
  if (self >= n)
    return Error{"node id " + std::to_string(self) + " is not in the schedule (nodes 0.." +
                 std::to_string(n - 1) + ")", Errc::node_not_in_schedule};
  if (frame_bytes_max > kMaxFrameBytes)
    return Error{"frame size above " + std::to_string(kMaxFrameBytes) + " bytes (jumbo frame limit)"};
  if (payload_bytes_max == 0 || payload_bytes_max > UINT16_MAX)
    return Error{"payload size must be 1..65535 bytes"};
  const size_t need = kFrameOverhead + kBatchHeaderBytes + kBatchEntryHeaderBytes + payload_bytes_max;
  if (frame_bytes_max < need)
    return Error{"frame size " + std::to_string(frame_bytes_max) +
                 " bytes cannot carry one message of the maximum payload (needs " +
                 std::to_string(need) + " bytes)"};
  if (queue_msgs_max == 0) return Error{"queue must hold at least one message"};
  if (queue_bytes_max < payload_bytes_max)
    return Error{"queue bytes must be at least the maximum payload"};
  if (batch_msgs_max == 0 || batch_msgs_max > kBatchMsgsMax)
    return Error{"batch size must be 1.." + std::to_string(kBatchMsgsMax) + " messages"};
  if (two_member_wait_cycles < 1) return Error{"two-member wait must be at least one cycle"};
  if (rejoin_silence_cycles < 2)
    return Error{"rejoin silence must be at least two cycles (seed 000 §5.3.2)"};
  if (stall_limit_ns < 0) return Error{"stall limit must not be negative"};
  if (kappa < 1 || kappa > 16) return Error{"kappa must be 1..16 cycles"};
  if (otfp_window < 4 || otfp_window > 64) return Error{"the otfp window must be 4..64 instances"};
  if (otfp_heard_ns < 0 || otfp_recovery_ns < 0 || otfp_retry_ns < 0) return Error{"otfp timeouts must not be negative"};
  const otfp::Timeouts t = otfp::timeouts(schedule.cycle_ns, otfp_heard_ns, otfp_recovery_ns, otfp_retry_ns,
                                          static_cast<int>(schedule.slots.size()), otfp_window, kappa);
  if (!otfp::timeouts_fit(t, otfp_window, kappa))
    return Error{"otfp: window " + std::to_string(otfp_window) + " + kappa " + std::to_string(kappa) + " + recovery " +
                 std::to_string(t.recovery) + " + heard " + std::to_string(t.heard) + " cycles must stay below " +
                 std::to_string(otfp::kCatchUpCycles) + " (what a node's instance ring lets it catch up): shorten " +
                 "[timing] recovery_ns or heard_ns (or stall_budget_ns, their default), or lengthen the cycle"};
  return validate_budget();
}

int NodeConfig::frames_per_copy(NodeId k) const {
  const auto b = slot_budget(schedule, k, wire());
  TOB_ASSERT(b.ok());  // validate() checked every node
  return static_cast<int>(std::clamp<size_t>(static_cast<size_t>(b.value().frames_per_copy), 1, batch_msgs_max));
}

Result<bool> NodeConfig::validate_budget() const {
  if (rate_mbps < 0 || rate_mbps > 400'000) return Error{"port rate must be 0..400000 Mbit/s"};
  if (slot_frames_max < 0 || slot_frames_max > kSlotFramesMax)
    return Error{"frames per slot copy must be 0..." + std::to_string(kSlotFramesMax)};
  if (aux_frames < 0) return Error{"aux frames must not be negative"};
  for (size_t k = 0; k < schedule.slots.size(); ++k)
    if (auto b = slot_budget(schedule, static_cast<NodeId>(k), wire()); !b) return b.error();
  return true;
}

}  // namespace tob::core
