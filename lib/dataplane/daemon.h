// The dpdk-tob daemon (docs/architecture.md, docs/configuration.md): start-up, the run and the
// clean stop.
//   1. options and cluster.ini are parsed and validated before the EAL starts (exit 2 on error);
//   2. EAL, port profile, clock calibration, pools and rings, port start, the core node;
//   3. lcores run their loops; the I/O thread writes files and status; telemetry answers;
//   4. SIGINT/SIGTERM or --duration: the node goes silent, files are flushed, statistics printed.
#pragma once

namespace tob::dataplane {

// Exit status: 0 clean stop, 1 runtime failure, 2 bad options or configuration.
int run_daemon(int argc, char** argv);

}  // namespace tob::dataplane
