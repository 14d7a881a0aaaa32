#include "fuzz_targets.h"

#include <bit>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/engine_factory.h"
#include "engine_fuzz_node.h"
#include "fuzz_ops.h"
#include "ic_fuzz_node.h"

namespace tob::fuzz {

namespace {

core::Schedule fuzz_schedule() {
  auto s = core::Schedule::create(core::ScheduleConfig::equal_slots(kFuzzNodes, kFuzzCycleNs));
  check(s.ok(), "the fuzz schedule is valid");
  return s.value();
}

std::unique_ptr<FuzzNode> make_node(Target t, core::NodeId self) {
  if (t == Target::ic) {
    auto ic = core::IcNode::create(fuzz_node_config(core::Order::mars, self), fuzz_ic_config());
    check(ic.ok(), "the fuzz IC configuration is valid");
    return std::make_unique<IcFuzzNode>(std::move(ic.value()));
  }
  const core::Order order = t == Target::mars ? core::Order::mars : core::Order::otfp;
  const core::NodeConfig config = fuzz_node_config(order, self);
  auto engine = core::make_engine(order, config);
  check(engine.ok(), "the fuzz node configuration is valid");
  return std::make_unique<EngineFuzzNode>(std::move(engine.value()), config);
}

void check_steady(Target t, FuzzCluster& c) {
  if (t == Target::ic) {
    const auto& ic = static_cast<const IcFuzzNode&>(c.target()).node();
    check(ic.counters().instances_finished >= 4, "steady state: instances finish every cycle");
    return;
  }
  const auto& engine = static_cast<const EngineFuzzNode&>(c.target()).engine();
  check(std::popcount(engine.members()) == kFuzzNodes, "steady state: every node in the view of node 0");
}

// One line per input (TOB_FUZZ_STATS set): what reached the node under test and what it did.
void print_stats(Target t, FuzzCluster& c) {
  std::fprintf(stderr, "%s: at cycle %" PRId64 ", %" PRIu64 " frames passed the gate;", to_string(t),
               c.schedule().cycle_of(c.now()), c.injected());
  if (t == Target::ic) {
    const core::IcCounters& k = static_cast<const IcFuzzNode&>(c.target()).node().counters();
    std::fprintf(stderr, " instances finished %" PRIu64 ", publications %" PRIu64 ", frames rx", k.instances_finished,
                 k.publications_ok);
    for (uint64_t v : k.frames_rx) std::fprintf(stderr, " %" PRIu64, v);
  } else {
    const auto& node = static_cast<const EngineFuzzNode&>(c.target());
    const core::NodeCounters& k = node.engine().counters();
    std::fprintf(stderr, " %s, members %d, delivered %" PRIu64 ", frames rx", core::to_string(node.engine().self_state()),
                 node.engine().member_count(), node.delivered());
    for (uint64_t v : k.frames_rx) std::fprintf(stderr, " %" PRIu64, v);
  }
  std::fprintf(stderr, "\n");
}

}  // namespace

const char* to_string(Target t) {
  switch (t) {
    case Target::mars: return "mars";
    case Target::otfp: return "otfp";
    case Target::ic: return "ic";
  }
  return "?";
}

core::FrameKind frame_kind(Target t) { return t == Target::ic ? core::FrameKind::ic : core::FrameKind::slot; }

std::unique_ptr<FuzzCluster> steady_cluster(Target t) {
  std::vector<std::unique_ptr<FuzzNode>> nodes;
  for (int i = 0; i < kFuzzNodes; ++i) nodes.push_back(make_node(t, static_cast<core::NodeId>(i)));
  auto c = std::make_unique<FuzzCluster>(std::move(nodes), fuzz_schedule());
  c->run_to(kWarmupCycles * kFuzzCycleNs);
  check_steady(t, *c);
  return c;
}

void run_target(Target t, const uint8_t* data, size_t size) {
  // Built and warmed up once per process; every input starts from a copy of the same state.
  static std::unique_ptr<FuzzCluster> warm[3];
  static std::unique_ptr<FuzzCluster> work[3];
  const auto k = static_cast<size_t>(t);
  if (!warm[k]) {
    warm[k] = steady_cluster(t);
    work[k] = steady_cluster(t);
  }
  const std::unique_ptr<FuzzCluster>& c = work[k];
  c->assign(*warm[k]);
  FuzzInput in({data, size});
  run_ops(*c, in, frame_kind(t));
  static const bool stats = std::getenv("TOB_FUZZ_STATS") != nullptr;
  if (stats) print_stats(t, *c);
}

}  // namespace tob::fuzz
