// The otfp acceptor (seed 002 §4, §5.2, §5.3; docs/protocol-otfp.md "Acceptor"): promises,
// votes in the fast ballot for what the slots carried, votes on the coordinator's phase 2a, and
// the durability of its own acts.
//
// The Fast Paxos acceptor rule (seed 002 §4): in ballot b it votes only if it took part in no
// ballot above b (promised <= b) and voted in no ballot at or above b (for that instance). Every
// promise a phase 1b will report and every vote is a log record before it leaves the node, and
// the node counts its own vote (and its own promise) only once the driver reported it durable.
#include <algorithm>
#include <bit>

#include "core/bytes.h"
#include "core/otfp_limits.h"
#include "core/otfp_node.h"

namespace tob::core {

using otfp::node_bit;

void OtfpNode::persist_record(OtfpRecord kind, std::span<const uint8_t> head, std::span<const uint8_t> tail) {
  persisted_bytes_ += otfp_log_append(actions_.persist, kind, head, tail);
  ++counters_.persist_records;
  if (kind != OtfpRecord::batch) actions_.persist_awaited = true;
}

void OtfpNode::promise(uint32_t b) {
  TOB_ASSERT(b > promised_);
  promised_ = b;
  uint8_t body[4];
  store_be32(body, b);
  persist_record(OtfpRecord::promise, body);
  promised_at_ = persisted_bytes_;
}

void OtfpNode::vote(OtfpInstance& in, uint32_t b, const OtfpValue& v) {
  TOB_ASSERT(b >= promised_ && b > in.voted_ballot && in.id >= ring_.floor());
  TOB_ASSERT(OtfpRing::holds_all(in, v.mask));
  if (own_votes_count_ == own_votes_.size()) {
    ++counters_.votes_abstained;  // the log is this far behind: abstaining is always safe
    return;
  }
  // The batches it votes for must survive a restart: retransmission depends on them (§5.5).
  // Usually already in the log since they were received (persist_batch).
  for (uint64_t m = v.mask & ~in.persisted; m != 0; m &= m - 1) persist_batch(in, static_cast<NodeId>(std::countr_zero(m)));
  in.voted_ballot = b;
  in.voted = v;
  highest_voted_ = std::max(highest_voted_, in.id);
  max_voted_ballot_ = std::max(max_voted_ballot_, b);
  const OtfpVote own{in.id, b, v};
  uint8_t body[kOtfpVoteBytes];
  write_vote(body, own);
  persist_record(OtfpRecord::vote, body);
  in.voted_at = persisted_bytes_;
  // It counts toward a decision, and goes into a frame, once durable (apply_durable, frames).
  own_votes_[(own_votes_head_ + own_votes_count_) % own_votes_.size()] = {persisted_bytes_, own};
  ++own_votes_count_;
}

void OtfpNode::persist_batch(OtfpInstance& in, NodeId s) {
  // One record per segment. Written when the batch is whole here, before the vote that names it
  // is fixed: the log syncs batches as they come, not all at once behind a vote.
  if ((in.persisted >> s & 1u) != 0) return;
  const Reassembly& batch = ring_.batch(in, s);
  uint8_t head[kOtfpBatchRecordHead];
  store_be64(head, static_cast<uint64_t>(in.id));
  head[8] = s;
  store_be16(head + 11, batch.count());
  for (uint16_t j = 0; j < batch.count(); ++j) {
    store_be16(head + 9, j);
    persist_record(OtfpRecord::batch, head, batch.segment(j));
  }
  in.persisted |= node_bit(s);
}

void OtfpNode::on_durable(uint64_t persist_bytes) {
  clear_if_taken();
  TOB_ASSERT(persist_bytes <= persisted_bytes_);  // the driver cannot sync what it was not given
  if (state_ == SelfState::stopped || persist_bytes <= durable_bytes_) return;
  durable_bytes_ = persist_bytes;
  apply_durable();
  deliver_ready();
}

void OtfpNode::apply_durable() {
  while (own_votes_count_ > 0 && own_votes_[own_votes_head_].durable_at <= durable_bytes_) {
    const OtfpVote v = own_votes_[own_votes_head_].vote;
    own_votes_head_ = (own_votes_head_ + 1) % own_votes_.size();
    --own_votes_count_;
    on_vote(self_, v);
  }
  if (own_promise_at_ != 0 && own_promise_at_ <= durable_bytes_) {
    own_promise_at_ = 0;
    own_report();
  }
}

void OtfpNode::fast_votes(int64_t now_cycle) {
  // Fast ballot (seed 002 §5.2): as cycle i + kappa starts, an acceptor's value for instance i is
  // the set of batches of cycle i it holds (late frames count if they came before); earlier if
  // the instance is settled (below). The vote leaves in its next slot once the log made it
  // durable (docs/protocol-otfp.md "Durability"). Instances it never held (it was frozen through
  // them) get no vote from it.
  if (fast_ballot_ == 0 || fast_ballot_ < promised_) return;
  const int64_t from = std::max({activation_, start_cycle_, ring_.floor(), now_cycle - otfp::kCatchUpCycles});
  for (int64_t i = from; i <= now_cycle; ++i) fast_vote(i, i <= now_cycle - kappa_);
}

void OtfpNode::settled_vote(int64_t i) {
  // Called when a frame or this node's own slot may have settled instance i of the tempo.
  if (fast_ballot_ == 0 || fast_ballot_ < promised_ || i > cycle_ || i <= cycle_ - kappa_) return;
  if (i < std::max({activation_, start_cycle_, ring_.floor()})) return;
  fast_vote(i, false);
}

void OtfpNode::fast_vote(int64_t i, bool due) {
  // An instance is settled when every node heard lately (otfp::kSettleSilenceCycles) has sent
  // its slot frame of the cycle, with its batch whole here or with no batch: no later frame can
  // add to the value, so the vote is the one cycle i + kappa would fix, fixed now, and the log
  // syncs it before the next cycle's slots (docs/protocol-otfp.md "Fast ballot"). A node not
  // heard lately may still send: the vote then leaves it out, as a vote fixed at i + kappa would
  // if its frame came later (a collision at worst, recovered by the coordinator).
  OtfpInstance* in = ring_.held(i);
  if (in == nullptr || in->decided || in->voted_ballot >= fast_ballot_) return;
  if (!due && (recent_ & ~(in->have | in->no_batch)) != 0) return;
  if (!due) ++counters_.votes_settled;
  vote(*in, fast_ballot_, ring_.value_of(*in, in->have));
}

void OtfpNode::pending_votes(int64_t now_cycle) {
  // Phase 2a proposals that waited for the batches they name (seed 002 §5.3: an acceptor cannot
  // accept a value naming messages it has not received), also of instances this node will not
  // deliver: a restarted acceptor still helps decide what the others need.
  for (int64_t i = std::max(ring_.floor(), now_cycle - otfp::kCatchUpCycles); i <= now_cycle + 1; ++i) {
    OtfpInstance* in = ring_.held(i);
    if (in == nullptr || in->pending_ballot == 0 || !OtfpRing::holds_all(*in, in->pending.mask)) continue;
    const uint32_t b = in->pending_ballot;
    const OtfpValue v = in->pending;
    in->pending_ballot = 0;
    if (in->decided || b < promised_ || b <= in->voted_ballot) continue;
    if (ring_.value_of(*in, v.mask) == v) {
      vote(*in, b, v);
    } else {
      // It holds other bodies under those senders: fetch the ones the value names.
      ring_.forget(*in, v.mask);
      in->pending_ballot = b;
      in->pending = v;
      in->request_cycle = -1;
    }
  }
}

void OtfpNode::on_phase1a(uint32_t b, int64_t low) {
  ballot_seen_ = std::max(ballot_seen_, b);
  // It answers only a ballot above every one it voted in and at least its promise (seed 002 §4),
  // and only once for a ballot already active (a late copy).
  if (b < promised_ || b <= max_voted_ballot_ || b == fast_ballot_) return;
  if (b > promised_) promise(b);
  // Answered in its next slots, again whenever the 1a is repeated (a part may have been lost).
  if (answer_ballot_ != b || answer_done_) {
    answer_ballot_ = b;
    answer_low_ = std::max<int64_t>(low, 0);
    answer_next_ = std::max(answer_low_, ring_.floor());
    answer_done_ = false;
  }
}

void OtfpNode::on_any(uint32_t b, int64_t activation) {
  ballot_seen_ = std::max(ballot_seen_, b);
  if (b < promised_ || b <= fast_ballot_ || ballot_classic(b)) return;
  // ANY is the fast ballot's phase 2a for every instance from `activation` on (seed 002 §5.1).
  // Raising the promise in memory only is safe: no phase 1b will ever report it.
  promised_ = b;
  fast_ballot_ = b;
  activation_ = activation;
  answer_ballot_ = 0;
}

void OtfpNode::on_phase2a(const OtfpVote& v) {
  ballot_seen_ = std::max(ballot_seen_, v.ballot);
  if (v.ballot < promised_ || v.instance > cycle_ + 1) return;
  // Above its floor, an instance it does not hold is one it never voted in: it may vote.
  OtfpInstance* in = ring_.open(v.instance);
  if (in == nullptr || in->decided || v.ballot <= in->voted_ballot) return;
  if (!OtfpRing::holds_all(*in, v.value.mask)) {
    // It votes once the batches are here (seed 002 §5.3): request_missing asks for them.
    if (v.ballot > in->pending_ballot) {
      in->pending_ballot = v.ballot;
      in->pending = v.value;
    }
    return;
  }
  if (ring_.value_of(*in, v.value.mask) == v.value) {
    vote(*in, v.ballot, v.value);
  } else {
    ring_.forget(*in, v.value.mask);  // other bodies under those senders: fetch the named ones
    in->pending_ballot = v.ballot;
    in->pending = v.value;
    in->request_cycle = -1;
  }
}

}  // namespace tob::core
