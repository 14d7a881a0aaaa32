#define _POSIX_C_SOURCE 200809L

#include "kv_app.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>

/* The last part of a wait yields rather than sleeps: sleeps overshoot by tens of microseconds,
 * and the daemons share the CPUs with us, so spinning longer would cost them. */
#define WAIT_SPIN_NS 50000LL

volatile sig_atomic_t g_stop = 0;
const char *kv_app_name = "tob-kv-app";

static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

void kv_app_catch_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

static const char *const kReasonNames[R_COUNT] = {
    "ok",       "deadline",   "again",     "not_found", "evicted", "reduction", "newer",
    "mismatch", "bad_length", "bad_state", "too_large", "invalid", "other",
};

const char *reason_name(enum reason r) { return r >= 0 && r < R_COUNT ? kReasonNames[r] : "?"; }

enum reason reason_of(int rc) {
  switch (rc) {
    case TOB_EDEADLINE: return R_DEADLINE;
    case TOB_EAGAIN: return R_AGAIN;
    case TOB_ENOTFOUND: return R_NOT_FOUND;
    case TOB_EEVICTED: return R_EVICTED;
    case TOB_EREDUCTION: return R_REDUCTION;
    case TOB_ETOOLARGE: return R_TOO_LARGE;
    case TOB_EINVAL: return R_INVALID;
    default: return R_OTHER;
  }
}

bool fatal(int rc) { return rc == TOB_EDETACHED || rc == TOB_ENOIC || rc == TOB_ENODAEMON; }

bool parse_long(const char *opt, const char *s, long min, long max, long *out) {
  char *end = NULL;
  errno = 0;
  const long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
    fprintf(stderr, "%s: %s: '%s' is not an integer in [%ld, %ld]\n", kv_app_name, opt, s, min, max);
    return false;
  }
  *out = v;
  return true;
}

bool parse_double(const char *opt, const char *s, double min, double max, double *out) {
  char *end = NULL;
  errno = 0;
  const double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < min || v > max) {
    fprintf(stderr, "%s: %s: '%s' is not a number in [%g, %g]\n", kv_app_name, opt, s, min, max);
    return false;
  }
  *out = v;
  return true;
}

int kv_app_common_option(const char *a, const char *v, int *i, int64_t *start_ns, long *align_ms,
                         const char **key_prefix, long *read_delay_us) {
  const bool ours = strcmp(a, "--start-ns") == 0 || strcmp(a, "--align-ms") == 0 || strcmp(a, "--keys") == 0 ||
                    strcmp(a, "--read-delay-us") == 0;
  if (!ours) return 0;
  if (v == NULL) {
    fprintf(stderr, "%s: %s needs a value (--help)\n", kv_app_name, a);
    return -1;
  }
  (*i)++;
  long l = 0;
  if (strcmp(a, "--start-ns") == 0) {
    if (!parse_long(a, v, 1, INT64_MAX, &l)) return -1;
    *start_ns = l;
  } else if (strcmp(a, "--align-ms") == 0) {
    if (!parse_long(a, v, 1, 3600 * 1000, align_ms)) return -1;
  } else if (strcmp(a, "--keys") == 0) {
    *key_prefix = v;
  } else if (!parse_long(a, v, 0, 10 * 1000 * 1000, read_delay_us)) {
    return -1;
  }
  return 1;
}

int kv_app_dashdash(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--") == 0) return i;
  return argc;
}

bool kv_app_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return true;
  return false;
}

bool wait_until(struct tob_client *c, int64_t t) {
  for (;;) {
    if (g_stop) return false;
    const int64_t left = t - tob_now_ns(c);
    if (left <= 0) return true;
    if (left > 2 * WAIT_SPIN_NS) {
      /* At most 100 ms at a time, so a stopped daemon or a signal is noticed soon. */
      int64_t nap = left - WAIT_SPIN_NS;
      if (nap > KV_NS_PER_S / 10) nap = KV_NS_PER_S / 10;
      const struct timespec ts = {(time_t)(nap / KV_NS_PER_S), (long)(nap % KV_NS_PER_S)};
      nanosleep(&ts, NULL);
    } else {
      sched_yield();
    }
  }
}

int kv_read_settled(struct tob_client *c, const void *key, size_t key_len, int64_t t_min_ns, void *value,
                    size_t capacity, int64_t *t_pub_ns, int64_t give_up_ns, uint64_t *retries) {
  int rc;
  while ((rc = tob_kv_read(c, key, key_len, t_min_ns, value, capacity, t_pub_ns)) == TOB_EAGAIN && !g_stop &&
         tob_now_ns(c) < give_up_ns) {
    (*retries)++;
    sched_yield();
  }
  return rc;
}

struct tob_client *kv_app_attach(int eal_argc, char **argv, const char *cluster) {
  if (rte_eal_init(eal_argc, argv) < 0) {
    fprintf(stderr,
            "%s: EAL init failed (the EAL says why above): is a dpdk-tob daemon running "
            "with this --file-prefix, and did you pass --proc-type=secondary?\n",
            kv_app_name);
    return NULL;
  }
  struct tob_client *c = NULL;
  const int rc = tob_attach(cluster, NULL, &c);
  if (rc < 0) {
    fprintf(stderr, "%s: attach to cluster '%s': %s\n", kv_app_name, cluster, tob_strerror(rc));
    rte_eal_cleanup();
    return NULL;
  }
  return c;
}
