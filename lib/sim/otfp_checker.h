// Property checkers of the `otfp` engine over a simulation's records (docs/protocol-otfp.md,
// docs/simulator.md). Timing only affects liveness, so the safety properties hold under any
// schedule of loss, duplication, delay, stalls, drift, crash and restart:
//   validity       every delivery is a message its sender sent, with its payload;
//   integrity      no node incarnation delivers a message twice;
//   total-order    any two node incarnations deliver their common messages in the same order;
//   decisions      no two node incarnations decide different values for one instance, and no
//                  node heard a decision that differs from its own;
//   agreement      a message any incarnation delivered is delivered by every correct node
//                  (never crashed): a correct node that moved past its instance without
//                  delivering it never will;
//   exactly-once   every message a correct node submitted is delivered exactly once by every
//                  correct node: one that nobody delivered and its sender no longer holds is lost.
// And liveness:
//   pending        after the drain (no faults, no loss, nothing new submitted), nothing is still
//                  waiting: a message a correct node has not delivered yet, with its instance
//                  ahead of it, is reported here, apart from agreement;
//   liveness       every message of a correct proposer is delivered by every correct node within
//                  `liveness_cycles` of its submission (when set: a mix within the bound's
//                  hypothesis, docs/protocol-otfp.md "Liveness");
//   latency        in failure-free runs: delivered within kappa + 1 cycles of its sending.
// Without a drain, instances within `settle_cycles` of the end are not judged (not yet settled).
#pragma once

#include <cstdint>

#include "core/schedule.h"
#include "sim/checker.h"
#include "sim/records.h"

namespace tob::sim {

struct OtfpCheckParams {
  int kappa = 2;
  int64_t settle_cycles = 40;   // without a drain: instances this close to the end are not judged
  bool drained = false;         // the run ended with a drain: every instance is judged
  bool failure_free = false;    // judge the latency bound
  int64_t warmup_cycles = 12;   // activation: the latency bound holds from here on
  int64_t tolerance_ns = 0;     // clock offsets between nodes
  int64_t liveness_cycles = 0;  // 0: not judged
};

const std::vector<std::string>& otfp_property_names();
CheckReport check_otfp(const core::Schedule& schedule, const Records& records, const OtfpCheckParams& params);

}  // namespace tob::sim
