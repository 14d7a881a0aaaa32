// The cross-node wake-up skew of timed release, estimated by one node (issue 19; docs/operations.md
// "Release skew: /tob/release", docs/experiments/clock.md "Release skew in the daemon").
//
// Every node reports, for its latest release instants R, when its applications woke for them:
// R + late on its own global clock (section 7, core/wire.h). This node places a peer's wake-up on
// its own clock by adding its estimate of the offset between the two clocks (the caller's d_s),
// and its own wake-up as it is. Once an instant is old enough that every report of it has
// arrived (close_after_ns), the spread of its wake-ups over the nodes that reported it (two at
// least) is one sample of the skew. The estimate is no better than the offsets: to within the
// clock readings' error.
//
// Bounded: a fixed table of instants (the oldest is closed early when a new one finds it full);
// allocation only in the constructor. A Byzantine node can report any wake-up: this is telemetry,
// not a protocol input.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/schedule.h"

namespace tob::core {

struct ReleaseSkewStats {
  uint64_t samples = 0;           // wake-ups added
  uint64_t samples_stale = 0;     // for an instant already closed (or older): dropped
  uint64_t instants_matched = 0;  // closed with two reporters or more: a skew sample
  uint64_t instants_alone = 0;    // closed with one reporter: no skew
  uint64_t instants_early = 0;    // closed before their time because the table was full
};

class ReleaseSkew {
 public:
  static constexpr int kInstants = 64;

  ReleaseSkew(int nodes, NodeId self, int64_t close_after_ns);

  // `node` woke for `release_ns` at `wake_ns` on this node's clock. A node's later report of the
  // same instant replaces a smaller one (a later client of that node woke later).
  void add(NodeId node, int64_t release_ns, int64_t wake_ns);

  // Closes every instant with release_ns + close_after_ns <= now_ns, oldest first, calling
  // on_closed(skew_ns, reporters, self_late_ns) for each: skew_ns is the spread of the wake-ups
  // (0 with one reporter, a skew sample from two on); self_late_ns is this node's own wake-up
  // minus the instant, INT64_MIN when it did not report.
  template <class F>
  void close(int64_t now_ns, F&& on_closed) {
    for (int i = oldest(); i >= 0 && instants_[static_cast<size_t>(i)].release_ns <= now_ns - close_after_ns_; i = oldest())
      close_one(i, on_closed);
  }

  const ReleaseSkewStats& stats() const { return stats_; }
  int64_t close_after_ns() const { return close_after_ns_; }

 private:
  struct Instant {
    int64_t release_ns = 0;
    uint64_t mask = 0;  // nodes that reported it
    bool used = false;
  };
  int oldest() const;
  int find_or_open(int64_t release_ns);
  int64_t& wake(int instant, NodeId node) {
    return wakes_[static_cast<size_t>(instant) * static_cast<size_t>(nodes_) + node];
  }
  template <class F>
  void close_one(int i, F&& on_closed) {
    Instant& in = instants_[static_cast<size_t>(i)];
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    int reporters = 0;
    for (int k = 0; k < nodes_; ++k) {
      if ((in.mask & (1ull << k)) == 0) continue;
      const int64_t w = wake(i, static_cast<NodeId>(k));
      lo = std::min(lo, w);
      hi = std::max(hi, w);
      ++reporters;
    }
    const int64_t self_late = (in.mask & (1ull << self_)) != 0 ? wake(i, self_) - in.release_ns : INT64_MIN;
    if (in.release_ns > closed_upto_ns_) closed_upto_ns_ = in.release_ns;
    in.used = false;
    ++(reporters >= 2 ? stats_.instants_matched : stats_.instants_alone);
    on_closed(hi - lo, reporters, self_late);
  }

  int nodes_;
  NodeId self_;
  int64_t close_after_ns_;
  int64_t closed_upto_ns_ = INT64_MIN;  // instants up to here are closed: later reports are stale
  std::vector<Instant> instants_;
  std::vector<int64_t> wakes_;  // kInstants x nodes
  ReleaseSkewStats stats_;
};

}  // namespace tob::core
