// The otfp learner (seed 002 §5.2, §5.5; docs/protocol-otfp.md "Learner", "Catch-up",
// "Retransmission", "Exactly-once delivery"): decides an instance on a quorum of identical votes
// in one ballot (or on a decision another node announces), delivers decided instances in order
// once it holds every batch they name, asks acceptors for the batches it lacks, and serves the
// batches others ask it for.
#include <algorithm>
#include <bit>

#include "core/otfp_limits.h"
#include "core/otfp_node.h"

namespace tob::core {

using otfp::node_bit;

void OtfpNode::on_vote(NodeId from, const OtfpVote& v) {
  if (v.ballot == 0 || v.instance > cycle_ + 1) return;
  ballot_seen_ = std::max(ballot_seen_, v.ballot);
  OtfpInstance* in = ring_.open(v.instance);
  if (in == nullptr) return;
  // Q identical votes in one ballot decide (fast or classic alike). The learner keeps each
  // acceptor's latest vote and, apart, its latest fast vote: a later classic vote does not unmake
  // the fast quorum it was part of.
  const auto tally = [&](std::array<OtfpPeerVote, kMaxNodes>& set) {
    OtfpPeerVote& pv = set[from];
    if (v.ballot < pv.ballot) return 0;
    pv = {v.ballot, v.value};
    int same = 0;
    for (NodeId a = 0; a < n_; ++a)
      if (set[a].ballot == v.ballot && set[a].value == v.value) ++same;
    return same;
  };
  int same = tally(in->votes);
  if (!ballot_classic(v.ballot)) same = std::max(same, tally(in->fast_votes));
  if (!in->decided && same >= quorum_) decide(*in, v.ballot, v.value);
}

void OtfpNode::on_decided(const OtfpVote& v) {
  // A decision another node learned from a quorum of durable votes: nodes fail only by crashing,
  // so it is a fact (catch-up: how a node that missed the votes, or was away, learns it).
  if (v.instance > cycle_ + 1) return;
  OtfpInstance* in = ring_.open(v.instance);
  if (in == nullptr) return;
  if (!in->decided) {
    decide(*in, v.ballot, v.value);
  } else if (in->decision != v.value) {
    ++counters_.decision_conflicts;  // never, unless the protocol is broken: counted, not acted on
  }
}

void OtfpNode::decide(OtfpInstance& in, uint32_t b, const OtfpValue& v) {
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
  // Its own messages: done, or (decided without its batch) proposed again in its next slot. The
  // outcome is final now; waiting for the delivery, which may wait for older instances, would
  // only delay them.
  if (in.own_sent) {
    proposals_.decided(in.id, (v.mask & node_bit(self_)) != 0);
    in.own_sent = false;
  }
  if (observer_ != nullptr) observer_->decided(self_, in.id, b, v);
}

void OtfpNode::deliver_ready() {
  // In instance order, every decided instance exactly once (seed 002 §5.2: the sets of messages
  // of consecutive instances, each in the pre-agreed order of sender ids, are the total order).
  while (low_ <= cycle_) {
    OtfpInstance* in = ring_.held(low_);
    if (in == nullptr || !in->decided || !OtfpRing::holds_all(*in, in->decision.mask)) return;
    // Bounded output per call: a whole instance or none of it (the rest at the next call).
    const size_t room = actions_.deliveries.capacity() - actions_.deliveries.size();
    size_t messages = 0;
    for (uint64_t m = in->decision.mask; m != 0; m &= m - 1)
      messages += ring_.batch(*in, static_cast<NodeId>(std::countr_zero(m))).messages();
    if (room < messages) return;
    if (ring_.value_of(*in, in->decision.mask) != in->decision) {
      // Bodies that do not match the decided digest: fetch the decided ones.
      ring_.forget(*in, in->decision.mask);
      in->request_cycle = -1;
      return;
    }
    deliver(*in);
    ++low_;
  }
}

void OtfpNode::deliver(OtfpInstance& in) {
  // Release instant: the cycle by which every node decided it when nothing failed.
  const int64_t release_ns = sched_.cycle_start_ns(in.id + kappa_ + 2);
  for (uint64_t m = in.decision.mask; m != 0; m &= m - 1) {
    const auto s = static_cast<NodeId>(std::countr_zero(m));
    const int64_t turn_seq = sched_.turn_of(in.id, s).seq;
    const int64_t decided_ns = sched_.transmit_ns(in.id + kappa_, s);
    ring_.batch(in, s).for_each_message([&](const AppMessage& am) {
      if (already_delivered(s, am.msg_id)) {
        ++counters_.duplicates_dropped;
        return;
      }
      actions_.deliveries.push_back({s, in.id, turn_seq, decided_ns, am.msg_id, am.submit_ns, am.client, am.payload, release_ns});
      ++counters_.msgs_delivered;
    });
  }
}

bool OtfpNode::already_delivered(NodeId s, uint64_t id) {
  // Per sender: the highest id delivered (+1) and a bitmap of the kDedupBits ids below it. A
  // proposer proposes again only messages still in its queue, so older ids cannot come back.
  uint64_t* bits = delivered_bits_.data() + static_cast<size_t>(s) * otfp::kDedupWords;
  uint64_t& top = delivered_top_[s];
  const auto word = [&](uint64_t x) -> uint64_t& { return bits[(x / 64) % otfp::kDedupWords]; };
  const auto mask = [](uint64_t x) { return uint64_t{1} << (x % 64); };
  if (top == 0 || id >= top) {
    if (top != 0) {
      if (id - top >= otfp::kDedupBits) {
        std::fill(bits, bits + otfp::kDedupWords, 0);
      } else {
        for (uint64_t x = top; x < id; ++x) word(x) &= ~mask(x);
      }
    }
    top = id + 1;
    word(id) |= mask(id);
    return false;
  }
  if (top - id > otfp::kDedupBits || (word(id) & mask(id)) != 0) return true;
  word(id) |= mask(id);
  return false;
}

void OtfpNode::request_missing(int64_t now_cycle) {
  // A learner that decided an instance but lacks a batch it names, or an acceptor that must vote
  // on a phase 2a naming it, asks the acceptors; without an answer it asks again with the next
  // attempt, which addresses another acceptor (seed 002 §5.5).
  for (int64_t i = std::max(ring_.floor(), now_cycle - otfp::kCatchUpCycles); i <= now_cycle + 1; ++i) {
    OtfpInstance* in = ring_.held(i);
    if (in == nullptr) continue;
    uint64_t want = 0;
    if (in->decided && i >= low_) want |= in->decision.mask & ~in->have;
    if (in->pending_ballot != 0) want |= in->pending.mask & ~in->have;
    if (want == 0) {
      in->requested = 0;
      continue;
    }
    if (in->request_cycle >= 0 && now_cycle - in->request_cycle < timeouts_.retry) continue;
    if (in->request_cycle >= 0) ++in->attempt;
    in->requested = want;
    in->request_cycle = now_cycle;
    counters_.retransmit_requests += static_cast<uint64_t>(std::popcount(want));
  }
}

NodeId OtfpNode::request_target(NodeId sender, int64_t instance, uint8_t attempt) const {
  // The batch ids are partitioned among acceptors, shifted by the attempt (seed 002 §5.5): one
  // answers, and a request without an answer reaches another. The requester skips itself and
  // the nodes it has not heard within the retry timeout (not Omega's longer heard timeout: a
  // node that just crashed would be asked, and waited for, until everybody suspects it), and
  // names the one it asks.
  const auto heard_lately = [&](NodeId k) { return k != self_ && cycle_ - heard_cycle_[k] <= timeouts_.retry; };
  const auto start = static_cast<uint64_t>(sender) + static_cast<uint64_t>(instance);
  int candidates = 0;
  for (int j = 0; j < n_; ++j) {
    const auto k = static_cast<NodeId>((start + static_cast<uint64_t>(j)) % static_cast<uint64_t>(n_));
    candidates += heard_lately(k) ? 1 : 0;
  }
  if (candidates == 0) return static_cast<NodeId>((start + attempt) % static_cast<uint64_t>(n_));
  int skip = attempt % candidates;
  for (int j = 0;; ++j) {
    const auto k = static_cast<NodeId>((start + static_cast<uint64_t>(j)) % static_cast<uint64_t>(n_));
    if (!heard_lately(k)) continue;
    if (skip-- == 0) return k;
  }
}

void OtfpNode::on_request(const OtfpRequest& r) {
  if (r.sender >= n_) return;
  const NodeId target = r.target != kNoNode
                            ? r.target
                            : static_cast<NodeId>((static_cast<uint64_t>(r.sender) + static_cast<uint64_t>(r.instance) + r.attempt) %
                                                  static_cast<uint64_t>(n_));
  const OtfpInstance* in = ring_.held(r.instance);
  if (target != self_ || in == nullptr || (in->have & node_bit(r.sender)) == 0) return;
  for (size_t q = 0; q < serve_count_; ++q)
    if (serve_[q].instance == r.instance && serve_[q].sender == r.sender) {  // already owed: widen it
      serve_[q].first = std::min(serve_[q].first, r.first);
      serve_[q].last = std::max(serve_[q].last, r.last);
      serve_next_[q] = std::min(serve_next_[q], r.first);
      return;
    }
  if (serve_count_ < serve_.size()) {
    serve_next_[serve_count_] = r.first;
    serve_[serve_count_++] = r;
  }
}

}  // namespace tob::core
