// Scenario files for the otfp engine (docs/simulator.md "Scenario files"): plain text, one step
// per line, run over real core::OtfpNode engines on virtual time, in the style of etcd-io/raft's
// datadriven testdata. The network delivers every frame unless a rule drops it; each node's
// acceptor log syncs at once unless the script holds it. After every step the interpreter checks
// that no two node incarnations decided different values for an instance and that deliveries
// agree in order; `expect` lines check what the scenario is about.
//
//   cluster nodes=4 [kappa=2] [frame=1500] [window=32] [rate=MBPS]   first line: the cluster
//                                     (rate: the ports' rate, a slot in several frames)
//   submit NODE [COUNT]               messages for NODE's queue (ids count up per node)
//   run CYCLES                        time moves on by CYCLES cycles
//   run to C[.K]                      ... to the start of cycle C (or the end of node K's slot in it)
//   drop FROM->TO [cycles=A[..B]] [only=SECTION] [count=N] [segment=J]
//                                     lose the frames FROM sends TO (a node or *) in those cycles,
//                                     only those carrying SECTION (state, batch, vote, 2a, request,
//                                     data, 1a, 1b, any, decided), the first N slot frames only,
//                                     only the slot frames of segment J (both copies)
//   heal                              no more drop rules
//   crash NODE [torn=BYTES]           NODE stops; its unsynced records are lost (or their first
//                                     BYTES survive, a torn write)
//   restart NODE                      a new incarnation replays NODE's log
//   sync NODE hold|now|auto           records stay unsynced (votes stay out of frames) / sync what is
//                                     written / sync at once from now on (the default)
//   expect decided I on=NODES [value=SENDERS|empty] [ballot=fast|classic]
//   expect undecided I on=NODES
//   expect voted I on=NODES [value=SENDERS|empty|none]
//   expect coordinator NODE on=NODES
//   expect activating|active on=NODES  a coordinator collecting phase 1b / with fast mode on
//   expect low I on=NODES             the lowest instance the nodes have not delivered
//   expect delivered on=NODES [count=N] [message=SENDER/ID]
//   show [NODE]                       state, for the person writing the scenario
//
// NODES: `all`, `0,2,3` or `1-3`; SENDERS likewise (the batches a value names).
#pragma once

#include <cstdint>
#include <string>

namespace tob::sim {

struct ScriptResult {
  bool ok = false;
  int line = 0;         // the failing line (1-based), 0 when ok
  std::string message;  // why it failed
  std::string output;   // what `show` printed, and a line per step when verbose
  int steps = 0;
  int expectations = 0;
};

ScriptResult run_otfp_script(const std::string& text, bool verbose = false);

}  // namespace tob::sim
