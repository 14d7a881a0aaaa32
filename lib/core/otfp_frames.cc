// otfp slot frames (docs/protocol-otfp.md "Frames", docs/wire-format.md): a received frame is
// validated whole, then applied section by section; a node's slot frame is built from one small
// writer per section, in priority order, each taking what room is left.
#include <algorithm>
#include <bit>
#include <cstring>

#include "core/otfp_limits.h"
#include "core/otfp_node.h"

namespace tob::core {

using otfp::node_bit;

namespace {

// How many entries of a list section fit in what is left of the frame (at most `want`).
size_t fitting(const FrameWriter& w, size_t header, size_t entry, size_t want) {
  const size_t room = w.room();
  return room < header ? 0 : std::min(want, (room - header) / entry);
}

// A list section of votes, as many as fit in the frame and in `room_max` bytes (the rest go in a
// later slot: every list is repeated until it no longer applies, so a list that could take the
// whole frame would starve the ones after it).
void put_vote_list(FrameWriter& w, SectionType type, std::vector<OtfpVote>& votes, size_t room_max = SIZE_MAX) {
  votes.resize(std::min(fitting(w, kOtfpListHeader, kOtfpVoteBytes, votes.size()),
                        room_max < kOtfpListHeader ? 0 : (room_max - kOtfpListHeader) / kOtfpVoteBytes));
  if (votes.empty()) return;
  auto body = w.open_section(type, 0, kOtfpListHeader + votes.size() * kOtfpVoteBytes);
  w.close_section(write_votes(body, votes));
}

// Every vote of a vote-list section (vote, phase 2a, decided), validated before.
template <class Fn>
void for_each_vote(std::span<const uint8_t> body, Fn&& fn) {
  VoteList l;
  l.parse(body);
  for (size_t k = 0; k < l.size(); ++k) fn(l.at(k));
}

bool valid_section(const SectionView& sec, NodeId sender, int n, const OtfpRing& ring, size_t payload_max) {
  const size_t segment_max = ring.segment_bytes_max();
  switch (sec.type) {
    case SectionType::app_batch: {
      uint16_t count = 0;
      return sec.body.size() <= segment_max && validate_batch(sec.body, &count, payload_max);
    }
    case SectionType::otfp_vote:
    case SectionType::otfp_phase2a:
    case SectionType::otfp_decided: {
      VoteList l;
      return l.parse(sec.body);
    }
    case SectionType::retransmit_request: {
      size_t count = 0;
      std::span<const uint8_t> e;
      return read_requests(sec.body, count, e);
    }
    case SectionType::retransmit_data: {
      OtfpData d;
      std::span<const uint8_t> b;
      uint16_t count = 0;
      return read_data(sec.body, d, b) && d.sender < n && d.instance >= 0 && d.count <= ring.segments_max(d.sender) &&
             b.size() <= segment_max && validate_batch(b, &count, payload_max);
    }
    case SectionType::otfp_phase1a:
    case SectionType::otfp_any: {
      uint32_t b = 0;
      int64_t i = 0;
      return read_ballot_instance(sec.body, b, i) && ballot_coordinator(b) == sender && i >= 0;
    }
    case SectionType::otfp_phase1b: {
      Phase1b p;
      return read_phase1b(sec.body, p);
    }
    case SectionType::otfp_state: {
      int64_t low = 0;
      uint32_t seen = 0;
      return read_state(sec.body, low, seen);
    }
    default: return true;  // unknown sections are skipped (later versions add more)
  }
}

}  // namespace

// --- Received frames: validate, then apply -------------------------------------------------

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
  // Timing only matters for liveness: any frame of a cycle the ring can hold is used.
  if (h.cycle > static_cast<uint64_t>(INT64_MAX / 4) || c > cycle_ + 1 || c < cycle_ - otfp::kCatchUpCycles)
    return verdict(FrameVerdict::outside_window);
  const NodeId s = h.sender;
  const bool aux = (h.flags & kFlagAux) != 0;
  if ((h.flags & kFlagSecondCopy) != 0 && !aux && heard_cycle_[s] == c && last_first_copy_[s] == c) {
    // Send-twice per segment: a second copy is a duplicate once its segment is here (a slot
    // of one frame: once the first copy was).
    const OtfpInstance* in = ring_.held(c);
    if (h.segment_count == 1 || (in != nullptr && ring_.has_segment(*in, s, h.segment_index)))
      return verdict(FrameVerdict::duplicate);
  }
  bool has_state = false;
  const FrameVerdict v = validate(frame, &has_state);
  if (v != FrameVerdict::accepted) return verdict(v);
  if (!has_state) return verdict(FrameVerdict::malformed_section);  // not an otfp frame

