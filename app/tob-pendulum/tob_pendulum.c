/* tob-pendulum: a replicated inverted-pendulum controller on the key-value store (seed 004 §V-A).
 *
 * One replica runs next to each node's dpdk-tob daemon (a DPDK secondary process, like
 * tob-example). Every replica simulates the same cart-pole plant (pendulum_model.h) and, every
 * control period k, at the global instant a_k = start + k T:
 *   1. reads the 19 state values published for a_k (tob_kv_read with t_min = the publishing
 *      instant of period k-1): the per-key median of every replica's copy, the same bits on every
 *      correct node; when a read fails the replica falls back on its own copy (seed 004 §V-B:
 *      "the application may fall back on ... its local state");
 *   2. runs the PID on that state and advances its plant by one step under the force;
 *   3. writes the 19 new values (tob_kv_write) for publishing instant t_pub: the next activation
 *      a_{k+1} (`--t-pub next`, the seed's timeOfNextActivation) or the earliest instant the
 *      store can give (`--t-pub earliest`, tob_kv_earliest_pub_ns).
 * A replica told to lie (`--lie BIAS`, `--lie-noise A`) writes every value off by BIAS plus noise;
 * with N > 3f the median masks it and the correct replicas keep identical states.
 *
 *   tob-pendulum --proc-type=secondary --file-prefix tob-node1 --no-pci -- \
 *       --cluster netns --periods 400 --period-ms 50 --start-ns $START
 *
 * docs/examples-ic.md has the cluster configuration ([ic] median class for the keys) and the
 * commands for four replicas with one liar.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>

#include "pendulum_model.h"
#include "kv_app.h"
#include "tob.h"

#define PERIODS_MAX 10000000L
#define KEY_BYTES_MAX 64
#define NS_PER_S 1000000000LL
#define DEG_PER_RAD (180.0 / 3.14159265358979323846)
/* The margin between "now" and period 0 when the start is aligned: time for every replica to
 * attach after it was launched. */
#define ALIGN_LEAD_NS (1000LL * 1000 * 1000)

struct options {
  const char *cluster;
  long periods;          /* from --periods, or --seconds / period */
  double seconds;
  long period_ms;
  double step_ms;        /* simulated time per period; 0: the period */
  bool t_pub_earliest;
  int64_t start_ns;      /* 0: aligned */
  long align_ms;
  const char *key_prefix;
  struct ivp_params params;
  bool lie;
  double lie_bias;
  double lie_noise;
  uint64_t seed;
  bool seed_given;
  long read_delay_us;
  const char *csv_path;  /* NULL: the default name; "none": no file */
  bool quiet;
};

static void usage(FILE *out, const char *prog) {
  fprintf(out,
          "usage: %s [EAL options] -- --cluster NAME [options]\n"
          "\n"
          "A replicated inverted-pendulum controller on dpdk-tob's key-value store (seed 004 §V-A).\n"
          "EAL options: --proc-type=secondary --file-prefix tob-nodeK --no-pci (the node's daemon).\n"
          "\n"
          "  --cluster NAME        the cluster's name ([cluster] name of cluster.ini), required\n"
          "  --periods N           control periods to run (default 200)\n"
          "  --seconds S           or run for S seconds of periods\n"
          "  --period-ms T         control period (default 50)\n"
          "  --step-ms S           simulated time per period (default: the period)\n"
          "  --t-pub MODE          next: publish at the next activation (default);\n"
          "                        earliest: at tob_kv_earliest_pub_ns of the activation\n"
          "  --start-ns NS         global instant of period 0 (rounded up to a period); every\n"
          "                        replica needs the same\n"
          "  --align-ms MS         without --start-ns: period 0 at the next multiple of MS of\n"
          "                        global time at least 1 s ahead (default 5000)\n"
          "  --keys PREFIX         key prefix (default ivp0/); its [ic] class must be median-f64\n"
          "  --angle RAD           initial pole angle (default 0.1)\n"
          "  --kp X --ki X --kd X  PID gains (default 400, 50, 80)\n"
          "  --lie BIAS            this replica lies: every value it writes is off by BIAS\n"
          "  --lie-noise A         ... plus uniform noise in [-A, A] (implies --lie 0 if alone)\n"
          "  --seed S              seed of the noise (default: node id + 1)\n"
          "  --read-delay-us US    read this long after the publishing instant (default 0)\n"
          "  --csv FILE            per-period CSV (default tob-pendulum-node<K>.csv; none: off)\n"
          "  --quiet               no progress lines\n"
          "  --help                this text\n"
          "\n"
          "Exit status: 0 the run ended with the pole up, 3 the pole fell, 1 an error, 2 usage.\n",
          prog);
}

