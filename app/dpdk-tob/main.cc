// dpdk-tob: one process per host (docs/architecture.md). The phases of its life: daemon.h; its
// options: dpdk-tob --help.
#include "daemon.h"

int main(int argc, char** argv) { return tob::app::run_daemon(argc, argv); }
