/* tob-labels: the automotive label workload on the key-value store (seed 004 §V-B).
 *
 * One instance runs next to each node's dpdk-tob daemon (a DPDK secondary process, like
 * tob-example), all with the same label set (label_set.h: L labels with the benchmark's periods
 * and sizes, fixed by --seed). Time is cut into ticks (the gcd of the set's periods) aligned to
 * global time. At the start of every tick each instance writes every label due in it
 * (tob_kv_write, t_pub = tob_kv_earliest_pub_ns of the tick's start, the same instant on every
 * node), with a value that depends only on the label and the tick, so that correct nodes write
 * identical bytes; at t_pub it reads every one of them back (tob_kv_read with t_min = t_pub) and
 * checks length, publishing instant and bytes. A tick is a success when every due label was
 * taken by the store and read back right; the success rate is successful ticks / ticks with
 * labels due (the seed's "iterations during which all reads were successful", with writes too).
 * Writes of later ticks go on while earlier ticks wait for their publishing instant.
 *
 *   tob-labels --proc-type=secondary --file-prefix tob-node1 --no-pci -- \
 *       --cluster netns --labels 500 --period-ms 100 --seconds 20 --start-ns $START
 *
 * Output: a CSV line per tick and a JSON summary per node (docs/examples-ic.md).
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

#include "label_set.h"
#include "kv_app.h"
#include "tob.h"

#define TICKS_MAX 1000000L
/* Ticks written but not yet read back; the store publishes a few IC periods after the write, so
 * this is far more than a correct configuration needs (checked at start). */
#define PENDING_MAX 256
#define KEY_BYTES_MAX 32
#define NS_PER_S 1000000000LL
#define NS_PER_MS 1000000LL
#define ALIGN_LEAD_NS (1000LL * 1000 * 1000)
#define FAILURES_PRINTED_MAX 10

struct options {
  const char *cluster;
  struct label_set_spec spec;
  bool mix;
  long min_period_ms;
  long ticks;
  double seconds;
  bool ticks_given, seconds_given;
  int64_t start_ns;
  long align_ms;
  const char *key_prefix;
  long read_delay_us;
  const char *csv_path;
  const char *summary_path;
  bool print_set;
  bool quiet;
};

static void usage(FILE *out, const char *prog) {
  fprintf(out,
          "usage: %s [EAL options] -- --cluster NAME --labels L [options]\n"
          "\n"
          "The automotive label workload (seed 004 §V-B) on dpdk-tob's key-value store: every label due\n"
          "in a tick is written for the earliest publishing instant and read back there.\n"
          "EAL options: --proc-type=secondary --file-prefix tob-nodeK --no-pci (the node's daemon).\n"
          "\n"
          "  --cluster NAME        the cluster's name ([cluster] name of cluster.ini), required\n"
          "  --labels L            number of labels, 1..%u (default 100)\n"
          "  --period-ms T         every label has period T (default 100)\n"
          "  --mix                 periods from the benchmark's shares over the seed's list\n"
          "                        1,2,5,10,50,100,200,1000 ms\n"
          "  --mix-periods LIST    ... over LIST instead (periods of the benchmark: 1,2,5,10,20,50,\n"
          "                        100,200,1000)\n"
          "  --min-period-ms P     with a mix: leave out periods below P (the seed's P_min)\n"
          "  --seed S              label set seed, the same on every node (default 1)\n"
          "  --periods N           ticks to run (a tick is the gcd of the periods)\n"
          "  --seconds S           or run for S seconds of ticks (default 10)\n"
          "  --start-ns NS         global instant of the first tick (rounded up to a tick); every\n"
          "                        node needs the same\n"
          "  --align-ms MS         without --start-ns: start at the next multiple of MS of global\n"
          "                        time at least 1 s ahead (default 5000)\n"
          "  --keys PREFIX         key prefix (default lb/); labels are PREFIX<id>\n"
          "  --read-delay-us US    read this long after the publishing instant (default 0)\n"
          "  --csv FILE            per-tick CSV (default tob-labels-node<K>.csv; none: off)\n"
          "  --summary FILE        JSON summary (default tob-labels-node<K>.json; none: off)\n"
          "  --print-set           print the label set and its composition, then exit (no EAL)\n"
          "  --quiet               no progress lines\n"
          "  --help                this text\n"
          "\n"
          "Exit status: 0 every tick succeeded, 3 some did not, 1 an error, 2 usage.\n",
          prog, LABEL_COUNT_MAX);
}

