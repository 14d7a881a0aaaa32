// The interface both ordering engines present to their drivers (docs/architecture.md): the
// daemon and the simulator drive a core::Engine without knowing whether it is `mars`
// (core::MarsNode, seed 000, docs/protocol-mars.md) or `otfp` (core::OtfpNode, seed 002,
// docs/protocol-otfp.md), and the types both engines share. A deterministic state machine:
// frames and time go in, actions come out; it never reads a clock, never allocates after
// construction and never touches a socket.
//
//   engine.on_time(now_ns);            time advanced: membership points, own transmissions
//   engine.on_frame(view, rx_ns);      a decoded slot frame from a peer
//   engine.submit(client, payload, t); an application message (may be refused: backpressure)
//   const Actions& a = engine.take_actions();   frames to send, deliveries, events, log records
//   engine.on_durable(bytes);          otfp: the driver made the log records durable so far
//
// core/engine_factory.h makes one of either kind.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/batch.h"
#include "core/result.h"
#include "core/schedule.h"
#include "core/slot_budget.h"
#include "core/submit_queue.h"
#include "core/wire.h"

namespace tob::core {

// Messages one slot carries at most ([limits] batch_msgs): a delivery's seq numbers them within
// their turn (65536 per turn, include/tob.h), and otfp's exactly-once window spans four batches.
inline constexpr size_t kBatchMsgsMax = 16384;

struct NodeConfig {
  ScheduleConfig schedule;
  uint16_t cluster_id = 1;
  NodeId self = 0;
  size_t frame_bytes_max = 1500;        // TOB payload of one Ethernet frame (header to CRC)
  size_t queue_msgs_max = 4096;         // application messages waiting for a slot
  size_t queue_bytes_max = 1u << 20;
  size_t payload_bytes_max = 1024;      // one application message
  size_t batch_msgs_max = 64;           // messages carried in one slot
  int two_member_wait_cycles = 8;       // seed 000 §6.2.1: bounded two-member membership
  int rejoin_silence_cycles = 2;        // seed 000 §5.3.2: silent this long before rejoining
  int kappa = 2;                        // otfp: votes for instance i are fixed as cycle i + kappa starts
  int otfp_window = 32;                 // otfp: undecided instances before proposers hold back
  // otfp timeouts as durations (otfp_limits.h): each is at least its floor in cycles; 0: the floor.
  int64_t otfp_heard_ns = 0;            // silence after which a node counts as crashed (Omega)
  int64_t otfp_recovery_ns = 0;         // an undecided instance gets a new round after this
  int64_t otfp_retry_ns = 0;            // an unanswered retransmission request goes to the next acceptor
  bool rejoin_after_shutdown = true;    // a self-checking node restarts after shutting down
  int64_t stall_limit_ns = 0;           // 0: one cycle. Longer gaps between calls = timing failure
  uint64_t first_msg_id = 0;            // msg ids count up from here (continue across restarts)
  int64_t rate_mbps = 0;                // the ports' rate ([timing] rate_mbps); 0: one frame per copy, unchecked
  int slot_frames_max = 0;              // [limits] slot_frames: cap on frames per copy (0: the budget's)
  int aux_frames = 0;                   // frames per slot besides the copies (IC round data)
  // Header flags every frame this node encodes carries besides its own (wire.h FrameFlags):
  // kFlagAuthenticated with [security], whose trailer the dataplane appends after the CRC; set
  // here so that the CRC covers it from the start and nothing reseals it.
  uint8_t frame_flags = 0;

