// The engine fuzz targets' bodies (docs/fuzzing.md): a 4-node cluster brought to its steady state,
// then the input run as a program of operations (fuzz_ops.h) against node 0. Shared by the
// libFuzzer entry points (fuzz_mars.cc, fuzz_otfp.cc, fuzz_ic.cc), the corpus replays and the
// seed corpus writer (make_engine_corpus.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/wire.h"
#include "fuzz_cluster.h"

namespace tob::fuzz {

enum class Target : uint8_t { mars, otfp, ic };
const char* to_string(Target t);
core::FrameKind frame_kind(Target t);

// Cycles of correct operation before the input runs: every node a member (mars, otfp), instances
// finishing every cycle (IC).
inline constexpr int64_t kWarmupCycles = 8;

// The target's cluster after the warm-up, its steady state checked.
std::unique_ptr<FuzzCluster> steady_cluster(Target t);
// One execution: a copy of the steady cluster (made once per process), then the input's operations.
void run_target(Target t, const uint8_t* data, size_t size);

}  // namespace tob::fuzz