static bool parse_period_list(const char *s, struct label_set_spec *spec) {
  spec->period_count = 0;
  const char *p = s;
  while (*p != '\0') {
    char *end = NULL;
    errno = 0;
    const long v = strtol(p, &end, 10);
    if (errno != 0 || end == p || v < 1 || v > (long)LABEL_PERIOD_MS_MAX || (*end != ',' && *end != '\0') ||
        spec->period_count == LABEL_PERIODS_MAX) {
      fprintf(stderr, "tob-labels: --mix-periods: '%s' is not a list of up to %d periods in ms (e.g. 10,100)\n", s,
              LABEL_PERIODS_MAX);
      return false;
    }
    spec->periods_ms[spec->period_count++] = (uint32_t)v;
    p = *end == ',' ? end + 1 : end;
  }
  if (spec->period_count == 0) {
    fprintf(stderr, "tob-labels: --mix-periods: empty list\n");
    return false;
  }
  return true;
}

static int parse_options(int argc, char **argv, struct options *o) {
  memset(o, 0, sizeof *o);
  o->spec.count = 100;
  o->spec.periods_ms[0] = 100;
  o->spec.period_count = 1;
  o->spec.seed = 1;
  o->align_ms = 5000;
  o->key_prefix = "lb/";
  bool period_given = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    long l = 0;
    int common = 0;
    if (strcmp(a, "--cluster") == 0) {
      NEED_VALUE();
      o->cluster = v;
    } else if (strcmp(a, "--labels") == 0) {
      NEED_VALUE();
      if (!parse_long(a, v, 1, LABEL_COUNT_MAX, &l)) return 2;
      o->spec.count = (uint32_t)l;
    } else if (strcmp(a, "--period-ms") == 0) {
      NEED_VALUE();
      if (!parse_long(a, v, 1, LABEL_PERIOD_MS_MAX, &l)) return 2;
      o->spec.periods_ms[0] = (uint32_t)l;
      o->spec.period_count = 1;
      period_given = true;
    } else if (strcmp(a, "--mix") == 0) {
      o->mix = true;
      memcpy(o->spec.periods_ms, label_seed_periods_ms, label_seed_period_count * sizeof(uint32_t));
      o->spec.period_count = label_seed_period_count;
    } else if (strcmp(a, "--mix-periods") == 0) {
      NEED_VALUE();
      if (!parse_period_list(v, &o->spec)) return 2;
      o->mix = true;
    } else if (strcmp(a, "--min-period-ms") == 0) {
      NEED_VALUE();
      if (!parse_long(a, v, 1, LABEL_PERIOD_MS_MAX, &o->min_period_ms)) return 2;
    } else if (strcmp(a, "--seed") == 0) {
      NEED_VALUE();
      if (!parse_long(a, v, 0, INT64_MAX, &l)) return 2;
      o->spec.seed = (uint64_t)l;
    } else if (strcmp(a, "--periods") == 0) {
      NEED_VALUE();
      if (!parse_long(a, v, 1, TICKS_MAX, &o->ticks)) return 2;
      o->ticks_given = true;
    } else if (strcmp(a, "--seconds") == 0) {
      NEED_VALUE();
      char *end = NULL;
      errno = 0;
      o->seconds = strtod(v, &end);
      if (errno != 0 || end == v || *end != '\0' || !(o->seconds > 0) || o->seconds > 7 * 86400.0) {
        fprintf(stderr, "tob-labels: --seconds: '%s' is not a duration in (0, 604800]\n", v);
        return 2;
      }
      o->seconds_given = true;
    } else if ((common = kv_app_common_option(a, v, &i, &o->start_ns, &o->align_ms, &o->key_prefix,
                                              &o->read_delay_us)) != 0) {
      if (common < 0) return 2;
    } else if (strcmp(a, "--csv") == 0) {
      NEED_VALUE();
      o->csv_path = v;
    } else if (strcmp(a, "--summary") == 0) {
      NEED_VALUE();
      o->summary_path = v;
    } else if (strcmp(a, "--print-set") == 0) {
      o->print_set = true;
    } else if (strcmp(a, "--quiet") == 0) {
      o->quiet = true;
    } else {
      fprintf(stderr, "tob-labels: unknown option '%s' (--help)\n", a);
      return 2;
    }
  }
  if (o->cluster == NULL && !o->print_set) {
    fprintf(stderr, "tob-labels: --cluster NAME is required (--help)\n");
    return 2;
  }
  if (o->mix && period_given) {
    fprintf(stderr, "tob-labels: give --period-ms or a mix (--mix, --mix-periods), not both\n");
    return 2;
  }
  if (o->min_period_ms > 0 && !o->mix) {
    fprintf(stderr, "tob-labels: --min-period-ms prunes a mix (--mix, --mix-periods)\n");
    return 2;
  }
  if (o->min_period_ms > 0) {
    size_t kept = 0;
    for (size_t i = 0; i < o->spec.period_count; i++) {
      if (o->spec.periods_ms[i] >= (uint32_t)o->min_period_ms) o->spec.periods_ms[kept++] = o->spec.periods_ms[i];
    }
    if (kept == 0) {
      fprintf(stderr, "tob-labels: --min-period-ms %ld leaves no period of the mix\n", o->min_period_ms);
      return 2;
    }
    o->spec.period_count = kept;
  }
  if (o->ticks_given && o->seconds_given) {
    fprintf(stderr, "tob-labels: give --periods or --seconds, not both\n");
    return 2;
  }
  if (!o->ticks_given && !o->seconds_given) {
    o->seconds = 10;
    o->seconds_given = true;
  }
  char key[KEY_BYTES_MAX];
  if (label_key(key, sizeof key, o->key_prefix, LABEL_COUNT_MAX) < 0) {
    fprintf(stderr, "tob-labels: --keys '%s' is too long for keys of %d bytes\n", o->key_prefix, KEY_BYTES_MAX - 1);
    return 2;
  }
  return 0;
}

