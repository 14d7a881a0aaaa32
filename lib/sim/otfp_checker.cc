#include "sim/otfp_checker.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace tob::sim {

namespace {

uint64_t key_of(core::NodeId sender, uint64_t msg_id) { return (uint64_t{sender} << 56) ^ msg_id; }
int sender_of(uint64_t key) { return static_cast<int>(key >> 56); }
uint64_t id_of(uint64_t key) { return key & ((uint64_t{1} << 56) - 1); }

using Incarnation = std::pair<int, int>;

// What the properties are judged on, built once from the records.
struct View {
  int n = 0;
  int64_t settled = INT64_MAX;                                // instances above it are not judged
  std::vector<bool> correct;                                  // never crashed
  std::unordered_map<uint64_t, int64_t> first_sent;           // message -> first cycle it left in
  std::map<Incarnation, std::vector<const DeliveryRecord*>> seqs;
  std::unordered_map<uint64_t, int64_t> delivered_instance;   // message -> instance, by anyone
  std::vector<std::unordered_map<uint64_t, int64_t>> got;     // correct node -> message -> when
};

View build_view(const core::Schedule& sched, const Records& rec, const OtfpCheckParams& p, CheckStats& st) {
  View v;
  v.n = static_cast<int>(rec.lives.size());
  if (!p.drained) v.settled = sched.cycle_of(rec.end_ns) - p.settle_cycles;
  v.correct.resize(static_cast<size_t>(v.n));
  for (int i = 0; i < v.n; ++i) {
    v.correct[static_cast<size_t>(i)] = !rec.lives[static_cast<size_t>(i)].crashed;
    st.correct_nodes += v.correct[static_cast<size_t>(i)] ? 1 : 0;
  }
  for (const SentRecord& s : rec.sent) {
    auto [it, added] = v.first_sent.emplace(key_of(s.sender, s.msg_id), s.cycle);
    if (!added) it->second = std::min(it->second, s.cycle);
  }
  st.sent = v.first_sent.size();
  v.got.resize(static_cast<size_t>(v.n));
  for (const DeliveryRecord& d : rec.deliveries) {
    v.seqs[{d.node, d.incarnation}].push_back(&d);
    v.delivered_instance.emplace(key_of(d.sender, d.msg_id), d.cycle);
    if (v.correct[d.node]) v.got[d.node].emplace(key_of(d.sender, d.msg_id), d.virtual_ns);
    ++st.deliveries;
  }
  st.messages_delivered = v.delivered_instance.size();
  st.decisions = rec.decisions.size();
  return v;
}

void check_validity(const Records& rec, const View& v, Reporter<CheckReport>& fail) {
  for (const DeliveryRecord& d : rec.deliveries)
    if (!d.payload_ok || v.first_sent.count(key_of(d.sender, d.msg_id)) == 0)
      fail("validity", "node %d delivered %d/%" PRIu64 " %s", d.node, d.sender, d.msg_id,
           d.payload_ok ? "that was never sent" : "with a payload that is not the sender's");
}

void check_integrity_and_order(const View& v, Reporter<CheckReport>& fail) {
  std::vector<std::pair<Incarnation, std::unordered_map<uint64_t, size_t>>> index;
  for (const auto& [who, seq] : v.seqs) {
    std::unordered_map<uint64_t, size_t> pos;
    for (size_t k = 0; k < seq.size(); ++k)
      if (!pos.emplace(key_of(seq[k]->sender, seq[k]->msg_id), k).second)
        fail("integrity", "node %d (incarnation %d) delivered %d/%" PRIu64 " twice", who.first, who.second,
             seq[k]->sender, seq[k]->msg_id);
    index.push_back({who, std::move(pos)});
  }
  // Total order: common messages in the same relative order, pairwise.
  for (size_t a = 0; a < index.size(); ++a) {
    for (size_t b = a + 1; b < index.size(); ++b) {
      size_t last = 0;
      bool any = false;
      for (const DeliveryRecord* d : v.seqs.at(index[b].first)) {
        auto it = index[a].second.find(key_of(d->sender, d->msg_id));
        if (it == index[a].second.end()) continue;
        if (any && it->second < last) {
          fail("total-order", "nodes %d/%d and %d/%d deliver %d/%" PRIu64 " in different orders",
               index[a].first.first, index[a].first.second, index[b].first.first, index[b].first.second, d->sender,
               d->msg_id);
          break;
        }
        last = it->second;
        any = true;
      }
    }
  }
}

void check_decisions(const Records& rec, Reporter<CheckReport>& fail) {
  std::unordered_map<int64_t, const DecisionRecord*> first;
  for (const DecisionRecord& d : rec.decisions) {
    auto [it, added] = first.emplace(d.instance, &d);
    const DecisionRecord& f = *it->second;
    if (!added && (f.mask != d.mask || f.digest != d.digest))
      fail("decisions",
           "instance %" PRId64 ": node %d/%d decided senders %016" PRIx64 " (ballot %08x), node %d/%d senders %016" PRIx64
           " (ballot %08x)",
           d.instance, f.node, f.incarnation, f.mask, f.ballot, d.node, d.incarnation, d.mask, d.ballot);
  }
  if (rec.engine_totals.decision_conflicts > 0)
    fail("decisions", "%" PRIu64 " decisions heard that differ from the hearer's", rec.engine_totals.decision_conflicts);
}

// A correct node missing a message delivered in `instance`: never (it moved past the instance)
// or not yet (after a drain: the instance is still ahead of it).
void report_missing(const Records& rec, const OtfpCheckParams& p, int node, uint64_t key, int64_t instance,
                    Reporter<CheckReport>& fail) {
  const FinalState& f = rec.final_state.empty() ? FinalState{} : rec.final_state[static_cast<size_t>(node)];
  if (p.drained && f.alive && f.low <= instance) {
    fail("pending", "correct node %d has not delivered %d/%" PRIu64 " (instance %" PRId64 ") after the drain; it waits at instance %" PRId64,
         node, sender_of(key), id_of(key), instance, f.low);
    return;
  }
  fail("agreement", "correct node %d never delivered %d/%" PRIu64 " (instance %" PRId64 ") that others did%s", node,
       sender_of(key), id_of(key), instance, p.drained ? ": it moved past the instance" : "");
}

void check_agreement(const Records& rec, const OtfpCheckParams& p, const View& v, Reporter<CheckReport>& fail) {
  for (const auto& [key, instance] : v.delivered_instance) {
    if (instance > v.settled) continue;
    for (int i = 0; i < v.n; ++i)
      if (v.correct[static_cast<size_t>(i)] && v.got[static_cast<size_t>(i)].count(key) == 0) {
        report_missing(rec, p, i, key, instance, fail);
        break;
      }
  }
}

void check_exactly_once(const core::Schedule& sched, const Records& rec, const OtfpCheckParams& p, const View& v,
                        Reporter<CheckReport>& fail) {
  // Every message of a correct sender (one incarnation: it never crashed) reaches every correct
  // node; the ones somebody delivered are agreement's. Without a drain: those sent early enough.
  const auto judge = [&](int sender, uint64_t id) {
    const uint64_t key = key_of(static_cast<core::NodeId>(sender), id);
    if (v.delivered_instance.count(key) != 0) return;
    const FinalState& f = rec.final_state.empty() ? FinalState{} : rec.final_state[static_cast<size_t>(sender)];
    if (p.drained && f.queued > 0) {
      fail("pending", "correct node %d's message %" PRIu64 " is delivered by nobody after the drain (%zu still queued)",
           sender, id, f.queued);
    } else {
      fail("exactly-once", "correct node %d's message %" PRIu64 " was delivered by nobody%s", sender, id,
           p.drained ? " and its sender no longer holds it: lost" : "");
    }
  };
  if (p.drained) {
    for (const SubmitRecord& s : rec.submitted)
      if (v.correct[s.sender]) judge(s.sender, s.msg_id);
    return;
  }
  (void)sched;
  for (const SentRecord& s : rec.sent) {
    if (!v.correct[s.sender] || s.incarnation != 0) continue;
    const uint64_t key = key_of(s.sender, s.msg_id);
    if (v.first_sent.at(key) != s.cycle || s.cycle > v.settled) continue;
    judge(s.sender, s.msg_id);
  }
}

void check_liveness(const core::Schedule& sched, const Records& rec, const OtfpCheckParams& p, const View& v,
                    CheckStats& st, Reporter<CheckReport>& fail) {
  if (p.liveness_cycles <= 0) return;
  const int64_t bound_ns = p.liveness_cycles * sched.cycle_ns() + p.tolerance_ns;
  for (const SubmitRecord& s : rec.submitted) {
    if (!v.correct[s.sender] || s.virtual_ns + bound_ns > rec.end_ns) continue;
    ++st.latency_judged;
    const uint64_t key = key_of(s.sender, s.msg_id);
    for (int i = 0; i < v.n; ++i) {
      if (!v.correct[static_cast<size_t>(i)]) continue;
      const auto it = v.got[static_cast<size_t>(i)].find(key);
      const int64_t took = it == v.got[static_cast<size_t>(i)].end() ? INT64_MAX : it->second - s.virtual_ns;
      if (took != INT64_MAX)
        st.latency_cycles_max_x1000 = std::max(st.latency_cycles_max_x1000, took * 1000 / sched.cycle_ns());
      if (took > bound_ns) {
        fail("liveness", "correct node %d delivered %d/%" PRIu64 " %s (bound %" PRId64 " cycles)", i, s.sender, s.msg_id,
             took == INT64_MAX ? "never" : (std::to_string(took / sched.cycle_ns()) + " cycles after its submission").c_str(),
             p.liveness_cycles);
        break;
      }
    }
  }
}

void check_latency(const core::Schedule& sched, const Records& rec, const OtfpCheckParams& p, const View& v,
                   Reporter<CheckReport>& fail) {
  if (!p.failure_free) return;
  const int64_t bound = (p.kappa + 1) * sched.cycle_ns() + p.tolerance_ns;
  for (const DeliveryRecord& d : rec.deliveries) {
    const int64_t sent = v.first_sent.at(key_of(d.sender, d.msg_id));
    if (sent < p.warmup_cycles || d.cycle != sent) continue;
    const int64_t late = d.virtual_ns - sched.transmit_ns(sent, d.sender) - bound;
    if (late > 0)
      fail("latency", "node %d delivered %d/%" PRIu64 " of cycle %" PRId64 " %.3f cycles after sending", d.node,
           d.sender, d.msg_id, sent,
           static_cast<double>(d.virtual_ns - sched.transmit_ns(sent, d.sender)) / static_cast<double>(sched.cycle_ns()));
  }
}

}  // namespace

const std::vector<std::string>& otfp_property_names() {
  static const std::vector<std::string> names = {"validity", "integrity", "total-order", "decisions", "agreement",
                                                 "exactly-once", "pending", "liveness", "latency"};
  return names;
}

CheckReport check_otfp(const core::Schedule& sched, const Records& rec, const OtfpCheckParams& p) {
  CheckReport report;
  Reporter<CheckReport> fail{report};
  const View v = build_view(sched, rec, p, report.stats);
  check_validity(rec, v, fail);
  if (report.violation_count > 0) return report;  // the rest assumes every delivery was sent
  check_integrity_and_order(v, fail);
  check_decisions(rec, fail);
  check_agreement(rec, p, v, fail);
  check_exactly_once(sched, rec, p, v, fail);
  check_liveness(sched, rec, p, v, report.stats, fail);
  check_latency(sched, rec, p, v, fail);
  return report;
}

}  // namespace tob::sim
