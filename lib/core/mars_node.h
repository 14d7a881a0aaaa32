// The `mars` ordering engine (seed 000 ch. 5-6, docs/protocol-mars.md): the MARS membership
// service turned into TDMA total order broadcast: view vectors, membership points, send-twice,
// delivery within one cycle and failure detection within two. A core::Engine (core/engine.h):
// deterministic, no clock, no I/O, no allocation after construction.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/engine.h"
#include "core/segments.h"

namespace tob::core {

class MarsNode final : public Engine {
 public:
  static Result<MarsNode> create(const NodeConfig& config);

  void on_time(int64_t now_ns) override;
  FrameVerdict on_frame(const FrameView& frame, int64_t rx_ns) override;
  SubmitResult submit(uint16_t client, std::span<const uint8_t> payload, int64_t submit_ns) override;
  // Outputs accumulated since the last call (a second call without an input in between returns
  // nothing new); valid until the next on_time/on_frame/stop.
  const Actions& take_actions() override;
  // Leave by going silent: SIGINT leaves the membership by going silent (docs/operations.md).
  void stop() override;

  // Next instant at which on_time must be called (the next membership point).
  int64_t next_deadline_ns() const override;

  Order order() const override { return Order::mars; }
  NodeId self() const override { return self_; }
  SelfState self_state() const override { return state_; }
  bool is_member() const { return state_ == SelfState::member; }
  uint64_t members() const override { return members_; }
  int member_count() const override { return member_count_; }
  Stage stage_of(NodeId n) const override { return stage_[n]; }
  const Schedule& schedule() const override { return sched_; }
  const NodeCounters& counters() const override { return counters_; }
  const NodeConfig& config() const { return config_; }
  size_t queued() const override { return queue_.size(); }
  int64_t current_cycle() const override { return last_turn_cycle_; }

 private:
  explicit MarsNode(const NodeConfig& config, Schedule sched);

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
    bool view_compared = false;  // we were a member after the turn it was sent in: sets compared
    bool view_agrees = true;     // ... and its member set equals ours after that turn
  };
  struct Message {               // a slot's complete batch, kept until it is decided
    int64_t cycle = -1;
    uint32_t count = 0;          // messages; 0 once decided
  };
  // A node's message is decided at its next membership point, a cycle after it was sent
  // (seed 000 §6.2.2): its last two and the one being built are held.
  static constexpr int kMessageSlots = 3;

  void advance(int64_t now_ns);
  void process_turn(const Turn& t);
  bool fresh(NodeId j, int64_t after_seq) const;
  // Some member frame sent after after_seq (another node's) names n as a member.
  bool named_by_member(NodeId n, int64_t after_seq) const;
  void decide(const Turn& t);
  void decide_joiner(const Turn& t, bool got);
  void decide_member(const Turn& t, bool got);
  void receiver_omission_check(const Turn& t);
  bool view_disagreement(const Turn& t) const;
  void record_view(int64_t seq);
  void deliver_message(const Turn& t, NodeId n);
  void discard_message(const Turn& t, NodeId n, Reason why);
  void transmit(const Turn& t);
  uint16_t build_own_batch(const Turn& t, bool member);
  void remove(const Turn& t, NodeId n, Reason why);
  void admit(const Turn& t, NodeId n, bool created);
  void shutdown(const Turn& t, Reason why);
  void set_members(uint64_t members);
  void emit(EventKind k, NodeId n, Reason r, const Turn& t);
  void clear_if_taken();
  Reassembly& held(NodeId n, int64_t cycle);
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
  // Peers' sets are compared with the set after the turn they were sent in: at most a cycle old.
  // Only turns after which this node was a member are recorded (seq -1 otherwise): a joiner's
  // set is hearsay, not a view another member can disagree with.
  static constexpr size_t kViewHistory = 2 * kMaxNodes + 2;
  static_assert(kViewHistory > 2 * kMaxNodes, "a view sent a cycle ago (N turns) is still held");
  std::array<std::pair<int64_t, uint64_t>, kViewHistory> view_history_{};
  std::array<std::array<Message, kMessageSlots>, kMaxNodes> messages_{};
  // A slot's batch travels in up to frames_per_copy_[n] frames (segments, core/segments.h; one
  // without [timing] rate_mbps); each node's last kMessageSlots batches are put together here.
  std::vector<Reassembly> held_;         // N x kMessageSlots
  std::array<uint16_t, kMaxNodes> frames_per_copy_{};
  size_t seg_room_ = 0;                  // batch section body of one segment

  SubmitQueue queue_;
  uint64_t next_msg_id_ = 0;
  std::vector<uint8_t> tx_bytes_;        // frames handed out in actions (two own turns, every segment)
  int tx_turn_ = 0;

  Actions actions_;
  bool taken_ = false;
  size_t deliveries_max_ = 0;
  NodeCounters counters_;
};

}  // namespace tob::core
