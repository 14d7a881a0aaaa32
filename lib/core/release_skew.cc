#include "core/release_skew.h"

#include "core/result.h"

namespace tob::core {

ReleaseSkew::ReleaseSkew(int nodes, NodeId self, int64_t close_after_ns)
    : nodes_(nodes), self_(self), close_after_ns_(close_after_ns), instants_(kInstants),
      wakes_(static_cast<size_t>(kInstants) * static_cast<size_t>(nodes)) {
  TOB_ASSERT(nodes >= 1 && nodes <= kMaxNodes && self < nodes && close_after_ns > 0);
}

int ReleaseSkew::oldest() const {
  int best = -1;
  for (int i = 0; i < kInstants; ++i) {
    const Instant& in = instants_[static_cast<size_t>(i)];
    if (in.used && (best < 0 || in.release_ns < instants_[static_cast<size_t>(best)].release_ns)) best = i;
  }
  return best;
}

int ReleaseSkew::find_or_open(int64_t release_ns) {
  int free_at = -1;
  for (int i = 0; i < kInstants; ++i) {
    const Instant& in = instants_[static_cast<size_t>(i)];
    if (in.used && in.release_ns == release_ns) return i;
    if (!in.used && free_at < 0) free_at = i;
  }
  if (free_at < 0) {
    // Full: the oldest instant closes now with what it has.
    free_at = oldest();
    if (instants_[static_cast<size_t>(free_at)].release_ns > release_ns) return -1;  // older than all: drop it
    ++stats_.instants_early;
    close_one(free_at, [](int64_t, int, int64_t) {});
  }
  Instant& in = instants_[static_cast<size_t>(free_at)];
  in = Instant{release_ns, 0, true};
  return free_at;
}

void ReleaseSkew::add(NodeId node, int64_t release_ns, int64_t wake_ns) {
  if (node >= nodes_) return;
  ++stats_.samples;
  if (release_ns <= closed_upto_ns_) {
    ++stats_.samples_stale;
    return;
  }
  const int i = find_or_open(release_ns);
  if (i < 0) {
    ++stats_.samples_stale;
    return;
  }
  Instant& in = instants_[static_cast<size_t>(i)];
  const uint64_t bit = 1ull << node;
  int64_t& w = wake(i, node);
  if ((in.mask & bit) == 0 || wake_ns > w) w = wake_ns;
  in.mask |= bit;
}

}  // namespace tob::core
