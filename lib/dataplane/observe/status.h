// The snapshots the control role publishes for the status lines, telemetry and the exit report
// (observe/io_thread.h, observe/telemetry.h): what the engine and the IC node say of themselves.
#pragma once

#include <cstdint>

#include "core/engine.h"
#include "core/ic_node.h"
#include "dataplane/observe/stats.h"
#include "dataplane/time/global_clock.h"

namespace tob::dataplane {

NodeStatus node_status(const core::Engine& engine, const Calibrator& calibrator, int64_t now_ns);
IcStatus ic_status(const core::IcNode& ic, uint64_t last_instance, int64_t last_finish_ns);

}  // namespace tob::dataplane
