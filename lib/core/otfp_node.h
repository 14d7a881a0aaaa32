// The `otfp` ordering engine: On-Time Fast Paxos on the TDMA substrate (seed 002 §4-6,
// DESIGN §7, docs/protocol-otfp.md). Every node is proposer, acceptor and learner; instance i
// is cycle i; the value of an instance is the set of batches carried in that cycle's slots.
// Same shape as core::Node: inputs in, actions out, deterministic, no clock, no I/O, no
// allocation after construction. Acceptor state leaves as log records (Actions::persist) that
// the driver makes durable before the frames of the same call leave the node.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/engine.h"
#include "core/otfp_wire.h"
#include "core/proposal_queue.h"

namespace tob::core {

// Bytes of `log` up to the first torn or corrupt record (length or CRC32C wrong): what replay
// uses. A node truncates its log file to this before appending again, so that records written
// after a restart are never hidden behind an old damaged tail.
size_t otfp_log_valid_bytes(std::span<const uint8_t> log);

// Log records (Actions::persist): kind u8 | length u16 | body | CRC32C u32 over kind..body.
enum class OtfpRecord : uint8_t { promise = 1, vote = 2, batch = 3 };

class OtfpNode final : public Engine {
 public:
  static Result<std::unique_ptr<OtfpNode>> create(const NodeConfig& config, std::span<const uint8_t> log = {});

  void on_time(int64_t now_ns) override;
  FrameVerdict on_frame(const FrameView& frame, int64_t rx_ns) override;
  SubmitResult submit(uint16_t client, std::span<const uint8_t> payload, int64_t submit_ns) override;
  const Actions& take_actions() override;
  void stop() override;
  int64_t next_deadline_ns() const override;

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

  // For tests and telemetry.
  int quorum() const { return quorum_; }
  NodeId coordinator() const;
  int64_t lowest_undelivered() const { return low_; }
  uint32_t fast_ballot() const { return fast_ballot_; }
  int64_t activation() const { return activation_; }
  bool decided(int64_t instance, OtfpValue* value = nullptr) const;
  size_t log_replayed() const { return log_replayed_; }

 private:
  OtfpNode(const NodeConfig& config, Schedule sched);

  static constexpr int kRing = 128;  // instances held: the window, kappa, recovery and history
  struct PeerVote {
    uint32_t ballot = 0;  // 0: none
    OtfpValue value;
  };
  struct Instance {
    int64_t id = -1;
    uint64_t have = 0;                      // senders whose (non-empty) batch this node holds
    std::array<uint32_t, kMaxNodes> crc{};
    std::array<uint16_t, kMaxNodes> bytes{};
    uint32_t promised = 0;                  // acceptor: highest ballot promised for it
    uint32_t voted_ballot = 0;              // acceptor: 0 = never voted
    OtfpValue voted;
    std::array<PeerVote, kMaxNodes> votes{};       // learner: latest vote of each acceptor
    std::array<PeerVote, kMaxNodes> fast_votes{};  // ... and its latest fast-ballot vote (a later
                                                   // classic vote does not unmake a fast quorum)
    bool decided = false;
    uint32_t decided_ballot = 0;
    OtfpValue decision;
    uint32_t proposal_ballot = 0;           // coordinator: phase 2a it sends for it (0 none)
    OtfpValue proposal;
    int64_t proposal_cycle = -1;            // when that proposal started
    bool collided = false;
    bool own_sent = false;                  // proposer: this node's batch went out in it
    uint64_t requested = 0;                 // learner/acceptor: batches asked for
    uint8_t attempt = 0;
    int64_t request_cycle = -1;             // when the last request went out
    uint32_t pending_ballot = 0;            // acceptor: a 2a to vote on once its batches arrived
    OtfpValue pending;
    uint64_t persisted = 0;                 // acceptor: batches already in the log
    uint64_t reported = 0;                  // coordinator: acceptors whose 1b covered it
  };

  // Time and turns.
  void advance(int64_t now_ns);
  void process_turn(const Turn& t);
  void own_turn(const Turn& t);

  // Instances.
  Instance& inst(int64_t i) { return ring_[static_cast<size_t>(i % kRing)]; }
  const Instance& inst(int64_t i) const { return ring_[static_cast<size_t>(i % kRing)]; }
  Instance* held(int64_t i);  // nullptr when i is outside what the ring holds
  Instance& open(int64_t i);  // (re)initialises the ring slot for i when it held an older one
  std::span<uint8_t> batch_at(int64_t i, NodeId sender);
  bool store_batch(int64_t i, NodeId sender, std::span<const uint8_t> body);
  OtfpValue value_of(const Instance& in, uint64_t mask) const;
  bool holds_all(const Instance& in, uint64_t mask) const;

