// A small cluster on virtual time around the node under test (docs/fuzzing.md): its peers are
// correct nodes of the same kind on a perfect network (every frame reaches every node 2 us after
// its transmit instant), so the node under test runs as in a live cluster, and the harness adds
// what a hostile sender holding the cluster key could: frames of its own making, valid frames
// changed or sent again, at any instant. Frames to the node under test pass the AuthGate; it is
// node 0, and its checks run after every step.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "auth_gate.h"
#include "core/schedule.h"
#include "fuzz_node.h"

namespace tob::fuzz {

class FuzzCluster {
 public:
  FuzzCluster(std::vector<std::unique_ptr<FuzzNode>> nodes, const core::Schedule& schedule);

  // Runs every node to instant t (never back): timers, then frames in time order. While the
  // node under test is stalled, its timer does not fire and frames to it wait in its RX backlog.
  void run_to(int64_t t);
  // The node under test stops being called until `until` (a stalled driver), then handles the
  // frames that came meanwhile, all at once.
  void stall_target(int64_t until);
  // Delivers an encoded frame (valid CRC) to the node under test now, through the AuthGate.
  void inject(std::span<const uint8_t> frame, uint8_t copy);
  void load(int node, FuzzInput& in);
  // Becomes a copy of `other` (a cluster of the same kind), reusing its buffers: cheaper than
  // building and warming up a cluster for every input.
  void assign(const FuzzCluster& other);

  int64_t now() const { return now_; }
  const core::Schedule& schedule() const { return sched_; }
  int size() const { return static_cast<int>(nodes_.size()); }
  FuzzNode& target() { return *nodes_[0]; }
  // Frames the node under test received from its peers lately (newest last, at most kRecent).
  const std::vector<std::vector<uint8_t>>& recent() const { return recent_; }
  static constexpr size_t kRecent = 16;
  uint64_t injected() const { return gate_.passed(); }

 private:
  void collect(int i);
  void deliver(const SentFrame& f, int64_t at);
  void deliver_to_target(std::span<const uint8_t> bytes, int64_t rx_ns);
  void thaw();
  size_t earliest_inflight() const;

  std::vector<std::unique_ptr<FuzzNode>> nodes_;
  core::Schedule sched_;
  AuthGate gate_;
  int64_t now_ = 0;
  int64_t stalled_until_ = INT64_MIN;
  std::vector<SentFrame> inflight_;  // sent, not yet arrived (arrival: tx_ns + kDelayNs)
  std::vector<SentFrame> backlog_;   // arrived at the stalled node under test
  std::vector<SentFrame> out_;       // scratch: a node's frames of one call
  std::vector<std::vector<uint8_t>> recent_;
  static constexpr int64_t kDelayNs = 2'000;
  static constexpr size_t kInflightMax = 4096;  // a bound on what the peers send: checked
};

}  // namespace tob::fuzz
