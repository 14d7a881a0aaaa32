/* What the key-value store's example applications (app/tob-pendulum, app/tob-labels) share:
 * why a read or a write did not go through, option parsing, waiting for a global instant, a
 * read that rides out the instant of publication, and attaching to the node's daemon. */
#ifndef TOB_KV_APP_H
#define TOB_KV_APP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tob.h"

#define KV_NS_PER_S 1000000000LL

/* Set by SIGINT/SIGTERM once kv_app_catch_signals() ran; every wait and loop checks it. */
extern volatile sig_atomic_t g_stop;
void kv_app_catch_signals(void);

/* The program name in messages ("tob-labels"); set first thing in main. */
extern const char *kv_app_name;

/* Why a period's read or write did not go through. */
enum reason {
  R_OK = 0,
  R_DEADLINE,   /* TOB_EDEADLINE: the instance carrying the write finishes after t_pub */
  R_AGAIN,      /* TOB_EAGAIN until it was too late anyway */
  R_NOT_FOUND,  /* TOB_ENOTFOUND: nothing published in [t_min, now] */
  R_EVICTED,    /* TOB_EEVICTED */
  R_REDUCTION,  /* TOB_EREDUCTION: no quorum for the key's reduction */
  R_NEWER,      /* a version newer than asked for: this replica reads late */
  R_MISMATCH,   /* other bytes or another length than written (labels) */
  R_BAD_LENGTH, /* a value that is not 8 bytes (pendulum) */
  R_BAD_STATE,  /* agreed values the plant refuses (pendulum: ivp_state_invalid) */
  R_TOO_LARGE,  /* TOB_ETOOLARGE: key or value beyond the [ic] bounds */
  R_INVALID,    /* TOB_EINVAL: e.g. a non-numeric value for a numeric key */
  R_OTHER,
  R_COUNT
};
const char *reason_name(enum reason r);
enum reason reason_of(int rc);
/* Errors after which the run cannot go on. */
bool fatal(int rc);

/* Option values: false (and a message naming the option) unless s is one in [min, max]. */
bool parse_long(const char *opt, const char *s, long min, long max, long *out);
bool parse_double(const char *opt, const char *s, double min, double max, double *out);

/* In an option loop over argv with the option in `a`, its value (or NULL) in `v` and the index in
 * `i`: takes the value, or ends parsing with status 2 and a message when there is none. */
#define NEED_VALUE()                                                     \
  do {                                                                   \
    if (v == NULL) {                                                     \
      fprintf(stderr, "%s: %s needs a value (--help)\n", kv_app_name, a); \
      return 2;                                                          \
    }                                                                    \
    i++;                                                                 \
  } while (0)

/* The options both examples take: --start-ns, --align-ms, --keys, --read-delay-us. At argv
 * index *i with value v (or NULL): 1 when `a` is one of them (value stored, *i advanced past it),
 * 0 when it is not, -1 on a missing or bad value (message printed). */
int kv_app_common_option(const char *a, const char *v, int *i, int64_t *start_ns, long *align_ms,
                         const char **key_prefix, long *read_delay_us);

/* Index of "--" in argv (argc if none), and whether --help/-h is anywhere. */
int kv_app_dashdash(int argc, char **argv);
bool kv_app_wants_help(int argc, char **argv);

/* Sleeps, then yields the last WAIT_SPIN_NS, until global instant t. False when stopped. */
bool wait_until(struct tob_client *c, int64_t t);

/* tob_kv_read that retries TOB_EAGAIN (the daemon is publishing that very instant, or the shared
 * cell was being written) until global instant give_up_ns; *retries counts the extra calls. */
int kv_read_settled(struct tob_client *c, const void *key, size_t key_len, int64_t t_min_ns, void *value,
                    size_t capacity, int64_t *t_pub_ns, int64_t give_up_ns, uint64_t *retries);

/* rte_eal_init over argv[0..eal_argc) and tob_attach; NULL after printing why. */
struct tob_client *kv_app_attach(int eal_argc, char **argv, const char *cluster);

#endif