/* The labels grouped by period: a tick checks each period once, not each label. */
struct period_group {
  uint32_t period_ms;
  uint32_t begin, end; /* into workload.order */
};

struct workload {
  struct label *labels;
  uint32_t count;
  uint32_t *order; /* label indices by period */
  struct period_group groups[LABEL_PERIODS_MAX];
  size_t group_count;
  uint32_t tick_ms;
  char (*keys)[KEY_BYTES_MAX];
  uint8_t *key_lens;
};

static int build_workload(const struct options *o, struct workload *w) {
  memset(w, 0, sizeof *w);
  w->count = o->spec.count;
  w->labels = calloc(w->count, sizeof *w->labels);
  w->order = calloc(w->count, sizeof *w->order);
  w->keys = calloc(w->count, sizeof *w->keys);
  w->key_lens = calloc(w->count, sizeof *w->key_lens);
  if (w->labels == NULL || w->order == NULL || w->keys == NULL || w->key_lens == NULL) {
    fprintf(stderr, "tob-labels: out of memory for %u labels\n", w->count);
    return -1;
  }
  char err[256];
  if (label_set_generate(&o->spec, w->labels, err, sizeof err) != 0) {
    fprintf(stderr, "tob-labels: %s\n", err);
    return -1;
  }
  w->tick_ms = label_tick_ms(w->labels, w->count);
  uint32_t n = 0;
  for (size_t p = 0; p < o->spec.period_count; p++) {
    struct period_group *g = &w->groups[w->group_count];
    g->period_ms = o->spec.periods_ms[p];
    g->begin = n;
    for (uint32_t i = 0; i < w->count; i++) {
      if (w->labels[i].period_ms == g->period_ms) w->order[n++] = i;
    }
    g->end = n;
    if (g->end > g->begin) w->group_count++;
  }
  if (n != w->count) {
    fprintf(stderr, "tob-labels: internal error: %u of %u labels grouped\n", n, w->count);
    return -1;
  }
  for (uint32_t i = 0; i < w->count; i++) {
    const int len = label_key(w->keys[i], sizeof w->keys[i], o->key_prefix, i);
    if (len < 0) return -1; /* checked by parse_options for the largest id */
    w->key_lens[i] = (uint8_t)len;
  }
  return 0;
}

static void free_workload(struct workload *w) {
  free(w->labels);
  free(w->order);
  free(w->keys);
  free(w->key_lens);
}

