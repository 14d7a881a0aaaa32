// Random fault mixes for the otfp engine (docs/simulator.md "otfp mixes"): a whole scenario drawn
// from one seed, so that a failing seed replays exactly (`tob-sim --order otfp --mix M --seed S`).
//   hard      up to N - Q nodes down at once, crashing at any instant (half of them between the
//             log write and the frame) and restarting; 0-30% loss with bursts, duplication,
//             corruption, torn log tails, fsync latency up to 0.6 cycle, driver stalls of up to
//             20 cycles, clock drift up to 100 ppm; safety and, after the drain, nothing pending.
//   liveness  inside the liveness hypothesis: up to N - Q down at once, loss up to 10% without
//             bursts, no stalls: every message of a correct proposer is delivered within the
//             stated bound (kOtfpLivenessCycles).
//   chaos     beyond it: up to N - 1 down at once (all come back), loss up to 40% with bursts,
//             frequent stalls: safety must hold, and everything is delivered after the drain.
//   segments  the hard mix with slots of several frames: frames of 700-1500 bytes at 1 Gbit/s,
//             loads of 15-50 messages per node and cycle, so that a batch spans several
//             segments and a lost segment (both copies) makes the batch missing at a receiver,
//             fetched again segment by segment (docs/protocol-otfp.md "A slot in several frames").
//   durations the hard mix with the daemon's timeouts as durations (heard 20 ms, recovery 20 ms,
//             retry 4 ms: 8-20 cycles at these 1-1.75 ms cycles instead of the floors 2, 4, 2)
//             and stalls up to 13 ms, the host's: safety, and nothing pending after a longer drain.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/otfp_checker.h"
#include "sim/scenario.h"

namespace tob::sim {

enum class OtfpMix : uint8_t { hard, liveness, chaos, segments, durations };
const char* to_string(OtfpMix m);
bool parse_otfp_mix(std::string_view name, OtfpMix* out);

// The liveness bound, in cycles from submission to delivery at every correct node, with at most
// N - Q nodes down, loss up to 10% and no stalls (docs/protocol-otfp.md "Liveness").
inline constexpr int64_t kOtfpLivenessCycles = 40;

Scenario otfp_mix(OtfpMix mix, uint64_t seed);
OtfpCheckParams otfp_mix_params(OtfpMix mix, const Scenario& s);
// The drawn parameters, one line.
std::string describe(const Scenario& s);

}  // namespace tob::sim
