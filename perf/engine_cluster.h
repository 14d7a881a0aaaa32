// A cluster of engines of either kind on one virtual timeline for the benchmarks (bench_core.cc,
// bench_path.cc): perfect clocks, a lossless network, the acceptor log durable at once (otfp).
// run_before(t) runs every event before t in order: each frame's arrival at every other node,
// each node's deadline. A frame in flight reuses the buffer of one that arrived, so the harness
// allocates nothing in steady state. A benchmark that measures one node's share overrides the
// hooks: receive() (a frame arriving at a node) and actions() (what a node's call produced).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/engine_factory.h"
#include "core/wire.h"

namespace tob::perf {

class EngineCluster {
 public:
  // Every node from `base` (its schedule, limits), with its own id.
  EngineCluster(core::Order order, int n, const core::NodeConfig& base) {
    for (int i = 0; i < n; ++i) {
      core::NodeConfig c = base;
      c.self = static_cast<core::NodeId>(i);
      auto e = core::make_engine(order, c);
      if (!e.ok()) fail(e.error().message.c_str());
      nodes_.push_back(std::move(e.value()));
    }
    persisted_.assign(nodes_.size(), 0);
  }
  virtual ~EngineCluster() = default;

  // The nodes' first call (in a derived constructor, once its hooks can run).
  void start() {
    for (size_t i = 0; i < nodes_.size(); ++i) call_on_time(i, -1);
  }

  core::Engine& node(size_t i) { return *nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  uint64_t delivered() const { return delivered_; }

  void run_before(int64_t t) {
    for (;;) {
      int64_t e = INT64_MAX;
      for (const auto& x : nodes_) e = std::min(e, x->next_deadline_ns());
      for (const Pending& p : pending_)
        if (p.live) e = std::min(e, p.tx_ns);
      if (e >= t) return;
      for (Pending& p : pending_) {
        if (!p.live || p.tx_ns != e) continue;
        p.live = false;
        const core::DecodeResult r = core::decode_frame(p.bytes);
        if (!r.ok()) fail("a frame does not decode");
        for (size_t j = 0; j < nodes_.size(); ++j) {
          if (j == p.from) continue;
          receive(j, p.bytes, r.view, e);
          collect(j);
        }
      }
      for (size_t i = 0; i < nodes_.size(); ++i)
        if (nodes_[i]->next_deadline_ns() <= e) call_on_time(i, e);
    }
  }

  [[noreturn]] static void fail(const char* why) {
    std::fprintf(stderr, "bench: %s\n", why);
    std::abort();
  }

 protected:
  // A frame arrives at node j (decoded once for every receiver).
  virtual void receive(size_t j, const std::vector<uint8_t>& /*bytes*/, const core::FrameView& view, int64_t at) {
    nodes_[j]->on_frame(view, at);
  }
  // What a call of node i produced, before the cluster sends its frames.
  virtual void actions(size_t /*i*/, const core::Actions& /*a*/) {}
  virtual void call_on_time(size_t i, int64_t t) {
    nodes_[i]->on_time(t);
    collect(i);
  }

  void collect(size_t i) {
    const core::Actions& a = nodes_[i]->take_actions();
    actions(i, a);
    delivered_ += a.deliveries.size();
    for (const core::TxFrame& f : a.tx) {
      auto slot = std::find_if(pending_.begin(), pending_.end(), [](const Pending& p) { return !p.live; });
      if (slot == pending_.end()) slot = pending_.insert(pending_.end(), Pending{});
      slot->tx_ns = f.tx_ns;
      slot->from = i;
      slot->live = true;
      slot->bytes.assign(f.bytes.begin(), f.bytes.end());
    }
    if (!a.persist.empty()) {
      persisted_[i] += a.persist.size();
      nodes_[i]->on_durable(persisted_[i]);  // durability none: durable at once
      collect(i);
    }
  }

 private:
  struct Pending {
    int64_t tx_ns = 0;
    size_t from = 0;
    bool live = false;
    std::vector<uint8_t> bytes;
  };
  std::vector<std::unique_ptr<core::Engine>> nodes_;
  std::vector<Pending> pending_;
  std::vector<uint64_t> persisted_;
  uint64_t delivered_ = 0;
};

}  // namespace tob::perf
