// The `otfp` ordering engine: On-Time Fast Paxos on the TDMA substrate (seed 002 §4-6,
// docs/protocol-otfp.md). Every node is proposer, acceptor and learner; instance i is cycle i;
// the value of an instance is the set of batches carried in that cycle's slots. Same shape as
// the mars engine: inputs in, actions out, deterministic, no clock, no I/O, no allocation after
// construction.
//
// One class, one file per role, so that a rule is found next to its seed section:
//   otfp_node.cc         time and turns, the proposer, plumbing
//   otfp_acceptor.cc     votes, promises, ANY, phase 2a; durability of its own acts (§4, §5.2)
//   otfp_coordinator.cc  Omega, activation (§5.1), coordinated recovery (§5.3), new rounds
//   otfp_learner.cc      decisions, delivery, catch-up and retransmission (§5.2, §5.5)
//   otfp_frames.cc       a frame parsed, then applied; the slot frames built
//   otfp_log.*, otfp_ring.*, otfp_wire.*: the log format, the instances held, the sections
//
// Durability: acceptor state leaves as log records (Actions::persist). The driver makes them
// durable and reports how far (on_durable); a vote or a phase 1b goes into a frame only once its
// record is durable, and the node counts its own vote toward a decision, and its own promise
// toward an activation, only from then on: what it delivers was decided by a quorum of durable
// votes. A fast vote is fixed as its cycle i + kappa starts, and the log syncs it before the
// node's slot in that cycle, or it leaves in a later one.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/engine.h"
#include "core/otfp_limits.h"
#include "core/otfp_log.h"
#include "core/otfp_ring.h"
#include "core/otfp_wire.h"
#include "core/proposal_queue.h"

namespace tob::core {

// Decisions as they are made (the simulator's checker and the scenario files watch them).
class OtfpObserver {
 public:
  virtual ~OtfpObserver() = default;
  virtual void decided(NodeId node, int64_t instance, uint32_t ballot, const OtfpValue& value) = 0;
  // The coordinator's rounds: started (phase 1a from `low`), activated (ANY from `activation`).
  virtual void round_started(NodeId node, uint32_t ballot, int64_t low) { (void)node, (void)ballot, (void)low; }
  virtual void activated(NodeId node, uint32_t ballot, int64_t activation) { (void)node, (void)ballot, (void)activation; }
};

class OtfpNode final : public Engine {
 public:
  static Result<std::unique_ptr<OtfpNode>> create(const NodeConfig& config, std::span<const uint8_t> log = {});
  // The configuration the engine budgets its slots with: the given one, its slot carrying one
  // retransmission frame besides its copies (otfp::kAuxFramesMin).
  static NodeConfig budget_config(NodeConfig config);

  void on_time(int64_t now_ns) override;
  FrameVerdict on_frame(const FrameView& frame, int64_t rx_ns) override;
  SubmitResult submit(uint16_t client, std::span<const uint8_t> payload, int64_t submit_ns) override;
  const Actions& take_actions() override;
  void stop() override;
  int64_t next_deadline_ns() const override;
  void on_durable(uint64_t persist_bytes) override;

  Order order() const override { return Order::otfp; }
  NodeId self() const override { return self_; }
  SelfState self_state() const override { return state_; }
  uint64_t members() const override { return alive_; }
  int member_count() const override;
  Stage stage_of(NodeId n) const override;
  const Schedule& schedule() const override { return sched_; }
  const NodeCounters& counters() const override { return counters_; }
  size_t queued() const override { return proposals_.size(); }
  int64_t current_cycle() const override { return cycle_; }

  // Inspection: tests, scenario files, telemetry.
  int quorum() const { return quorum_; }
  NodeId coordinator() const;
  bool coordinating() const { return my_round_ != 0; }
  bool activating() const { return activating_; }
  int64_t lowest_undelivered() const { return low_; }
  uint32_t promised() const { return promised_; }
  uint32_t fast_ballot() const { return fast_ballot_; }
  int64_t activation() const { return activation_; }
  int64_t floor() const { return ring_.floor(); }
  int64_t highest_voted() const { return highest_voted_; }
  bool decided(int64_t instance, OtfpValue* value = nullptr, uint32_t* ballot = nullptr) const;
  bool voted(int64_t instance, uint32_t* ballot = nullptr, OtfpValue* value = nullptr) const;
  size_t log_replayed() const { return log_replayed_; }
  uint64_t persisted_bytes() const { return persisted_bytes_; }
  uint64_t durable_bytes() const { return durable_bytes_; }
  void set_observer(OtfpObserver* observer) { observer_ = observer; }

