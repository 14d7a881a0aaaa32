// One node of a fuzzed cluster (docs/fuzzing.md): an engine (mars, otfp) or an IC node behind the
// interface the cluster driver (fuzz_cluster.h) uses, with the checks that can be made from the
// node alone. The driver calls check() after every step of the node under test.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/wire.h"
#include "fuzz_input.h"

namespace tob::fuzz {

// A property of the node under test broke: the fuzzer reports the input as a crash.
[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "fuzz: invariant violated: %s\n", what);
  std::abort();
}
inline void check(bool ok, const char* what) {
  if (!ok) fail(what);
}

struct SentFrame {
  int64_t tx_ns = 0;
  int from = 0;
  std::vector<uint8_t> bytes;
};

class FuzzNode {
 public:
  virtual ~FuzzNode() = default;
  virtual void on_time(int64_t now_ns) = 0;
  virtual void on_frame(const core::FrameView& frame, int64_t rx_ns) = 0;
  virtual int64_t next_deadline_ns() const = 0;
  // Takes the outputs of the calls since the last collect: checks them, appends its frames.
  virtual void collect(std::vector<SentFrame>& out) = 0;
  // Application input (a submitted message, a key write) made from the fuzzer's bytes.
  virtual void load(FuzzInput& in, int64_t now_ns) = 0;
  // The node's invariants: bounded queues and stores, counters consistent.
  virtual void check_state() = 0;
  // Becomes a copy of `other` (a node of the same kind and configuration), reusing its own
  // buffers: a warmed-up cluster is copied into the one an input runs on (FuzzCluster::assign).
  virtual void assign(const FuzzNode& other) = 0;
};

}  // namespace tob::fuzz
