#include "sim/ic_checker.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <map>
#include <tuple>

#include "core/eig.h"
#include "core/ic_reduce.h"

namespace tob::sim {
namespace {


using Bytes = std::vector<uint8_t>;

// The store's semantics, written out independently of core::KvStore: versions per key sorted by
// t_pub, the first (key, t_pub) stands, the oldest is evicted beyond the retention.
struct ModelStore {
  size_t retention;
  struct Key {
    std::map<int64_t, std::pair<bool, Bytes>> versions;  // t_pub -> (ok, value)
    bool evicted = false;
    int64_t evicted_max = INT64_MIN;
  };
  std::map<std::string, Key> keys;

  core::KvPublish publish(const std::string& key, int64_t t_pub, bool ok, const Bytes& value) {
    Key& k = keys[key];
    if (k.versions.count(t_pub) != 0) return core::KvPublish::duplicate;
    k.versions[t_pub] = {ok, value};
    if (k.versions.size() > retention) {
      const auto oldest = k.versions.begin();
      const bool self = oldest->first == t_pub;
      k.evicted = true;
      k.evicted_max = std::max(k.evicted_max, oldest->first);
      k.versions.erase(oldest);
      if (self) return core::KvPublish::too_old;
    }
    return core::KvPublish::stored;
  }

  // Status, t_pub, value.
  std::tuple<core::KvStatus, int64_t, Bytes> read(const std::string& key, int64_t t_min, int64_t now) const {
    const auto it = keys.find(key);
    if (it == keys.end()) return {core::KvStatus::never_written, 0, {}};
    const Key& k = it->second;
    for (auto v = k.versions.rbegin(); v != k.versions.rend(); ++v) {
      if (v->first > now) continue;
      if (v->first < t_min) break;
      return {v->second.first ? core::KvStatus::ok : core::KvStatus::reduction_failed, v->first,
              v->second.first ? v->second.second : Bytes{}};
    }
    return {k.evicted && t_min <= k.evicted_max ? core::KvStatus::evicted : core::KvStatus::not_fresh, 0, {}};
  }
};

std::string hex(const Bytes& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < b.size() && i < 24; ++i) {
    s.push_back(d[b[i] >> 4]);
    s.push_back(d[b[i] & 15]);
  }
  if (b.size() > 24) s += "..";
  return s.empty() ? "-" : s;
}

bool numeric_within(core::Reduction r, const Bytes& v, const std::vector<const Bytes*>& correct) {
  if (r == core::Reduction::median_f64 || r == core::Reduction::midpoint_f64) {
    double x = 0;
    double lo = 0;
    double hi = 0;
    if (!core::decode_f64(v, x)) return false;
    bool first = true;
    for (const Bytes* c : correct) {
      double y = 0;
      if (!core::decode_f64(*c, y)) return false;
      lo = first ? y : std::min(lo, y);
      hi = first ? y : std::max(hi, y);
      first = false;
    }
    return x >= lo && x <= hi;
  }
  int64_t x = 0;
  int64_t lo = INT64_MAX;
  int64_t hi = INT64_MIN;
  if (!core::decode_i64(v, x)) return false;
  for (const Bytes* c : correct) {
    int64_t y = 0;
    if (!core::decode_i64(*c, y)) return false;
    lo = std::min(lo, y);
    hi = std::max(hi, y);
  }
  return x >= lo && x <= hi;
}

}  // namespace

const std::vector<std::string>& ic_property_names() {
  static const std::vector<std::string> names = {
      "ic-termination",      "ic-agreement",       "ic-integrity",       "ic-publication-agreement",
      "ic-validity",         "ic-write-admission", "ic-read-agreement",  "ic-read-semantics",
  };
  return names;
}

