// The otfp coordinator (seed 002 §4, §5.1, §5.3; docs/protocol-otfp.md "Coordinator"): the
// lowest live id starts a round with one phase 1a for every instance from the oldest one some
// live node still needs, collects phase 1b reports, runs phase 2 of the classic ballot for the
// instances below the activation point and activates fast mode (ANY) from it on; it recovers
// collided instances in the classic ballot right after its fast ballot, and starts a new round
// when an instance or an activation stays stuck.
#include <algorithm>
#include <bit>

#include "core/otfp_limits.h"
#include "core/otfp_node.h"

namespace tob::core {

using otfp::node_bit;

NodeId OtfpNode::coordinator() const {
  // Omega (seed 002 §4: "elected among all agents, and replaced only when it crashes"): the
  // coordinator of the highest ballot this node has seen anywhere (its own log, any frame, the
  // peers' state sections), while it is heard; when it falls silent, the lowest id heard, this
  // node included. A returning lower id does not depose a working coordinator (each change costs
  // a round). All live nodes converge on the same highest ballot through the state sections, so
  // they pick the same coordinator even when their promises differ (a restarted node's durable
  // promise may be older than the one it held in memory). Paxos is safe with several
  // coordinators; agreement on one is needed only for progress.
  //
  // A collision needs the coordinator (§5.3). When one has waited kTakeoverCycles past its votes
  // and the coordinator has been silent that long, it is passed over now rather than after the
  // heard timeout, which is sized for the host's stalls (a crashed coordinator would hold every
  // delivery that long). A coordinator only stalled sees the new round's ballot when it is back
  // and follows it: a round's cost, never safety.
  uint64_t heard = alive_;
  if (ballot_seen_ != 0) {
    const NodeId current = ballot_coordinator(ballot_seen_);
    if (current < n_ && current != self_ && alive(current) && cycle_ - heard_cycle_[current] >= otfp::kTakeoverCycles &&
        collision_waiting()) {
      heard &= ~node_bit(current);
    } else if (current < n_ && (current == self_ || alive(current))) {
      return current;
    }
  }
  return static_cast<NodeId>(std::countr_zero(heard | node_bit(self_)));
}

bool OtfpNode::collision_waiting() const {
  // The oldest undecided instance of the active fast ballot holds Q fast votes of it, not for one
  // value, and its votes were due kTakeoverCycles ago.
  if (fast_ballot_ == 0) return false;
  for (int64_t i = std::max({low_, activation_, ring_.floor()}); i <= cycle_ - kappa_ - otfp::kTakeoverCycles; ++i) {
    const OtfpInstance* in = ring_.held(i);
    if (in == nullptr) return false;
    if (in->decided) continue;
    int voters = 0;
    for (NodeId a = 0; a < n_; ++a) voters += in->fast_votes[a].ballot == fast_ballot_ ? 1 : 0;
    return voters >= quorum_;
  }
  return false;
}

void OtfpNode::coordinate(int64_t now_cycle) {
  if (coordinator() != self_) {
    my_round_ = 0;  // another node leads: this one proposes, accepts and learns
    activating_ = false;
    own_promise_at_ = 0;
    return;
  }
  // Listen first: a node that just started has not heard the lower ids yet.
  if (now_cycle - start_cycle_ < timeouts_.heard) return;
  // A higher ballot elsewhere (another coordinator, or this node's earlier life): outbid it.
  const uint32_t recovery = ballot(my_round_, true, self_);
  if (my_round_ == 0 || ballot_seen_ > recovery || promised_ > recovery || max_voted_ballot_ > recovery) {
    start_round(now_cycle);
    return;
  }
  if (activating_) {
    // Instances the ring forgot meanwhile are gone for this round as for every node (a node that
    // needs them records a gap, "Instances and memory"): the round goes on from the floor. (It
    // used to start over instead, and a round whose low sat at the ring's edge started over every
    // two cycles and never activated: a livelock seen on the netns cluster.)
    round_low_ = std::max(round_low_, ring_.floor());
    if (try_activate(now_cycle)) return;
    // No report covering more for this long (its 1a or the answers are lost, or an acceptor
    // moved on): a new round.
    if (now_cycle - round_progress_cycle_ >= timeouts_.recovery) start_round(now_cycle);
    return;
  }
  recover_collisions(now_cycle);
  if (stalled_instance(now_cycle)) start_round(now_cycle);
}

bool OtfpNode::stalled_instance(int64_t now_cycle) const {
  // The oldest instance some live node needs that is undecided here, long after its votes were
  // due, with no proposal under way (or one that did not settle it in its patience): only a new
  // round with phase 1 helps. Only the oldest: progress is in instance order, and the votes of
  // newer ones may just wait behind it for room in the frames. A proposal a higher ballot
  // superseded is caught by coordinate() at once.
  if (now_cycle - round_started_cycle_ < timeouts_.recovery) return false;
  for (int64_t i = oldest_needed(); i <= now_cycle - kappa_ - 1 - timeouts_.recovery; ++i) {
    const OtfpInstance* in = ring_.held(i);
    if (in == nullptr) return true;  // nothing of it here at all: the round opens it
    if (in->decided) continue;
    return in->proposal_ballot == 0 || now_cycle - in->proposal_cycle > timeouts_.patience;
  }
  return false;
}

void OtfpNode::start_round(int64_t now_cycle) {
  const uint32_t highest =
      std::max({ballot_round(ballot_seen_), my_round_, ballot_round(promised_), ballot_round(max_voted_ballot_)});
  if (highest >= kBallotRoundMax) {
    // The rounds are used up: no correct node gets here in 2^25 rounds, only a ballot in a frame
    // forged or corrupted under a valid MAC. This node cannot outbid it; it stays acceptor and
    // learner (liveness is lost, not safety) instead of overflowing the ballot's round field.
    my_round_ = 0;
    activating_ = false;
    return;
  }
  my_round_ = highest + 1;
  ballot_seen_ = ballot(my_round_, false, self_);
  activating_ = true;
  round_low_ = oldest_needed();
  round_started_cycle_ = now_cycle;
  round_progress_cycle_ = now_cycle;
  coverage_.fill(Coverage{});
  reporters_ = 0;
  ++counters_.activations;
  // Proposals of an earlier round are void: this round decides what they were for.
  for (int64_t i = ring_.floor(); i <= cycle_ + 1; ++i)
    if (OtfpInstance* in = ring_.held(i); in != nullptr) in->proposal_ballot = 0;
  // This node is one of the acceptors: it promises, and reports once the promise is durable.
  const uint32_t fast = ballot(my_round_, false, self_);
  promise(fast);
  answer_ballot_ = 0;
  own_promise_at_ = persisted_bytes_;
  emit(EventKind::round_started, self_, round_low_);
  if (observer_ != nullptr) observer_->round_started(self_, fast, round_low_);
}

void OtfpNode::own_report() {
  const uint32_t fast = ballot(my_round_, false, self_);
  if (!activating_ || promised_ != fast || max_voted_ballot_ >= fast) return;
  const Phase1bPart part{fast, true, highest_voted_, std::max(round_low_, ring_.floor()), kOtfpRangeOpen};
  scratch_votes_.clear();
  for (int64_t i = part.from; i <= cycle_ + 1; ++i)
    if (const OtfpInstance* in = ring_.held(i); in != nullptr && in->voted_ballot != 0)
      scratch_votes_.push_back({i, in->voted_ballot, in->voted});
  report(self_, part, scratch_votes_);
}

void OtfpNode::on_phase1b(NodeId from, const Phase1b& p) {
  scratch_votes_.clear();
  for (size_t k = 0; k < p.votes.size(); ++k) scratch_votes_.push_back(p.votes.at(k));
  report(from, p.part, scratch_votes_);
}

void OtfpNode::report(NodeId from, const Phase1bPart& part, std::span<const OtfpVote> votes) {
  const uint32_t fast = ballot(my_round_, false, self_);
  if (!activating_ || part.ballot != fast) return;
  // A part must join what this acceptor reported so far; one that does not (a part in between
  // was lost) waits for its next pass, which starts from the beginning again.
  Coverage& c = coverage_[from];
  const bool first = (reporters_ & node_bit(from)) == 0;
  if (!first && (part.from > c.to || part.to < c.from)) return;
  // Its votes are stored per instance; one this node cannot hold makes the part useless.
  for (const OtfpVote& v : votes)
    if (v.instance > cycle_ + 1 || ring_.open(v.instance) == nullptr) return;
  for (const OtfpVote& v : votes) {
    OtfpInstance* in = ring_.held(v.instance);
    if (in->reports_ballot != fast) {
      in->reports_ballot = fast;
      in->reports.fill(OtfpPeerVote{});
    }
    in->reports[from] = {v.ballot, v.value};
  }
  const Coverage before = c;
  if (first) {
    c = {part.from, part.to, part.highest};
  } else {
    c.from = std::min(c.from, part.from);
    c.to = std::max(c.to, part.to);
    c.highest = std::max(c.highest, part.highest);
  }
  reporters_ |= node_bit(from);
  if (first || c.from < before.from || c.to > before.to) round_progress_cycle_ = cycle_;  // repeats are not progress
}

bool OtfpNode::try_activate(int64_t now_cycle) {
  // Promisers: acceptors whose last part arrived, with every part before it.
  uint64_t promisers = 0;
  int64_t highest = -1;
  for (uint64_t m = reporters_; m != 0; m &= m - 1) {
    const auto p = static_cast<NodeId>(std::countr_zero(m));
    if (coverage_[p].to != kOtfpRangeOpen) continue;
    promisers |= node_bit(p);
    highest = std::max(highest, coverage_[p].highest);
  }
  if (std::popcount(promisers) < quorum_) return false;
  // Activation point (seed 002 §5.1): no promiser voted at or above it, so no value can have
  // been chosen there in a ballot below this one: fast mode from there on.
  const int64_t a = std::max(highest + 1, now_cycle + 1);
  if (a > cycle_ + 1) return false;  // a promiser's clock is ahead: wait until those instances exist here
  // Below it, every instance some live node still needs and this node does not know decided
  // must be covered by a quorum of promisers, each of which reported every vote it holds there.
  const auto covering = [&](int64_t i) {
    uint64_t c = 0;
    for (uint64_t m = promisers; m != 0; m &= m - 1) {
      const auto p = static_cast<NodeId>(std::countr_zero(m));
      if (coverage_[p].from <= i) c |= node_bit(p);
    }
    return c;
  };
  for (int64_t i = round_low_; i < a; ++i) {
    const OtfpInstance* in = ring_.open(i);
    if (in == nullptr) return false;  // forgotten here meanwhile: the timeout starts a new round
    if (!in->decided && std::popcount(covering(i)) < quorum_) return false;  // wait for more reports
  }
  const uint32_t fast = ballot(my_round_, false, self_);
  for (int64_t i = round_low_; i < a; ++i) {
    OtfpInstance& in = *ring_.held(i);
    if (in.decided) continue;
    // The Fast Paxos rule over what the covering promisers reported (no vote: any value; the
    // empty one, whose proposers propose their messages again).
    const uint64_t voters = in.reports_ballot == fast ? covering(i) : 0;
    propose(in, fast + 1, select_value(in.reports, voters), now_cycle);
  }
  activating_ = false;
  on_any(fast, a);
  emit(EventKind::round_activated, self_, a);
  if (observer_ != nullptr) observer_->activated(self_, fast, a);
  return true;
}

void OtfpNode::propose(OtfpInstance& in, uint32_t b, const OtfpValue& v, int64_t now_cycle) {
  // One value per ballot and instance: a coordinator never proposes two.
  TOB_ASSERT(in.proposal_ballot != b || in.proposal == v);
  in.proposal_ballot = b;
  in.proposal = v;
  in.proposal_cycle = now_cycle;
  on_phase2a({in.id, b, v});  // this node's own acceptor
}

OtfpValue OtfpNode::select_value(std::span<const OtfpPeerVote> votes, uint64_t voters) {
  // The Fast Paxos rule with equal quorums (seed 002 §4, [18]): among the votes of the highest
  // ballot reported, the value voted most often (a classic ballot has one). With Q >= floor(2N/3)
  // + 1 reporters, a value chosen in a fast ballot has more of them than any other. Ties (nothing
  // was chosen): the smallest, so that every coordinator picks alike.
  uint32_t top = 0;
  for (uint64_t m = voters; m != 0; m &= m - 1) top = std::max(top, votes[static_cast<size_t>(std::countr_zero(m))].ballot);
  OtfpValue best;
  if (top == 0) return best;  // nobody voted: any value, the empty one
  int best_count = 0;
  for (uint64_t m = voters; m != 0; m &= m - 1) {
    const OtfpPeerVote& a = votes[static_cast<size_t>(std::countr_zero(m))];
    if (a.ballot != top) continue;
    int count = 0;
    for (uint64_t w = voters; w != 0; w &= w - 1) {
      const OtfpPeerVote& b = votes[static_cast<size_t>(std::countr_zero(w))];
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

void OtfpNode::recover_collisions(int64_t now_cycle) {
  // Coordinated recovery (seed 002 §5.3): the fast ballot F's 2b votes stand for the 1b of the
  // classic ballot F + 1, its immediate successor, which starts at phase 2. It needs the votes of
  // a quorum in F; the rule then picks the value any fast quorum of F could have chosen.
  const uint32_t fast = ballot(my_round_, false, self_);
  if (fast_ballot_ != fast) return;
  for (int64_t i = std::max(oldest_needed(), activation_); i <= now_cycle; ++i) {
    OtfpInstance* in = ring_.held(i);
    if (in == nullptr || in->decided || in->proposal_ballot != 0) continue;
    uint64_t voters = 0;
    for (NodeId a = 0; a < n_; ++a)
      if (in->fast_votes[a].ballot == fast) voters |= node_bit(a);
    if (std::popcount(voters) < quorum_) continue;
    ++counters_.collisions;
    propose(*in, fast + 1, select_value(in->fast_votes, voters), now_cycle);
  }
}

}  // namespace tob::core
