#include "sim/otfp_checker.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace tob::sim {

namespace {

uint64_t key_of(core::NodeId sender, uint64_t msg_id) { return (uint64_t{sender} << 56) ^ msg_id; }


}  // namespace

const std::vector<std::string>& otfp_property_names() {
  static const std::vector<std::string> names = {"validity", "integrity", "total-order", "agreement",
                                                 "exactly-once", "latency"};
  return names;
}

CheckReport check_otfp(const core::Schedule& sched, const Records& rec, const OtfpCheckParams& p) {
  CheckReport report;
  Reporter<CheckReport> fail{report};
  CheckStats& st = report.stats;
  const int n = static_cast<int>(rec.lives.size());
  const int64_t final_cycle = sched.cycle_of(rec.end_ns);
  const int64_t settled = final_cycle - p.settle_cycles;

  std::vector<bool> correct(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    correct[static_cast<size_t>(i)] = !rec.lives[static_cast<size_t>(i)].crashed;
    st.correct_nodes += correct[static_cast<size_t>(i)] ? 1 : 0;
  }

  // What was sent, and when first.
  std::unordered_map<uint64_t, int64_t> first_sent;
  for (const SentRecord& s : rec.sent) {
    auto [it, added] = first_sent.emplace(key_of(s.sender, s.msg_id), s.cycle);
    if (!added) it->second = std::min(it->second, s.cycle);
  }
  st.sent = first_sent.size();

  // Deliveries per node incarnation, in order.
  std::map<std::pair<int, int>, std::vector<const DeliveryRecord*>> seqs;
  std::unordered_map<uint64_t, int64_t> delivered_instance;  // message -> instance, by anyone
  for (const DeliveryRecord& d : rec.deliveries) {
    seqs[{d.node, d.incarnation}].push_back(&d);
    delivered_instance.emplace(key_of(d.sender, d.msg_id), d.cycle);
    ++st.deliveries;
    if (!d.payload_ok || first_sent.count(key_of(d.sender, d.msg_id)) == 0)
      fail("validity", "node %d delivered %d/%" PRIu64 " %s", d.node, d.sender, d.msg_id,
           d.payload_ok ? "that was never sent" : "with a payload that is not the sender's");
  }
  st.messages_delivered = delivered_instance.size();

  // Integrity, and a position index per incarnation.
  std::vector<std::pair<std::pair<int, int>, std::unordered_map<uint64_t, size_t>>> index;
  for (const auto& [who, seq] : seqs) {
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
      const auto& seq_b = seqs[index[b].first];
      size_t last = 0;
      bool any = false;
      for (const DeliveryRecord* d : seq_b) {
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

  // Agreement: correct nodes deliver every settled message anybody delivered.
  std::vector<std::unordered_set<uint64_t>> got(static_cast<size_t>(n));
  for (const DeliveryRecord& d : rec.deliveries)
    if (correct[d.node]) got[d.node].insert(key_of(d.sender, d.msg_id));
  for (const auto& [key, instance] : delivered_instance) {
    if (instance > settled) continue;
    for (int i = 0; i < n; ++i)
      if (correct[static_cast<size_t>(i)] && got[static_cast<size_t>(i)].count(key) == 0) {
        fail("agreement", "correct node %d never delivered %d/%" PRIu64 " (instance %" PRId64 ") that others did", i,
             static_cast<int>(key >> 56), key & ((uint64_t{1} << 56) - 1), instance);
        break;
      }
  }

  // Exactly once: what a correct node sent early enough reaches every correct node once.
  for (const SentRecord& s : rec.sent) {
    if (!correct[s.sender] || s.incarnation != 0) continue;
    const uint64_t key = key_of(s.sender, s.msg_id);
    if (first_sent[key] != s.cycle || s.cycle > settled) continue;
    for (int i = 0; i < n; ++i)
      if (correct[static_cast<size_t>(i)] && got[static_cast<size_t>(i)].count(key) == 0) {
        fail("exactly-once", "correct node %d never delivered %d/%" PRIu64 ", sent in cycle %" PRId64, i, s.sender,
             s.msg_id, s.cycle);
        break;
      }
  }

  // Latency in failure-free runs: within kappa + 1 cycles of the transmit instant.
  if (p.failure_free) {
    const int64_t bound = (p.kappa + 1) * sched.cycle_ns() + p.tolerance_ns;
    for (const DeliveryRecord& d : rec.deliveries) {
      const int64_t sent = first_sent[key_of(d.sender, d.msg_id)];
      if (sent < p.warmup_cycles || d.cycle != sent) continue;
      const int64_t late = d.virtual_ns - sched.transmit_ns(sent, d.sender) - bound;
      if (late > 0)
        fail("latency", "node %d delivered %d/%" PRIu64 " of cycle %" PRId64 " %.3f cycles after sending", d.node,
             d.sender, d.msg_id, sent,
             static_cast<double>(d.virtual_ns - sched.transmit_ns(sent, d.sender)) / static_cast<double>(sched.cycle_ns()));
    }
  }
  return report;
}

}  // namespace tob::sim
