// The protocol core of one node (DESIGN §3): a deterministic state machine. Frames and time go
// in, actions come out; it never reads a clock, never allocates after construction and never
// touches a socket. Both the daemon and the simulator drive it.
//
//   node.on_time(now_ns);            time advanced: membership points, own transmissions
//   node.on_frame(view, rx_ns);      a decoded slot frame from a peer
//   node.submit(client, payload, t); an application message (may be refused: backpressure)
//   const Actions& a = node.take_actions();   frames to send, deliveries, events
//
// Membership and ordering follow MARS (seed 000 ch. 5-6, docs/protocol-mars.md).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/batch.h"
#include "core/result.h"
#include "core/schedule.h"
#include "core/submit_queue.h"
#include "core/wire.h"

namespace tob::core {

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
  int kappa = 2;                        // otfp: votes for instance i travel in cycle i + kappa
  int otfp_window = 32;                 // otfp: undecided instances before proposers hold back
  bool rejoin_after_shutdown = true;    // a self-checking node restarts after shutting down
  int64_t stall_limit_ns = 0;           // 0: one cycle. Longer gaps between calls = timing failure
  uint64_t first_msg_id = 0;            // msg ids count up from here (continue across restarts)

  Result<bool> validate() const;
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
  bool empty() const {
    return tx.empty() && deliveries.empty() && events.empty() && undelivered.empty() && persist.empty();
  }
  void clear() {  // keeps the capacity: no allocation on the next round
    tx.clear();
    deliveries.clear();
    events.clear();
    undelivered.clear();
    persist.clear();
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
  malformed_batch,
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

class Node {
 public:
  static Result<Node> create(const NodeConfig& config);

  void on_time(int64_t now_ns);
  FrameVerdict on_frame(const FrameView& frame, int64_t rx_ns);
  SubmitResult submit(uint16_t client, std::span<const uint8_t> payload, int64_t submit_ns);
  // Outputs accumulated since the last call (a second call without an input in between returns
  // nothing new); valid until the next on_time/on_frame/stop.
  const Actions& take_actions();
  // Leave by going silent (DESIGN: SIGINT leaves the membership by going silent).
  void stop();

  // Next instant at which on_time must be called (the next membership point).
  int64_t next_deadline_ns() const;

  NodeId self() const { return self_; }
  SelfState self_state() const { return state_; }
  bool is_member() const { return state_ == SelfState::member; }
  uint64_t members() const { return members_; }
  int member_count() const { return member_count_; }
  Stage stage_of(NodeId n) const { return stage_[n]; }
  const Schedule& schedule() const { return sched_; }
  const NodeCounters& counters() const { return counters_; }
  const NodeConfig& config() const { return config_; }
  size_t queued() const { return queue_.size(); }
  int64_t current_cycle() const { return last_turn_cycle_; }

 private:
  explicit Node(const NodeConfig& config, Schedule sched);

  // What this node knows of another node's latest slot frame: its view vector row and
  // membership claims (seed 000 table 6.2), and the message it carried.
  struct Row {
    bool valid = false;
    int64_t seq = -1;            // turn sequence number of the slot the frame was sent in
    uint64_t view_vector = 0;
    uint64_t members = 0;        // sender's member set (membership section), if it had one
    bool has_members = false;
    Stage stage = Stage::inactive;
    NodeId suspected = kNoNode;
    bool view_agrees = true;     // its member set equals ours after the turn it was sent in
  };
  struct Message {               // the batch of one slot frame, kept until it is decided
    int64_t cycle = -1;
    size_t bytes = 0;
    uint16_t count = 0;
  };
  static constexpr int kMessageSlots = 3;

  void advance(int64_t now_ns);
  void process_turn(const Turn& t);
  bool fresh(NodeId j, int64_t after_seq) const;
  void decide(const Turn& t);
  void receiver_omission_check(const Turn& t);
  bool view_disagreement(const Turn& t) const;
  void record_view(int64_t seq);
  void deliver_message(const Turn& t, NodeId n);
  void discard_message(const Turn& t, NodeId n, Reason why);
  void transmit(const Turn& t);
  void remove(const Turn& t, NodeId n, Reason why);
  void admit(const Turn& t, NodeId n, bool created);
  void shutdown(const Turn& t, Reason why);
  void set_members(uint64_t members);
  void emit(EventKind k, NodeId n, Reason r, const Turn& t);
  void clear_if_taken();
  std::span<uint8_t> message_buffer(NodeId n, int64_t cycle);
  const Message* message_of(NodeId n, int64_t cycle) const;

  NodeConfig config_;
  Schedule sched_;
  NodeId self_;
  int n_;

  SelfState state_ = SelfState::listening;
  bool started_ = false;
  int64_t last_now_ns_ = 0;
  int64_t next_seq_ = 0;
  int64_t last_turn_cycle_ = -1;
  int64_t listen_until_ns_ = 0;   // may announce itself at its first turn after this
  int64_t silent_until_ns_ = 0;
  int small_group_cycles_ = 0;
  NodeId suspicion_ = kNoNode;    // own receiver-omission suspicion (culprit), seed 000 §6.2.2

  std::array<Stage, kMaxNodes> stage_{};
  uint64_t members_ = 0;
  int member_count_ = 0;
  uint64_t received_ = 0;         // own view vector: frame of node k's latest slot received
  std::array<Row, kMaxNodes> rows_{};
  // Own member set after each of the last turns, to compare with the sets peers send.
  static constexpr size_t kViewHistory = 2 * kMaxNodes + 2;
  std::array<std::pair<int64_t, uint64_t>, kViewHistory> view_history_{};
  std::array<std::array<Message, kMessageSlots>, kMaxNodes> messages_{};
  std::vector<uint8_t> message_bytes_;  // N x kMessageSlots x batch_bytes_max_
  size_t batch_bytes_max_ = 0;

  SubmitQueue queue_;
  uint64_t next_msg_id_ = 0;
  std::vector<uint8_t> tx_bytes_;        // frames handed out in actions (two own turns)
  int tx_turn_ = 0;

  Actions actions_;
  bool taken_ = false;
  size_t deliveries_max_ = 0;
  NodeCounters counters_;
};

}  // namespace tob::core