/* 0 on success, 2 on a usage error (message printed). */
static int parse_options(int argc, char **argv, struct options *o) {
  memset(o, 0, sizeof *o);
  o->period_ms = 50;
  o->align_ms = 5000;
  o->key_prefix = "ivp0/";
  ivp_default_params(&o->params);
  bool periods_given = false, seconds_given = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    long l = 0;
    int common = 0;
    double d = 0;
    if (strcmp(a, "--cluster") == 0) {
      NEED_VALUE();
      o->cluster = v;
    } else if (strcmp(a, "--periods") == 0) {
      NEED_VALUE();
      if (!parse_long(a, v, 1, PERIODS_MAX, &o->periods)) return 2;
      periods_given = true;
    } else if (strcmp(a, "--seconds") == 0) {
      NEED_VALUE();
      if (!parse_double(a, v, 0.001, 7 * 86400.0, &o->seconds)) return 2;
      seconds_given = true;
    } else if (strcmp(a, "--period-ms") == 0) {
      NEED_VALUE();
      if (!parse_long(a, v, 1, 60000, &o->period_ms)) return 2;
    } else if (strcmp(a, "--step-ms") == 0) {
      NEED_VALUE();
      if (!parse_double(a, v, 0.1, IVP_STEP_MAX_S * 1000, &o->step_ms)) return 2;
    } else if (strcmp(a, "--t-pub") == 0) {
      NEED_VALUE();
      if (strcmp(v, "next") == 0) o->t_pub_earliest = false;
      else if (strcmp(v, "earliest") == 0) o->t_pub_earliest = true;
      else {
        fprintf(stderr, "tob-pendulum: --t-pub: '%s' is neither next nor earliest\n", v);
        return 2;
      }
    } else if ((common = kv_app_common_option(a, v, &i, &o->start_ns, &o->align_ms, &o->key_prefix,
                                              &o->read_delay_us)) != 0) {
      if (common < 0) return 2;
    } else if (strcmp(a, "--angle") == 0) {
      NEED_VALUE();
      if (!parse_double(a, v, -IVP_FALLEN_RAD, IVP_FALLEN_RAD, &o->params.initial_angle_rad)) return 2;
    } else if (strcmp(a, "--kp") == 0 || strcmp(a, "--ki") == 0 || strcmp(a, "--kd") == 0) {
      NEED_VALUE();
      if (!parse_double(a, v, -1e6, 1e6, &d)) return 2;
      *(a[3] == 'p' ? &o->params.kp : a[3] == 'i' ? &o->params.ki : &o->params.kd) = d;
    } else if (strcmp(a, "--lie") == 0) {
      NEED_VALUE();
      if (!parse_double(a, v, -1e6, 1e6, &o->lie_bias)) return 2;
      o->lie = true;
    } else if (strcmp(a, "--lie-noise") == 0) {
      NEED_VALUE();
      if (!parse_double(a, v, 0, 1e6, &o->lie_noise)) return 2;
      o->lie = true;
    } else if (strcmp(a, "--seed") == 0) {
      NEED_VALUE();
      if (!parse_long(a, v, 0, INT64_MAX, &l)) return 2;
      o->seed = (uint64_t)l;
      o->seed_given = true;
    } else if (strcmp(a, "--csv") == 0) {
      NEED_VALUE();
      o->csv_path = v;
    } else if (strcmp(a, "--quiet") == 0) {
      o->quiet = true;
    } else {
      fprintf(stderr, "tob-pendulum: unknown option '%s' (--help)\n", a);
      return 2;
    }
  }
  if (o->cluster == NULL) {
    fprintf(stderr, "tob-pendulum: --cluster NAME is required (--help)\n");
    return 2;
  }
  if (periods_given && seconds_given) {
    fprintf(stderr, "tob-pendulum: give --periods or --seconds, not both\n");
    return 2;
  }
  if (seconds_given) {
    o->periods = (long)ceil(o->seconds * 1000.0 / (double)o->period_ms);
    if (o->periods < 1 || o->periods > PERIODS_MAX) {
      fprintf(stderr, "tob-pendulum: --seconds %g makes %ld periods, 1..%ld allowed\n", o->seconds, o->periods,
              PERIODS_MAX);
      return 2;
    }
  } else if (!periods_given) {
    o->periods = 200;
  }
  o->params.step_s = (o->step_ms > 0 ? o->step_ms : (double)o->period_ms) / 1000.0;
  char err[160];
  if (ivp_params_check(&o->params, err, sizeof err) != 0) {
    fprintf(stderr, "tob-pendulum: %s\n", err);
    return 2;
  }
  char key[KEY_BYTES_MAX];
  for (int i = 0; i < IVP_VAR_COUNT; i++) {
    if (ivp_key(key, sizeof key, o->key_prefix, i) < 0) {
      fprintf(stderr, "tob-pendulum: --keys '%s' is too long for keys of %d bytes\n", o->key_prefix,
              KEY_BYTES_MAX - 1);
      return 2;
    }
  }
  return 0;
}