  // Acceptor.
  void vote(Instance& in, uint32_t b, const OtfpValue& v);
  void acceptor_votes(int64_t now_cycle);
  void on_phase1a(NodeId from, uint32_t b, int64_t low);
  void on_any(uint32_t b, int64_t activation);
  void on_phase2a(const OtfpVote& v);

  // Learner.
  void on_vote(NodeId from, const OtfpVote& v);
  void on_decided(const OtfpVote& v);
  void check_decision(Instance& in);
  void decide(Instance& in, uint32_t b, const OtfpValue& v);
  void deliver_ready();
  void request_missing(int64_t now_cycle);

  // Coordinator.
  void coordinate(int64_t now_cycle);
  int64_t needed_low() const;
  void start_round(int64_t now_cycle);
  void on_phase1b(NodeId from, const Phase1b& p);
  void finish_activation(int64_t now_cycle);
  void recover_collisions(int64_t now_cycle);
  static OtfpValue select_value(std::span<const PeerVote> votes, uint64_t voters, uint32_t* highest);
  bool already_delivered(NodeId sender, uint64_t msg_id);

  // Log.
  void persist(OtfpRecord kind, std::span<const uint8_t> body);
  void persist_with_body(OtfpRecord kind, std::span<const uint8_t> head, std::span<const uint8_t> tail);
  bool replay(std::span<const uint8_t> log);

  // Output.
  void transmit(const Turn& t);
  void transmit_retransmissions(const Turn& t, size_t buffer_offset);
  void clear_if_taken();

  NodeConfig config_;
  Schedule sched_;
  NodeId self_;
  int n_;
  int quorum_;
  int kappa_;
  int window_;
  size_t batch_bytes_max_;
  SelfState state_ = SelfState::listening;

  bool started_ = false;
  int64_t last_now_ns_ = 0;
  int64_t next_seq_ = 0;
  int64_t cycle_ = -1;
  int64_t start_cycle_ = 0;

  // Failure detector (Omega): when each node's frame was last received.
  std::array<int64_t, kMaxNodes> heard_cycle_{};
  uint64_t alive_ = 0;
  std::array<int64_t, kMaxNodes> peer_low_{};  // each node's lowest undelivered instance
  std::array<int64_t, kMaxNodes> last_first_copy_{};  // cycle of the last first copy from each node

  // Acceptor.
  uint32_t promised_ = 0;       // promised for every instance (phase 1a)
  uint32_t fast_ballot_ = 0;    // the activated fast ballot (ANY), 0 none
  int64_t activation_ = INT64_MAX;
  uint32_t round_seen_ = 0;
  uint32_t pending_1b_ = 0;     // a phase 1a to answer (ballot), 0 none
  int64_t pending_1b_low_ = 0;
  int64_t pending_1b_next_ = 0; // next instance to report (1b may take several slots)
  bool pending_1b_done_ = false;
  int64_t floor_ = 0;           // oldest instance whose acceptor state this node still holds
  std::array<OtfpRequest, 32> serve_{};  // retransmissions this node owes
  size_t serve_count_ = 0;

  // Coordinator.
  uint32_t my_round_ = 0;       // the round this node coordinates, 0 none
  bool activating_ = false;
  uint64_t promises_ = 0;       // acceptors whose complete 1b arrived
  int64_t reported_highest_ = -1;
  int64_t reported_floor_ = 0;
  int64_t recovery_low_ = 0;    // the 1a's low: instances from here on are recovered
  int64_t round_started_cycle_ = -1;

  // Learner and proposer.
  int64_t low_ = 0;             // lowest instance not yet delivered
  ProposalQueue proposals_;
  uint64_t next_msg_id_ = 0;
  std::array<uint64_t, kMaxNodes> delivered_top_{};  // per sender: highest id delivered + 1
  std::vector<uint64_t> delivered_bits_;             // per sender: bitmap of the ids below it

  std::vector<Instance> ring_;
  std::vector<uint8_t> batch_bytes_;  // kRing x N x batch_bytes_max
  std::vector<uint8_t> tx_bytes_;
  int tx_turn_ = 0;
  std::vector<OtfpVote> scratch_votes_;
  std::vector<OtfpRequest> scratch_requests_;

  Actions actions_;
  bool taken_ = false;
  size_t log_replayed_ = 0;
  NodeCounters counters_;
};

}  // namespace tob::core
