/* tob-example: the smallest complete application on include/tob.h.
 *
 * It runs next to a dpdk-tob daemon as a DPDK secondary process, submits a few messages and
 * prints every delivery of the cluster, in total order, at its release instant:
 *
 *   tob-example --proc-type=secondary --file-prefix tob-node1 --no-pci -- \
 *       --cluster netns --count 5 --seconds 3
 *
 * Every node's tob-example prints the same lines in the same order, and wakes for each within
 * microseconds of the others (tob_wait_release), which is what replicated state machines and
 * coordinated actions need.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>

#include "tob.h"

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [EAL options: --proc-type=secondary --file-prefix PREFIX] -- "
          "--cluster NAME [--count N] [--seconds S]\n",
          prog);
}

int main(int argc, char **argv) {
  /* 1. DPDK as a secondary process of the daemon (its --file-prefix names the daemon). */
  int eal_args = rte_eal_init(argc, argv);
  if (eal_args < 0) {
    fprintf(stderr, "tob-example: EAL init failed (is the daemon running with this --file-prefix?)\n");
    return 1;
  }
  argc -= eal_args;
  argv += eal_args;
  const char *cluster = NULL;
  int count = 3;
  double seconds = 2.0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--cluster") == 0 && i + 1 < argc) cluster = argv[++i];
    else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) count = atoi(argv[++i]);
    else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) seconds = atof(argv[++i]);
    else { usage(argv[0]); return 2; }
  }
  if (cluster == NULL || count < 0 || seconds <= 0) { usage(argv[0]); return 2; }

  /* 2. Attach: finds the daemon's shared memory, rings and pools by name. */
  struct tob_client *c;
  int rc = tob_attach(cluster, NULL, &c);
  if (rc < 0) {
    fprintf(stderr, "tob-example: attach: %s\n", tob_strerror(rc));
    return 1;
  }
  printf("attached to node %u as client %u\n", tob_node_id(c), tob_client_id(c));

  /* 3. Submit: non-blocking; TOB_EAGAIN means backpressure, so we retry a little later. */
  for (int k = 0; k < count; k++) {
    char text[64];
    int len = snprintf(text, sizeof text, "hello %d from node %u", k, tob_node_id(c));
    while ((rc = tob_submit(c, text, (size_t)len)) == TOB_EAGAIN) tob_poll(c, NULL, 0);
    if (rc < 0) { fprintf(stderr, "tob-example: submit: %s\n", tob_strerror(rc)); break; }
  }

  /* 4. Poll deliveries; act on each at its release instant, the same on every host. */
  const int64_t end = tob_now_ns(c) + (int64_t)(seconds * 1e9);
  while (tob_now_ns(c) < end) {
    struct tob_delivery d[32];
    int n = tob_poll(c, d, 32);
    if (n < 0) { fprintf(stderr, "tob-example: poll: %s\n", tob_strerror(n)); break; }
    for (int i = 0; i < n; i++) {
      int64_t late_ns = tob_wait_release(c, &d[i]);
      printf("seq %" PRIu64 " from node %u client %u: %.*s (released %+.1f us after the instant)\n",
             d[i].seq, d[i].sender, d[i].client, (int)d[i].length, (const char *)d[i].payload,
             (double)late_ns / 1e3);
    }
  }

  /* 5. Detach: the slot is free again; the deliveries it had are released. */
  rc = tob_detach(c);
  rte_eal_cleanup();
  return rc < 0 ? 1 : 0;
}