/* Sleeps, then spins, until global time t. False when interrupted by a signal. */

struct replica {
  struct tob_client *client;
  const struct options *opt;
  char keys[IVP_VAR_COUNT][KEY_BYTES_MAX];
  size_t key_lens[IVP_VAR_COUNT];
  uint64_t lie_rng;
  uint64_t read_again_retries; /* tob_kv_read calls that found the daemon still publishing */
  /* Tallies, by period. */
  long periods_run;
  long periods_ok;     /* read (from period 1 on) and all 19 writes went through */
  long reads;          /* periods with a read (1..) */
  long reads_agreeing; /* reads whose agreed state equals this replica's own copy, bit for bit */
  long fallbacks;      /* periods controlled from the own copy after a failed read */
  long read_failures[R_COUNT];
  long write_refusals[R_COUNT]; /* periods whose writes did not all go through, by first reason */
  long late_activations;        /* activations that had to wait past a_k for t_pub (earliest mode) */
  double max_angle_rad;
  bool fell;
};

/* Reads the 19 agreed values published at t_pub into s. R_OK or why not. */
static enum reason read_state(struct replica *r, int64_t t_pub, struct ivp_state *s, int *rc_out) {
  for (int i = 0; i < IVP_VAR_COUNT; i++) {
    uint8_t value[8];
    int64_t published_at = 0;
    /* At t_pub the daemon may still be publishing (TOB_EAGAIN): wait for it, half a period at most. */
    const int rc = kv_read_settled(r->client, r->keys[i], r->key_lens[i], t_pub, value, sizeof value, &published_at,
                                   t_pub + r->opt->period_ms * 500000LL, &r->read_again_retries);
    *rc_out = rc;
    if (rc < 0) return reason_of(rc);
    if (rc != 8) return R_BAD_LENGTH;
    if (published_at != t_pub) return R_NEWER;
    s->v[i] = tob_kv_to_f64(value);
  }
  *rc_out = 0;
  return ivp_state_invalid(s) >= 0 ? R_BAD_STATE : R_OK;
}

/* Writes the 19 values of s for t_pub; on TOB_EAGAIN retries while the write could still make
 * t_pub. R_OK or the first reason a value was refused. */
static enum reason write_state(struct replica *r, const struct ivp_state *s, int64_t t_pub, int *rc_out) {
  enum reason first = R_OK;
  *rc_out = 0;
  for (int i = 0; i < IVP_VAR_COUNT; i++) {
    uint8_t value[8];
    tob_kv_f64(s->v[i], value);
    int rc;
    while ((rc = tob_kv_write(r->client, r->keys[i], r->key_lens[i], t_pub, value, sizeof value)) == TOB_EAGAIN) {
      const int64_t earliest = tob_kv_earliest_pub_ns(r->client, tob_now_ns(r->client));
      if (earliest < 0 || earliest > t_pub || g_stop) break;
      sched_yield();
    }
    if (rc < 0 && first == R_OK) {
      first = reason_of(rc);
      *rc_out = rc;
    }
    if (fatal(rc)) return first;
  }
  return first;
}

static int64_t start_instant(struct tob_client *c, const struct options *o) {
  const int64_t period_ns = o->period_ms * 1000000LL;
  int64_t start = o->start_ns;
  if (start <= 0) {
    const int64_t align_ns = o->align_ms * 1000000LL;
    start = ((tob_now_ns(c) + ALIGN_LEAD_NS) / align_ns + 1) * align_ns;
  }
  /* Activations on multiples of the period: with a period that is a multiple of the IC period,
   * every write then opens an IC period, and replicas given nearby starts still agree. */
  return (start + period_ns - 1) / period_ns * period_ns;
}

