// The bare TSC deadline loop (issue 17's reference for the daemon's TX error): on one CPU, once
// per period, sleep until `lead` before the next deadline, then spin on the TSC until it, and
// record how late the first TSC read at or after the deadline is. The daemon's spin method does
// the same and then calls rte_eth_tx_burst; perf/daemon_timing.py runs this beside it in one
// invocation, on node 0's CPU with node 0's period, and reports both. Also the largest gap
// between two consecutive TSC reads inside a spin: a gap is time the vCPU or the loop was away
// (an interrupt, the hypervisor), the usual cause of a late deadline.
//
//   tsc-deadline --cpu N --seconds S --period-ns P [--lead-ns L] [--rt PRIO]
// prints one JSON object: count, p50_ns, p99_ns, p999_ns, max_ns (lateness), gap_max_ns,
// gaps_over_1us, ticks_per_ns.
#include <pthread.h>
#include <sched.h>
#include <x86intrin.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// TSC ticks per ns over 200 ms.
double calibrate() {
  const int64_t t0 = mono_ns();
  const uint64_t c0 = __rdtsc();
  timespec ts{0, 200'000'000};
  nanosleep(&ts, nullptr);
  return static_cast<double>(__rdtsc() - c0) / static_cast<double>(mono_ns() - t0);
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "tsc-deadline: %s\nusage: tsc-deadline --cpu N --seconds S --period-ns P [--lead-ns L] [--rt PRIO]\n",
               why.c_str());
  std::exit(2);
}

int64_t number(const char* flag, const char* v, int64_t lo, int64_t hi) {
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (*v == '\0' || *end != '\0' || x < lo || x > hi)
    usage(std::string(flag) + " '" + v + "': expected " + std::to_string(lo) + ".." + std::to_string(hi));
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t cpu = -1, seconds = 0, period = 0, lead = 100'000, rt = 0;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) usage(std::string(argv[i]) + ": missing value");
    const std::string f = argv[i];
    if (f == "--cpu") cpu = number(argv[i], argv[i + 1], 0, 1023);
    else if (f == "--seconds") seconds = number(argv[i], argv[i + 1], 1, 3600);
    else if (f == "--period-ns") period = number(argv[i], argv[i + 1], 10'000, 10'000'000'000);
    else if (f == "--lead-ns") lead = number(argv[i], argv[i + 1], 0, 100'000'000);
    else if (f == "--rt") rt = number(argv[i], argv[i + 1], 0, 99);
    else usage("unknown option '" + f + "'");
  }
  if (cpu < 0 || seconds == 0 || period == 0) usage("--cpu, --seconds and --period-ns are required");
  if (lead > period) usage("--lead-ns must not exceed --period-ns (equal: spin the whole period, never sleep)");
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<int>(cpu), &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) usage(std::string("cannot run on that CPU: ") + std::strerror(errno));
  if (rt > 0) {
    sched_param p{};
    p.sched_priority = static_cast<int>(rt);
    if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) usage(std::string("cannot use SCHED_FIFO: ") + std::strerror(errno));
  }
  const double tpn = calibrate();
  const auto count = static_cast<size_t>(seconds * 1'000'000'000 / period);
  std::vector<int64_t> late;
  late.reserve(count);
  uint64_t gap_max = 0, gaps_over_1us = 0;
  const auto ticks = [&](int64_t ns) { return static_cast<uint64_t>(static_cast<double>(ns) * tpn); };
  const uint64_t period_ticks = ticks(period), lead_ns = static_cast<uint64_t>(lead), one_us = ticks(1000);
  uint64_t deadline = __rdtsc() + period_ticks;
  for (size_t k = 0; k < count; ++k, deadline += period_ticks) {
    const uint64_t now = __rdtsc();
    if (lead < period && deadline > now + ticks(static_cast<int64_t>(lead_ns))) {
      const int64_t sleep_ns = static_cast<int64_t>(static_cast<double>(deadline - now) / tpn) - static_cast<int64_t>(lead_ns);
      const timespec ts{static_cast<time_t>(sleep_ns / 1'000'000'000), static_cast<long>(sleep_ns % 1'000'000'000)};
      nanosleep(&ts, nullptr);
    }
    uint64_t prev = __rdtsc(), t = prev;
    while (t < deadline) {
      _mm_pause();
      t = __rdtsc();
      const uint64_t gap = t - prev;
      if (gap > gap_max) gap_max = gap;
      if (gap > one_us) ++gaps_over_1us;
      prev = t;
    }
    late.push_back(static_cast<int64_t>(static_cast<double>(t - deadline) / tpn));
    if (t > deadline + period_ticks) deadline = t;  // a stall longer than a period: start again from now
  }
  std::sort(late.begin(), late.end());
  const auto q = [&](double p) { return late.empty() ? 0 : late[std::min(late.size() - 1, static_cast<size_t>(p * static_cast<double>(late.size())))]; };
  std::printf("{\"count\": %zu, \"p50_ns\": %lld, \"p99_ns\": %lld, \"p999_ns\": %lld, \"max_ns\": %lld, \"gap_max_ns\": %.0f, "
              "\"gaps_over_1us\": %llu, \"ticks_per_ns\": %.6f}\n",
              late.size(), static_cast<long long>(q(0.5)), static_cast<long long>(q(0.99)), static_cast<long long>(q(0.999)),
              static_cast<long long>(late.empty() ? 0 : late.back()), static_cast<double>(gap_max) / tpn,
              static_cast<unsigned long long>(gaps_over_1us), tpn);
  return 0;
}