static void print_set(const struct options *o, const struct workload *w) {
  uint32_t by_size[LABEL_SIZE_MAX + 1] = {0};
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < w->count; i++) {
    by_size[w->labels[i].size_bytes]++;
    bytes += w->labels[i].size_bytes;
  }
  printf("# %u labels, seed %" PRIu64 ", tick %u ms, %" PRIu64 " value bytes\n", w->count, o->spec.seed, w->tick_ms,
         bytes);
  for (size_t g = 0; g < w->group_count; g++) {
    printf("# period %u ms: %u labels\n", w->groups[g].period_ms, w->groups[g].end - w->groups[g].begin);
  }
  for (int s = 1; s <= LABEL_SIZE_MAX; s++) {
    if (by_size[s] > 0) printf("# size %d bytes: %u labels\n", s, by_size[s]);
  }
  printf("id,period_ms,size_bytes\n");
  for (uint32_t i = 0; i < w->count; i++) {
    printf("%u,%u,%u\n", w->labels[i].id, w->labels[i].period_ms, w->labels[i].size_bytes);
  }
}

struct tick {
  long index;
  uint64_t tick_abs;
  int64_t activation_ns, t_pub_ns, write_start_ns, write_end_ns, read_ns;
  uint32_t due, writes_ok, reads_ok;
  enum reason first_failure;
};

struct run {
  struct tob_client *client;
  const struct options *opt;
  const struct workload *w;
  FILE *csv;
  long ticks_total;
  int64_t tick_ns;
  /* Ticks in flight: written, not yet read back. */
  struct tick pending[PENDING_MAX];
  long pending_head, pending_count;
  /* Tallies. */
  long ticks_done, ticks_idle, ticks_ok;
  uint64_t writes, writes_ok, again_retries, reads, reads_ok, read_again_retries;
  uint64_t write_refusals[R_COUNT], read_failures[R_COUNT];
  uint32_t due_min, due_max;
  uint64_t due_sum;
  /* Per tick with labels due, for percentiles. */
  int64_t *latency_first_ns; /* t_pub - first write */
  int64_t *latency_last_ns;  /* t_pub - last write */
  int64_t *write_phase_ns;   /* last write - first write */
  long samples;
  long failures_printed;
  int fatal_rc;
};

static bool group_due(const struct run *r, const struct period_group *g, uint64_t tick_abs) {
  const struct label probe = {0, g->period_ms, 1};
  return label_due(&probe, tick_abs, r->w->tick_ms);
}

static void note_failure(struct tick *t, enum reason why) {
  if (t->first_failure == R_OK) t->first_failure = why;
}

static void write_tick(struct run *r, struct tick *t) {
  const struct workload *w = r->w;
  t->write_start_ns = tob_now_ns(r->client);
  t->t_pub_ns = tob_kv_earliest_pub_ns(r->client, t->activation_ns);
  for (size_t g = 0; g < w->group_count && r->fatal_rc == 0; g++) {
    if (!group_due(r, &w->groups[g], t->tick_abs)) continue;
    for (uint32_t j = w->groups[g].begin; j < w->groups[g].end; j++) {
      const struct label *l = &w->labels[w->order[j]];
      uint8_t value[LABEL_SIZE_MAX];
      label_value(l->id, t->tick_abs, value);
      t->due++;
      r->writes++;
      int rc;
      while ((rc = tob_kv_write(r->client, w->keys[l->id], w->key_lens[l->id], t->t_pub_ns, value, l->size_bytes)) ==
             TOB_EAGAIN) {
        /* The ring to the daemon is full: worth retrying only while the write can still be
         * carried by an instance that finishes by t_pub. */
        const int64_t earliest = tob_kv_earliest_pub_ns(r->client, tob_now_ns(r->client));
        if (earliest < 0 || earliest > t->t_pub_ns || g_stop) break;
        r->again_retries++;
        sched_yield();
      }
      if (rc == 0) {
        t->writes_ok++;
        r->writes_ok++;
      } else {
        r->write_refusals[reason_of(rc)]++;
        note_failure(t, reason_of(rc));
        if (fatal(rc)) {
          r->fatal_rc = rc;
          break;
        }
      }
    }
  }
  t->write_end_ns = tob_now_ns(r->client);
}

