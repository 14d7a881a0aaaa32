#include "sim/checker.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace tob::sim {
namespace {

uint64_t key_of(core::NodeId sender, uint64_t msg_id) { return (uint64_t{sender} << 56) | msg_id; }


// A node's membership view over time, from its own events (one incarnation).
struct Timeline {
  std::vector<int64_t> seq;
  std::vector<int64_t> virtual_ns;
  std::vector<uint64_t> members;
  int64_t admitted_seq = INT64_MAX;
  int64_t admitted_ns = INT64_MAX;

  uint64_t at_seq(int64_t s) const {
    auto it = std::upper_bound(seq.begin(), seq.end(), s);
    if (it == seq.begin()) return 0;
    return members[static_cast<size_t>(it - seq.begin() - 1)];
  }
  uint64_t at_ns(int64_t t) const {
    auto it = std::upper_bound(virtual_ns.begin(), virtual_ns.end(), t);
    if (it == virtual_ns.begin()) return 0;
    return members[static_cast<size_t>(it - virtual_ns.begin() - 1)];
  }
};

}  // namespace

const std::vector<std::string>& property_names() {
  static const std::vector<std::string> names = {
      "validity",          "uniform-agreement",     "uniform-integrity", "uniform-total-order",
      "fifo-order",        "membership-agreement",  "failure-detection", "delivery-within-one-cycle",
  };
  return names;
}

