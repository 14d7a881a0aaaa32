// Scenario files for the mars engine (docs/simulator.md "Scenario files"): plain text, one line
// per fault or expectation, run over real core::MarsNode engines by the simulator (sim::Simulator,
// no random faults or loss: only the faults the file names). The whole run happens first; then
// every property the checker knows must hold (safety: agreement, total order, integrity, FIFO,
// membership agreement, ...) and each `expect` line is judged against the membership events.
//
//   mars nodes=4 cycles=C [silence=S] [two-member-wait=W] [load=M] [seed=X]
//                                     first line: the cluster (equal slots of 250 us, turn order
//                                     0..N-1, nodes start together: the membership forms in
//                                     cycle 2), C cycles, rejoin silence S cycles (2)
//   link-down FROM->TO cycle=A [cycles=K]   TO loses every frame FROM sends in cycles A..A+K-1
//                                     (FROM, TO: a node or *, every other node)
//   send-omission NODE cycle=A        every copy of NODE's frame of cycle A is lost, to all
//   receive-omission NODE from=P cycle=A    NODE misses P's frame of cycle A
//   late-frame NODE from=P cycle=A    P's frame of cycle A reaches NODE after its window
//   crash NODE cycle=A [restart=R]    NODE stops at the start of cycle A (back R cycles later)
//   clock NODE drift=PPM [offset=NS]  NODE's oscillator runs PPM fast (negative: slow), NS ahead
//   byzantine-clock NODE              NODE's frames reach each receiver early or late, as they
//                                     like within the windows (docs/simulator.md)
//   cluster options for clocks: clock-sync=on|off (off), jitter=NS (the network's, 10000),
//   delay-error=NS (every node's configured delay off by NS, 0); with clock-sync=on the clock
//   properties are judged too (sim/clock_checker.h)
//   expect event on=NODES KIND [node=N] [reason=R] cycle=A
//                                     every node of NODES records that membership event in
//                                     cycle A (KIND: membership-created, admitted, removed,
//                                     self-shutdown, rejoin-started, suspicion-raised, ...;
//                                     R: not-admitted, receiver-omission, left, ...)
//   expect formed members=NODES by=A  from the end of cycle A on, every node of NODES is a
//                                     member of exactly NODES, and no node records a membership
//                                     change (created, admitted, removed, shutdown, rejoin)
//   expect rates centred within=PPM [tracking=PPM]
//                                     (clock-sync=on) at the end, every correct clock counted
//                                     rate windows and is off its rate bound, and the mean of
//                                     their rate corrections is within PPM of 0; with tracking,
//                                     each one's correction plus its drift is within that of the
//                                     correct clocks' mean drift
//
// NODES: `all`, `0,2,3` or `1-3`. A line's `#` starts a comment.
#pragma once

#include <string>

#include "sim/otfp_script.h"  // ScriptResult

namespace tob::sim {

ScriptResult run_mars_script(const std::string& text, bool verbose = false);

// True when the scenario text is for the mars engine (its first step is a `mars` line).
bool is_mars_script(const std::string& text);

}  // namespace tob::sim
