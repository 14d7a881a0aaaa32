// dpdk-tob-load: pktgen-style load, latency and noise experiments for dpdk-tob. See
// load_options.cc --help. One instance per node in client mode (load_client.*); the noise mode
// (noise.*) is a separate DPDK primary with its own port.
#include <rte_eal.h>
#include <rte_errno.h>
#include <sched.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "load_client.h"
#include "load_options.h"
#include "noise.h"
#include "tob.h"

namespace {

using tob::load::LoadOptions;

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

int run_client(const LoadOptions& o) {
  tob_client* c = nullptr;
  const int rc = tob_attach(o.cluster.c_str(), nullptr, &c);
  if (rc < 0) {
    std::fprintf(stderr, "dpdk-tob-load: attach to cluster '%s': %s\n", o.cluster.c_str(), tob_strerror(rc));
    return 1;
  }
  tob::load::LoadClient client(o, c);
  const int error = client.run(&g_stop);
  bool written = client.write_csv();
  written = client.write_records() && written;
  client.print_summary();
  client.write_summary();
  client.write_compare_summary();
  if (error != 0) {
    std::fprintf(stderr, "dpdk-tob-load: stopped on error: %s\n", tob_strerror(error));
    return 1;
  }
  return written ? 0 : 1;
}

// EAL pins a process's main lcore to the first CPU of its core list: without -l, -c or --lcores
// every load client of a machine would share CPU 0, beside a daemon's lcore that preempts them
// (docs/architecture.md "Dataplane"). Unless the caller chose, the client's one lcore floats
// over the CPUs it may run on, as an ordinary process does.
std::string floating_lcore_arg() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
  std::string cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
  return cpus.empty() ? std::string() : "--lcores=0@(" + cpus + ")";
}

bool names_cores(int split, char** argv) {
  for (int i = 1; i < split; ++i) {
    const std::string a = argv[i];
    if (a == "-l" || a == "-c" || a.rfind("--lcores", 0) == 0 || a.rfind("-l", 0) == 0 || a.rfind("-c", 0) == 0)
      return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  int split = argc;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--") == 0) {
      split = i;
      break;
    }
  std::vector<std::string> args(argv + std::min(split + 1, argc), argv + argc);
  for (int i = 1; i < split; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) args.push_back("--help");
  auto parsed = tob::load::parse_load_options(args);
  if (!parsed) {
    std::fprintf(stderr, "dpdk-tob-load: %s\n", parsed.error().message.c_str());
    return 2;
  }
  const LoadOptions o = parsed.value();
  if (o.help) {
    std::fputs(tob::load::load_help(argv[0]).c_str(), stdout);
    return 0;
  }
  std::vector<char*> eal(argv, argv + split);
  std::string lcores = names_cores(split, argv) ? std::string() : floating_lcore_arg();
  if (!lcores.empty()) eal.push_back(lcores.data());
  if (rte_eal_init(static_cast<int>(eal.size()), eal.data()) < 0) {
    std::fprintf(stderr, "dpdk-tob-load: EAL initialisation failed: %s\n", rte_strerror(rte_errno));
    return 1;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const int rc = o.noise ? tob::load::run_noise(o, &g_stop) : run_client(o);
  rte_eal_cleanup();
  return rc;
}
