// dpdk-tob-load --noise: a DPDK primary with its own port that sends best-effort frames at a bit
// rate (latency under noise, docs/experiments/latency.md).
#pragma once

#include <csignal>

#include "load_options.h"

namespace tob::load {

// Sends until --duration elapses or *stop becomes non-zero; 0 on success, 1 on a port failure, 2
// on bad arguments.
int run_noise(const LoadOptions& o, const volatile std::sig_atomic_t* stop);

}  // namespace tob::load