static void print_summary(const struct replica *r, uint16_t node) {
  const struct options *o = r->opt;
  printf("tob-pendulum node %u (keys %s%s): %ld periods of %ld ms, %ld successful (%.2f%%)\n", node, o->key_prefix,
         o->lie ? ", LYING" : "", r->periods_run, o->period_ms, r->periods_ok,
         r->periods_run > 0 ? 100.0 * (double)r->periods_ok / (double)r->periods_run : 0.0);
  printf("  reads: %ld periods, agreed state equal to this replica's own copy in %ld, fallbacks to the own copy %ld, "
         "retries while the daemon published %" PRIu64 "\n",
         r->reads, r->reads_agreeing, r->fallbacks, r->read_again_retries);
  printf("  failed reads by reason:");
  long total = 0;
  for (int i = 1; i < R_COUNT; i++) {
    if (r->read_failures[i] > 0) printf(" %s %ld", reason_name(i), r->read_failures[i]);
    total += r->read_failures[i];
  }
  printf("%s\n", total == 0 ? " none" : "");
  printf("  refused writes (periods) by reason:");
  total = 0;
  for (int i = 1; i < R_COUNT; i++) {
    if (r->write_refusals[i] > 0) printf(" %s %ld", reason_name(i), r->write_refusals[i]);
    total += r->write_refusals[i];
  }
  printf("%s\n", total == 0 ? " none" : "");
  if (r->late_activations > 0) printf("  activations delayed to the publishing instant: %ld\n", r->late_activations);
  printf("  max |angle| %.3f deg: %s\n", r->max_angle_rad * DEG_PER_RAD, r->fell ? "the pole FELL" : "the pole stayed up");
}