 private:
  OtfpNode(const NodeConfig& config, Schedule sched);

  // --- otfp_node.cc: time, turns, proposer.
  void advance(int64_t now_ns);
  void begin_cycle(const Turn& t);
  void own_turn(const Turn& t);
  void skip_unrecoverable();
  void report_omega();
  // One event of the events stream (counted as dropped beyond the per-call bound).
  void emit(EventKind kind, NodeId node, int64_t cycle);
  bool alive(NodeId k) const { return (alive_ >> k & 1u) != 0; }
  int64_t oldest_needed() const;  // the lowest instance some live node (this one included) has not delivered
  bool replay(std::span<const uint8_t> log);
  void clear_if_taken();

  // --- otfp_acceptor.cc.
  void vote(OtfpInstance& in, uint32_t b, const OtfpValue& v);
  void persist_batch(OtfpInstance& in, NodeId sender);
  void fast_votes(int64_t now_cycle);
  void settled_vote(int64_t i);
  void fast_vote(int64_t i, bool due);
  void pending_votes(int64_t now_cycle);
  void on_phase1a(uint32_t b, int64_t low);
  void on_any(uint32_t b, int64_t activation);
  void on_phase2a(const OtfpVote& v);
  void promise(uint32_t b);
  void persist_record(OtfpRecord kind, std::span<const uint8_t> head, std::span<const uint8_t> tail = {});
  void apply_durable();

  // --- otfp_coordinator.cc.
  void coordinate(int64_t now_cycle);
  bool stalled_instance(int64_t now_cycle) const;
  bool collision_waiting() const;  // a collision of the fast ballot waits for a coordinator
  void start_round(int64_t now_cycle);
  void on_phase1b(NodeId from, const Phase1b& p);
  void report(NodeId from, const Phase1bPart& part, std::span<const OtfpVote> votes);
  void own_report();
  bool try_activate(int64_t now_cycle);
  void propose(OtfpInstance& in, uint32_t b, const OtfpValue& v, int64_t now_cycle);
  void recover_collisions(int64_t now_cycle);
  static OtfpValue select_value(std::span<const OtfpPeerVote> votes, uint64_t voters);

  // --- otfp_learner.cc.
  void on_vote(NodeId from, const OtfpVote& v);
  void on_decided(const OtfpVote& v);
  void decide(OtfpInstance& in, uint32_t b, const OtfpValue& v);
  void deliver_ready();
  void deliver(OtfpInstance& in);
  bool already_delivered(NodeId sender, uint64_t msg_id);
  void request_missing(int64_t now_cycle);
  NodeId request_target(NodeId sender, int64_t instance, uint8_t attempt) const;
  void on_request(const OtfpRequest& r);

  // --- otfp_frames.cc.
  FrameVerdict validate(const FrameView& frame, bool* has_state) const;
  void apply(const FrameView& frame);
  void transmit(const Turn& t);
  void put_round(FrameWriter& w);
  void put_phase1b(FrameWriter& w, uint64_t ready);  // ready: log bytes it may depend on
  void put_proposals(FrameWriter& w);
  void put_votes_and_decisions(FrameWriter& w, uint64_t ready);
  void collect_decisions(int64_t behind, size_t max);  // into scratch_decisions_ (rotating start)
  void put_requests(FrameWriter& w);
  bool may_propose(const Turn& t);
  uint16_t put_own_batch(FrameWriter& w, const Turn& t, uint16_t frames_max);
  // Every copy of the slot's frames; frame 0 names the records up to frame0_records (durable).
  void send_copies(const Turn& t, uint8_t* base, uint16_t segments, uint64_t frame0_records);
  size_t build_retransmissions(const Turn& t, uint8_t* at);
  void send_retransmissions(const Turn& t, uint8_t* at, size_t frames);
  FrameHeader header(const Turn& t, uint16_t segment_index, uint16_t segment_count) const;

  NodeConfig config_;
  Schedule sched_;
  NodeId self_;
  int n_;
  int quorum_;
  int kappa_;
  int window_;
  otfp::Timeouts timeouts_;     // in cycles (otfp_limits.h)
  uint16_t own_frames_;         // frames per copy of this node's slot (its budget)
  size_t aux_frames_max_;       // retransmission frames per slot: 1, plus at most half the own batch's
  size_t turn_frames_;          // frames of one own turn: copies x own frames + aux frames
  SelfState state_ = SelfState::listening;

