// Property checkers of the `otfp` engine over a simulation's records (DESIGN §7,
// docs/protocol-otfp.md). Timing only affects liveness, so these hold under any schedule of
// loss, duplication, delay, crash and restart:
//   validity       every delivery is a message its sender sent, with its payload;
//   integrity      no node incarnation delivers a message twice;
//   total-order    any two node incarnations deliver their common messages in the same order;
//   agreement      a message any incarnation delivered (instance settled before the end) is
//                  delivered by every correct node (never crashed);
//   exactly-once   every message a correct node sent (early enough to settle) is delivered
//                  exactly once by every correct node;
//   latency        in failure-free runs: delivered within kappa + 1 cycles of its sending.
#pragma once

#include <cstdint>

#include "core/schedule.h"
#include "sim/checker.h"
#include "sim/records.h"

namespace tob::sim {

struct OtfpCheckParams {
  int kappa = 2;
  int64_t settle_cycles = 40;   // instances this close to the end are not judged
  bool failure_free = false;    // judge the latency bound
  int64_t warmup_cycles = 12;   // activation: the latency bound holds from here on
  int64_t tolerance_ns = 0;     // clock offsets between nodes
};

const std::vector<std::string>& otfp_property_names();
CheckReport check_otfp(const core::Schedule& schedule, const Records& records, const OtfpCheckParams& params);

}  // namespace tob::sim