  heard_cycle_[s] = std::max(heard_cycle_[s], c);
  if ((h.flags & (kFlagSecondCopy | kFlagAux)) == 0) last_first_copy_[s] = c;
  alive_ |= node_bit(s);
  recent_ |= node_bit(s);
  apply(frame);
  settled_vote(c);
  deliver_ready();
  return verdict(FrameVerdict::accepted);
}

FrameVerdict OtfpNode::validate(const FrameView& frame, bool* has_state) const {
  // Every section before acting on any: a malformed frame is an omission, never half applied.
  // A slot frame carries at most one segment of its sender's batch; an aux frame none.
  SectionView sec;
  int batches = 0;
  for (size_t off = 0; frame.next_section(off, sec);) {
    if (!valid_section(sec, frame.header.sender, n_, ring_, config_.payload_bytes_max)) return FrameVerdict::malformed_section;
    if (sec.type == SectionType::otfp_state) *has_state = true;
    if (sec.type == SectionType::app_batch) ++batches;  // its batch is checked here, once: apply() stores it as is
  }
  const int batches_max = (frame.header.flags & kFlagAux) != 0 ? 0 : 1;
  return batches > batches_max ? FrameVerdict::malformed_section : FrameVerdict::accepted;
}

void OtfpNode::apply(const FrameView& frame) {
  const NodeId s = frame.header.sender;
  const auto c = static_cast<int64_t>(frame.header.cycle);
  bool batch = false;
  SectionView sec;
  for (size_t off = 0; frame.next_section(off, sec);) {
    switch (sec.type) {
      case SectionType::otfp_state: {
        int64_t low = 0;
        uint32_t seen = 0;
        read_state(sec.body, low, seen);
        peer_low_[s] = low;
        ballot_seen_ = std::max(ballot_seen_, seen);
        break;
      }
      case SectionType::app_batch:
        // A segment of the sender's batch (the frame's numbers). A sender whose clock is ahead
        // may open cycle c before this node's clock reaches it.
        batch = true;
        if (OtfpInstance* in = ring_.open(c);
            in != nullptr && ring_.store_segment(*in, s, frame.header.segment_index, frame.header.segment_count, sec.body,
                                                 Reassembly::Checked::yes) == OtfpRing::Store::complete)
          persist_batch(*in, s);
        break;
      case SectionType::otfp_vote: for_each_vote(sec.body, [&](const OtfpVote& v) { on_vote(s, v); }); break;
      case SectionType::otfp_phase2a:
        // Only the ballot's own coordinator proposes in it, and only in classic ballots.
        for_each_vote(sec.body, [&](const OtfpVote& v) {
          if (ballot_coordinator(v.ballot) == s && ballot_classic(v.ballot)) on_phase2a(v);
        });
        break;
      case SectionType::otfp_decided: for_each_vote(sec.body, [&](const OtfpVote& v) { on_decided(v); }); break;
      case SectionType::retransmit_request: {
        size_t count = 0;
        std::span<const uint8_t> e;
        read_requests(sec.body, count, e);
        for (size_t k = 0; k < count; ++k) on_request(request_at(e, k));
        break;
      }
      case SectionType::retransmit_data: {
        OtfpData d;
        std::span<const uint8_t> b;
        read_data(sec.body, d, b);
        if (d.instance <= cycle_ + 1)
          if (OtfpInstance* in = ring_.open(d.instance);
              in != nullptr &&
              ring_.store_segment(*in, d.sender, d.index, d.count, b, Reassembly::Checked::yes) == OtfpRing::Store::complete)
            persist_batch(*in, d.sender);
        break;
      }
      case SectionType::otfp_phase1a: {
        uint32_t b = 0;
        int64_t low = 0;
        read_ballot_instance(sec.body, b, low);
        on_phase1a(b, low);
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
  // A slot frame without a batch: its sender proposes nothing in cycle c (aux frames never
  // carry one, and every later segment of a batch does).
  if (!batch && (frame.header.flags & kFlagAux) == 0)
    if (OtfpInstance* in = ring_.open(c); in != nullptr) in->no_batch |= node_bit(s);
}

// --- The slot frame -----------------------------------------------------------------------

FrameHeader OtfpNode::header(const Turn& t, uint16_t segment_index, uint16_t segment_count) const {
  FrameHeader h;
  h.cluster_id = config_.cluster_id;
  h.sender = self_;
  h.cycle = static_cast<uint64_t>(t.cycle);
  h.stage = Stage::member;
  h.view_vector = alive_;
  h.segment_index = segment_index;
  h.segment_count = segment_count;
  h.flags = config_.frame_flags;
  return h;
}

void OtfpNode::transmit(const Turn& t) {
  // The slot (docs/protocol-otfp.md "Frames"): frame 0 holds the state, the control sections in
  // priority order and the first segment of this node's batch; frames 1.. the batch's other
  // segments; every frame once per copy. Retransmissions follow in aux frames.
  if (activating_) try_activate(t.cycle);  // the last reports may have come since the cycle began
  const auto copies = static_cast<size_t>(sched_.sends_per_slot());
  const size_t frame = config_.frame_bytes_max;
  uint8_t* base = tx_bytes_.data() + static_cast<size_t>(tx_turn_) * turn_frames_ * frame;
  // Retransmissions first: frames they take beyond the one the budget counts come out of this
  // slot's own batch (each own frame is sent once per copy).
  uint8_t* aux_at = base + copies * own_frames_ * frame;
  const size_t aux = build_retransmissions(t, aux_at);
  const size_t borrowed = aux > otfp::kAuxFramesMin ? (aux - otfp::kAuxFramesMin + copies - 1) / copies : 0;
  const auto own_max = static_cast<uint16_t>(std::max<size_t>(1, own_frames_ - std::min<size_t>(borrowed, own_frames_)));

  FrameWriter w(std::span<uint8_t>(base, frame));
  w.begin(header(t, 0, 1));
  uint8_t state[kOtfpStateBytes];
  write_state(state, low_, ballot_seen_);
  w.add_section(SectionType::otfp_state, 0, state);
  // Priority order: what the protocol's progress depends on first, this node's batch in the rest
  // (its first segment keeps room for its section even when the others fill the frame).
  const bool proposing = may_propose(t);
  if (proposing) w.reserve(kSectionHeaderBytes + kBatchHeaderBytes);
  // Frame 0 carries only acceptor state whose records are durable (docs/protocol-otfp.md
  // "Durability"): it never waits for the log, and a vote not yet durable leaves in a later slot.
  const uint64_t ready = durable_bytes_;
  put_round(w);
  put_phase1b(w, ready);
  put_requests(w);  // small, and every vote on a proposal waits for the batches they fetch
  put_proposals(w);
  put_votes_and_decisions(w, ready);
  w.reserve(0);
  const uint64_t frame0_records = ready;
  const uint16_t segments = proposing ? std::max<uint16_t>(1, put_own_batch(w, t, own_max)) : 1;
  w.set_segments(0, segments);
  tx_len_[0] = static_cast<uint32_t>(w.finish());
  TOB_ASSERT(tx_len_[0] > 0);  // every section above was sized to the room left
  if (segments > 1) {
    const Reassembly& own = ring_.batch(*ring_.held(t.cycle), self_);
    for (uint16_t j = 1; j < segments; ++j) {
      FrameWriter wj(std::span<uint8_t>(base + j * frame, frame));
      wj.begin(header(t, j, segments));
      wj.add_section(SectionType::otfp_state, 0, state);
      wj.add_section(SectionType::app_batch, 0, own.segment(j));
      tx_len_[j] = static_cast<uint32_t>(wj.finish());
      TOB_ASSERT(tx_len_[j] > 0);  // a segment is sized to fit a frame of its own
    }
  }
  send_copies(t, base, segments, frame0_records);
  send_retransmissions(t, aux_at, aux);
  tx_turn_ ^= 1;
}

void OtfpNode::put_round(FrameWriter& w) {
  // The coordinator's phase 1a while it activates, its ANY once active: repeated every slot.
  if (my_round_ == 0 || w.room() < kOtfpPhase1aBytes) return;
  const uint32_t fast = ballot(my_round_, false, self_);
  uint8_t body[kOtfpPhase1aBytes];
  if (activating_) {
    write_ballot_instance(body, fast, round_low_);
    w.add_section(SectionType::otfp_phase1a, 0, body);
  } else if (fast_ballot_ == fast) {
    write_ballot_instance(body, fast, activation_);
    w.add_section(SectionType::otfp_any, 0, body);
  }
}

void OtfpNode::put_phase1b(FrameWriter& w, uint64_t ready) {
  // Phase 1b: every vote this acceptor holds from the coordinator's low on, in parts over as many
  // slots as needed; each part names the range it covers completely.
  // It leaves once the promise is durable, and with it every vote it reports (all recorded before
  // the promise: none can be cast below it after).
  if (answer_ballot_ == 0 || answer_done_ || promised_ != answer_ballot_ || max_voted_ballot_ >= answer_ballot_) return;
  if (promised_at_ > ready) return;
  if (w.room() < kOtfpPhase1bHeader) return;
  Phase1bPart part{answer_ballot_, false, highest_voted_, std::max(answer_next_, ring_.floor()), 0};
  scratch_votes_.clear();
  const size_t fit = fitting(w, kOtfpPhase1bHeader, kOtfpVoteBytes, static_cast<size_t>(kOtfpRing));
  int64_t i = part.from;
  for (; i <= cycle_ + 1; ++i) {
    const OtfpInstance* in = ring_.held(i);
    if (in == nullptr || in->voted_ballot == 0) continue;
    if (scratch_votes_.size() == fit) break;  // the rest in the next slot
    scratch_votes_.push_back({i, in->voted_ballot, in->voted});
  }
  part.last = i > cycle_ + 1;
  part.to = part.last ? kOtfpRangeOpen : i;
  if (part.to <= part.from) return;  // not even one vote fits
  auto body = w.open_section(SectionType::otfp_phase1b, 0, kOtfpPhase1bHeader + scratch_votes_.size() * kOtfpVoteBytes);
  w.close_section(write_phase1b(body, part, scratch_votes_));
  answer_done_ = part.last;
  answer_next_ = part.last ? answer_low_ : part.to;
}

void OtfpNode::put_proposals(FrameWriter& w) {
  // The coordinator's phase 2a proposals of its round, repeated until decided.
  if (my_round_ == 0) return;
  scratch_votes_.clear();
  for (int64_t i = oldest_needed(); i <= cycle_ + 1 && scratch_votes_.size() < otfp::kVotesPerFrame; ++i)
    if (const OtfpInstance* in = ring_.held(i);
        in != nullptr && !in->decided && in->proposal_ballot != 0 && ballot_round(in->proposal_ballot) == my_round_)
      scratch_votes_.push_back({i, in->proposal_ballot, in->proposal});
  put_vote_list(w, SectionType::otfp_phase2a, scratch_votes_, w.room() / 2);  // votes and decisions follow
}

void OtfpNode::put_votes_and_decisions(FrameWriter& w, uint64_t ready) {
  // Two lists, each oldest instance first, of the instances some live node still needs: this
  // node's votes (phase 2b) of the instances it has not seen decided, and its decisions for the
  // live nodes behind them (catch-up: a node that lost the votes, was frozen, or restarted).
  // Oldest first, because delivery is in instance order: a list of the newest would starve the
  // one everything waits for. The lists share the frame's room, each at least half of it when
  // both have more than that: a node that cannot catch up must not starve the others' votes,
  // nor a busy round the decisions a node behind waits for.
  int64_t behind = INT64_MAX;
  for (NodeId k = 0; k < n_; ++k)
    if (k != self_ && alive(k)) behind = std::min(behind, peer_low_[k]);
  const size_t room = w.room();
  const size_t overhead = 2 * kOtfpListHeader + kSectionHeaderBytes;  // the second section's headers too
  const size_t budget = std::min(room < overhead ? 0 : (room - overhead) / kOtfpVoteBytes, 2 * otfp::kVotesPerFrame);
  const size_t list_max = std::min(budget, otfp::kVotesPerFrame);
  scratch_votes_.clear();
  for (int64_t i = oldest_needed(); i <= cycle_ + 1; ++i) {
    const OtfpInstance* in = ring_.held(i);
    if (in == nullptr || in->decided || in->voted_ballot == 0) continue;
    if (in->voted_at > ready) {
      ++counters_.votes_not_durable;  // in a later slot, once durable
    } else if (scratch_votes_.size() < list_max) {
      scratch_votes_.push_back({i, in->voted_ballot, in->voted});
    }
  }
  collect_decisions(behind, list_max);
  const size_t votes = std::min(scratch_votes_.size(), std::max(budget / 2, budget - std::min(budget, scratch_decisions_.size())));
  scratch_votes_.resize(votes);
  scratch_decisions_.resize(std::min(scratch_decisions_.size(), budget - votes));
  decisions_from_ = scratch_decisions_.empty() ? behind : scratch_decisions_.back().instance + 1;
  std::sort(scratch_decisions_.begin(), scratch_decisions_.end(),
            [](const OtfpVote& a, const OtfpVote& b) { return a.instance < b.instance; });
  put_vote_list(w, SectionType::otfp_vote, scratch_votes_);
  put_vote_list(w, SectionType::otfp_decided, scratch_decisions_);
}

void OtfpNode::collect_decisions(int64_t behind, size_t max) {
  // The decisions for the live nodes behind, oldest first from where the last slot's list stopped,
  // then from the oldest again: a node that stays behind (it cannot get a batch) must not keep the
  // list on its instances while another node waits for newer ones.
  const int64_t from = decisions_from_ > behind && decisions_from_ <= cycle_ + 1 ? decisions_from_ : behind;
  const int64_t span = cycle_ + 2 - std::max(behind, oldest_needed());
  scratch_decisions_.clear();
  for (int64_t k = 0; k < span && scratch_decisions_.size() < max; ++k) {
    int64_t i = from + k;
    if (i > cycle_ + 1) i -= span;  // wrapped: from the oldest on
    if (const OtfpInstance* in = ring_.held(i); in != nullptr && in->decided)
      scratch_decisions_.push_back({i, in->decided_ballot, in->decision});
  }
}

void OtfpNode::put_requests(FrameWriter& w) {
  scratch_requests_.clear();
  for (int64_t i = std::max(ring_.floor(), cycle_ - otfp::kCatchUpCycles);
       i <= cycle_ + 1 && scratch_requests_.size() < otfp::kRequestsPerFrame; ++i) {
    const OtfpInstance* in = ring_.held(i);
    if (in == nullptr) continue;
    for (uint64_t m = in->requested & ~in->have; m != 0 && scratch_requests_.size() < otfp::kRequestsPerFrame; m &= m - 1) {
      const auto s = static_cast<NodeId>(std::countr_zero(m));
      OtfpRequest r{i, s, in->attempt, request_target(s, i, in->attempt)};
      ring_.missing(*in, s, r.first, r.last);  // only the segments it lacks
      scratch_requests_.push_back(r);
    }
  }
  // At most half the room left: the proposals and votes that follow need some too.
  const size_t half = w.room() / 2;
  scratch_requests_.resize(half < kOtfpListHeader ? 0 : std::min(scratch_requests_.size(), (half - kOtfpListHeader) / kOtfpRequestBytes));
  if (scratch_requests_.empty()) return;
  auto body = w.open_section(SectionType::retransmit_request, 0, kOtfpListHeader + scratch_requests_.size() * kOtfpRequestBytes);
  w.close_section(write_requests(body, scratch_requests_));
}

bool OtfpNode::may_propose(const Turn& t) {
  // The proposer (seed 002 §5.2, §6.2: one batch per node per clock tick), once fast mode is
  // active for this instance and the tempo window is not full (§5.4). Never into an instance
  // already decided (a coordinator recovering up to the current cycle): its outcome would never
  // come back to this proposer.
  if (!proposals_.has_unsent()) return false;
  if (t.cycle - low_ >= window_) {
    ++counters_.tempo_holds;
    return false;
  }
  const OtfpInstance* own = ring_.held(t.cycle);
  const bool fast = fast_ballot_ != 0 && t.cycle >= activation_ && t.cycle >= low_ && t.cycle >= start_cycle_;
  return own != nullptr && !own->decided && fast && (own->have & node_bit(self_)) == 0;
}

uint16_t OtfpNode::put_own_batch(FrameWriter& w, const Turn& t, uint16_t frames_max) {
  // The batch, written in place where the instance holds it, cut into segments: the first in
  // what room frame 0 has left (perhaps no message), the others a frame each, as many as its
  // messages need. Returns the segments (0: nothing to send after all).
  OtfpInstance& own = *ring_.held(t.cycle);
  ring_.begin_own(own, self_);
  const size_t max = config_.batch_msgs_max;
  size_t taken = 0;
  uint16_t used = 0;
  do {
    std::span<uint8_t> room = ring_.own_room(own, self_, used);
    if (used == 0) room = room.first(std::min(room.size(), w.room()));
    BatchWriter bw(room);
    taken += proposals_.fill(bw, t.cycle, max - taken);
    ring_.put_own(own, self_, used++, bw.finish(), bw.count());
  } while (used < frames_max && taken < max && proposals_.has_unsent());
  if (taken == 0) {
    ring_.begin_own(own, self_);  // nothing fitted: no batch in this instance
    return 0;
  }
  ring_.close_own(own, self_, used);
  persist_batch(own, self_);
  w.add_section(SectionType::app_batch, 0, ring_.batch(own, self_).segment(0));
  own.own_sent = true;
  counters_.msgs_sent += taken;
  return used;
}

void OtfpNode::send_copies(const Turn& t, uint8_t* base, uint16_t segments, uint64_t frame0_records) {
  // Copy-major, every copy's batch segments first, then frame 0 of each copy (send-twice per
  // segment). Frame 0 carries acceptor state, durable when it is built: the driver's check that
  // its records are (TxFrame::after_records) never holds it.
  const auto copies = static_cast<size_t>(sched_.sends_per_slot());
  const size_t frame = config_.frame_bytes_max;
  const auto push = [&](size_t copy, uint16_t j) {
    std::span<uint8_t> out(base + (copy * own_frames_ + j) * frame, tx_len_[j]);
    if (copy > 0) {
      std::memcpy(out.data(), base + j * frame, out.size());
      mark_second_copy(out);
    }
    actions_.tx.push_back({sched_.transmit_ns(t.cycle, self_, static_cast<int>(copy)), t.cycle, static_cast<uint8_t>(copy),
                           out, j == 0 ? frame0_records : 0});
    ++counters_.frames_tx;
  };
  for (size_t copy = 0; copy < copies; ++copy)
    for (uint16_t j = 1; j < segments; ++j) push(copy, j);
  for (size_t copy = 0; copy < copies; ++copy) push(copy, 0);
}

// Segments this node serves again (seed 002 §5.5) go in aux frames after the slot's copies:
// each request's segments in order, as many frames as the owed segments need, at most
// aux_frames_max_. Sent once; a lost one is asked for again. Returns the frames built at `at`.
size_t OtfpNode::build_retransmissions(const Turn& t, uint8_t* at) {
  const size_t frame = config_.frame_bytes_max;
  uint8_t state[kOtfpStateBytes];
  write_state(state, low_, ballot_seen_);
  size_t frames = 0;
  size_t q = 0;  // requests done
  while (q < serve_count_ && frames < aux_frames_max_) {
    FrameWriter w(std::span<uint8_t>(at + frames * frame, frame));
    FrameHeader h = header(t, 0, 1);
    h.flags = static_cast<uint8_t>(h.flags | kFlagAux);
    w.begin(h);
    w.add_section(SectionType::otfp_state, 0, state);
    size_t sections = 0;
    for (; q < serve_count_; ++q) {
      const OtfpRequest& r = serve_[q];
      const OtfpInstance* in = ring_.held(r.instance);
      if (in == nullptr || (in->have & node_bit(r.sender)) == 0) continue;
      const Reassembly& b = ring_.batch(*in, r.sender);
      const uint16_t last = std::min<uint16_t>(r.last, static_cast<uint16_t>(b.count() - 1));
      uint16_t& next = serve_next_[q];
      for (; next <= last; ++next) {
        const std::span<const uint8_t> seg = b.segment(next);
        if (w.room() < kOtfpDataHeader + seg.size()) break;  // the rest in the next frame
        auto body = w.open_section(SectionType::retransmit_data, 0, kOtfpDataHeader + seg.size());
        write_data_header(body, {r.sender, r.instance, next, b.count()});
        std::memcpy(body.data() + kOtfpDataHeader, seg.data(), seg.size());
        w.close_section(kOtfpDataHeader + seg.size());
        ++sections;
        ++counters_.retransmit_served;
      }
      if (next <= last) break;  // this frame is full
    }
    tx_len_[own_frames_ * static_cast<size_t>(sched_.sends_per_slot()) + frames] = static_cast<uint32_t>(w.finish());
    if (sections == 0) break;  // nothing left that this node holds
    ++frames;
  }
  std::copy(serve_.begin() + static_cast<std::ptrdiff_t>(q), serve_.begin() + static_cast<std::ptrdiff_t>(serve_count_), serve_.begin());
  std::copy(serve_next_.begin() + static_cast<std::ptrdiff_t>(q), serve_next_.begin() + static_cast<std::ptrdiff_t>(serve_count_),
            serve_next_.begin());
  serve_count_ -= q;
  return frames;
}

void OtfpNode::send_retransmissions(const Turn& t, uint8_t* at, size_t frames) {
  // Numbered among the slot's aux frames, after its copies, before the slot ends.
  const size_t first = own_frames_ * static_cast<size_t>(sched_.sends_per_slot());
  const int64_t tx_ns = std::min(sched_.transmit_ns(t.cycle, self_, sched_.sends_per_slot()), sched_.slot_end_ns(t.cycle, self_) - 1);
  for (size_t k = 0; k < frames; ++k) {
    std::span<uint8_t> out(at + k * config_.frame_bytes_max, tx_len_[first + k]);
    renumber_segments(out, static_cast<uint16_t>(k), static_cast<uint16_t>(frames));
    actions_.tx.push_back({tx_ns, t.cycle, static_cast<uint8_t>(sched_.sends_per_slot()), out, 0});
    ++counters_.frames_tx;
  }
}

}  // namespace tob::core