static void read_tick(struct run *r, struct tick *t) {
  const struct workload *w = r->w;
  for (size_t g = 0; g < w->group_count && r->fatal_rc == 0; g++) {
    if (!group_due(r, &w->groups[g], t->tick_abs)) continue;
    for (uint32_t j = w->groups[g].begin; j < w->groups[g].end; j++) {
      const struct label *l = &w->labels[w->order[j]];
      uint8_t expected[LABEL_SIZE_MAX], got[LABEL_SIZE_MAX];
      label_value(l->id, t->tick_abs, expected);
      int64_t published_at = 0;
      /* At t_pub the daemon may still be publishing (TOB_EAGAIN): wait for it, half a tick at most. */
      const int rc = kv_read_settled(r->client, w->keys[l->id], w->key_lens[l->id], t->t_pub_ns, got, sizeof got,
                                     &published_at, t->t_pub_ns + r->tick_ns / 2, &r->read_again_retries);
      r->reads++;
      enum reason why = R_OK;
      if (rc < 0) why = reason_of(rc);
      else if (published_at != t->t_pub_ns) why = R_NEWER;
      else if (rc != l->size_bytes || memcmp(got, expected, l->size_bytes) != 0) why = R_MISMATCH;
      if (why == R_OK) {
        t->reads_ok++;
        r->reads_ok++;
      } else {
        r->read_failures[why]++;
        note_failure(t, why);
        if (fatal(rc)) {
          r->fatal_rc = rc;
          break;
        }
      }
    }
  }
  t->read_ns = tob_now_ns(r->client);
}

static void finish_tick(struct run *r, const struct tick *t) {
  r->ticks_done++;
  const bool ok = t->writes_ok == t->due && t->reads_ok == t->due;
  if (t->due == 0) {
    r->ticks_idle++;
  } else {
    r->ticks_ok += ok;
    if (r->due_min == 0 || t->due < r->due_min) r->due_min = t->due;
    if (t->due > r->due_max) r->due_max = t->due;
    r->due_sum += t->due;
    r->latency_first_ns[r->samples] = t->t_pub_ns - t->write_start_ns;
    r->latency_last_ns[r->samples] = t->t_pub_ns - t->write_end_ns;
    r->write_phase_ns[r->samples] = t->write_end_ns - t->write_start_ns;
    r->samples++;
  }
  if (r->csv != NULL) {
    fprintf(r->csv, "%ld,%" PRIu64 ",%" PRId64 ",%" PRId64 ",%u,%u,%u,%" PRId64 ",%" PRId64 ",%" PRId64 ",%d,%s\n",
            t->index, t->tick_abs, t->activation_ns, t->t_pub_ns, t->due, t->writes_ok, t->reads_ok,
            t->write_start_ns, t->write_end_ns, t->read_ns, t->due == 0 || ok, reason_name(t->first_failure));
  }
  if (!r->opt->quiet && t->due > 0 && !ok) {
    r->failures_printed++;
    if (r->failures_printed <= FAILURES_PRINTED_MAX) {
      printf("tick %ld: %u due, %u written, %u read back (first failure: %s)%s\n", t->index, t->due, t->writes_ok,
             t->reads_ok, reason_name(t->first_failure),
             r->failures_printed == FAILURES_PRINTED_MAX ? "; further failing ticks only in the CSV" : "");
    }
  }
}

static int cmp_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void json_stats(FILE *f, const char *name, int64_t *v, long n, bool last) {
  qsort(v, (size_t)n, sizeof *v, cmp_i64);
  if (n == 0) {
    fprintf(f, "  \"%s\": null%s\n", name, last ? "" : ",");
    return;
  }
  double sum = 0;
  for (long i = 0; i < n; i++) sum += (double)v[i];
  fprintf(f,
          "  \"%s\": {\"count\": %ld, \"min\": %" PRId64 ", \"p50\": %" PRId64 ", \"p99\": %" PRId64
          ", \"max\": %" PRId64 ", \"mean\": %.0f}%s\n",
          name, n, v[0], v[n / 2], v[(long)((double)(n - 1) * 0.99)], v[n - 1], sum / (double)n, last ? "" : ",");
}

static void json_reasons(FILE *f, const char *name, const uint64_t *counts) {
  fprintf(f, "  \"%s\": {", name);
  bool first = true;
  for (int i = 1; i < R_COUNT; i++) {
    if (counts[i] == 0) continue;
    fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", reason_name(i), counts[i]);
    first = false;
  }
  fprintf(f, "},\n");
}

