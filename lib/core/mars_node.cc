#include "core/mars_node.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "core/bytes.h"

namespace tob::core {
namespace {

constexpr uint64_t bit(NodeId n) { return uint64_t{1} << n; }
// seed 000 §6.2.2: "If more than one node did not receive the message, both n and m come to the
// conclusion that n had a sender omission."
constexpr int kSenderOmissionReceivers = 2;
// seed 000 §6.2.2: "If n did not receive two or more messages from other active nodes, n concludes
// its own failure per the fault hypothesis."
constexpr int kReceiverOmissionMessages = 2;
// seed 000 §6.2.2, §6.2.3: membership decisions and service messages need at least three members.
constexpr int kDecidingMembersMin = 3;
// seed 000 §6.2.1: a membership of two cannot decide; it waits a bounded number of cycles.
constexpr int kTwoMembers = 2;
// Header, trailer, membership section and the batch section's header.
constexpr size_t kFrameOverhead = kMinFrameBytes + 2 * kSectionHeaderBytes + kMembershipBodyBytes;
// The batch of a segment without an app_batch section: no messages.
constexpr uint8_t kEmptyBatch[kBatchHeaderBytes] = {};

}  // namespace

Result<MarsNode> MarsNode::create(const NodeConfig& config) {
  auto ok = config.validate();
  if (!ok) return ok.error();
  auto sched = Schedule::create(config.schedule);
  return MarsNode(config, std::move(sched.value()));
}

MarsNode::MarsNode(const NodeConfig& config, Schedule sched)
    : config_(config),
      sched_(std::move(sched)),
      self_(config.self),
      n_(sched_.node_count()),
      queue_(config.queue_msgs_max, config.queue_bytes_max, config.payload_bytes_max) {
  if (config_.stall_limit_ns == 0) config_.stall_limit_ns = sched_.cycle_ns();
  seg_room_ = config_.frame_bytes_max - kFrameOverhead;
  // Frames per copy of each node's slot (validate() checked every budget). A segment carries at
  // least one message, so a slot never needs more segments than messages.
  for (NodeId k = 0; k < n_; ++k) frames_per_copy_[k] = static_cast<uint16_t>(config_.frames_per_copy(k));
  held_.reserve(static_cast<size_t>(n_) * kMessageSlots);
  for (NodeId k = 0; k < n_; ++k)
    for (int i = 0; i < kMessageSlots; ++i) held_.emplace_back(frames_per_copy_[k], seg_room_, config.payload_bytes_max);
  const size_t own_frames = frames_per_copy_[self_];
  next_msg_id_ = config_.first_msg_id;
  const auto copies = static_cast<size_t>(sched_.sends_per_slot());
  tx_bytes_.resize(2 * copies * own_frames * config_.frame_bytes_max);
  // Bounded work per call: turns processed in one call are limited by the stall limit.
  const int64_t cycles_per_call = config_.stall_limit_ns / sched_.cycle_ns() + 2;
  const auto turns = static_cast<size_t>(cycles_per_call) * static_cast<size_t>(n_);
  deliveries_max_ = turns * config_.batch_msgs_max;
  actions_.tx.reserve(2 * copies * own_frames * static_cast<size_t>(cycles_per_call));
  actions_.deliveries.reserve(deliveries_max_);
  actions_.events.reserve(turns * 2 + 8);
  actions_.undelivered.reserve(2 * config_.batch_msgs_max);
}

void MarsNode::clear_if_taken() { core::clear_if_taken(actions_, taken_); }

const Actions& MarsNode::take_actions() { return core::take_actions(actions_, taken_); }

int64_t MarsNode::next_deadline_ns() const {
  if (!started_) return INT64_MIN;
  return sched_.turn(next_seq_).membership_point_ns;
}

SubmitResult MarsNode::submit(uint16_t client, std::span<const uint8_t> payload, int64_t submit_ns) {
  const SubmitStatus st = queue_.push(client, payload, submit_ns, next_msg_id_);
  if (st != SubmitStatus::ok) {
    ++counters_.msgs_refused;
    return {st, 0};
  }
  ++counters_.msgs_submitted;
  return {st, next_msg_id_++};
}

void MarsNode::stop() {
  clear_if_taken();
  state_ = SelfState::stopped;
}

void MarsNode::on_time(int64_t now_ns) {
  clear_if_taken();
  if (state_ == SelfState::stopped) return;
  advance(now_ns);
}

void MarsNode::advance(int64_t now_ns) {
  if (!started_) {
    started_ = true;
    const int64_t start = std::max(now_ns, sched_.epoch_ns());
    last_now_ns_ = now_ns;
    listen_until_ns_ = start + sched_.cycle_ns();
    next_seq_ = sched_.next_turn_after(start - 1).seq;
  } else {
    if (now_ns <= last_now_ns_) return;  // time never goes back; equal time: nothing new
    const int64_t gap_ns = now_ns - last_now_ns_;
    last_now_ns_ = now_ns;
    if (gap_ns > config_.stall_limit_ns &&
        (state_ == SelfState::member || state_ == SelfState::joining)) {
      // seed 000 §5.3.2 timing failures: a node that ran late must not act on stale state.
      shutdown(sched_.turn(next_seq_), Reason::scheduling_delay);
    }
  }
  // After a long stall, skip turns that no longer matter (the node is not a member).
  if (state_ != SelfState::member && state_ != SelfState::joining) {
    const Turn skip_to = sched_.next_turn_after(now_ns - 2 * sched_.cycle_ns());
    if (skip_to.seq > next_seq_) next_seq_ = skip_to.seq;
  }
  for (Turn t = sched_.turn(next_seq_); t.membership_point_ns <= now_ns; t = sched_.turn(next_seq_)) {
    process_turn(t);
    ++next_seq_;
    if (state_ == SelfState::stopped) break;
  }
}

bool MarsNode::fresh(NodeId j, int64_t after_seq) const {
  return rows_[j].valid && rows_[j].seq > after_seq;
}

bool MarsNode::named_by_member(NodeId n, int64_t after_seq) const {
  for (NodeId j = 0; j < n_; ++j)
    if (j != self_ && j != n && fresh(j, after_seq) && rows_[j].has_members && (rows_[j].members & bit(n)) != 0) return true;
  return false;
}

void MarsNode::process_turn(const Turn& t) {
  last_turn_cycle_ = t.cycle;
  if (state_ == SelfState::silent && t.membership_point_ns >= silent_until_ns_) {
    // It kept receiving while silent, so the silence also served as its listening cycle.
    state_ = config_.rejoin_after_shutdown ? SelfState::listening : SelfState::stopped;
    listen_until_ns_ = t.membership_point_ns;
    if (state_ == SelfState::listening) emit(EventKind::rejoin_started, self_, Reason::none, t);
  }
  if (state_ == SelfState::member) ++counters_.membership_points;
  decide(t);
  received_ &= ~bit(t.node);  // a new slot of t.node begins
  if (t.node != self_) {
    record_view(t.seq);
    return;
  }

  if (state_ == SelfState::member && view_disagreement(t)) shutdown(t, Reason::view_disagreement);
  if (state_ == SelfState::member) {
    // seed 000 §6.2.1: a two-member membership cannot decide; give up after a bounded wait.
    if (member_count_ == kTwoMembers) {
      if (++small_group_cycles_ > config_.two_member_wait_cycles) {
        shutdown(t, Reason::two_member_timeout);
        return;
      }
    } else {
      small_group_cycles_ = 0;
    }
    record_view(t.seq);
    transmit(t);
  } else if (state_ == SelfState::listening && t.membership_point_ns >= listen_until_ns_) {
    stage_[self_] = Stage::active;  // seed 000 §6.2.1: announce, admission one cycle later
    state_ = SelfState::joining;
    record_view(t.seq);
    transmit(t);
  } else {
    record_view(t.seq);
  }
}

void MarsNode::record_view(int64_t seq) {
  // A non-member's set (adopted from member frames while it listens or joins) is no view of its
  // own: member frames sent before this node was admitted are not compared with it.
  view_history_[static_cast<size_t>(seq) % kViewHistory] = {state_ == SelfState::member ? seq : -1, members_};
}

// Membership agreement self-check (our addition to seed 000; §6.2 leaves detecting such
// failures to the implementation). Every member frame carries the sender's member set; it is
// compared with this node's set after the same turn. Inside the fault hypothesis a node whose
// view diverged (e.g. below three members, where no decisions are taken) is outvoted here: it
// shuts down unless its view has a strict majority among itself and the members it heard.
bool MarsNode::view_disagreement(const Turn& t) const {
  const int64_t prev = t.seq - n_;
  int agree = 1;  // this node
  int disagree = 0;
  for (NodeId j = 0; j < n_; ++j) {
    if (j == self_ || (members_ & bit(j)) == 0 || !fresh(j, prev) || !rows_[j].view_compared) continue;
    if (rows_[j].view_agrees) {
      ++agree;
    } else {
      ++disagree;
    }
  }
  return disagree > 0 && disagree >= agree;
}

void MarsNode::decide(const Turn& t) {
  // n's membership point (seed 000 §6.2.2): its last frame, sent in its previous slot, is judged.
  const NodeId n = t.node;
  const int64_t prev = t.seq - n_;
  const bool got = rows_[n].valid && rows_[n].seq == prev;
  if (state_ != SelfState::member && n != self_ && (members_ & bit(n)) != 0 && !got && !named_by_member(n, prev)) {
    // seed 000 §6.2.2: "The node n itself shuts down, therefore not making use of its next
    // sending slot. Thereby, other potential joining nodes deduce that n is no longer a member
    // and can also gain a consistent view of the membership set." A non-member's set is what
    // member frames told it, or its own decisions on joiners it heard; a member whose slot it
    // heard nothing in, and that no member frame of the last cycle names, is gone: a joiner must
    // not wait for its row. (Members below three take no decisions and keep naming a silent
    // member; then the joiner keeps it too, as they do.) Without this, after a total outage,
    // joiners refused for want of the row of a node that nobody was a member with kept refusing
    // each other in step (issue 17).
    set_members(members_ & ~bit(n));
    return;
  }
  if (stage_[n] == Stage::active) {
    decide_joiner(t, got);
  } else if (stage_[n] == Stage::member && member_count_ < kDecidingMembersMin) {
    // seed 000 §6.2.2: no membership decisions below three members, and no service messages: a
    // batch sent while there were three is discarded by everyone alike.
    discard_message(t, n, Reason::too_few_members);
  } else if (stage_[n] == Stage::member) {
    decide_member(t, got);
    return;
  }
  // Whatever n's stage in this node's view: if another member received n's frame and this node
  // did not, this node has an incoming link failure (covers joiners it never saw announce).
  if (state_ == SelfState::member && n != self_ && !got) {
    for (NodeId j = 0; j < n_; ++j) {
      if (j != self_ && j != n && (members_ & bit(j)) != 0 && fresh(j, prev) &&
          (rows_[j].view_vector & bit(n)) != 0) {
        shutdown(t, Reason::receiver_omission);
        return;
      }
    }
  }
}

void MarsNode::decide_joiner(const Turn& t, bool got) {
  const NodeId n = t.node;
  const int64_t prev = t.seq - n_;
  bool admitted = false;
  const bool creating = member_count_ == 0;
  if (got && creating) {
    // seed 000 §6.2.1: the first active node creates the membership when another active node
    // confirmed its frame through its view vector.
    for (NodeId j = 0; j < n_ && !admitted; ++j)
      admitted = j != n && fresh(j, prev) && rows_[j].stage == Stage::active && (rows_[j].view_vector & bit(n)) != 0;
  } else if (got) {
    // Admitted when every member's view vector shows n's frame.
    admitted = true;
    for (NodeId j = 0; j < n_; ++j)
      if ((members_ & bit(j)) != 0 && !(fresh(j, prev) && (rows_[j].view_vector & bit(n)) != 0)) admitted = false;
  }
  if (admitted) {
    admit(t, n, creating);
  } else {
    stage_[n] = Stage::inactive;
    if (n == self_) shutdown(t, Reason::not_admitted);
  }
}

void MarsNode::decide_member(const Turn& t, bool got) {
  const NodeId n = t.node;
  const int64_t prev = t.seq - n_;
  const bool me_member = state_ == SelfState::member;
  Reason fail = Reason::none;
  const NodeId suspected = got ? rows_[n].suspected : kNoNode;
  if (suspected != kNoNode && suspected < n_) {
    // seed 000 §6.2.2: the suspicion is confirmed if pred(n) is still a member.
    if (stage_[suspected] == Stage::member) {
      fail = Reason::suspicion_confirmed;
    } else if (me_member || n == self_) {
      emit(EventKind::suspicion_cleared, n, Reason::none, t);
    }
  }
  if (fail == Reason::none) {
    int missing = 0;  // members that did not receive n's last frame
    for (NodeId j = 0; j < n_; ++j)
      if (j != n && (members_ & bit(j)) != 0 && fresh(j, prev) && (rows_[j].view_vector & bit(n)) == 0) ++missing;
    if (missing >= kSenderOmissionReceivers) fail = Reason::sender_omission;
  }
  if (fail == Reason::none && n == self_) receiver_omission_check(t);
  if (state_ != SelfState::member && n == self_) return;  // shut down by the check
  if (fail != Reason::none) {
    discard_message(t, n, fail);
    remove(t, n, fail);
    return;
  }
  if (me_member && n != self_ && !got) {
    // n stays a member and its message is delivered, but this node lacks it: the omission is
    // this node's (self-checking node, seed 000 §5.1).
    shutdown(t, Reason::receiver_omission);
    return;
  }
  if (me_member && (got || n == self_)) deliver_message(t, n);
}

void MarsNode::receiver_omission_check(const Turn& t) {
  // seed 000 §6.2.2, checked by n = self at its own membership point over the last cycle.
  const int self_pos = sched_.position_of(self_);
  int missing = 0;
  NodeId culprit = kNoNode;
  int64_t culprit_seq = -1;
  for (NodeId k = 0; k < n_; ++k) {
    if (k == self_ || (members_ & bit(k)) == 0) continue;
    const int back = (self_pos - sched_.position_of(k) + n_) % n_;
    const int64_t k_seq = t.seq - back;  // k's latest slot before this membership point
    if (!(rows_[k].valid && rows_[k].seq == k_seq)) {
      ++missing;
      culprit = k;
      culprit_seq = k_seq;
    }
  }
  if (missing >= kReceiverOmissionMessages) {
    shutdown(t, Reason::receiver_omission);
    return;
  }
  if (missing == 0) return;
  // pred(n): the member whose turn comes right before n's.
  NodeId pred = kNoNode;
  for (int back = 1; back < n_; ++back) {
    const NodeId k = sched_.node_at((self_pos - back + n_) % n_);
    if ((members_ & bit(k)) != 0) {
      pred = k;
      break;
    }
  }
  if (culprit == pred) {
    // Nobody has spoken since pred's slot: whose fault it is shows in the next cycle.
    suspicion_ = culprit;
    ++counters_.suspicions;
    emit(EventKind::suspicion_raised, culprit, Reason::none, t);
    return;
  }
  // pred(n) sent after the culprit: if it received the culprit's frame, the fault is ours.
  if (pred != kNoNode && fresh(pred, culprit_seq) && (rows_[pred].view_vector & bit(culprit)) != 0)
    shutdown(t, Reason::receiver_omission);
}

Reassembly& MarsNode::held(NodeId n, int64_t cycle) {
  return held_[static_cast<size_t>(n) * kMessageSlots + static_cast<size_t>(cycle % kMessageSlots)];
}

const MarsNode::Message* MarsNode::message_of(NodeId n, int64_t cycle) const {
  if (cycle < 0) return nullptr;
  const Message& m = messages_[n][static_cast<size_t>(cycle % kMessageSlots)];
  return m.cycle == cycle ? &m : nullptr;
}

void MarsNode::deliver_message(const Turn& t, NodeId n) {
  const Message* m = message_of(n, t.cycle - 1);
  if (m == nullptr || m->count == 0) return;
  const auto idx = static_cast<size_t>(m->cycle % kMessageSlots);
  TOB_ASSERT(actions_.deliveries.size() + m->count <= deliveries_max_);
  // Release: the end of the cycle of the delivering membership point (every node delivered it).
  held(n, m->cycle).for_each_message([&](const AppMessage& am) {
    actions_.deliveries.push_back({n, m->cycle, t.seq, t.membership_point_ns, am.msg_id, am.submit_ns, am.client,
                                   am.payload, sched_.cycle_start_ns(t.cycle + 1)});
  });
  counters_.msgs_delivered += m->count;
  if (n == self_) {
    TOB_ASSERT(queue_.in_flight() == m->count);
    queue_.ack_in_flight(m->count);
    messages_[n][idx].count = 0;  // decided once
  }
}

void MarsNode::discard_message(const Turn& t, NodeId n, Reason why) {
  if (n != self_) return;
  const Message* m = message_of(n, t.cycle - 1);
  if (m == nullptr || m->count == 0) return;
  const auto idx = static_cast<size_t>(m->cycle % kMessageSlots);
  TOB_ASSERT(queue_.in_flight() == m->count);
  // Reported to the application, never silently dropped. Below three members every member
  // discards it alike (nobody delivered it); when the node failed, others may have delivered
  // it. Either way the node does not send it again: under divergent views (outside the
  // fault hypothesis) a second send could be delivered twice.
  held(n, m->cycle).for_each_message([&](const AppMessage& am) {
    TOB_ASSERT(actions_.undelivered.size() < actions_.undelivered.capacity());
    actions_.undelivered.push_back({am.msg_id, am.client, m->cycle, why});
  });
  counters_.msgs_undelivered += m->count;
  queue_.ack_in_flight(m->count);
  messages_[n][idx].count = 0;  // decided once
}

void MarsNode::set_members(uint64_t members) {
  members_ = members;
  member_count_ = std::popcount(members);
  for (NodeId k = 0; k < n_; ++k) {
    if ((members & bit(k)) != 0) {
      stage_[k] = Stage::member;
    } else if (stage_[k] == Stage::member) {
      stage_[k] = Stage::inactive;
    }
  }
}

void MarsNode::admit(const Turn& t, NodeId n, bool created) {
  set_members(members_ | bit(n));
  if (n == self_) {
    state_ = SelfState::member;
    small_group_cycles_ = 0;
  }
  ++counters_.admissions;
  if (state_ == SelfState::member)
    emit(created ? EventKind::membership_created : EventKind::admitted, n, Reason::none, t);
}

void MarsNode::remove(const Turn& t, NodeId n, Reason why) {
  if (n == self_) {
    shutdown(t, why);
    return;
  }
  set_members(members_ & ~bit(n));
  stage_[n] = Stage::inactive;
  ++counters_.removals;
  if (state_ == SelfState::member) emit(EventKind::removed, n, why, t);
}

void MarsNode::shutdown(const Turn& t, Reason why) {
  if (state_ == SelfState::silent || state_ == SelfState::stopped) return;
  // The own batch sent last and not yet decided: its outcome is unknown to this node. At its
  // own turn that is the previous cycle's; at another node's turn, the latest own slot before.
  const int back = t.node == self_ ? n_
                                   : (sched_.position_of(t.node) - sched_.position_of(self_) + n_) % n_;
  const Turn last_own = sched_.turn(t.seq - back);
  discard_message(sched_.turn_of(last_own.cycle + 1, self_), self_, why);
  emit(EventKind::self_shutdown, self_, why, t);
  ++counters_.self_shutdowns;
  state_ = SelfState::silent;
  silent_until_ns_ = t.membership_point_ns + config_.rejoin_silence_cycles * sched_.cycle_ns();
  stage_.fill(Stage::inactive);
  members_ = 0;
  member_count_ = 0;
  suspicion_ = kNoNode;
  small_group_cycles_ = 0;
}

void MarsNode::emit(EventKind k, NodeId n, Reason r, const Turn& t) {
  if (actions_.events.size() == actions_.events.capacity()) {  // bounded per call
    ++counters_.events_dropped;
    return;
  }
  actions_.events.push_back({k, n, r, t.cycle, t.seq, t.membership_point_ns, members_});
}

void MarsNode::transmit(const Turn& t) {
  const bool member = state_ == SelfState::member;
  const uint16_t segments = build_own_batch(t, member);
  const Reassembly& own = held(self_, t.cycle);

  const uint64_t view_vector = received_ | bit(self_);
  rows_[self_] = {true, t.seq, view_vector, members_, member, stage_[self_], suspicion_, member, true};
  received_ |= bit(self_);

  FrameHeader h;
  h.cluster_id = config_.cluster_id;
  h.sender = self_;
  h.cycle = static_cast<uint64_t>(t.cycle);
  h.segment_count = segments;
  h.view_vector = view_vector;
  h.stage = member ? Stage::member : Stage::active;
  h.suspected = suspicion_;
  suspicion_ = kNoNode;  // carried once; resolved at the next membership point

  // Copy-major: every segment of copy 0 at its instant, then copy 1's (send-twice per segment).
  const auto copies = static_cast<size_t>(sched_.sends_per_slot());
  const size_t frames = frames_per_copy_[self_];
  for (size_t copy = 0; copy < copies; ++copy) {
    const int64_t at = sched_.transmit_ns(t.cycle, self_, static_cast<int>(copy));
    for (uint16_t j = 0; j < segments; ++j) {
      const size_t off = ((static_cast<size_t>(tx_turn_) * copies + copy) * frames + j) * config_.frame_bytes_max;
      std::span<uint8_t> buf(tx_bytes_.data() + off, config_.frame_bytes_max);
      h.flags = static_cast<uint8_t>((copy == 0 ? 0 : kFlagSecondCopy) | config_.frame_flags);
      h.segment_index = j;
      FrameWriter w(buf);
      w.begin(h);
      if (member) {
        uint8_t body[kMembershipBodyBytes];
        store_be64(body, members_);
        w.add_section(SectionType::membership, 0, body);
      }
      const std::span<const uint8_t> batch = own.segment(j);
      if (batch.size() > kBatchHeaderBytes) w.add_section(SectionType::app_batch, 0, batch);
      const size_t len = w.finish();
      TOB_ASSERT(len > 0);  // sized in validate(): a full segment always fits
      actions_.tx.push_back({at, t.cycle, static_cast<uint8_t>(copy), buf.first(len)});
      ++counters_.frames_tx;
    }
  }
  tx_turn_ ^= 1;
}

// The own batch of this turn, cut into as few segments as its messages need (at most the slot's
// frames per copy; one, perhaps empty, at least), written in place in held(self, cycle), where it
// stays until it is decided.
uint16_t MarsNode::build_own_batch(const Turn& t, bool member) {
  Message& own = messages_[self_][static_cast<size_t>(t.cycle % kMessageSlots)];
  own = {t.cycle, 0};
  TOB_ASSERT(queue_.in_flight() == 0);  // the previous own batch was decided at this turn
  const bool sending = member && member_count_ >= kDecidingMembersMin;
  Reassembly& r = held(self_, t.cycle);
  r.reset(t.cycle);
  uint16_t used = 0;
  size_t taken = 0;
  do {
    BatchWriter bw(r.room(used));
    while (sending && queue_.has_unsent() && taken < config_.batch_msgs_max && bw.add(queue_.next_unsent())) {
      queue_.mark_sent();
      ++taken;
    }
    r.put(used++, bw.finish(), bw.count());
  } while (sending && used < frames_per_copy_[self_] && queue_.has_unsent() && taken < config_.batch_msgs_max);
  r.close(used);
  own.count = r.messages();
  counters_.msgs_sent += own.count;
  return used;
}

FrameVerdict MarsNode::on_frame(const FrameView& frame, int64_t rx_ns) {
  clear_if_taken();
  const auto verdict = [&](FrameVerdict v) {
    ++counters_.frames_rx[static_cast<int>(v)];
    return v;
  };
  if (state_ == SelfState::stopped) return verdict(FrameVerdict::not_running);
  advance(rx_ns);
  if (state_ == SelfState::stopped) return verdict(FrameVerdict::not_running);
  const FrameHeader& h = frame.header;
  if (h.cluster_id != config_.cluster_id) return verdict(FrameVerdict::wrong_cluster);
  if (h.sender >= n_) return verdict(FrameVerdict::unknown_sender);
  if (h.sender == self_) return verdict(FrameVerdict::own_frame);
  const int64_t rx_cycle = sched_.cycle_of(rx_ns);
  if (rx_cycle < 0 || h.cycle != static_cast<uint64_t>(rx_cycle))
    return verdict(FrameVerdict::outside_window);
  const auto c = static_cast<int64_t>(h.cycle);
  if (!sched_.reception_window(c, h.sender).contains(rx_ns))
    return verdict(FrameVerdict::outside_window);
  const int64_t seq = sched_.turn_of(c, h.sender).seq;
  if (next_seq_ != seq + 1) return verdict(FrameVerdict::outside_window);  // decided without it
  if (rows_[h.sender].valid && rows_[h.sender].seq == seq) return verdict(FrameVerdict::duplicate);

  // Sections this core understands; unknown ones are skipped (later versions add more).
  std::span<const uint8_t> batch(kEmptyBatch);
  bool has_batch = false;
  uint64_t members = 0;
  bool has_members = false;
  SectionView s;
  for (size_t off = 0; frame.next_section(off, s);) {
    if (s.type == SectionType::app_batch) {
      if (has_batch) return verdict(FrameVerdict::malformed_section);  // one batch section per segment
      batch = s.body;
      has_batch = true;
    } else if (s.type == SectionType::membership) {
      if (s.body.size() != kMembershipBodyBytes) return verdict(FrameVerdict::malformed_section);
      members = load_be64(s.body.data());
      has_members = true;
    }
  }

  // The slot's batch counts once every segment is here (checked, sized and copied by the
  // reassembly); until then the sender's frame is missing, as a lost single frame would be.
  const NodeId k = h.sender;
  Reassembly& r = held(k, c);
  switch (r.add(c, h.segment_index, h.segment_count, batch)) {
    case Reassembly::Add::duplicate: return verdict(FrameVerdict::duplicate);
    case Reassembly::Add::malformed: return verdict(FrameVerdict::malformed_section);
    case Reassembly::Add::fresh: return verdict(FrameVerdict::accepted);
    case Reassembly::Add::complete: break;
  }
  const auto& seen = view_history_[static_cast<size_t>(seq) % kViewHistory];
  const bool view_compared = has_members && seen.first == seq;
  const bool view_agrees = !view_compared || seen.second == members;
  rows_[k] = {true, seq, h.view_vector, members, has_members, h.stage, h.suspected, view_compared, view_agrees};
  received_ |= bit(k);
  messages_[k][static_cast<size_t>(c % kMessageSlots)] = {c, r.messages()};

  if (h.stage == Stage::active) {
    if (stage_[k] == Stage::member) {
      // It announces itself as joining: it shut down and came back (only possible where no
      // decisions are taken, below three members). Everyone who hears it does the same.
      const Turn t = sched_.turn(seq);
      remove(t, k, Reason::left);
    }
    stage_[k] = Stage::active;
  } else if (h.stage == Stage::member && has_members && state_ != SelfState::member) {
    // A non-member learns the membership from the members, without itself: a set that still
    // names it (it shut down, or was admitted where it was refused, below three members) is not
    // its membership, and a joiner that counted itself would wait for its own fresh row.
    set_members(members & ~bit(self_));
    if (state_ == SelfState::joining) stage_[self_] = Stage::active;
  }
  return verdict(FrameVerdict::accepted);
}

}  // namespace tob::core