IcCheckReport check_ic(const IcRecords& rec) {
  IcCheckReport report;
  Reporter<IcCheckReport> fail{report};
  IcCheckStats& st = report.stats;
  const auto n = static_cast<size_t>(rec.nodes);
  const auto correct = [&](size_t i) { return rec.roles[i] == IcRole::correct; };
  st.instances = rec.periods;
  for (size_t i = 0; i < n; ++i) st.correct_nodes += correct(i) ? 1 : 0;
  if (st.correct_nodes == 0) return report;
  const auto instances = static_cast<uint64_t>(rec.periods);

  // Decisions and roots of correct nodes, by instance and node.
  std::vector<std::vector<const Bytes*>> decision(instances, std::vector<const Bytes*>(n, nullptr));
  std::vector<std::vector<const Bytes*>> root(instances, std::vector<const Bytes*>(n, nullptr));
  for (const IcDecisionRecord& d : rec.decisions) {
    if (d.instance >= instances || !correct(d.node)) continue;
    if (decision[d.instance][d.node] != nullptr)
      fail("ic-termination", "node %d finished instance %" PRIu64 " twice", d.node, d.instance);
    decision[d.instance][d.node] = &d.entries;
    if (d.finish_ns != rec.finish_ns[d.instance])
      fail("ic-termination", "node %d finished instance %" PRIu64 " at %" PRId64 " ns, not %" PRId64, d.node, d.instance,
           d.finish_ns, rec.finish_ns[d.instance]);
    ++st.decisions;
  }
  for (const IcRootRecord& r : rec.roots)
    if (r.instance < instances && correct(r.node)) root[r.instance][r.node] = &r.entry;

  for (uint64_t p = 0; p < instances; ++p) {
    const Bytes* first = nullptr;
    size_t first_node = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!correct(i)) continue;
      const Bytes* d = decision[p][i];
      if (d == nullptr) {
        fail("ic-termination", "correct node %zu did not finish instance %" PRIu64, i, p);
        continue;
      }
      if (first == nullptr) {
        first = d;
        first_node = i;
      } else if (*d != *first) {
        fail("ic-agreement", "instance %" PRIu64 ": nodes %zu and %zu decided different vectors", p, first_node, i);
      }
      if (d->size() != n * rec.entry_bytes) {
        fail("ic-agreement", "instance %" PRIu64 ": node %zu's decision vector has %zu bytes", p, i, d->size());
        continue;
      }
      // Integrity: the entry of every correct node a is a's own value (its root entry).
      for (size_t a = 0; a < n; ++a) {
        if (!correct(a)) continue;
        const Bytes* own = root[p][a];
        if (own == nullptr) {
          fail("ic-integrity", "instance %" PRIu64 ": correct node %zu never sent its value", p, a);
          continue;
        }
        std::span<const uint8_t> want;
        std::span<const uint8_t> got;
        const size_t vmax = rec.entry_bytes - core::kEigEntryHeaderBytes;
        const bool has_want = core::EigTree::entry_value(*own, vmax, want);
        const bool has_got = core::EigTree::entry_value(std::span<const uint8_t>(*d).subspan(a * rec.entry_bytes, rec.entry_bytes),
                                                        vmax, got);
        if (!has_want || !has_got || !std::equal(want.begin(), want.end(), got.begin(), got.end()))
          fail("ic-integrity", "instance %" PRIu64 ": node %zu holds %s for correct node %zu, whose value is %s", p, i,
               has_got ? hex(Bytes(got.begin(), got.end())).c_str() : "default", a,
               has_want ? hex(Bytes(want.begin(), want.end())).c_str() : "default");
      }
    }
  }

  // Publications of correct nodes, per instance, in order.
  std::vector<std::vector<std::vector<const IcPublicationRecord*>>> pubs(instances, std::vector<std::vector<const IcPublicationRecord*>>(n));
  for (const IcPublicationRecord& p : rec.publications) {
    if (!correct(p.node)) continue;
    if (p.instance < instances) pubs[p.instance][p.node].push_back(&p);
    if (p.ok) {
      ++st.publications_ok;
    } else {
      ++st.reductions_failed;
    }
    if (p.key == "late") fail("ic-write-admission", "node %d published key 'late' (a refused write) in instance %" PRIu64, p.node, p.instance);
  }
  for (uint64_t p = 0; p < instances; ++p) {
    const std::vector<const IcPublicationRecord*>* first = nullptr;
    size_t first_node = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!correct(i) || decision[p][i] == nullptr) continue;
      const auto& list = pubs[p][i];
      if (first == nullptr) {
        first = &list;
        first_node = i;
        continue;
      }
      bool same = list.size() == first->size();
      for (size_t k = 0; same && k < list.size(); ++k) {
        const IcPublicationRecord& a = *list[k];
        const IcPublicationRecord& b = *(*first)[k];
        same = a.key == b.key && a.t_pub_ns == b.t_pub_ns && a.ok == b.ok && a.value == b.value && a.stored == b.stored;
      }
      if (!same)
        fail("ic-publication-agreement", "instance %" PRIu64 ": nodes %zu and %zu publish different values (%zu vs %zu publications)",
             p, first_node, i, first->size(), list.size());
    }
  }

  // Validity: every (key, t_pub) that all correct nodes wrote (accepted) in an instance.
  struct Written {
    std::vector<const Bytes*> values;
    std::vector<size_t> nodes;
  };
  std::map<std::tuple<uint64_t, std::string, int64_t>, Written> written;
  for (const IcWriteRecord& w : rec.writes) {
    if (!correct(w.node)) continue;
    // Admission: refused exactly when the carrying instance finishes after t_pub.
    const bool too_late = w.finish_ns > w.t_pub_ns;
    if (too_late != (w.status == core::KvWriteStatus::too_late))
      fail("ic-write-admission", "node %d: write of %s at %" PRId64 " ns with t_pub %" PRId64 " (instance finishes %" PRId64 "): %s",
           w.node, w.key.c_str(), w.at_ns, w.t_pub_ns, w.finish_ns, core::to_string(w.status));
    if (w.status != core::KvWriteStatus::ok) {
      ++st.writes_refused;
      continue;
    }
    const uint64_t period = static_cast<uint64_t>(w.at_ns / (rec.cycle_ns * rec.period_cycles));
    if (w.instance != period)
      fail("ic-write-admission", "node %d: write at %" PRId64 " ns carried by instance %" PRIu64 ", not its period %" PRIu64,
           w.node, w.at_ns, w.instance, period);
    Written& x = written[{w.instance, w.key, w.t_pub_ns}];
    x.values.push_back(&w.value);
    x.nodes.push_back(w.node);
  }
  for (const auto& [id, w] : written) {
    const auto& [p, key, t_pub] = id;
    if (p >= instances || w.nodes.size() != static_cast<size_t>(st.correct_nodes)) continue;
    for (size_t i = 0; i < n; ++i) {
      if (!correct(i) || decision[p][i] == nullptr) continue;
      const IcPublicationRecord* found = nullptr;
      for (const IcPublicationRecord* q : pubs[p][i])
        if (q->key == key && q->t_pub_ns == t_pub) found = q;
      if (found == nullptr || !found->ok) {
        fail("ic-validity", "instance %" PRIu64 ": node %zu has %s for %s at %" PRId64 ", which every correct node wrote", p, i,
             found == nullptr ? "no publication" : "a failed reduction", key.c_str(), t_pub);
        continue;
      }
      if (found->reduction == core::Reduction::majority) {
        const bool agree = std::all_of(w.values.begin(), w.values.end(), [&](const Bytes* v) { return *v == *w.values[0]; });
        if (agree && found->value != *w.values[0])
          fail("ic-validity", "instance %" PRIu64 ": node %zu published %s for %s, the correct nodes wrote %s", p, i,
               hex(found->value).c_str(), key.c_str(), hex(*w.values[0]).c_str());
      } else if (!numeric_within(found->reduction, found->value, w.values)) {
        fail("ic-validity", "instance %" PRIu64 ": node %zu published %s for %s (%s), outside the correct copies", p, i,
             hex(found->value).c_str(), key.c_str(), core::to_string(found->reduction));
      }
    }
  }

  // Reads: agreement across correct nodes and the model of the store per node.
  std::map<std::tuple<std::string, int64_t, int64_t>, const IcReadRecord*> seen;
  std::vector<ModelStore> model(n, ModelStore{rec.versions_per_key, {}});
  std::vector<size_t> applied(n, 0);
  std::vector<std::vector<const IcPublicationRecord*>> by_node(n);
  for (const IcPublicationRecord& p : rec.publications)
    if (correct(p.node)) by_node[p.node].push_back(&p);
  for (const IcReadRecord& r : rec.reads) {
    if (!correct(r.node)) continue;
    if (r.status == core::KvStatus::ok) {
      ++st.reads_ok;
    } else {
      ++st.reads_failed;
    }
    const auto [it, fresh] = seen.emplace(std::make_tuple(r.key, r.t_min_ns, r.now_ns), &r);
    if (!fresh) {
      const IcReadRecord& o = *it->second;
      if (o.status != r.status || o.t_pub_ns != r.t_pub_ns || o.value != r.value)
        fail("ic-read-agreement", "read of %s (t_min %" PRId64 ") at %" PRId64 " ns: node %d got %s %s, node %d got %s %s",
             r.key.c_str(), r.t_min_ns, r.now_ns, o.node, core::to_string(o.status), hex(o.value).c_str(), r.node,
             core::to_string(r.status), hex(r.value).c_str());
    }
    auto& mine = by_node[r.node];
    size_t& next = applied[r.node];
    while (next < mine.size() && mine[next]->finish_ns <= r.now_ns) {
      const IcPublicationRecord& p = *mine[next++];
      const core::KvPublish want = model[r.node].publish(p.key, p.t_pub_ns, p.ok, p.value);
      if (want != p.stored)
        fail("ic-read-semantics", "node %d: publishing %s at %" PRId64 " ns: the store said %d, the model %d", p.node, p.key.c_str(),
             p.t_pub_ns, static_cast<int>(p.stored), static_cast<int>(want));
    }
    const auto [status, t_pub, value] = model[r.node].read(r.key, r.t_min_ns, r.now_ns);
    if (status != r.status || (status == core::KvStatus::ok && (t_pub != r.t_pub_ns || value != r.value)) ||
        (status == core::KvStatus::reduction_failed && t_pub != r.t_pub_ns))
      fail("ic-read-semantics", "node %d: read of %s in [%" PRId64 ", %" PRId64 "] gave %s (t_pub %" PRId64 " %s), the model %s (t_pub %" PRId64
           " %s)",
           r.node, r.key.c_str(), r.t_min_ns, r.now_ns, core::to_string(r.status), r.t_pub_ns, hex(r.value).c_str(),
           core::to_string(status), t_pub, hex(value).c_str());
  }
  return report;
}

}  // namespace tob::sim
