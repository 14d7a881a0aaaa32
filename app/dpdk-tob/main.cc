// dpdk-tob: one process per host (docs/architecture.md). See lib/dataplane/daemon.h and --help.
#include "dataplane/daemon.h"

int main(int argc, char** argv) { return tob::dataplane::run_daemon(argc, argv); }