static int write_summary(struct run *r, const char *path, uint16_t node) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "tob-labels: %s: %s\n", path, strerror(errno));
    return -1;
  }
  const struct options *o = r->opt;
  const struct workload *w = r->w;
  const long run = r->ticks_done - r->ticks_idle;
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < w->count; i++) bytes += w->labels[i].size_bytes;
  fprintf(f, "{\n  \"node\": %u,\n  \"cluster\": \"%s\",\n  \"labels\": %u,\n  \"label_bytes\": %" PRIu64 ",\n", node,
          o->cluster, w->count, bytes);
  fprintf(f, "  \"mode\": \"%s\",\n  \"periods_ms\": [", o->mix ? "mix" : "single");
  for (size_t g = 0; g < w->group_count; g++) fprintf(f, "%s%u", g ? ", " : "", w->groups[g].period_ms);
  fprintf(f, "],\n  \"labels_per_period\": {");
  for (size_t g = 0; g < w->group_count; g++) {
    fprintf(f, "%s\"%u\": %u", g ? ", " : "", w->groups[g].period_ms, w->groups[g].end - w->groups[g].begin);
  }
  fprintf(f, "},\n  \"seed\": %" PRIu64 ",\n  \"tick_ms\": %u,\n", o->spec.seed, w->tick_ms);
  fprintf(f, "  \"periods_planned\": %ld,\n  \"periods_run\": %ld,\n  \"periods_idle\": %ld,\n", r->ticks_total, run,
          r->ticks_idle);
  fprintf(f, "  \"periods_ok\": %ld,\n  \"success_rate\": %.6f,\n", r->ticks_ok,
          run > 0 ? (double)r->ticks_ok / (double)run : 0.0);
  fprintf(f, "  \"due_per_period\": {\"min\": %u, \"max\": %u, \"mean\": %.1f},\n", r->due_min, r->due_max,
          run > 0 ? (double)r->due_sum / (double)run : 0.0);
  fprintf(f, "  \"writes\": %" PRIu64 ",\n  \"writes_ok\": %" PRIu64 ",\n  \"write_again_retries\": %" PRIu64 ",\n",
          r->writes, r->writes_ok, r->again_retries);
  json_reasons(f, "write_refusals", r->write_refusals);
  fprintf(f, "  \"reads\": %" PRIu64 ",\n  \"reads_ok\": %" PRIu64 ",\n  \"read_again_retries\": %" PRIu64 ",\n",
          r->reads, r->reads_ok, r->read_again_retries);
  json_reasons(f, "read_failures", r->read_failures);
  fprintf(f, "  \"interrupted\": %s,\n", g_stop ? "true" : "false");
  fprintf(f, "  \"error\": %s%s%s,\n", r->fatal_rc ? "\"" : "", r->fatal_rc ? tob_strerror(r->fatal_rc) : "null",
          r->fatal_rc ? "\"" : "");
  json_stats(f, "write_phase_ns", r->write_phase_ns, r->samples, false);
  json_stats(f, "latency_last_write_to_publish_ns", r->latency_last_ns, r->samples, false);
  json_stats(f, "latency_write_to_publish_ns", r->latency_first_ns, r->samples, true);
  fprintf(f, "}\n");
  if (fclose(f) != 0) {
    fprintf(stderr, "tob-labels: %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

static void print_summary(const struct run *r, uint16_t node) {
  const long run = r->ticks_done - r->ticks_idle;
  printf("tob-labels node %u: %u labels, tick %u ms: %ld periods with labels due, %ld successful (%.2f%%)\n", node,
         r->w->count, r->w->tick_ms, run, r->ticks_ok, run > 0 ? 100.0 * (double)r->ticks_ok / (double)run : 0.0);
  printf("  writes %" PRIu64 ", taken %" PRIu64 ", refused:", r->writes, r->writes_ok);
  for (int i = 1; i < R_COUNT; i++) {
    if (r->write_refusals[i] > 0) printf(" %s %" PRIu64, reason_name(i), r->write_refusals[i]);
  }
  printf("%s\n", r->writes == r->writes_ok ? " none" : "");
  printf("  reads %" PRIu64 ", right %" PRIu64 ", failed:", r->reads, r->reads_ok);
  for (int i = 1; i < R_COUNT; i++) {
    if (r->read_failures[i] > 0) printf(" %s %" PRIu64, reason_name(i), r->read_failures[i]);
  }
  printf("%s\n", r->reads == r->reads_ok ? " none" : "");
}

int main(int argc, char **argv) {
  /* Options first (they follow "--"), so --help and mistakes need no EAL. */
  kv_app_name = "tob-labels";
  const int dashdash = kv_app_dashdash(argc, argv);
  if (kv_app_wants_help(argc, argv)) {
    usage(stdout, argv[0]);
    return 0;
  }
  struct options opt;
  const int app_argc = dashdash < argc ? argc - dashdash - 1 : 0;
  int rc = parse_options(app_argc, argv + dashdash + (dashdash < argc ? 1 : 0), &opt);
  if (rc != 0) return rc;
  struct workload w;
  if (build_workload(&opt, &w) != 0) {
    free_workload(&w);
    return 2;
  }
  const int64_t tick_ns = (int64_t)w.tick_ms * NS_PER_MS;
  long ticks_total = opt.ticks;
  if (opt.seconds_given) {
    const double n = ceil(opt.seconds * 1000.0 / (double)w.tick_ms);
    if (n > (double)TICKS_MAX) {
      fprintf(stderr, "tob-labels: --seconds %g makes %.0f ticks of %u ms, at most %ld allowed\n", opt.seconds, n,
              w.tick_ms, TICKS_MAX);
      free_workload(&w);
      return 2;
    }
    ticks_total = (long)n;
  }
  if (opt.print_set) {
    print_set(&opt, &w);
    free_workload(&w);
    return 0;
  }

  struct tob_client *c = kv_app_attach(dashdash, argv, opt.cluster);
  if (c == NULL) {
    free_workload(&w);
    return 1;
  }
  const uint16_t node = tob_node_id(c);
  int status = 1;
  static struct run r; /* PENDING_MAX ticks: not for the stack */
  memset(&r, 0, sizeof r);
  r.client = c;
  r.opt = &opt;
  r.w = &w;
  r.ticks_total = ticks_total;
  r.tick_ns = tick_ns;
  r.latency_first_ns = calloc((size_t)ticks_total, sizeof(int64_t));
  r.latency_last_ns = calloc((size_t)ticks_total, sizeof(int64_t));
  r.write_phase_ns = calloc((size_t)ticks_total, sizeof(int64_t));
  char default_csv[64], default_summary[64];
  snprintf(default_csv, sizeof default_csv, "tob-labels-node%u.csv", node);
  snprintf(default_summary, sizeof default_summary, "tob-labels-node%u.json", node);
  const char *csv_path = opt.csv_path != NULL ? opt.csv_path : default_csv;
  const char *summary_path = opt.summary_path != NULL ? opt.summary_path : default_summary;
  int64_t start = 0, lead = 0, earliest0 = 0, earliest1 = 0;
  if (r.latency_first_ns == NULL || r.latency_last_ns == NULL || r.write_phase_ns == NULL) {
    fprintf(stderr, "tob-labels: out of memory for %ld ticks\n", ticks_total);
    goto out;
  }
  earliest0 = tob_kv_earliest_pub_ns(c, tob_now_ns(c));
  if (earliest0 < 0) {
    fprintf(stderr, "tob-labels: %s (the cluster needs an [ic] section)\n", tob_strerror((int)earliest0));
    goto out;
  }
  if (opt.start_ns > 0) {
    start = (opt.start_ns + tick_ns - 1) / tick_ns * tick_ns;
  } else {
    const int64_t align_ns = opt.align_ms * NS_PER_MS;
    start = ((tob_now_ns(c) + ALIGN_LEAD_NS) / align_ns + 1) * align_ns;
    start = (start + tick_ns - 1) / tick_ns * tick_ns;
  }
  lead = start - tob_now_ns(c);
  if (lead < 0) {
    fprintf(stderr, "tob-labels: --start-ns is %.3f s in the past\n", (double)-lead / 1e9);
    goto out;
  }
  /* Two ticks in one IC period would share one instance and one t_pub: the second tick's
   * values would replace the first's (docs/protocol-ic.md: (key, t_pub) is unique in a batch). */
  earliest0 = tob_kv_earliest_pub_ns(c, start);
  earliest1 = tob_kv_earliest_pub_ns(c, start + tick_ns);
  if (earliest1 == earliest0) {
    fprintf(stderr,
            "tob-labels: the IC period is longer than the tick of %u ms (both ticks publish at the same instant): "
            "configure [ic] period x cycle to at most the tick\n",
            w.tick_ms);
    goto out;
  }
  if (earliest0 - start > (int64_t)(PENDING_MAX - 1) * tick_ns) {
    fprintf(stderr, "tob-labels: the store publishes %.1f ms after a write, more than %d ticks of %u ms\n",
            (double)(earliest0 - start) / 1e6, PENDING_MAX - 1, w.tick_ms);
    goto out;
  }
  if (strcmp(csv_path, "none") != 0) {
    r.csv = fopen(csv_path, "w");
    if (r.csv == NULL) {
      fprintf(stderr, "tob-labels: %s: %s\n", csv_path, strerror(errno));
      goto out;
    }
    fprintf(r.csv, "period,tick_abs,activation_ns,t_pub_ns,due,writes_ok,reads_ok,write_start_ns,write_end_ns,read_ns,"
                   "ok,first_failure\n");
  }

  kv_app_catch_signals();

  printf("tob-labels: node %u client %u, %u labels (%zu periods, tick %u ms), %ld ticks, publishing %.2f ms after "
         "a tick starts, first tick in %.2f s\n",
         node, tob_client_id(c), w.count, w.group_count, w.tick_ms, ticks_total, (double)(earliest0 - start) / 1e6,
         (double)lead / 1e9);
  fflush(stdout);

  const int64_t read_delay_ns = opt.read_delay_us * 1000LL;
  long next = 0;
  while (r.fatal_rc == 0) {
    if (g_stop) break;
    const int64_t now = tob_now_ns(c);
    /* Writes first: a tick's writes must be made within its IC period, while its reads only
     * have to come before the next version of the labels is published, a tick later. */
    if (next < ticks_total && now >= start + next * tick_ns) {
      if (r.pending_count == PENDING_MAX) {
        /* Cannot happen after the check at start unless publishing instants move; refuse
         * rather than overwrite a tick. */
        fprintf(stderr, "tob-labels: %d ticks wait for their publishing instant: giving up\n", PENDING_MAX);
        break;
      }
      struct tick *t = &r.pending[(r.pending_head + r.pending_count) % PENDING_MAX];
      memset(t, 0, sizeof *t);
      t->index = next;
      t->activation_ns = start + next * tick_ns;
      t->tick_abs = (uint64_t)(t->activation_ns / tick_ns);
      write_tick(&r, t);
      r.pending_count++;
      next++;
      continue;
    }
    /* Then the oldest tick whose publishing instant has come. */
    if (r.pending_count > 0 && now >= r.pending[r.pending_head].t_pub_ns + read_delay_ns) {
      struct tick *t = &r.pending[r.pending_head];
      read_tick(&r, t);
      finish_tick(&r, t);
      r.pending_head = (r.pending_head + 1) % PENDING_MAX;
      r.pending_count--;
      continue;
    }
    if (next >= ticks_total && r.pending_count == 0) break;
    int64_t wake = INT64_MAX;
    if (next < ticks_total) wake = start + next * tick_ns;
    if (r.pending_count > 0) {
      const int64_t readable = r.pending[r.pending_head].t_pub_ns + read_delay_ns;
      if (readable < wake) wake = readable;
    }
    if (!wait_until(c, wake)) break;
  }
  if (r.fatal_rc != 0) fprintf(stderr, "tob-labels: %s\n", tob_strerror(r.fatal_rc));
  if (g_stop) printf("tob-labels: interrupted\n");
  print_summary(&r, node);
  const long run = r.ticks_done - r.ticks_idle;
  status = r.fatal_rc != 0 ? 1 : (r.ticks_ok == run && run > 0 ? 0 : 3);
  if (strcmp(summary_path, "none") != 0 && write_summary(&r, summary_path, node) != 0) status = 1;

out:
  if (r.csv != NULL && fclose(r.csv) != 0) {
    fprintf(stderr, "tob-labels: writing the CSV: %s\n", strerror(errno));
    status = 1;
  }
  free(r.latency_first_ns);
  free(r.latency_last_ns);
  free(r.write_phase_ns);
  rc = tob_detach(c);
  if (rc < 0 && rc != TOB_EDETACHED) fprintf(stderr, "tob-labels: detach: %s\n", tob_strerror(rc));
  free_workload(&w);
  rte_eal_cleanup();
  return status;
}