  bool started_ = false;
  int64_t last_now_ns_ = 0;
  int64_t next_seq_ = 0;
  Turn turn_{};  // the turn that began the current cycle (the events' time stamp)
  int64_t cycle_ = -1;
  int64_t start_cycle_ = 0;

  // Omega, the failure detector: when each node's frame was last received, what it reported.
  std::array<int64_t, kMaxNodes> heard_cycle_{};
  uint64_t alive_ = 0;
  uint64_t recent_ = 0;          // heard within kSettleSilenceCycles: an instance waits for them
  uint64_t reported_alive_ = 0;  // the view last reported as suspicion events
  std::array<int64_t, kMaxNodes> peer_low_{};        // each node's lowest undelivered instance
  std::array<int64_t, kMaxNodes> last_first_copy_{};

  // Durability: bytes of records emitted, and how many of them the driver made durable.
  uint64_t persisted_bytes_ = 0;
  uint64_t durable_bytes_ = 0;
  struct OwnVote {
    uint64_t durable_at;  // persisted_bytes_ after its record
    OtfpVote vote;
  };
  static constexpr size_t kOwnVotesMax = 4 * kOtfpRing;
  std::vector<OwnVote> own_votes_;  // cast, not yet durable (oldest first; bounded)
  size_t own_votes_head_ = 0;
  size_t own_votes_count_ = 0;
  uint64_t own_promise_at_ = 0;     // coordinator: its own promise durable from here (0: none pending)
  uint64_t promised_at_ = 0;        // the log's byte count after the latest promise record

  // Acceptor.
  uint32_t promised_ = 0;       // promised for every instance (phase 1a)
  uint32_t fast_ballot_ = 0;    // the fast ballot activated by ANY, 0 none
  int64_t activation_ = INT64_MAX;
  uint32_t ballot_seen_ = 0;    // the highest ballot seen anywhere: names the coordinator (Omega)
  int64_t highest_voted_ = -1;  // the highest instance it ever voted in (replayed from its log)
  uint32_t max_voted_ballot_ = 0;  // the highest ballot it ever voted in (replayed from its log)
  uint32_t answer_ballot_ = 0;  // a phase 1a being answered (phase 1b, over several slots)
  int64_t answer_low_ = 0;
  int64_t answer_next_ = 0;
  bool answer_done_ = false;
  std::array<OtfpRequest, otfp::kServeMax> serve_{};  // retransmissions this node owes
  std::array<uint16_t, otfp::kServeMax> serve_next_{};  // the next segment of each to send
  size_t serve_count_ = 0;

  // Coordinator.
  uint32_t my_round_ = 0;       // the round this node coordinates, 0 none
  bool activating_ = false;
  int64_t round_low_ = 0;       // the 1a's low: instances from here on are recovered
  int64_t round_started_cycle_ = -1;
  int64_t round_progress_cycle_ = -1;  // when the last phase 1b part of this round arrived
  struct Coverage {             // an acceptor's phase 1b parts received this round
    int64_t from = 0;
    int64_t to = 0;             // exclusive; kOtfpRangeOpen once the last part arrived
    int64_t highest = -1;
  };
  std::array<Coverage, kMaxNodes> coverage_{};
  uint64_t reporters_ = 0;      // acceptors with some coverage this round

  // Learner and proposer.
  int64_t low_ = 0;             // lowest instance not yet delivered
  int64_t decisions_from_ = 0;  // where the next slot's decisions list starts (frames)
  ProposalQueue proposals_;
  uint64_t next_msg_id_ = 0;
  std::array<uint64_t, kMaxNodes> delivered_top_{};  // per sender: highest id delivered + 1
  std::vector<uint64_t> delivered_bits_;             // per sender: bitmap of the ids below it

  OtfpRing ring_;
  std::vector<uint8_t> tx_bytes_;   // two own turns of turn_frames_ frames
  int tx_turn_ = 0;
  std::vector<uint32_t> tx_len_;     // lengths of the frames of the turn being built
  std::vector<OtfpVote> scratch_votes_;
  std::vector<OtfpVote> scratch_decisions_;
  std::vector<OtfpRequest> scratch_requests_;

  Actions actions_;
  bool taken_ = false;
  size_t log_replayed_ = 0;
  NodeCounters counters_;
  OtfpObserver* observer_ = nullptr;
};

}  // namespace tob::core
