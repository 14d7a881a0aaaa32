#include "core/otfp_node.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "core/bytes.h"
#include "core/crc32c.h"

namespace tob::core {

namespace {

constexpr uint64_t bit(NodeId n) { return uint64_t{1} << n; }
constexpr int kRecoveryCycles = 4;     // undecided this long after its votes were due: stuck
constexpr int kRequestRetryCycles = 2; // retransmission requests re-targeted after this
constexpr int kHeardCycles = 2;        // Omega: a node is alive while heard within this
constexpr size_t kVotesPerFrame = 24;  // bounded sections (frame room permitting)
constexpr size_t kRequestsPerFrame = 32;
constexpr size_t kRecordHeader = 3;    // kind u8, length u16
constexpr size_t kRecordTrailer = 4;   // CRC32C
constexpr size_t kDedupBits = 65536;   // per sender: ids above the highest-minus-this are checked
constexpr size_t kDedupWords = kDedupBits / 64;
// Header, CRC, the state section, and the data section's headers of a retransmission frame.
constexpr size_t kOtfpFrameOverhead =
    kMinFrameBytes + kSectionHeaderBytes + kOtfpStateBytes + kSectionHeaderBytes + kOtfpDataHeader;


// How many entries of a list section fit in what is left of the frame (at most `want`).
size_t fitting(const FrameWriter& w, size_t header, size_t entry, size_t want) {
  const size_t room = w.room();
  return room < header ? 0 : std::min(want, (room - header) / entry);
}

// A list section of votes, as many of `votes` as fit in what is left of the frame (the rest go
// in a later slot: every list is repeated until it no longer applies).
void put_votes(FrameWriter& w, SectionType type, std::vector<OtfpVote>& votes) {
  if (votes.empty()) return;
  votes.resize(fitting(w, kOtfpListHeader, kOtfpVoteBytes, votes.size()));
  if (votes.empty()) return;
  auto body = w.open_section(type, 0, kOtfpListHeader + votes.size() * kOtfpVoteBytes);
  w.close_section(write_votes(body, votes));
}

}  // namespace

Result<std::unique_ptr<OtfpNode>> OtfpNode::create(const NodeConfig& config, std::span<const uint8_t> log) {
  auto ok = config.validate();
  if (!ok) return ok.error();
  const size_t need = kOtfpFrameOverhead + kBatchHeaderBytes + kBatchEntryHeaderBytes + config.payload_bytes_max;
  if (config.frame_bytes_max < need)
    return Error{"otfp: frame size " + std::to_string(config.frame_bytes_max) +
                 " bytes cannot carry one message of the maximum payload (needs " + std::to_string(need) + " bytes)"};
  if (config.queue_msgs_max > kDedupBits)
    return Error{"otfp: queue must hold at most " + std::to_string(kDedupBits) +
                 " messages (duplicate detection covers that many ids per sender)"};
  auto sched = Schedule::create(config.schedule);
  std::unique_ptr<OtfpNode> node(new OtfpNode(config, std::move(sched.value())));
  if (!log.empty() && !node->replay(log)) return Error{"otfp: the acceptor log could not be read"};
  return node;
}

OtfpNode::OtfpNode(const NodeConfig& config, Schedule sched)
    : config_(config),
      sched_(std::move(sched)),
      self_(config.self),
      n_(sched_.node_count()),
      quorum_(2 * sched_.node_count() / 3 + 1),
      kappa_(config.kappa),
      window_(config.otfp_window),
      proposals_(config.queue_msgs_max, config.queue_bytes_max, config.payload_bytes_max) {
  if (config_.stall_limit_ns == 0) config_.stall_limit_ns = sched_.cycle_ns();
  // A batch must fit a retransmission frame: header, CRC, the state section and the data
  // section's headers. (Room for the other sections is checked per frame.)
  batch_bytes_max_ = config_.frame_bytes_max - kOtfpFrameOverhead;
  next_msg_id_ = config_.first_msg_id;
  ring_.resize(kRing);
  batch_bytes_.resize(static_cast<size_t>(kRing) * static_cast<size_t>(n_) * batch_bytes_max_);
  const auto copies = static_cast<size_t>(sched_.sends_per_slot());
  tx_bytes_.resize(2 * (copies + 1) * config_.frame_bytes_max);  // two turns: copies + a retransmission frame
  delivered_bits_.assign(static_cast<size_t>(n_) * kDedupWords, 0);
  peer_low_.fill(0);
  heard_cycle_.fill(INT64_MIN / 2);
  scratch_votes_.reserve(kRing);
  scratch_requests_.reserve(kRequestsPerFrame);
  actions_.tx.reserve(2 * copies * 4);
  actions_.deliveries.reserve(4 * static_cast<size_t>(n_) * config_.batch_msgs_max);
  actions_.events.reserve(64);
  actions_.undelivered.reserve(16);
  actions_.persist.reserve(static_cast<size_t>(n_) * (config_.frame_bytes_max + 64) + 4096);
  state_ = SelfState::member;
}

// --- Engine plumbing ----------------------------------------------------------------------

void OtfpNode::clear_if_taken() { core::clear_if_taken(actions_, taken_); }

const Actions& OtfpNode::take_actions() { return core::take_actions(actions_, taken_); }

int64_t OtfpNode::next_deadline_ns() const {
  if (!started_) return INT64_MIN;
  return sched_.turn(next_seq_).membership_point_ns;
}

int OtfpNode::member_count() const { return std::popcount(alive_); }

Stage OtfpNode::stage_of(NodeId n) const { return (alive_ & bit(n)) != 0 ? Stage::member : Stage::inactive; }

SubmitResult OtfpNode::submit(uint16_t client, std::span<const uint8_t> payload, int64_t submit_ns) {
  const SubmitStatus st = proposals_.push(client, payload, submit_ns, next_msg_id_);
  if (st != SubmitStatus::ok) {
    ++counters_.msgs_refused;
    return {st, 0};
  }
  ++counters_.msgs_submitted;
  return {st, next_msg_id_++};
}

void OtfpNode::stop() {
  clear_if_taken();
  state_ = SelfState::stopped;
}

NodeId OtfpNode::coordinator() const {
  const uint64_t candidates = alive_ | bit(self_);
  return static_cast<NodeId>(std::countr_zero(candidates));
}

bool OtfpNode::decided(int64_t instance, OtfpValue* value) const {
  if (instance < 0) return false;
  const Instance& in = inst(instance);
  if (in.id != instance || !in.decided) return false;
  if (value != nullptr) *value = in.decision;
  return true;
}

// --- Instances ----------------------------------------------------------------------------

OtfpNode::Instance* OtfpNode::held(int64_t i) {
  if (i < 0) return nullptr;
  Instance& in = inst(i);
  return in.id == i ? &in : nullptr;
}

OtfpNode::Instance& OtfpNode::open(int64_t i) {
  TOB_ASSERT(i >= 0);
  Instance& in = inst(i);
  if (in.id == i) return in;
  TOB_ASSERT(in.id < i);  // the ring only moves forward
  if (in.id >= 0) floor_ = std::max(floor_, in.id + 1);  // its votes are forgotten from now on
  in = Instance{};
  in.id = i;
  return in;
}

std::span<uint8_t> OtfpNode::batch_at(int64_t i, NodeId sender) {
  const size_t slot = static_cast<size_t>(i % kRing) * static_cast<size_t>(n_) + sender;
  return {batch_bytes_.data() + slot * batch_bytes_max_, batch_bytes_max_};
}

bool OtfpNode::store_batch(int64_t i, NodeId sender, std::span<const uint8_t> body) {
  Instance* in = held(i);
  if (in == nullptr || (in->have & bit(sender)) != 0 || body.size() > batch_bytes_max_) return false;
  uint16_t count = 0;
  if (!validate_batch(body, &count) || count == 0) return false;
  std::memcpy(batch_at(i, sender).data(), body.data(), body.size());
  in->have |= bit(sender);
  in->crc[sender] = crc32c(body);
  in->bytes[sender] = static_cast<uint16_t>(body.size());
  return true;
}

bool OtfpNode::holds_all(const Instance& in, uint64_t mask) const { return (mask & ~in.have) == 0; }

OtfpValue OtfpNode::value_of(const Instance& in, uint64_t mask) const {
  uint64_t h = mix64(static_cast<uint64_t>(in.id));
  for (uint64_t m = mask; m != 0; m &= m - 1) {
    const int s = std::countr_zero(m);
    h = mix64(h ^ (static_cast<uint64_t>(s) << 32 | in.crc[static_cast<size_t>(s)]));
  }
  return {mask, mask == 0 ? 0 : h};
}

// --- Time ---------------------------------------------------------------------------------

void OtfpNode::on_time(int64_t now_ns) {
  clear_if_taken();
  if (state_ == SelfState::stopped) return;
  advance(now_ns);
}

void OtfpNode::advance(int64_t now_ns) {
  if (!started_) {
    started_ = true;
    last_now_ns_ = now_ns;
    const int64_t start = std::max(now_ns, sched_.epoch_ns());
    next_seq_ = sched_.next_turn_after(start - 1).seq;
    start_cycle_ = sched_.turn(next_seq_).cycle;
    low_ = std::max(low_, start_cycle_);  // a new incarnation delivers from now on
    for (int k = 0; k < n_; ++k) peer_low_[static_cast<size_t>(k)] = low_;
  } else {
    if (now_ns <= last_now_ns_) return;
    last_now_ns_ = now_ns;
  }
  // After a long stall, jump to the present: the instances missed are caught up (or skipped).
  const Turn skip_to = sched_.next_turn_after(now_ns - 2 * sched_.cycle_ns());
  if (skip_to.seq > next_seq_) next_seq_ = skip_to.seq;
  for (Turn t = sched_.turn(next_seq_); t.membership_point_ns <= now_ns; t = sched_.turn(next_seq_)) {
    process_turn(t);
    ++next_seq_;
  }
}

void OtfpNode::process_turn(const Turn& t) {
  if (t.cycle != cycle_) {
    // A new cycle, a new instance (seed 002 §5.2: clock tick i = instance i).
    cycle_ = t.cycle;
    open(cycle_);
    alive_ = bit(self_);
    for (NodeId k = 0; k < n_; ++k)
      if (k != self_ && cycle_ - heard_cycle_[k] <= kHeardCycles) alive_ |= bit(k);
    // Fallen further behind than the ring: skip forward (reported, never silent).
    const int64_t oldest_held = std::max<int64_t>(floor_, cycle_ - kRing + 2);
    if (low_ < oldest_held) {
      counters_.gaps += static_cast<uint64_t>(oldest_held - low_);
      MembershipEvent e{EventKind::instances_skipped, self_, Reason::none, low_, t.seq, t.membership_point_ns, alive_};
      if (actions_.events.size() < actions_.events.capacity()) actions_.events.push_back(e);
      low_ = oldest_held;
    }
    coordinate(cycle_);
    request_missing(cycle_);
    deliver_ready();
    const auto undecided = static_cast<uint64_t>(std::max<int64_t>(0, cycle_ - low_));
    counters_.window_now = undecided;
    counters_.window_max = std::max(counters_.window_max, undecided);
  }
  if (t.node == self_) own_turn(t);
}

void OtfpNode::own_turn(const Turn& t) {
  acceptor_votes(t.cycle);
  transmit(t);
}

// --- Acceptor -----------------------------------------------------------------------------

void OtfpNode::vote(Instance& in, uint32_t b, const OtfpValue& v) {
  TOB_ASSERT(b > in.voted_ballot || (b == in.voted_ballot && v == in.voted));
  if (b == in.voted_ballot) return;
  // The batches it votes for must survive a restart: retransmission depends on them.
  for (uint64_t m = v.mask & ~in.persisted; m != 0; m &= m - 1) {
    const auto s = static_cast<NodeId>(std::countr_zero(m));
    uint8_t head[9];
    store_be64(head, static_cast<uint64_t>(in.id));
    head[8] = s;
    persist_with_body(OtfpRecord::batch, head, batch_at(in.id, s).first(in.bytes[s]));
  }
  in.persisted |= v.mask;
  in.voted_ballot = b;
  in.voted = v;
  in.promised = std::max(in.promised, b);
  uint8_t body[kOtfpVoteBytes];
  const OtfpVote own{in.id, b, v};
  write_vote(body, own);
  persist(OtfpRecord::vote, body);
  on_vote(self_, own);
}

void OtfpNode::acceptor_votes(int64_t now_cycle) {
  // Fast ballot (seed 002 §5.2): the batches of instance i received by the acceptor's slot of
  // cycle i + kappa are its value; late frames still count if they came before.
  if (fast_ballot_ != 0 && fast_ballot_ >= promised_) {
    const int64_t from = std::max({activation_, low_, now_cycle - kRing + 2});
    for (int64_t i = from; i <= now_cycle - kappa_; ++i) {
      Instance* in = held(i);
      if (in == nullptr || in->decided || in->voted_ballot >= fast_ballot_ || in->promised > fast_ballot_) continue;
      vote(*in, fast_ballot_, value_of(*in, in->have));
    }
  }
  // Phase 2a proposals that waited for batches (also of instances this node will not deliver:
  // a restarted acceptor still helps decide what the others need).
  for (int64_t i = std::max(floor_, now_cycle - kRing + 2); i <= now_cycle; ++i) {
    Instance* in = held(i);
    if (in == nullptr || in->pending_ballot == 0) continue;
    if (!holds_all(*in, in->pending.mask)) continue;
    const uint32_t b = in->pending_ballot;
    in->pending_ballot = 0;
    if (b < promised_ || b < in->promised || b <= in->voted_ballot) continue;
    if (value_of(*in, in->pending.mask) == in->pending) vote(*in, b, in->pending);
  }
}

void OtfpNode::on_phase1a(NodeId from, uint32_t b, int64_t low) {
  round_seen_ = std::max(round_seen_, ballot_round(b));
  if (b < promised_) return;
  if (b > promised_) {
    promised_ = b;
    uint8_t body[4];
    store_be32(body, b);
    persist(OtfpRecord::promise, body);
  }
  (void)from;
  // Answered in this node's next slot, and again whenever the 1a is repeated (the 1b may have
  // been lost): the coordinator repeats its 1a until a quorum answered.
  pending_1b_ = b;
  pending_1b_low_ = low;
  if (pending_1b_done_ || pending_1b_next_ < low) pending_1b_next_ = low;
  pending_1b_done_ = false;
}

void OtfpNode::on_any(uint32_t b, int64_t activation) {
  round_seen_ = std::max(round_seen_, ballot_round(b));
  if (b < promised_ || b < fast_ballot_) return;
  promised_ = std::max(promised_, b);
  fast_ballot_ = b;
  activation_ = activation;
}

void OtfpNode::on_phase2a(const OtfpVote& v) {
  round_seen_ = std::max(round_seen_, ballot_round(v.ballot));
  Instance* in = held(v.instance);
  // An instance this node has no state for, that it may still take part in: its log holds every
  // vote it ever cast, so one it does not hold (above its floor) it never voted in.
  if (in == nullptr && v.instance >= floor_ && v.instance > cycle_ - kRing + 1 && v.instance <= cycle_ &&
      inst(v.instance).id < v.instance)
    in = &open(v.instance);
  if (in == nullptr || in->decided) return;
  if (v.ballot < promised_ || v.ballot < in->promised || v.ballot <= in->voted_ballot) return;
  if (!holds_all(*in, v.value.mask)) {
    // Vote once the batches are here (seed 002 §5.3): ask for them now.
    in->pending_ballot = v.ballot;
    in->pending = v.value;
    return;
  }
  if (value_of(*in, v.value.mask) == v.value) vote(*in, v.ballot, v.value);
}

// --- Learner ------------------------------------------------------------------------------

void OtfpNode::on_vote(NodeId from, const OtfpVote& v) {
  Instance* in = held(v.instance);
  if (in == nullptr) return;
  round_seen_ = std::max(round_seen_, ballot_round(v.ballot));
  // Q identical votes in one ballot decide (fast or classic alike).
  const auto count_in = [&](std::array<PeerVote, kMaxNodes>& set) {
    PeerVote& pv = set[from];
    if (v.ballot < pv.ballot) return 0;
    pv = {v.ballot, v.value};
    int same = 0;
    for (NodeId a = 0; a < n_; ++a)
      if (set[a].ballot == v.ballot && set[a].value == v.value) ++same;
    return same;
  };
  int same = count_in(in->votes);
  if (!ballot_classic(v.ballot)) same = std::max(same, count_in(in->fast_votes));
  if (!in->decided && same >= quorum_) decide(*in, v.ballot, v.value);
}

void OtfpNode::on_decided(const OtfpVote& v) {
  // A decision another node learned: nodes fail only by crashing, so it is a fact.
  Instance* in = held(v.instance);
  if (in != nullptr && !in->decided) decide(*in, v.ballot, v.value);
}

void OtfpNode::decide(Instance& in, uint32_t b, const OtfpValue& v) {
  in.decided = true;
  in.decided_ballot = b;
  in.decision = v;
  in.proposal_ballot = 0;
  in.pending_ballot = 0;
  ++counters_.instances_decided;
  if (ballot_classic(b)) {
    ++counters_.instances_recovered;
  } else {
    ++counters_.instances_fast;
  }
}

void OtfpNode::request_missing(int64_t now_cycle) {
  for (int64_t i = std::max(floor_, now_cycle - kRing + 2); i <= now_cycle; ++i) {
    Instance* in = held(i);
    if (in == nullptr) continue;
    uint64_t want = 0;
    if (in->decided && i >= low_) want |= in->decision.mask & ~in->have;  // to deliver it
    if (in->pending_ballot != 0) want |= in->pending.mask & ~in->have;
    if (want == 0) {
      in->requested = 0;
      continue;
    }
    if (in->request_cycle >= 0 && now_cycle - in->request_cycle < kRequestRetryCycles) continue;
    if (in->request_cycle >= 0) ++in->attempt;  // no answer: the next acceptor (seed 002 §5.5)
    in->requested = want;
    in->request_cycle = now_cycle;
    counters_.retransmit_requests += static_cast<uint64_t>(std::popcount(want));
  }
}

bool OtfpNode::already_delivered(NodeId s, uint64_t id) {
  // Per sender: the highest id delivered (+1) and a bitmap of the kDedupBits ids below it. A
  // proposer re-proposes only messages still in its queue, so older ids cannot come back.
  uint64_t* bits = delivered_bits_.data() + static_cast<size_t>(s) * kDedupWords;
  uint64_t& top = delivered_top_[s];
  const auto set = [&](uint64_t x) { bits[(x / 64) % kDedupWords] |= uint64_t{1} << (x % 64); };
  const auto test = [&](uint64_t x) { return (bits[(x / 64) % kDedupWords] >> (x % 64) & 1u) != 0; };
  if (top == 0 || id >= top) {
    if (top != 0) {
      if (id - top >= kDedupBits) {
        std::fill(bits, bits + kDedupWords, 0);
      } else {
        for (uint64_t x = top; x < id; ++x) bits[(x / 64) % kDedupWords] &= ~(uint64_t{1} << (x % 64));
      }
    }
    top = id + 1;
    set(id);
    return false;
  }
  if (top - id > kDedupBits || test(id)) return true;
  set(id);
  return false;
}

void OtfpNode::deliver_ready() {
  while (low_ <= cycle_) {
    Instance* in = held(low_);
    if (in == nullptr || !in->decided || !holds_all(*in, in->decision.mask)) return;
    // Bounded output per call: a whole instance or none of it (the rest at the next call).
    const size_t room = actions_.deliveries.capacity() - actions_.deliveries.size();
    if (room < config_.batch_msgs_max * static_cast<size_t>(std::popcount(in->decision.mask))) return;
    if (value_of(*in, in->decision.mask) != in->decision) {
      // Batches that do not match the decided digest: fetch them again.
      in->have &= ~in->decision.mask;
      in->request_cycle = -1;
      return;
    }
    // Release instant: the cycle by which every node decided it when nothing failed.
    const int64_t release_ns = sched_.cycle_start_ns(low_ + kappa_ + 2);
    for (uint64_t m = in->decision.mask; m != 0; m &= m - 1) {
      const auto s = static_cast<NodeId>(std::countr_zero(m));
      BatchReader reader(batch_at(low_, s).first(in->bytes[s]));
      const int64_t turn_seq = sched_.turn_of(low_, s).seq;
      for (AppMessage am; reader.next(am);) {
        if (already_delivered(s, am.msg_id)) {
          ++counters_.duplicates_dropped;
          continue;
        }
        actions_.deliveries.push_back({s, low_, turn_seq, sched_.transmit_ns(low_ + kappa_, s), am.msg_id,
                                       am.submit_ns, am.client, am.payload, release_ns});
        ++counters_.msgs_delivered;
      }
    }
    if (in->own_sent) proposals_.decided(low_, (in->decision.mask & bit(self_)) != 0);
    ++low_;
  }
}

// --- Coordinator --------------------------------------------------------------------------

int64_t OtfpNode::needed_low() const {
  // The oldest instance some live node still has to deliver: the coordinator works from there,
  // not from its own progress (it may have restarted, or simply be ahead).
  int64_t low = low_;
  for (NodeId k = 0; k < n_; ++k)
    if (k != self_ && (alive_ & bit(k)) != 0) low = std::min(low, peer_low_[k]);
  return std::max<int64_t>({low, cycle_ - kRing + 2, 0});
}

void OtfpNode::coordinate(int64_t now_cycle) {
  if (coordinator() != self_) {
    my_round_ = 0;  // another node leads: this one only proposes, accepts and learns
    activating_ = false;
    return;
  }
  // Listen first: a node that just started has not heard the lower ids yet.
  if (now_cycle - start_cycle_ < kHeardCycles) return;
  // A higher round elsewhere (another coordinator, or this node's earlier life): outbid it.
  if (my_round_ == 0 || my_round_ < round_seen_ || promised_ > ballot(my_round_, true, self_)) {
    start_round(now_cycle);
    return;
  }
  if (activating_) {
    if (std::popcount(promises_) >= quorum_) {
      finish_activation(now_cycle);
    } else if (now_cycle - round_started_cycle_ >= kRecoveryCycles) {
      start_round(now_cycle);  // its 1a or the answers were lost long enough: a higher round
    }
    return;
  }
  recover_collisions(now_cycle);
  // An instance undecided long after its votes were due, with no recovery under way: a new
  // round with phase 1 settles it (classic ballot).
  if (now_cycle - round_started_cycle_ < kRecoveryCycles) return;
  for (int64_t i = needed_low(); i <= now_cycle - kappa_ - 1 - kRecoveryCycles; ++i) {
    const Instance* in = held(i);
    const bool stalled = in != nullptr && (in->proposal_ballot == 0 || now_cycle - in->proposal_cycle > kRecoveryCycles);
    if (in != nullptr && !in->decided && stalled) {
      start_round(now_cycle);
      return;
    }
  }
}

void OtfpNode::start_round(int64_t now_cycle) {
  my_round_ = std::max(round_seen_, my_round_) + 1;
  TOB_ASSERT(my_round_ < (1u << 24));  // ballots hold 24 bits of round
  round_seen_ = my_round_;
  activating_ = true;
  promises_ = 0;
  reported_highest_ = -1;
  reported_floor_ = 0;
  round_started_cycle_ = now_cycle;
  ++counters_.activations;
  recovery_low_ = needed_low();
  // This node is one of the acceptors.
  on_phase1a(self_, ballot(my_round_, false, self_), recovery_low_);
}

void OtfpNode::on_phase1b(NodeId from, const Phase1b& p) {
  if (!activating_ || p.ballot != ballot(my_round_, false, self_)) return;
  // The votes it reports stand as its votes (they are its latest).
  for (size_t k = 0; k < p.votes.size(); ++k) {
    const OtfpVote v = p.votes.at(k);
    Instance* in = held(v.instance);
    if (in == nullptr) continue;
    PeerVote& pv = in->votes[from];
    if (v.ballot >= pv.ballot) pv = {v.ballot, v.value};
    in->reported |= bit(from);
  }
  reported_highest_ = std::max(reported_highest_, p.highest);
  reported_floor_ = std::max(reported_floor_, p.floor);
  if (p.complete) promises_ |= bit(from);
}

OtfpValue OtfpNode::select_value(std::span<const PeerVote> votes, uint64_t voters, uint32_t* highest) {
  // The Fast Paxos rule with equal quorums (seed 002 §4, [18]): among the votes of the highest
  // ballot, the value voted most often (ties: the smallest, so every coordinator picks alike).
  uint32_t top = 0;
  for (uint64_t m = voters; m != 0; m &= m - 1) top = std::max(top, votes[static_cast<size_t>(std::countr_zero(m))].ballot);
  if (highest != nullptr) *highest = top;
  OtfpValue best;
  int best_count = 0;
  if (top == 0) return best;  // nobody voted: any value, the empty one
  for (uint64_t m = voters; m != 0; m &= m - 1) {
    const PeerVote& a = votes[static_cast<size_t>(std::countr_zero(m))];
    if (a.ballot != top) continue;
    int count = 0;
    for (uint64_t w = voters; w != 0; w &= w - 1) {
      const PeerVote& b = votes[static_cast<size_t>(std::countr_zero(w))];
      if (b.ballot == top && b.value == a.value) ++count;
    }
    const bool smaller = a.value.mask < best.mask || (a.value.mask == best.mask && a.value.digest < best.digest);
    if (count > best_count || (count == best_count && smaller)) {
      best = a.value;
      best_count = count;
    }
  }
  return best;
}

void OtfpNode::finish_activation(int64_t now_cycle) {
  // Never decide below what a promiser still remembers (its floor): those are skipped.
  if (low_ < reported_floor_) {
    counters_.gaps += static_cast<uint64_t>(reported_floor_ - low_);
    low_ = reported_floor_;
  }
  // Activation point (seed 002 §5.1): past every instance a promiser voted in. Below it, every
  // instance some live node still needs gets a classic phase 2 with the rule's value.
  const int64_t a = std::max(reported_highest_ + 1, now_cycle + 1);
  const uint32_t classic = ballot(my_round_, true, self_);
  for (int64_t i = std::max(recovery_low_, reported_floor_); i < a && i <= now_cycle; ++i) {
    if (i <= cycle_ - kRing + 1 || inst(i).id > i) continue;  // no longer in the ring
    Instance* in = &open(i);
    if (in->decided) continue;
    in->proposal = select_value(in->votes, promises_, nullptr);  // promisers only (see the doc)
    in->proposal_ballot = classic;
    in->proposal_cycle = now_cycle;
    on_phase2a({i, classic, in->proposal});
  }
  activating_ = false;
  on_any(ballot(my_round_, false, self_), a);
}

void OtfpNode::recover_collisions(int64_t now_cycle) {
  // Coordinated recovery (seed 002 §5.3): the 2b votes of this node's fast ballot b stand for
  // the 1b of the classic ballot b + 1, which starts at phase 2.
  const uint32_t fast = ballot(my_round_, false, self_);
  for (int64_t i = std::max(needed_low(), activation_); i <= now_cycle; ++i) {
    Instance* in = held(i);
    if (in == nullptr || in->decided || in->proposal_ballot != 0) continue;
    uint64_t voters = 0;
    for (NodeId a = 0; a < n_; ++a)
      if (in->fast_votes[a].ballot == fast) voters |= bit(a);
    if (std::popcount(voters) < quorum_) continue;
    ++counters_.collisions;
    in->collided = true;
    in->proposal = select_value(in->fast_votes, voters, nullptr);
    in->proposal_ballot = ballot(my_round_, true, self_);
    in->proposal_cycle = now_cycle;
    on_phase2a({i, in->proposal_ballot, in->proposal});
  }
}

// --- Log ----------------------------------------------------------------------------------

void OtfpNode::persist_with_body(OtfpRecord kind, std::span<const uint8_t> head, std::span<const uint8_t> tail) {
  const size_t len = head.size() + tail.size();
  TOB_ASSERT(len <= UINT16_MAX);
  const size_t at = actions_.persist.size();
  actions_.persist.resize(at + kRecordHeader + len + kRecordTrailer);
  uint8_t* p = actions_.persist.data() + at;
  p[0] = static_cast<uint8_t>(kind);
  store_be16(p + 1, static_cast<uint16_t>(len));
  std::memcpy(p + kRecordHeader, head.data(), head.size());
  if (!tail.empty()) std::memcpy(p + kRecordHeader + head.size(), tail.data(), tail.size());
  store_be32(p + kRecordHeader + len, crc32c({p, kRecordHeader + len}));
  ++counters_.persist_records;
}

void OtfpNode::persist(OtfpRecord kind, std::span<const uint8_t> body) { persist_with_body(kind, body, {}); }

size_t otfp_log_valid_bytes(std::span<const uint8_t> log) {
  size_t off = 0;
  while (off + kRecordHeader + kRecordTrailer <= log.size()) {
    const uint8_t* p = log.data() + off;
    const size_t len = load_be16(p + 1);
    if (off + kRecordHeader + len + kRecordTrailer > log.size()) break;                  // torn tail
    if (crc32c({p, kRecordHeader + len}) != load_be32(p + kRecordHeader + len)) break;  // corrupt tail
    off += kRecordHeader + len + kRecordTrailer;
  }
  return off;
}

bool OtfpNode::replay(std::span<const uint8_t> log) {
  const size_t valid = otfp_log_valid_bytes(log);
  size_t off = 0;
  while (off < valid) {
    const uint8_t* p = log.data() + off;
    const size_t len = load_be16(p + 1);
    const std::span<const uint8_t> body(p + kRecordHeader, len);
    switch (static_cast<OtfpRecord>(p[0])) {
      case OtfpRecord::promise:
        if (len == 4) promised_ = std::max(promised_, load_be32(body.data()));
        break;
      case OtfpRecord::vote:
        if (len == kOtfpVoteBytes) {
          VoteList one;
          uint8_t list[kOtfpListHeader + kOtfpVoteBytes];
          store_be16(list, 1);
          store_be16(list + 2, 0);
          std::memcpy(list + kOtfpListHeader, body.data(), len);
          if (one.parse(list)) {
            const OtfpVote v = one.at(0);
            if (v.instance >= 0 && v.instance >= inst(v.instance).id) {
              Instance& in = open(v.instance);
              if (v.ballot > in.voted_ballot) {
                in.voted_ballot = v.ballot;
                in.voted = v.value;
                in.promised = std::max(in.promised, v.ballot);
                in.persisted |= v.value.mask;
              }
            }
            round_seen_ = std::max(round_seen_, ballot_round(v.ballot));
          }
        }
        break;
      case OtfpRecord::batch:
        if (len >= 9) {
          const auto i = static_cast<int64_t>(load_be64(body.data()));
          const NodeId s = body[8];
          if (i >= 0 && s < n_ && i >= inst(i).id) {
            open(i);
            store_batch(i, s, body.subspan(9));
          }
        }
        break;
      default:
        return false;  // a record this version does not know: refuse rather than guess
    }
    off += kRecordHeader + len + kRecordTrailer;
    ++log_replayed_;
  }
  round_seen_ = std::max(round_seen_, ballot_round(promised_));
  return true;
}

// --- Frames -------------------------------------------------------------------------------

FrameVerdict OtfpNode::on_frame(const FrameView& frame, int64_t rx_ns) {
  clear_if_taken();
  const auto verdict = [&](FrameVerdict v) {
    ++counters_.frames_rx[static_cast<int>(v)];
    return v;
  };
  if (state_ == SelfState::stopped) return verdict(FrameVerdict::not_running);
  advance(rx_ns);
  const FrameHeader& h = frame.header;
  if (h.cluster_id != config_.cluster_id) return verdict(FrameVerdict::wrong_cluster);
  if (h.sender >= n_) return verdict(FrameVerdict::unknown_sender);
  if (h.sender == self_) return verdict(FrameVerdict::own_frame);
  const auto c = static_cast<int64_t>(h.cycle);
  // Timing only matters for liveness: any frame of a cycle the ring holds is used.
  if (h.cycle > static_cast<uint64_t>(INT64_MAX / 4) || c > cycle_ + 1 || c < cycle_ - kRing + 2)
    return verdict(FrameVerdict::outside_window);
  const NodeId s = h.sender;
  if ((h.flags & kFlagSecondCopy) != 0 && heard_cycle_[s] == c && last_first_copy_[s] == c)
    return verdict(FrameVerdict::duplicate);

  // Validate every section before acting on any (a malformed frame is an omission).
  SectionView sec;
  bool has_state = false;
  for (size_t off = 0; frame.next_section(off, sec);) {
    bool ok = true;
    switch (sec.type) {
      case SectionType::app_batch: {
        uint16_t count = 0;
        ok = sec.body.size() <= batch_bytes_max_ && validate_batch(sec.body, &count);
        break;
      }
      case SectionType::otfp_vote:
      case SectionType::otfp_phase2a:
      case SectionType::otfp_decided: {
        VoteList l;
        ok = l.parse(sec.body);
        break;
      }
      case SectionType::retransmit_request: {
        size_t count = 0;
        std::span<const uint8_t> e;
        ok = read_requests(sec.body, count, e);
        break;
      }
      case SectionType::retransmit_data: {
        NodeId ds = 0;
        int64_t di = 0;
        std::span<const uint8_t> b;
        uint16_t count = 0;
        ok = read_data(sec.body, ds, di, b) && ds < n_ && b.size() <= batch_bytes_max_ && validate_batch(b, &count);
        break;
      }
      case SectionType::otfp_phase1a:
      case SectionType::otfp_any: {
        uint32_t b = 0;
        int64_t i = 0;
        ok = read_ballot_instance(sec.body, b, i) && ballot_coordinator(b) == s;
        break;
      }
      case SectionType::otfp_phase1b: {
        Phase1b p;
        ok = read_phase1b(sec.body, p);
        break;
      }
      case SectionType::otfp_state: {
        int64_t low = 0;
        uint32_t round = 0;
        ok = read_state(sec.body, low, round);
        has_state = ok;
        break;
      }
      default: break;  // unknown sections are skipped (later versions add more)
    }
    if (!ok) return verdict(FrameVerdict::malformed_batch);
  }
  if (!has_state) return verdict(FrameVerdict::malformed_batch);  // not an otfp frame

  heard_cycle_[s] = std::max(heard_cycle_[s], c);
  if ((h.flags & kFlagSecondCopy) == 0) last_first_copy_[s] = c;
  alive_ |= bit(s);
  for (size_t off = 0; frame.next_section(off, sec);) {
    switch (sec.type) {
      case SectionType::otfp_state: {
        int64_t low = 0;
        uint32_t round = 0;
        read_state(sec.body, low, round);
        peer_low_[s] = low;
        round_seen_ = std::max(round_seen_, round);
        break;
      }
      case SectionType::app_batch:
        // A sender whose clock is ahead may open cycle c before this node's clock reaches it.
        if (c >= 0 && inst(c).id <= c) open(c);
        store_batch(c, s, sec.body);
        break;
      case SectionType::otfp_vote: {
        VoteList l;
        l.parse(sec.body);
        for (size_t k = 0; k < l.size(); ++k) on_vote(s, l.at(k));
        break;
      }
      case SectionType::otfp_phase2a: {
        VoteList l;
        l.parse(sec.body);
        for (size_t k = 0; k < l.size(); ++k) {
          const OtfpVote v = l.at(k);
          if (ballot_coordinator(v.ballot) == s) on_phase2a(v);
        }
        break;
      }
      case SectionType::otfp_decided: {
        VoteList l;
        l.parse(sec.body);
        for (size_t k = 0; k < l.size(); ++k) on_decided(l.at(k));
        break;
      }
      case SectionType::retransmit_request: {
        size_t count = 0;
        std::span<const uint8_t> e;
        read_requests(sec.body, count, e);
        for (size_t k = 0; k < count; ++k) {
          const OtfpRequest r = request_at(e, k);
          if (r.sender >= n_) continue;
          // The partition of batch ids among acceptors, shifted by the attempt (seed 002 §5.5).
          const auto target = static_cast<NodeId>((static_cast<uint64_t>(r.sender) + static_cast<uint64_t>(r.instance) +
                                                   r.attempt) % static_cast<uint64_t>(n_));
          const Instance* in = held(r.instance);
          if (target != self_ || in == nullptr || (in->have & bit(r.sender)) == 0) continue;
          if (serve_count_ < serve_.size()) {
            bool queued = false;
            for (size_t q = 0; q < serve_count_; ++q) queued = queued || (serve_[q].instance == r.instance && serve_[q].sender == r.sender);
            if (!queued) serve_[serve_count_++] = r;
          }
        }
        break;
      }
      case SectionType::retransmit_data: {
        NodeId ds = 0;
        int64_t di = 0;
        std::span<const uint8_t> b;
        read_data(sec.body, ds, di, b);
        store_batch(di, ds, b);
        break;
      }
      case SectionType::otfp_phase1a: {
        uint32_t b = 0;
        int64_t low = 0;
        read_ballot_instance(sec.body, b, low);
        on_phase1a(s, b, low);
        break;
      }
      case SectionType::otfp_phase1b: {
        Phase1b p;
        read_phase1b(sec.body, p);
        on_phase1b(s, p);
        break;
      }
      case SectionType::otfp_any: {
        uint32_t b = 0;
        int64_t a = 0;
        read_ballot_instance(sec.body, b, a);
        on_any(b, a);
        break;
      }
      default: break;
    }
  }
  deliver_ready();
  return verdict(FrameVerdict::accepted);
}

// Batches this node serves again (seed 002 §5.5) go in a frame of their own after the slot's
// copies: a whole batch never fits next to this node's own sections. Sent once; a lost one is
// asked for again.
void OtfpNode::transmit_retransmissions(const Turn& t, size_t at) {
  if (serve_count_ == 0) return;
  std::span<uint8_t> buf(tx_bytes_.data() + at, config_.frame_bytes_max);
  FrameHeader h;
  h.cluster_id = config_.cluster_id;
  h.sender = self_;
  h.cycle = static_cast<uint64_t>(t.cycle);
  h.stage = Stage::member;
  h.view_vector = alive_;
  h.segment_index = 1;
  h.segment_count = 2;
  FrameWriter w(buf);
  w.begin(h);
  uint8_t state[kOtfpStateBytes];
  write_state(state, low_, round_seen_);
  w.add_section(SectionType::otfp_state, 0, state);
  size_t served = 0;
  while (served < serve_count_) {
    const OtfpRequest& r = serve_[served];
    const Instance* in = held(r.instance);
    if (in == nullptr || (in->have & bit(r.sender)) == 0) {
      ++served;
      continue;
    }
    const size_t bytes = in->bytes[r.sender];
    if (w.room() < kOtfpDataHeader + bytes) break;  // the rest in the next slot
    auto body = w.open_section(SectionType::retransmit_data, 0, kOtfpDataHeader + bytes);
    write_data_header(body, r.sender, r.instance);
    std::memcpy(body.data() + kOtfpDataHeader, batch_at(r.instance, r.sender).data(), bytes);
    w.close_section(kOtfpDataHeader + bytes);
    ++counters_.retransmit_served;
    ++served;
  }
  std::copy(serve_.begin() + static_cast<std::ptrdiff_t>(served), serve_.begin() + static_cast<std::ptrdiff_t>(serve_count_),
            serve_.begin());
  serve_count_ -= served;
  const size_t len = w.finish();
  TOB_ASSERT(len > 0);
  const auto copies = sched_.sends_per_slot();
  const int64_t tx_ns = std::min(sched_.transmit_ns(t.cycle, self_, copies), sched_.slot_end_ns(t.cycle, self_) - 1);
  actions_.tx.push_back({tx_ns, t.cycle, static_cast<uint8_t>(copies), buf.first(len)});
  ++counters_.frames_tx;
}

void OtfpNode::transmit(const Turn& t) {
  const auto copies = static_cast<size_t>(sched_.sends_per_slot());
  const size_t base = static_cast<size_t>(tx_turn_) * (copies + 1) * config_.frame_bytes_max;
  std::span<uint8_t> buf(tx_bytes_.data() + base, config_.frame_bytes_max);
  FrameHeader h;
  h.cluster_id = config_.cluster_id;
  h.sender = self_;
  h.cycle = static_cast<uint64_t>(t.cycle);
  h.stage = Stage::member;
  h.view_vector = alive_;
  h.segment_count = serve_count_ > 0 ? 2 : 1;  // a retransmission frame follows
  FrameWriter w(buf);
  w.begin(h);
  {
    uint8_t body[kOtfpStateBytes];
    write_state(body, low_, round_seen_);
    w.add_section(SectionType::otfp_state, 0, body);
  }
  if (my_round_ != 0 && w.room() >= kOtfpPhase1aBytes) {
    uint8_t body[kOtfpPhase1aBytes];
    if (activating_) {
      write_ballot_instance(body, ballot(my_round_, false, self_), recovery_low_);
      w.add_section(SectionType::otfp_phase1a, 0, body);
    } else {
      write_ballot_instance(body, fast_ballot_, activation_);
      w.add_section(SectionType::otfp_any, 0, body);
    }
  }
  // Phase 1b: the votes of instances from the coordinator's low on, over as many slots as needed.
  if (pending_1b_ != 0 && !pending_1b_done_) {
    scratch_votes_.clear();
    int64_t highest = -1;
    int64_t next = pending_1b_next_;
    const int64_t oldest = std::max<int64_t>(floor_, cycle_ - kRing + 2);
    for (int64_t i = std::max(pending_1b_next_, oldest); i <= cycle_; ++i) {
      const Instance* in = held(i);
      if (in == nullptr || in->voted_ballot == 0) continue;
      highest = std::max(highest, i);
      if (scratch_votes_.size() < kVotesPerFrame) {
        scratch_votes_.push_back({i, in->voted_ballot, in->voted});
        next = i + 1;
      }
    }
    for (int64_t i = std::max(pending_1b_low_, oldest); i <= cycle_; ++i)
      if (const Instance* in = held(i); in != nullptr && in->voted_ballot != 0) highest = std::max(highest, i);
    bool complete = scratch_votes_.size() < kVotesPerFrame;
    const size_t fit = fitting(w, kOtfpPhase1bHeader, kOtfpVoteBytes, scratch_votes_.size());
    if (fit < scratch_votes_.size()) {  // the rest in the next slot
      complete = false;
      next = fit == 0 ? pending_1b_next_ : scratch_votes_[fit - 1].instance + 1;
      scratch_votes_.resize(fit);
    }
    const bool room = w.room() >= kOtfpPhase1bHeader;
    auto body = room ? w.open_section(SectionType::otfp_phase1b, 0, kOtfpPhase1bHeader + fit * kOtfpVoteBytes)
                     : std::span<uint8_t>{};
    const size_t len = room ? write_phase1b(body, pending_1b_, complete, highest, std::max(floor_, oldest), scratch_votes_) : 0;
    if (len > 0) {
      w.close_section(len);
      if (complete) {
        pending_1b_done_ = true;
      } else {
        pending_1b_next_ = next;
      }
      if (ballot_coordinator(pending_1b_) == self_) {
        // Our own acceptor answers our own phase 1a directly.
        Phase1b p;
        if (read_phase1b(std::span<const uint8_t>(body.data(), len), p)) on_phase1b(self_, p);
      }
    }
  }
  // Phase 2a proposals of the coordinator, repeated until decided.
  scratch_votes_.clear();
  for (int64_t i = needed_low(); i <= cycle_ && scratch_votes_.size() < kVotesPerFrame; ++i)
    if (const Instance* in = held(i); in != nullptr && !in->decided && in->proposal_ballot != 0)
      scratch_votes_.push_back({i, in->proposal_ballot, in->proposal});
  put_votes(w, SectionType::otfp_phase2a, scratch_votes_);
  // Votes (phase 2b) for the instances some live node has not delivered yet, oldest first.
  int64_t vote_from = low_;
  for (NodeId k = 0; k < n_; ++k)
    if (k != self_ && (alive_ & bit(k)) != 0) vote_from = std::min(vote_from, peer_low_[k]);
  vote_from = std::max<int64_t>(vote_from, cycle_ - kRing + 2);
  scratch_votes_.clear();
  // Newest first: the instances in progress matter most; laggards get the rest as room allows.
  for (int64_t i = cycle_; i >= vote_from && scratch_votes_.size() < kVotesPerFrame; --i)
    if (const Instance* in = held(i); in != nullptr && in->voted_ballot != 0)
      scratch_votes_.push_back({i, in->voted_ballot, in->voted});
  put_votes(w, SectionType::otfp_vote, scratch_votes_);
  // Decisions for the nodes behind (a node that lost the votes of a decided instance, or a
  // coordinator whose recovery ballot came after the others decided).
  scratch_votes_.clear();
  for (int64_t i = vote_from; i < low_ && scratch_votes_.size() < kVotesPerFrame; ++i)
    if (const Instance* in = held(i); in != nullptr && in->decided)
      scratch_votes_.push_back({i, in->decided_ballot, in->decision});
  put_votes(w, SectionType::otfp_decided, scratch_votes_);
  // Retransmission requests.
  scratch_requests_.clear();
  for (int64_t i = std::max(floor_, cycle_ - kRing + 2); i <= cycle_ && scratch_requests_.size() < kRequestsPerFrame; ++i) {
    const Instance* in = held(i);
    if (in == nullptr) continue;
    for (uint64_t m = in->requested & ~in->have; m != 0 && scratch_requests_.size() < kRequestsPerFrame; m &= m - 1)
      scratch_requests_.push_back({i, static_cast<NodeId>(std::countr_zero(m)), in->attempt});
  }
  if (!scratch_requests_.empty()) {
    scratch_requests_.resize(fitting(w, kOtfpListHeader, kOtfpRequestBytes, scratch_requests_.size()));
    if (!scratch_requests_.empty()) {
      auto body = w.open_section(SectionType::retransmit_request, 0,
                                 kOtfpListHeader + scratch_requests_.size() * kOtfpRequestBytes);
      w.close_section(write_requests(body, scratch_requests_));
    }
  }
  // This node's proposal for instance t.cycle, in what room is left (seed 002 §6.2: one batch
  // per node per clock tick), once fast mode is active for it and the window is not full.
  Instance& own = open(t.cycle);
  const bool tempo_ok = t.cycle - low_ < window_;
  // Never into an instance already decided (a coordinator recovering up to the current cycle):
  // its outcome would never come back to this proposer.
  const bool fast_ok = fast_ballot_ != 0 && t.cycle >= activation_ && !own.decided && t.cycle >= low_;
  if (proposals_.has_unsent()) {
    if (!tempo_ok) ++counters_.tempo_holds;
    if (tempo_ok && fast_ok && w.room() > kBatchHeaderBytes + kBatchEntryHeaderBytes) {
      std::span<uint8_t> store = batch_at(t.cycle, self_).first(std::min(batch_bytes_max_, w.room()));
      BatchWriter bw(store);
      const uint16_t taken = proposals_.fill(bw, t.cycle, config_.batch_msgs_max);
      const size_t len = bw.finish();
      if (taken > 0 && len > 0) {
        w.add_section(SectionType::app_batch, 0, store.first(len));
        own.have |= bit(self_);
        own.crc[self_] = crc32c(store.first(len));
        own.bytes[self_] = static_cast<uint16_t>(len);
        own.own_sent = true;
        counters_.msgs_sent += taken;
      }
    }
  }
  const size_t len = w.finish();
  TOB_ASSERT(len > 0);  // every section above was sized to the room left
  for (size_t copy = 0; copy < copies; ++copy) {
    std::span<uint8_t> out(tx_bytes_.data() + base + copy * config_.frame_bytes_max, config_.frame_bytes_max);
    if (copy > 0) {
      std::memcpy(out.data(), buf.data(), len);
      out[7] = kFlagSecondCopy;  // flags byte; the CRC covers it: re-seal
      store_be32(out.data() + len - kTrailerBytes, crc32c(out.first(len - kTrailerBytes)));
    }
    actions_.tx.push_back({sched_.transmit_ns(t.cycle, self_, static_cast<int>(copy)), t.cycle,
                           static_cast<uint8_t>(copy), out.first(len)});
    ++counters_.frames_tx;
  }
  transmit_retransmissions(t, base + copies * config_.frame_bytes_max);
  tx_turn_ ^= 1;
}

}  // namespace tob::core