  Result<bool> validate() const;
  // Every node's slot carries its frames at rate_mbps (core/slot_budget.h); part of validate().
  Result<bool> validate_budget() const;
  // What the slot budget (core/slot_budget.h) is computed from.
  WireBudget wire() const { return {rate_mbps, frame_bytes_max, aux_frames, slot_frames_max}; }
  // Frames per copy node k's slot uses at most (a valid config): its budget, and no more
  // segments than messages (batch_msgs_max). 1 without rate_mbps.
  int frames_per_copy(NodeId k) const;
};

enum class Reason : uint8_t {
  none = 0,
  sender_omission,      // too many members missed the node's frame
  receiver_omission,    // the node missed frames that others received
  suspicion_confirmed,  // it suspected pred(n), but pred(n) stayed a member
  not_admitted,         // a joiner whose frame not every member received
  two_member_timeout,   // too long in a two-member membership
  scheduling_delay,     // the driver called the node too late (timing failure)
  view_disagreement,    // most members' frames carry a member set other than this node's
  left,                 // it announced itself as joining again: it left and came back
  too_few_members,      // decided below three members: discarded by every member alike
};
const char* to_string(Reason r);

enum class EventKind : uint8_t {
  membership_created,  // first member (seed 000 §6.2.1)
  admitted,
  removed,
  self_shutdown,
  suspicion_raised,
  suspicion_cleared,
  rejoin_started,      // listening again after the silence
  instances_skipped,   // otfp: fell further behind than the peers keep; delivery resumes later
  round_started,       // otfp: this node, coordinator, started a round (phase 1a); cycle = its low
  round_activated,     // otfp: that round's fast ballot is active (ANY); cycle = the activation point
};
const char* to_string(EventKind k);

struct MembershipEvent {
  EventKind kind;
  NodeId node;
  Reason reason;
  int64_t cycle;
  int64_t turn_seq;
  int64_t at_ns;
  uint64_t members_after;
};

struct TxFrame {
  int64_t tx_ns;       // global time at which the frame must leave
  int64_t cycle;
  uint8_t copy;        // 0 .. sends_per_slot-1
  std::span<const uint8_t> bytes;
  // It leaves only once the records (Actions::persist) up to this many bytes of this life's
  // log are durable: kAllRecords, every record emitted before it (it carries acceptor state);
  // 0, none (a batch segment, a retransmission: no acceptor state).
  uint64_t after_records = kAllRecords;
  static constexpr uint64_t kAllRecords = UINT64_MAX;
  // The log bytes (of this life) that must be durable before it leaves, `written` emitted so far.
  uint64_t records_needed(uint64_t written) const { return after_records == kAllRecords ? written : after_records; }
};

struct Delivery {
  NodeId sender;
  int64_t cycle;       // cycle in which the sender transmitted it
  int64_t turn_seq;    // membership point that delivered it
  int64_t deliver_ns;  // that membership point's instant
  uint64_t msg_id;
  int64_t submit_ns;
  uint16_t client;
  std::span<const uint8_t> payload;
  int64_t release_ns;  // the same on every node: when applications may act on it (tob.h)
};

// Own messages that left the node in a slot frame but were not delivered by it. Reason
// too_few_members: no member delivered it. Any other reason (the node failed): other nodes may
// have delivered it; this node cannot know (outcome unknown).
struct Undelivered {
  uint64_t msg_id;
  uint16_t client;
  int64_t cycle;
  Reason reason;
};

struct Actions {
  std::vector<TxFrame> tx;
  std::vector<Delivery> deliveries;
  std::vector<MembershipEvent> events;
  std::vector<Undelivered> undelivered;
  // otfp: acceptor log records to append (and sync) before any frame of `tx` leaves the node.
  std::vector<uint8_t> persist;
  // A record in `persist` is awaited (a vote or a promise): the driver makes it durable now.
  // Batch records alone it may leave unsynced until the next awaited one, which follows them.
  bool persist_awaited = false;
  bool empty() const {
    return tx.empty() && deliveries.empty() && events.empty() && undelivered.empty() && persist.empty();
  }
  void clear() {  // keeps the capacity: no allocation on the next round
    tx.clear();
    deliveries.clear();
    events.clear();
    undelivered.clear();
    persist.clear();
    persist_awaited = false;
  }
};

// The take-and-clear protocol of an engine's outputs (Actions, IcActions): every input call
// starts with clear_if_taken, so that a set the driver has taken is emptied (keeping its
// capacity: no allocation) before new outputs accumulate; take_actions hands the set out once
// (a second call without an input in between hands out an empty set).
template <class A>
void clear_if_taken(A& actions, bool& taken) {
  if (!taken) return;
  actions.clear();
  taken = false;
}
template <class A>
const A& take_actions(A& actions, bool& taken) {
  clear_if_taken(actions, taken);
  taken = true;
  return actions;
}

enum class FrameVerdict : uint8_t {
  accepted = 0,
  duplicate,
  wrong_cluster,
  own_frame,
  unknown_sender,
  outside_window,   // timing failure: early, late, or for another cycle
  malformed_section,  // a section that does not parse: batch, membership or otfp (an omission)
  not_running,
};
inline constexpr int kFrameVerdictCount = 8;
const char* to_string(FrameVerdict v);

struct NodeCounters {
  uint64_t frames_rx[kFrameVerdictCount] = {};
  uint64_t frames_tx = 0;
  uint64_t msgs_submitted = 0;
  uint64_t msgs_refused = 0;
  uint64_t msgs_sent = 0;
  uint64_t msgs_delivered = 0;
  uint64_t msgs_undelivered = 0;
  uint64_t membership_points = 0;
  uint64_t removals = 0;
  uint64_t admissions = 0;
  uint64_t self_shutdowns = 0;
  uint64_t suspicions = 0;
  uint64_t events_dropped = 0;  // membership events beyond the per-call bound
  // otfp only (docs/protocol-otfp.md); zero under mars.
  uint64_t instances_decided = 0;
  uint64_t instances_fast = 0;        // decided in the fast ballot
  uint64_t instances_recovered = 0;   // decided in a classic ballot (collision or stuck)
  uint64_t collisions = 0;            // fast ballots without a fast quorum for one value
  uint64_t activations = 0;           // rounds this node started as coordinator
  uint64_t retransmit_requests = 0;   // batches this node asked for
  uint64_t retransmit_served = 0;     // batches this node sent again
  uint64_t tempo_holds = 0;           // own slots without a batch: the undecided window was full
  uint64_t duplicates_dropped = 0;    // messages already delivered, seen again
  uint64_t window_max = 0;            // most undecided instances at once
  uint64_t window_now = 0;            // undecided instances now (a gauge)
  uint64_t gaps = 0;                  // instances skipped: fell further behind than peers keep
  uint64_t persist_records = 0;       // acceptor log records emitted
  uint64_t votes_abstained = 0;       // votes not cast: the log fell this far behind the engine
  uint64_t votes_not_durable = 0;     // otfp: votes kept out of a slot's frame, their record not yet durable
  uint64_t votes_settled = 0;         // otfp: fast votes fixed before cycle i + kappa, every batch known
  uint64_t decision_conflicts = 0;    // a decision heard that differs from this node's (a broken protocol)
};

enum class SelfState : uint8_t {
  listening,   // collecting one cycle of frames before announcing itself
  joining,     // sent a frame as ACTIVE, admission at the next membership point
  member,
  silent,      // shut down; silent for rejoin_silence_cycles before listening again
  stopped,     // shut down for good (rejoin disabled) or stopped by the driver
};
const char* to_string(SelfState s);

struct SubmitResult {
  SubmitStatus status;
  uint64_t msg_id;
};

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

}  // namespace tob::core