int main(int argc, char **argv) {
  /* Options first (they follow "--"), so --help and mistakes need no EAL. */
  kv_app_name = "tob-pendulum";
  const int dashdash = kv_app_dashdash(argc, argv);
  if (kv_app_wants_help(argc, argv)) {
    usage(stdout, argv[0]);
    return 0;
  }
  struct options opt;
  const int app_argc = dashdash < argc ? argc - dashdash - 1 : 0;
  int rc = parse_options(app_argc, argv + dashdash + (dashdash < argc ? 1 : 0), &opt);
  if (rc != 0) return rc;

  /* 1. DPDK as a secondary process of the node's daemon. */
  struct tob_client *c = kv_app_attach(dashdash, argv, opt.cluster);
  if (c == NULL) return 1;
  const uint16_t node = tob_node_id(c);
  int status = 1;
  FILE *csv = NULL;
  struct replica r;
  memset(&r, 0, sizeof r);
  r.client = c;
  r.opt = &opt;
  r.lie_rng = opt.seed_given ? opt.seed : (uint64_t)node + 1;
  for (int i = 0; i < IVP_VAR_COUNT; i++) {
    const int n = ivp_key(r.keys[i], sizeof r.keys[i], opt.key_prefix, i);
    r.key_lens[i] = (size_t)n;
  }
  const int64_t earliest_probe = tob_kv_earliest_pub_ns(c, tob_now_ns(c));
  if (earliest_probe < 0) {
    fprintf(stderr, "tob-pendulum: %s (the cluster needs an [ic] section)\n", tob_strerror((int)earliest_probe));
    goto out;
  }

  char default_csv[64];
  snprintf(default_csv, sizeof default_csv, "tob-pendulum-node%u.csv", node);
  const char *csv_path = opt.csv_path != NULL ? opt.csv_path : default_csv;
  if (strcmp(csv_path, "none") != 0) {
    csv = fopen(csv_path, "w");
    if (csv == NULL) {
      fprintf(stderr, "tob-pendulum: %s: %s\n", csv_path, strerror(errno));
      goto out;
    }
    fprintf(csv, "period,activation_ns,t_pub_ns,angle_rad,position_m,force_n,read,write,agreed_equals_own\n");
  }

  kv_app_catch_signals();

  const int64_t period_ns = opt.period_ms * 1000000LL;
  const int64_t start = start_instant(c, &opt);
  const int64_t lead = start - tob_now_ns(c);
  if (lead < 0) {
    fprintf(stderr, "tob-pendulum: --start-ns is %.3f s in the past\n", (double)-lead / 1e9);
    goto out;
  }
  {
    /* The state written at one activation is what the next one reads: the store must publish
     * it within one period (in either --t-pub mode; the deterministic t_pub is computed from the
     * activation, so a replica that wrote later would be refused). */
    const int64_t latency = tob_kv_earliest_pub_ns(c, start) - start;
    if (latency > period_ns) {
      fprintf(stderr,
              "tob-pendulum: the store publishes %.1f ms after a write at an activation, more than the %ld ms "
              "period: use a longer --period-ms, or a shorter cycle or [ic] period_cycles\n",
              (double)latency / 1e6, opt.period_ms);
      goto out;
    }
  }
  printf("tob-pendulum: node %u client %u, keys %s*, %ld periods of %ld ms (%.1f ms simulated), t_pub %s, "
         "period 0 in %.2f s%s\n",
         node, tob_client_id(c), opt.key_prefix, opt.periods, opt.period_ms, opt.params.step_s * 1000,
         opt.t_pub_earliest ? "earliest" : "next activation", (double)lead / 1e9, opt.lie ? ", LYING" : "");
  fflush(stdout);

  struct ivp_state state, own;
  ivp_init(&state, &opt.params);
  own = state;
  int64_t t_pub_prev = 0;
  int64_t next_progress = 0;
  for (long k = 0; k < opt.periods && !g_stop; k++) {
    const int64_t activation = start + k * period_ns;
    int64_t wake = activation;
    if (k > 0) {
      const int64_t readable = t_pub_prev + opt.read_delay_us * 1000LL;
      if (readable > wake) {
        if (t_pub_prev > activation) r.late_activations++;
        wake = readable;
      }
    }
    if (!wait_until(c, wake)) break;

    /* 1. The agreed state, or the own copy. */
    enum reason read = R_OK;
    bool agreeing = false;
    if (k > 0) {
      struct ivp_state agreed;
      int read_rc = 0;
      read = read_state(&r, t_pub_prev, &agreed, &read_rc);
      r.reads++;
      if (read == R_OK) {
        agreeing = ivp_state_equal(&agreed, &own);
        r.reads_agreeing += agreeing;
        state = agreed;
      } else {
        r.read_failures[read]++;
        r.fallbacks++;
        state = own;
        if (fatal(read_rc)) {
          fprintf(stderr, "tob-pendulum: read: %s\n", tob_strerror(read_rc));
          break;
        }
      }
    }

    /* 2. Control and one step of the plant. */
    const double angle = state.v[IVP_AP], position = state.v[IVP_CP];
    const double force = ivp_control(&state);
    ivp_advance(&state);
    own = state;
    if (fabs(angle) > r.max_angle_rad) r.max_angle_rad = fabs(angle);
    if (ivp_fallen(&state)) r.fell = true;

    /* 3. The new state, for the next activation or the earliest instant. */
    const int64_t t_pub = opt.t_pub_earliest ? tob_kv_earliest_pub_ns(c, activation) : activation + period_ns;
    struct ivp_state offered = own;
    if (opt.lie) ivp_lie(&own, &offered, opt.lie_bias, opt.lie_noise, &r.lie_rng);
    int write_rc = 0;
    const enum reason write = t_pub < 0 ? R_OTHER : write_state(&r, &offered, t_pub, &write_rc);
    if (write != R_OK) r.write_refusals[write]++;
    if (fatal(write_rc)) {
      fprintf(stderr, "tob-pendulum: write: %s\n", tob_strerror(write_rc));
      break;
    }
    r.periods_run++;
    if (read == R_OK && write == R_OK) r.periods_ok++;
    t_pub_prev = t_pub;

    if (csv != NULL) {
      fprintf(csv, "%ld,%" PRId64 ",%" PRId64 ",%.9g,%.9g,%.9g,%s,%s,%d\n", k, activation, t_pub, angle, position,
              force, k == 0 ? "init" : reason_name(read), reason_name(write), k == 0 ? 1 : agreeing);
    }
    if (!opt.quiet && activation >= next_progress) {
      printf("period %ld: angle %+.3f deg, cart %+.3f m, force %+.2f N, read %s, write %s%s\n", k,
             angle * DEG_PER_RAD, position, force, k == 0 ? "init" : reason_name(read), reason_name(write),
             k == 0 || agreeing ? "" : ", agreed state differs from own copy");
      fflush(stdout);
      next_progress = activation + NS_PER_S;
    }
  }
  if (g_stop) printf("tob-pendulum: interrupted\n");
  print_summary(&r, node);
  status = r.fell ? 3 : 0;

out:
  if (csv != NULL && fclose(csv) != 0) {
    fprintf(stderr, "tob-pendulum: writing the CSV: %s\n", strerror(errno));
    status = 1;
  }
  rc = tob_detach(c);
  if (rc < 0 && rc != TOB_EDETACHED) fprintf(stderr, "tob-pendulum: detach: %s\n", tob_strerror(rc));
  rte_eal_cleanup();
  return status;
}