CheckReport check(const core::Schedule& sched, const Records& rec, int64_t tolerance_ns) {
  CheckReport report;
  Reporter<CheckReport> fail{report};
  CheckStats& st = report.stats;
  const int n = static_cast<int>(rec.lives.size());
  const int64_t cycle_ns = sched.cycle_ns();
  // Only what had a full cycle to settle before the end is judged.
  const int64_t settled_seq = rec.final_turn_seq - sched.node_count();

  std::vector<bool> correct(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const NodeLife& l = rec.lives[static_cast<size_t>(i)];
    correct[static_cast<size_t>(i)] = !l.crashed && !l.shut_down;
    st.correct_nodes += correct[static_cast<size_t>(i)] ? 1 : 0;
  }

  // Membership timelines of correct nodes (incarnation 0: they never restarted).
  std::vector<Timeline> timeline(static_cast<size_t>(n));
  for (const EventRecord& e : rec.events) {
    switch (e.event.kind) {
      case core::EventKind::removed: ++st.removals; break;
      case core::EventKind::admitted:
      case core::EventKind::membership_created: ++st.admissions; break;
      case core::EventKind::self_shutdown: ++st.self_shutdowns; break;
      default: break;
    }
    if (!correct[e.node]) continue;
    Timeline& tl = timeline[e.node];
    if ((e.event.kind == core::EventKind::admitted || e.event.kind == core::EventKind::membership_created) &&
        e.event.node == e.node && tl.admitted_seq == INT64_MAX) {
      tl.admitted_seq = e.event.turn_seq;
      tl.admitted_ns = e.virtual_ns;
    }
    if (!tl.seq.empty() && tl.seq.back() == e.event.turn_seq) {
      tl.members.back() = e.event.members_after;  // the view after the turn
    } else {
      tl.seq.push_back(e.event.turn_seq);
      tl.virtual_ns.push_back(e.virtual_ns);
      tl.members.push_back(e.event.members_after);
    }
  }

  // --- integrity, position (total order), FIFO, delivery bound -------------------------
  std::unordered_set<uint64_t> reported;  // messages their sender reported undelivered
  for (const UndeliveredRecord& u : rec.undelivered) reported.insert(key_of(u.sender, u.what.msg_id));
  std::unordered_set<uint64_t> sent_keys;
  for (const SentRecord& s : rec.sent) sent_keys.insert(key_of(s.sender, s.msg_id));
  st.sent = sent_keys.size();
  st.undelivered = rec.undelivered.size();

  // A gap in a correct sender's sequence is fine when the sender reported the skipped
  // messages undelivered (decided below three members).
  const auto all_reported = [&](core::NodeId sender, uint64_t from, uint64_t to) {
    for (uint64_t id = from; id < to; ++id)
      if (reported.count(key_of(sender, id)) == 0) return false;
    return true;
  };
  std::unordered_map<uint64_t, std::pair<int64_t, int>> position;  // message -> (turn, ordinal)
  std::vector<std::unordered_set<uint64_t>> delivered_by(static_cast<size_t>(n));
  std::map<std::pair<int, int>, std::pair<int64_t, int>> last_pos;  // (node, inc) -> position
  std::map<std::tuple<int, int, int>, uint64_t> last_id;            // (node, inc, sender) -> id
  for (const DeliveryRecord& d : rec.deliveries) {
    ++st.deliveries;
    const uint64_t k = key_of(d.sender, d.msg_id);
    if (!delivered_by[d.node].insert(k).second)
      fail("uniform-integrity", "node %d delivered message %d/%" PRIu64 " twice", d.node, d.sender, d.msg_id);
    if (!d.payload_ok)
      fail("uniform-integrity", "node %d delivered message %d/%" PRIu64 " with a payload its sender never submitted",
           d.node, d.sender, d.msg_id);
    if (sent_keys.count(k) == 0)
      fail("uniform-integrity", "node %d delivered message %d/%" PRIu64 " that was never sent", d.node,
           d.sender, d.msg_id);
    const auto pos = std::make_pair(d.turn_seq, d.ordinal);
    auto [it, fresh] = position.emplace(k, pos);
    if (!fresh && it->second != pos)
      fail("uniform-total-order",
           "message %d/%" PRIu64 " delivered at position (turn %" PRId64 ", #%d) by node %d but (turn %" PRId64
           ", #%d) elsewhere",
           d.sender, d.msg_id, d.turn_seq, d.ordinal, d.node, it->second.first, it->second.second);
    auto lp = last_pos.find({d.node, d.incarnation});
    if (lp != last_pos.end() && !(lp->second < pos))
      fail("uniform-total-order", "node %d delivered out of order at turn %" PRId64, d.node, d.turn_seq);
    last_pos[{d.node, d.incarnation}] = pos;
    auto li = last_id.find({d.node, d.incarnation, d.sender});
    if (li != last_id.end()) {
      if (d.msg_id <= li->second)
        fail("fifo-order", "node %d delivered %d/%" PRIu64 " after %d/%" PRIu64, d.node, d.sender, d.msg_id,
             d.sender, li->second);
      else if (correct[d.sender] && correct[d.node] && d.msg_id != li->second + 1 &&
               !all_reported(d.sender, li->second + 1, d.msg_id))
        fail("fifo-order", "node %d skipped from %d/%" PRIu64 " to %d/%" PRIu64 " of a correct sender", d.node,
             d.sender, li->second, d.sender, d.msg_id);
    }
    last_id[{d.node, d.incarnation, d.sender}] = d.msg_id;
    if (d.turn_seq != sched.turn_of(d.cycle + 1, d.sender).seq)
      fail("delivery-within-one-cycle",
           "node %d delivered %d/%" PRIu64 " sent in cycle %" PRId64 " at turn %" PRId64 " (expected turn %" PRId64 ")",
           d.node, d.sender, d.msg_id, d.cycle, d.turn_seq, sched.turn_of(d.cycle + 1, d.sender).seq);
  }
  st.messages_delivered = position.size();

  // --- uniform agreement: whatever anyone delivered, every correct member delivered --------
  for (const auto& [k, pos] : position) {
    if (pos.first > settled_seq) continue;
    for (int c = 0; c < n; ++c) {
      if (!correct[static_cast<size_t>(c)] || timeline[static_cast<size_t>(c)].admitted_seq >= pos.first)
        continue;
      if (delivered_by[static_cast<size_t>(c)].count(k) == 0)
        fail("uniform-agreement", "message %d/%" PRIu64 " (turn %" PRId64 ") not delivered by correct node %d",
             static_cast<int>(k >> 56), k & ((uint64_t{1} << 56) - 1), pos.first, c);
    }
  }

  // --- validity: a correct sender delivers every message it sent ---------------------------
  std::unordered_map<uint64_t, int64_t> last_sent_cycle;
  for (const SentRecord& s : rec.sent) {
    if (!correct[s.sender]) continue;
    auto& c = last_sent_cycle[key_of(s.sender, s.msg_id)];
    c = std::max(c, s.cycle);
  }
  for (const auto& [k, cycle] : last_sent_cycle) {
    const auto sender = static_cast<core::NodeId>(k >> 56);
    if (sched.turn_of(cycle + 1, sender).seq > settled_seq || reported.count(k) != 0) continue;
    if (delivered_by[sender].count(k) == 0)
      fail("validity", "correct node %d sent %d/%" PRIu64 " in cycle %" PRId64 " but never delivered it", sender,
           sender, k & ((uint64_t{1} << 56) - 1), cycle);
  }

  // --- membership agreement among correct members -------------------------------------------
  std::vector<int64_t> change_seqs;
  for (int c = 0; c < n; ++c)
    for (int64_t s : timeline[static_cast<size_t>(c)].seq) change_seqs.push_back(s);
  std::sort(change_seqs.begin(), change_seqs.end());
  change_seqs.erase(std::unique(change_seqs.begin(), change_seqs.end()), change_seqs.end());
  for (int64_t s : change_seqs) {
    if (s > settled_seq) break;
    int first = -1;
    for (int c = 0; c < n; ++c) {
      const Timeline& tl = timeline[static_cast<size_t>(c)];
      if (!correct[static_cast<size_t>(c)] || tl.admitted_seq > s) continue;
      if (first < 0) {
        first = c;
      } else if (tl.at_seq(s) != timeline[static_cast<size_t>(first)].at_seq(s)) {
        fail("membership-agreement", "after turn %" PRId64 " node %d has members %016" PRIx64 ", node %d has %016" PRIx64,
             s, first, timeline[static_cast<size_t>(first)].at_seq(s), c, tl.at_seq(s));
        break;
      }
    }
  }

  // --- failure detection: a failed member is removed by every correct member in two cycles --
  struct Failure {
    int node;
    int64_t at_ns;
  };
  std::vector<Failure> failures;
  for (int i = 0; i < n; ++i)
    for (int64_t t : rec.lives[static_cast<size_t>(i)].crash_ns) failures.push_back({i, t});
  for (const EventRecord& e : rec.events)
    if (e.event.kind == core::EventKind::self_shutdown) failures.push_back({e.node, e.virtual_ns});
  const int64_t bound_ns = 2 * cycle_ns + tolerance_ns;
  for (const Failure& f : failures) {
    if (f.at_ns + bound_ns > rec.end_ns) continue;
    for (int c = 0; c < n; ++c) {
      const Timeline& tl = timeline[static_cast<size_t>(c)];
      if (!correct[static_cast<size_t>(c)] || c == f.node || tl.admitted_ns >= f.at_ns) continue;
      const uint64_t view = tl.at_ns(f.at_ns);
      if ((view & (uint64_t{1} << f.node)) == 0) continue;  // not a member in c's view
      if (__builtin_popcountll(view) < 3) continue;          // seed 000: no decisions below three
      ++st.failures_checked;
      int64_t removed_ns = -1;
      for (const EventRecord& e : rec.events)
        if (e.node == c && e.event.kind == core::EventKind::removed && e.event.node == f.node &&
            e.virtual_ns >= f.at_ns) {
          removed_ns = e.virtual_ns;
          break;
        }
      if (removed_ns < 0 || removed_ns - f.at_ns > bound_ns) {
        fail("failure-detection", "node %d failed at %" PRId64 " ns; node %d %s", f.node, f.at_ns, c,
             removed_ns < 0 ? "never removed it" : "removed it too late");
      } else {
        st.detection_cycles_max_x1000 =
            std::max(st.detection_cycles_max_x1000, (removed_ns - f.at_ns) * 1000 / cycle_ns);
      }
    }
  }
  return report;
}

void check_reformed(const std::vector<const core::Engine*>& nodes, CheckReport& report) {
  Reporter<CheckReport> fail{report};
  uint64_t running = 0;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i] != nullptr) running |= uint64_t{1} << i;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const core::Engine* e = nodes[i];
    if (e == nullptr) continue;
    if (e->self_state() != core::SelfState::member || e->members() != running)
      fail("membership-reformed", "node %zu ends %s with members %#" PRIx64 ", not a member of the running nodes %#" PRIx64,
           i, core::to_string(e->self_state()), e->members(), running);
  }
}

}  // namespace tob::sim
