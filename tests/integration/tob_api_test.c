/* The error paths of include/tob.h against a running daemon (run by client_test.py as a DPDK
 * secondary of one node). Each check prints PASS/FAIL; the last line is `N passed, M failed`.
 *
 *   tob-api-test --proc-type=secondary --file-prefix tob-node0 -- CLUSTER MAX_CLIENTS PAYLOAD_MAX
 *       [KEY_BYTES VALUE_BYTES NUMERIC_PREFIX AGREED_KEY]
 *
 * Without the last four the cluster must have no [ic] (every key-value call is TOB_ENOIC); with
 * them it has one: [ic] key_bytes and value_bytes, a key prefix of a numeric class, and a key the
 * daemons' built-in writer publishes every period (--ic-gen-keys, e.g. gen2).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include <rte_eal.h>

#include "tob.h"

static int passed, failed;

static void check(const char *name, int ok, const char *detail) {
  printf("%s: %s%s%s\n", ok ? "PASS" : "FAIL", name, detail[0] ? " -- " : "", detail);
  if (ok) passed++; else failed++;
}

/* The key-value calls' error paths (and one read of an agreed key) on a cluster without or with
 * [ic]. ic_args: NULL, or KEY_BYTES VALUE_BYTES NUMERIC_PREFIX AGREED_KEY. */
