#include "dataplane/roles/lcore_loop.h"

#include "dataplane/observe/log.h"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <x86intrin.h>

#include <cstring>

#include <algorithm>
#include <ctime>

namespace tob::dataplane {

namespace {
constexpr int64_t kMinSleepNs = 5'000;  // shorter waits are polled: a sleep costs about this much
}

int run_lcore_loop(void* arg) {
  const LoopRoles& r = *static_cast<const LoopRoles*>(arg);
  DaemonContext& ctx = *r.ctx;
  const bool sleepy = ctx.options->idle == IdlePolicy::sleep;
  // Before the loop (may log): precise wake-ups for idle sleeps and the sleep/hybrid TX methods
  // (the default timer slack of 50 us would add itself to every wake-up), and the real-time
  // class when asked.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  if (ctx.options->rt_priority > 0) {
    sched_param sp{};
    sp.sched_priority = ctx.options->rt_priority;
    if (const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp); rc != 0) {
      TOB_LOG(RTE_LOG_ERR, "loop %s: SCHED_FIFO priority %d refused: %s\n", r.name, sp.sched_priority,
              std::strerror(rc));
      ctx.quit.store(true);
      return -1;
    }
  }
  const double ns_per_tick = ctx.clock.fit().ns_per_tick;
  const auto idle_ticks = static_cast<uint64_t>(static_cast<double>(ctx.options->idle_sleep_ns) / ns_per_tick);
  while (!ctx.quit.load(std::memory_order_relaxed)) {
    unsigned work = 0;
    uint64_t due = UINT64_MAX;
    if (r.rx != nullptr) work += r.rx->poll();
    if (r.control != nullptr) {
      uint64_t d;
      work += r.control->step(d);
      due = std::min(due, d);
    }
    if (r.tx != nullptr) {
      uint64_t d;
      work += r.tx->step(d);
      due = std::min(due, d);
    }
    if (!sleepy || work != 0) continue;
    const uint64_t now = __rdtsc();
    if (due <= now) continue;
    const uint64_t wait = std::min(due - now, idle_ticks);
    const auto wait_ns = static_cast<int64_t>(static_cast<double>(wait) * ns_per_tick);
    if (wait_ns < kMinSleepNs) continue;
    const timespec ts{0, static_cast<long>(wait_ns)};
    nanosleep(&ts, nullptr);
  }
  if (r.control != nullptr) r.control->stop();
  if (r.tx != nullptr) r.tx->discard_pending();
  return 0;
}

}  // namespace tob::dataplane
