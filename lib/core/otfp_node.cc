// The otfp engine's time, turns and plumbing (docs/protocol-otfp.md). The roles live in
// otfp_acceptor.cc, otfp_coordinator.cc, otfp_learner.cc and otfp_frames.cc.
#include "core/otfp_node.h"

#include <algorithm>
#include <bit>
#include <string>

#include "core/bytes.h"
#include "core/otfp_limits.h"

namespace tob::core {

using otfp::node_bit;

namespace {

// Header, CRC, the state section and a data section's headers: what a frame spends besides one
// segment of a batch when it serves that segment again (an aux frame). A slot frame spends less,
// so a segment of this size fits either, and any segment can be served in a frame of its own.
constexpr size_t kSegmentOverhead =
    kMinFrameBytes + kSectionHeaderBytes + kOtfpStateBytes + kSectionHeaderBytes + kOtfpDataHeader;
// The most the instances held may reserve for batches (kOtfpRing x every sender's segments).
constexpr size_t kHoldBytesMax = size_t{1} << 30;

std::vector<uint16_t> segments_of(const NodeConfig& c, int nodes) {
  std::vector<uint16_t> f(static_cast<size_t>(nodes));
  for (NodeId k = 0; k < nodes; ++k) f[k] = static_cast<uint16_t>(c.frames_per_copy(k));
  return f;
}

}  // namespace

Result<std::unique_ptr<OtfpNode>> OtfpNode::create(const NodeConfig& given, std::span<const uint8_t> log) {
  const NodeConfig config = budget_config(given);
  auto ok = config.validate();
  if (!ok) return ok.error();
  const size_t need = kSegmentOverhead + kBatchHeaderBytes + kBatchEntryHeaderBytes + config.payload_bytes_max;
  if (config.frame_bytes_max < need)
    return Error{"otfp: frame size " + std::to_string(config.frame_bytes_max) +
                 " bytes cannot carry one message of the maximum payload (needs " + std::to_string(need) + " bytes)"};
  if (config.queue_msgs_max > otfp::kDedupBits)
    return Error{"otfp: queue must hold at most " + std::to_string(otfp::kDedupBits) +
                 " messages (duplicate detection covers that many ids per sender)"};
  const auto nodes = static_cast<int>(config.schedule.slots.size());
  size_t hold = 0;
  for (uint16_t f : segments_of(config, nodes)) hold += static_cast<size_t>(kOtfpRing) * f * (config.frame_bytes_max - kSegmentOverhead);
  if (hold > kHoldBytesMax)
    return Error{"otfp: the " + std::to_string(kOtfpRing) + " instances a node holds would reserve " +
                 std::to_string(hold >> 20) + " MiB for batches (more than " + std::to_string(kHoldBytesMax >> 20) +
                 " MiB): lower [limits] slot_frames or batch_msgs"};
  auto sched = Schedule::create(config.schedule);
  std::unique_ptr<OtfpNode> node(new OtfpNode(config, std::move(sched.value())));
  auto reader = OtfpLogReader::open(log);
  if (!reader) return Error{"otfp: " + reader.error().message};
  if (!node->replay(log)) return Error{"otfp: the acceptor log holds a record this version does not know"};
  if (node->log_replayed_ == 0) {
    // A new log starts with its format: a later version knows how to read it.
    uint8_t body[kOtfpFormatBytes];
    store_be32(body, kOtfpLogMagic);
    store_be16(body + 4, kOtfpLogVersion);
    node->persist_record(OtfpRecord::format, body);
  }
  return node;
}

NodeConfig OtfpNode::budget_config(NodeConfig c) {
  c.aux_frames += otfp::kAuxFramesMin;
  return c;
}

OtfpNode::OtfpNode(const NodeConfig& config, Schedule sched)
    : config_(config),
      sched_(std::move(sched)),
      self_(config.self),
      n_(sched_.node_count()),
      quorum_(2 * sched_.node_count() / 3 + 1),
      kappa_(config.kappa),
      window_(config.otfp_window),
      timeouts_(otfp::timeouts(sched_.cycle_ns(), config.otfp_heard_ns, config.otfp_recovery_ns, config.otfp_retry_ns,
                               sched_.node_count(), config.otfp_window, config.kappa)),
      own_frames_(static_cast<uint16_t>(config.frames_per_copy(config.self))),
      proposals_(config.queue_msgs_max, config.queue_bytes_max, config.payload_bytes_max),
      ring_(sched_.node_count(), segments_of(config, sched_.node_count()), config.frame_bytes_max - kSegmentOverhead) {
  // Quorums (seed 002 §4, [18]): fast and classic of equal size floor(2N/3) + 1, so that any two
  // quorums intersect (2Q > N) and any two intersect every third (3Q > 2N).
  TOB_ASSERT(2 * quorum_ > n_ && 3 * quorum_ > 2 * n_);
  if (config_.stall_limit_ns == 0) config_.stall_limit_ns = sched_.cycle_ns();
  next_msg_id_ = config_.first_msg_id;
  const auto copies = static_cast<size_t>(sched_.sends_per_slot());
  // Retransmissions may borrow up to half of the own batch's frames (each frame of it costs one
  // per copy) besides the frame the budget counts for them.
  aux_frames_max_ = otfp::kAuxFramesMin + copies * (own_frames_ / 2u);
  turn_frames_ = copies * own_frames_ + aux_frames_max_;
  tx_bytes_.resize(2 * turn_frames_ * config_.frame_bytes_max);  // two turns
  tx_len_.resize(turn_frames_);
  delivered_bits_.assign(static_cast<size_t>(n_) * otfp::kDedupWords, 0);
  own_votes_.resize(kOwnVotesMax);
  peer_low_.fill(0);
  heard_cycle_.fill(INT64_MIN / 2);
  scratch_votes_.reserve(static_cast<size_t>(kOtfpRing));
  scratch_decisions_.reserve(otfp::kVotesPerFrame);
  scratch_requests_.reserve(otfp::kRequestsPerFrame);
  actions_.tx.reserve(4 * turn_frames_);
  actions_.deliveries.reserve(4 * static_cast<size_t>(n_) * config_.batch_msgs_max);
  actions_.events.reserve(64);
  actions_.undelivered.reserve(16);
  size_t segments = 0;
  for (NodeId k = 0; k < n_; ++k) segments += ring_.segments_max(k);
  actions_.persist.reserve(segments * (config_.frame_bytes_max + 64) + 4096);
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

Stage OtfpNode::stage_of(NodeId n) const { return alive(n) ? Stage::member : Stage::inactive; }

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

bool OtfpNode::decided(int64_t instance, OtfpValue* value, uint32_t* ballot) const {
  const OtfpInstance* in = ring_.held(instance);
  if (in == nullptr || !in->decided) return false;
  if (value != nullptr) *value = in->decision;
  if (ballot != nullptr) *ballot = in->decided_ballot;
  return true;
}

bool OtfpNode::voted(int64_t instance, uint32_t* ballot, OtfpValue* value) const {
  const OtfpInstance* in = ring_.held(instance);
  if (in == nullptr || in->voted_ballot == 0) return false;
  if (ballot != nullptr) *ballot = in->voted_ballot;
  if (value != nullptr) *value = in->voted;
  return true;
}

int64_t OtfpNode::oldest_needed() const {
  int64_t low = low_;
  for (NodeId k = 0; k < n_; ++k)
    if (k != self_ && alive(k)) low = std::min(low, peer_low_[k]);
  return std::max<int64_t>({low, cycle_ - otfp::kCatchUpCycles, ring_.floor(), 0});
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
    peer_low_.fill(low_);
  } else {
    if (now_ns <= last_now_ns_) return;
    last_now_ns_ = now_ns;
  }
  // After a long stall, jump to the present: the instances missed are caught up from peers.
  const Turn skip_to = sched_.next_turn_after(now_ns - 2 * sched_.cycle_ns());
  if (skip_to.seq > next_seq_) next_seq_ = skip_to.seq;
  for (Turn t = sched_.turn(next_seq_); t.membership_point_ns <= now_ns; t = sched_.turn(next_seq_)) {
    if (t.cycle != cycle_) begin_cycle(t);
    if (t.node == self_) own_turn(t);
    ++next_seq_;
  }
}

void OtfpNode::begin_cycle(const Turn& t) {
  // A new cycle, a new instance (seed 002 §5.1: clock tick i = instance i).
  TOB_ASSERT(t.cycle > cycle_);
  cycle_ = t.cycle;
  turn_ = t;
  skip_unrecoverable();
  ring_.open(cycle_);
  alive_ = recent_ = node_bit(self_);
  for (NodeId k = 0; k < n_; ++k) {
    if (k == self_) continue;
    if (cycle_ - heard_cycle_[k] <= timeouts_.heard) alive_ |= node_bit(k);
    if (cycle_ - heard_cycle_[k] <= otfp::kSettleSilenceCycles) recent_ |= node_bit(k);
  }
  report_omega();
  coordinate(cycle_);
  // Votes are fixed as the cycle starts, so that the log syncs them before the node's slot
  // (docs/protocol-otfp.md "Durability"); its own turn votes on what came since.
  fast_votes(cycle_);
  pending_votes(cycle_);
  request_missing(cycle_);
  deliver_ready();
  const auto undecided = static_cast<uint64_t>(std::max<int64_t>(0, cycle_ - low_));
  counters_.window_now = undecided;
  counters_.window_max = std::max(counters_.window_max, undecided);
}

void OtfpNode::report_omega() {
  // The failure detector's view, for operators and tools (a crash costs otfp no membership
  // change, but someone wants to know when the others noticed): a node heard again is
  // suspicion-cleared, a node silent for longer than the heard timeout suspicion-raised.
  const uint64_t changed = (alive_ ^ reported_alive_) & ~node_bit(self_);
  if (changed == 0) return;
  for (NodeId k = 0; k < n_; ++k) {
    if ((changed & node_bit(k)) == 0) continue;
    emit((alive_ & node_bit(k)) != 0 ? EventKind::suspicion_cleared : EventKind::suspicion_raised, k, cycle_);
  }
  reported_alive_ = alive_;
}

void OtfpNode::emit(EventKind kind, NodeId node, int64_t cycle) {
  const MembershipEvent e{kind, node, Reason::none, cycle, turn_.seq, turn_.membership_point_ns, alive_};
  if (actions_.events.size() < actions_.events.capacity()) {
    actions_.events.push_back(e);
  } else {
    ++counters_.events_dropped;
  }
}

void OtfpNode::skip_unrecoverable() {
  // Further behind than the peers keep (a node frozen for longer than the ring): nobody can
  // hand it those instances any more. Reported, never silent; its own messages in them are
  // proposed again.
  const int64_t oldest = cycle_ - otfp::kCatchUpCycles;
  if (low_ >= oldest) return;
  counters_.gaps += static_cast<uint64_t>(oldest - low_);
  emit(EventKind::instances_skipped, self_, low_);
  proposals_.abandon_before(oldest);
  low_ = oldest;
}

void OtfpNode::own_turn(const Turn& t) {
  fast_votes(t.cycle);
  pending_votes(t.cycle);
  transmit(t);
  // Its own part of the cycle is known now: its batch, or none (fast_vote: "settled").
  if (OtfpInstance* own = ring_.held(t.cycle); own != nullptr && (own->have & node_bit(self_)) == 0)
    own->no_batch |= node_bit(self_);
  settled_vote(t.cycle);
}

// --- Log replay ---------------------------------------------------------------------------

bool OtfpNode::replay(std::span<const uint8_t> log) {
  auto reader = OtfpLogReader::open(log);
  TOB_ASSERT(reader.ok());  // checked by create()
  OtfpRecord kind{};
  std::span<const uint8_t> body;
  while (reader.value().next(kind, body)) {
    switch (kind) {
      case OtfpRecord::format: break;
      case OtfpRecord::promise:
        if (body.size() == 4) promised_ = std::max(promised_, load_be32(body.data()));
        break;
      case OtfpRecord::vote: {
        if (body.size() != kOtfpVoteBytes) break;
        const OtfpVote v = read_vote(body.data());
        if (v.instance < 0 || v.ballot == 0) break;
        highest_voted_ = std::max(highest_voted_, v.instance);
        max_voted_ballot_ = std::max(max_voted_ballot_, v.ballot);
        ballot_seen_ = std::max(ballot_seen_, v.ballot);
        OtfpInstance* in = ring_.open(v.instance);
        if (in == nullptr || v.ballot <= in->voted_ballot) break;
        in->voted_ballot = v.ballot;
        in->voted = v.value;
        in->persisted |= v.value.mask;
        on_vote(self_, v);  // durable: it counts
        break;
      }
      case OtfpRecord::batch: {  // one segment of a batch a vote names
        if (body.size() < kOtfpBatchRecordHead) break;
        const auto i = static_cast<int64_t>(load_be64(body.data()));
        const NodeId s = body[8];
        if (i < 0 || s >= n_) break;
        const uint16_t j = load_be16(body.data() + 9);
        OtfpInstance* in = ring_.open(i);
        if (in == nullptr) break;
        if (j == 0 && (in->have >> s & 1u) != 0) ring_.forget(*in, node_bit(s));  // a later body of it: the last counts
        if (ring_.store_segment(*in, s, j, load_be16(body.data() + 11), body.subspan(kOtfpBatchRecordHead)) ==
            OtfpRing::Store::complete)
          in->persisted |= node_bit(s);  // in the log already
        break;
      }
      default: return false;  // a record this version does not know: refuse rather than guess
    }
    ++log_replayed_;
  }
  ballot_seen_ = std::max(ballot_seen_, promised_);
  return true;
}

}  // namespace tob::core