static void kv_checks(struct tob_client *c, char **ic_args) {
  char detail[256];
  uint8_t v[64] = {0};
  const int64_t now = tob_now_ns(c);
  if (ic_args == NULL) {
    int rc = tob_kv_write(c, "k", 1, now + 1000000000LL, v, 8);
    check("without [ic], tob_kv_write is TOB_ENOIC", rc == TOB_ENOIC, tob_strerror(rc));
    rc = tob_kv_read(c, "k", 1, 0, v, sizeof v, NULL);
    check("without [ic], tob_kv_read is TOB_ENOIC", rc == TOB_ENOIC, tob_strerror(rc));
    check("without [ic], tob_kv_earliest_pub_ns is TOB_ENOIC", tob_kv_earliest_pub_ns(c, now) == TOB_ENOIC, "");
    return;
  }
  const size_t key_bytes = (size_t)atol(ic_args[0]), value_bytes = (size_t)atol(ic_args[1]);
  const char *numeric = ic_args[2], *agreed = ic_args[3];
  char key[300];
  const int64_t e = tob_kv_earliest_pub_ns(c, now);
  snprintf(detail, sizeof detail, "%.3f ms ahead", (double)(e - now) / 1e6);
  check("the earliest publishing instant lies ahead", e > now, detail);
  int rc = tob_kv_write(c, "api/a", 5, now, v, 1);
  check("a write for an instant its instance cannot make is TOB_EDEADLINE at once", rc == TOB_EDEADLINE,
        tob_strerror(rc));
  rc = tob_kv_write(c, "", 0, e + 1000000000LL, v, 1);
  check("an empty key is TOB_EINVAL", rc == TOB_EINVAL, tob_strerror(rc));
  memset(key, 'k', sizeof key);
  rc = key_bytes + 1 <= sizeof key ? tob_kv_write(c, key, key_bytes + 1, e + 1000000000LL, v, 1) : TOB_ETOOLARGE;
  check("a key longer than [ic] key_bytes is TOB_ETOOLARGE", rc == TOB_ETOOLARGE, tob_strerror(rc));
  rc = value_bytes + 1 <= sizeof v ? tob_kv_write(c, "api/a", 5, e + 1000000000LL, v, value_bytes + 1) : TOB_ETOOLARGE;
  check("a value longer than [ic] value_bytes is TOB_ETOOLARGE", rc == TOB_ETOOLARGE, tob_strerror(rc));
  snprintf(key, sizeof key, "%sapi", numeric);
  rc = tob_kv_write(c, key, strlen(key), e + 1000000000LL, v, 3);
  check("a 3-byte value for a numeric key is TOB_EINVAL", rc == TOB_EINVAL, tob_strerror(rc));
  tob_kv_f64(NAN, v);
  rc = tob_kv_write(c, key, strlen(key), e + 1000000000LL, v, 8);
  check("a NaN for a median key is TOB_EINVAL", rc == TOB_EINVAL, tob_strerror(rc));
  tob_kv_f64(-2.5, v);
  check("tob_kv_f64 and tob_kv_to_f64 round-trip", tob_kv_to_f64(v) == -2.5, "");
  tob_kv_i64(-7, v);
  check("tob_kv_i64 and tob_kv_to_i64 round-trip", tob_kv_to_i64(v) == -7, "");
  tob_kv_f64(1.25, v);
  rc = tob_kv_write(c, key, strlen(key), tob_kv_earliest_pub_ns(c, tob_now_ns(c)), v, 8);
  check("a well-formed write is taken", rc == TOB_OK, tob_strerror(rc));
  rc = tob_kv_read(c, "api/never", 9, 0, v, sizeof v, NULL);
  check("reading a key nobody wrote is TOB_ENOTFOUND", rc == TOB_ENOTFOUND, tob_strerror(rc));

  /* The built-in writers of all nodes publish `agreed` every period. */
  int64_t t_pub = 0;
  for (int tries = 0; tries < 2000; tries++) {
    rc = tob_kv_read(c, agreed, strlen(agreed), 0, v, sizeof v, &t_pub);
    if (rc != TOB_EAGAIN && rc != TOB_ENOTFOUND) break;
    const struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  const int64_t at = tob_now_ns(c);
  snprintf(detail, sizeof detail, "rc %d (%s), published %.1f ms ago", rc, rc < 0 ? tob_strerror(rc) : "bytes",
           (double)(at - t_pub) / 1e6);
  check("an agreed key reads back, published in the past", rc > 0 && t_pub <= at, detail);
  rc = tob_kv_read(c, agreed, strlen(agreed), 0, v, 1, NULL);
  check("a buffer shorter than the value is TOB_ETOOLARGE", rc == TOB_ETOOLARGE, tob_strerror(rc));
  rc = tob_kv_read(c, agreed, strlen(agreed), at + 60000000000LL, v, sizeof v, NULL);
  check("nothing is published in the future: t_min ahead is TOB_ENOTFOUND", rc == TOB_ENOTFOUND, tob_strerror(rc));
  rc = tob_kv_read(c, NULL, 3, 0, v, sizeof v, NULL);
  check("a NULL key is TOB_EINVAL", rc == TOB_EINVAL, tob_strerror(rc));
}

int main(int argc, char **argv) {
  int eal = rte_eal_init(argc, argv);
  if (eal < 0) {
    printf("FAIL: EAL secondary init\n0 passed, 1 failed\n");
    return 1;
  }
  argc -= eal;
  argv += eal;
  if (argc != 4 && argc != 8) {
    printf("usage: ... -- CLUSTER MAX_CLIENTS PAYLOAD_MAX [KEY_BYTES VALUE_BYTES NUMERIC_PREFIX AGREED_KEY]\n"
           "0 passed, 1 failed\n");
    return 2;
  }
  const char *cluster = argv[1];
  const int max_clients = atoi(argv[2]);
  const size_t payload_max = (size_t)atol(argv[3]);
  char detail[256];
  struct tob_client *c = NULL;

  int rc = tob_attach("not-this-cluster", NULL, &c);
  snprintf(detail, sizeof detail, "%d: %s", rc, tob_strerror(rc));
  check("attaching to another cluster's name is refused with TOB_ECLUSTER", rc == TOB_ECLUSTER && c == NULL, detail);

  rc = tob_attach(NULL, NULL, &c);
  check("a NULL cluster name is TOB_EINVAL", rc == TOB_EINVAL, "");

  struct tob_attach_options old = {1};
  rc = tob_attach(cluster, &old, &c);
  snprintf(detail, sizeof detail, "%d: %s", rc, tob_strerror(rc));
  check("resuming from a seq the daemon no longer holds is TOB_ETOOLATE", rc == TOB_ETOOLATE && c == NULL, detail);

  rc = tob_attach(cluster, NULL, &c);
  snprintf(detail, sizeof detail, "%d: %s", rc, tob_strerror(rc));
  check("attach to the running daemon", rc == TOB_OK && c != NULL, detail);
  if (c == NULL) {
    printf("%d passed, %d failed\n", passed, failed);
    return 1;
  }
  char *big = calloc(1, payload_max + 1);
  rc = tob_submit(c, big, payload_max + 1);
  check("a payload above [limits] payload_bytes is TOB_ETOOLARGE", rc == TOB_ETOOLARGE, tob_strerror(rc));
  rc = tob_submit(c, big, payload_max);
  check("a payload of exactly [limits] payload_bytes is taken", rc == TOB_OK, tob_strerror(rc));
  free(big);
  rc = tob_submit(c, NULL, 5);
  check("a NULL payload is TOB_EINVAL", rc == TOB_EINVAL, "");
  uint64_t submitted = 1, refused = 0;

  /* Bursts: a prefix is taken, and the reason when none is. */
  char *bytes = calloc(1, payload_max + 1);
  struct tob_msg burst[128];
  for (int i = 0; i < 3; i++) burst[i] = (struct tob_msg){bytes, 16};
  rc = tob_submit_burst(c, burst, 3);
  snprintf(detail, sizeof detail, "%d", rc);
  check("a burst of three is taken whole", rc == 3, detail);
  submitted += rc > 0 ? (uint64_t)rc : 0;
  burst[1].length = payload_max + 1;
  rc = tob_submit_burst(c, burst, 3);
  snprintf(detail, sizeof detail, "%d", rc);
  check("a burst stops before a message above payload_bytes and says how many it took", rc == 1, detail);
  submitted += rc > 0 ? (uint64_t)rc : 0;
  rc = tob_submit_burst(c, burst + 1, 2);
  check("submitting again from that message is TOB_ETOOLARGE", rc == TOB_ETOOLARGE, tob_strerror(rc));
  burst[1] = (struct tob_msg){NULL, 4};
  rc = tob_submit_burst(c, burst + 1, 2);
  check("a burst starting with a NULL payload is TOB_EINVAL", rc == TOB_EINVAL, tob_strerror(rc));
  rc = tob_submit_burst(c, NULL, 2);
  check("a NULL burst is TOB_EINVAL", rc == TOB_EINVAL, tob_strerror(rc));
  rc = tob_submit_burst(c, burst, 0);
  check("an empty burst takes nothing", rc == 0, tob_strerror(rc));
  /* More than the client's submit ring holds (the daemon reads it only once it is published):
   * a prefix is taken, the rest is counted as refused. */
  for (int i = 0; i < 128; i++) burst[i] = (struct tob_msg){bytes, payload_max};
  rc = tob_submit_burst(c, burst, 128);
  snprintf(detail, sizeof detail, "%d of 128 max-size messages taken", rc);
  check("a burst larger than the submit ring is taken in part (backpressure)", rc > 0 && rc < 128, detail);
  if (rc > 0) {
    submitted += (uint64_t)rc;
    refused += 128 - (uint64_t)rc;
  }
  free(bytes);

  /* Every slot taken: the next attach is TOB_ENOSLOT, and detaching frees one again. */
  struct tob_client *more[64];
  int taken = 0;
  for (; taken < 64; taken++) {
    rc = tob_attach(cluster, NULL, &more[taken]);
    if (rc != TOB_OK) break;
  }
  snprintf(detail, sizeof detail, "%d more clients attached (max %d), then %d: %s", taken, max_clients, rc,
           tob_strerror(rc));
  check("with every client slot taken, attach is TOB_ENOSLOT", rc == TOB_ENOSLOT && taken == max_clients - 1, detail);
  for (int i = 0; i < taken; i++) tob_detach(more[i]);
  rc = tob_attach(cluster, NULL, &more[0]);
  check("a detached slot can be attached again", rc == TOB_OK, tob_strerror(rc));
  if (rc == TOB_OK) tob_detach(more[0]);

  /* Distinct, non-empty messages for every error. */
  const int codes[] = {TOB_EAGAIN,    TOB_EINVAL,    TOB_ENODAEMON, TOB_EVERSION, TOB_ECLUSTER,
                       TOB_ENOSLOT,   TOB_ETOOLARGE, TOB_EOVERRUN,  TOB_ETOOLATE, TOB_EDETACHED,
                       TOB_ENOEAL,    TOB_ENOIC,     TOB_EDEADLINE, TOB_ENOTFOUND, TOB_EEVICTED,
                       TOB_EREDUCTION};
  int distinct = 1;
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
    for (size_t j = i + 1; j < sizeof codes / sizeof codes[0]; j++)
      if (strcmp(tob_strerror(codes[i]), tob_strerror(codes[j])) == 0) distinct = 0;
  check("every error code has its own message", distinct, "");

  kv_checks(c, argc == 8 ? argv + 4 : NULL);

  struct tob_client_stats st;
  rc = tob_get_stats(c, &st);
  snprintf(detail, sizeof detail, "submitted %" PRIu64 " (expected %" PRIu64 "), refused %" PRIu64 " (expected %" PRIu64 ")",
           st.submitted, submitted, st.refused, refused);
  check("stats count the submissions and the refusals", rc == TOB_OK && st.submitted == submitted && st.refused == refused,
        detail);
  rc = tob_detach(c);
  check("detach", rc == TOB_OK, tob_strerror(rc));
  printf("%d passed, %d failed\n", passed, failed);
  rte_eal_cleanup();
  return failed == 0 ? 0 : 1;
}
