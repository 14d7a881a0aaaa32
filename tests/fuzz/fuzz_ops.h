// The fuzzer's input as a program over a running cluster (docs/fuzzing.md "Input format"): one
// byte picks an operation, the bytes after it are its arguments.
//
//   0 advance      run the cluster up to 512 us on (u16 x 8 ns): an arbitrary instant
//   1 window       run to an instant inside node k's reception window (this cycle or the next)
//   2 forge        a frame built from the input (header fields, up to 4 sections) to the node
//   3 mutate       a frame the node received lately, bytes changed (CRC and MAC made valid)
//   4 replay       a frame the node received lately, sent again as it was
//   5 load         one node's application input (a message, a key write)
//   6 load-all     the same application input on every node
//   7 stall        the node under test is not called for up to 2 ms, then all at once
//   8 cycles       run 1 to 8 whole cycles
//
// Every frame to the node under test carries a valid CRC and a valid MAC under the cluster key.
#pragma once

#include "core/wire.h"
#include "fuzz_cluster.h"
#include "fuzz_input.h"

namespace tob::fuzz {

inline constexpr int kOpCount = 9;
inline constexpr int kOpsMax = 512;                   // per input: bounds one execution's time
inline constexpr int64_t kRunCyclesMax = 96;          // virtual time per input, in cycles

// Runs the program in `in` on the cluster; `kind`: the frame kind the node under test takes.
void run_ops(FuzzCluster& cluster, FuzzInput& in, core::FrameKind kind);

// Builds the frame of a `forge` operation into buf; its length (0: nothing built).
size_t forge_frame(FuzzInput& in, const FuzzCluster& cluster, core::FrameKind kind, std::span<uint8_t> buf);

}  // namespace tob::fuzz
