#include "dataplane/observe/status.h"

namespace tob::dataplane {

NodeStatus node_status(const core::Engine& engine, const Calibrator& calibrator, int64_t now_ns) {
  NodeStatus s;
  s.state = engine.self_state();
  s.self = engine.self();
  s.nodes = static_cast<uint8_t>(engine.schedule().node_count());
  s.member_count = static_cast<uint8_t>(engine.member_count());
  s.members = engine.members();
  s.cycle = engine.current_cycle();
  s.queued = engine.queued();
  s.now_ns = now_ns;
  for (int k = 0; k < s.nodes; ++k) s.stages[k] = engine.stage_of(static_cast<core::NodeId>(k));
  s.counters = engine.counters();
  s.calibration = calibrator.stats();
  return s;
}

IcStatus ic_status(const core::IcNode& ic, uint64_t last_instance, int64_t last_finish_ns) {
  IcStatus s;
  s.counters = ic.counters();
  const core::KvStore& store = ic.store();
  s.store_keys = store.keys();
  s.store_versions = store.counters().versions_stored;
  s.store_evictions = store.counters().evictions;
  s.store_duplicates = store.counters().duplicates;
  s.store_full = store.counters().store_full;
  s.last_instance = last_instance;
  s.last_finish_ns = last_finish_ns;
  s.frames_per_slot = ic.frames_per_slot_max() * static_cast<size_t>(ic.config().copies);
  return s;
}

}  // namespace tob::dataplane
