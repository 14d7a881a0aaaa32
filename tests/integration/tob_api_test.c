/* The error paths of include/tob.h against a running daemon (run by client_test.py as a DPDK
 * secondary of one node). Each check prints PASS/FAIL; the last line is `N passed, M failed`.
 *
 *   tob-api-test --proc-type=secondary --file-prefix tob-node0 -- CLUSTER MAX_CLIENTS PAYLOAD_MAX
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>

#include "tob.h"

static int passed, failed;

static void check(const char *name, int ok, const char *detail) {
  printf("%s: %s%s%s\n", ok ? "PASS" : "FAIL", name, detail[0] ? " -- " : "", detail);
  if (ok) passed++; else failed++;
}

int main(int argc, char **argv) {
  int eal = rte_eal_init(argc, argv);
  if (eal < 0) {
    printf("FAIL: EAL secondary init\n0 passed, 1 failed\n");
    return 1;
  }
  argc -= eal;
  argv += eal;
  if (argc != 4) {
    printf("usage: ... -- CLUSTER MAX_CLIENTS PAYLOAD_MAX\n0 passed, 1 failed\n");
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
  const int codes[] = {TOB_EAGAIN, TOB_EINVAL, TOB_ENODAEMON, TOB_EVERSION, TOB_ECLUSTER, TOB_ENOSLOT,
                       TOB_ETOOLARGE, TOB_EOVERRUN, TOB_ETOOLATE, TOB_EDETACHED, TOB_ENOEAL};
  int distinct = 1;
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
    for (size_t j = i + 1; j < sizeof codes / sizeof codes[0]; j++)
      if (strcmp(tob_strerror(codes[i]), tob_strerror(codes[j])) == 0) distinct = 0;
  check("every error code has its own message", distinct, "");

  struct tob_client_stats st;
  rc = tob_get_stats(c, &st);
  snprintf(detail, sizeof detail, "submitted %" PRIu64, st.submitted);
  check("stats count the submissions", rc == TOB_OK && st.submitted == 1, detail);
  rc = tob_detach(c);
  check("detach", rc == TOB_OK, tob_strerror(rc));
  printf("%d passed, %d failed\n", passed, failed);
  rte_eal_cleanup();
  return failed == 0 ? 0 : 1;
}
