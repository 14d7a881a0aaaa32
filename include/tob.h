/* dpdk-tob client API (docs/architecture.md): co-located DPDK applications submit messages to the
 * node's total order broadcast and receive the cluster's deliveries through shared rings.
 *
 * The application is a DPDK secondary process of the node's dpdk-tob daemon: it calls
 * rte_eal_init() with --proc-type=secondary and the daemon's --file-prefix, then tob_attach().
 *
 *   struct tob_client *c;
 *   int rc = tob_attach("lab", NULL, &c);           // the cluster name of cluster.ini
 *   if (rc < 0) fprintf(stderr, "%s\n", tob_strerror(rc));
 *   tob_submit(c, "hello", 5);                       // -TOB_EAGAIN: try again later
 *   struct tob_delivery d[32];
 *   int n = tob_poll(c, d, 32);                      // the next deliveries, in total order
 *   for (int i = 0; i < n; i++) {
 *       tob_wait_release(c, &d[i]);                   // act at the same instant on every host
 *       use(d[i].payload, d[i].length);
 *   }
 *   tob_detach(c);
 *
 * Every function is non-blocking except tob_attach and tob_detach (wait up to a second for the
 * daemon) and tob_wait_release (waits for the release instant). One struct tob_client must be used by
 * one thread at a time. All errors are negative TOB_E* values; tob_strerror() describes them.
 */
#ifndef TOB_H
#define TOB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The shared-memory layout version this header was built for; tob_attach refuses a daemon
 * with another one (TOB_EVERSION). */
#define TOB_ABI_VERSION 5

enum tob_error {
  TOB_OK = 0,
  TOB_EAGAIN = -11,        /* backpressure: the node's queue or rings are full, or this client
                              lags behind its deliveries; nothing was taken, try again later */
  TOB_EINVAL = -22,        /* a NULL pointer or an invalid argument */
  TOB_ENODAEMON = -1000,   /* no dpdk-tob daemon runs under this file prefix (or it stopped) */
  TOB_EVERSION = -1001,    /* the daemon speaks another TOB_ABI_VERSION */
  TOB_ECLUSTER = -1002,    /* the daemon serves another cluster than the one named */
  TOB_ENOSLOT = -1003,     /* every client slot of the daemon is taken */
  TOB_ETOOLARGE = -1004,   /* payload larger than the cluster's [limits] payload_bytes */
  TOB_EOVERRUN = -1005,    /* this client fell so far behind that deliveries it had not read
                              are gone; it must detach (nothing was silently skipped) */
  TOB_ETOOLATE = -1006,    /* resume position older than what the daemon still holds */
  TOB_EDETACHED = -1007,   /* the client was detached (by tob_detach, or the daemon stopped) */
  TOB_ENOEAL = -1008,      /* rte_eal_init has not run in this process */
  TOB_ENOIC = -1009,       /* the cluster runs no interactive consistency (no [ic] section) */
  TOB_EDEADLINE = -1010,   /* tob_kv_write: the IC instance that would carry the write finishes
                              after t_pub_ns; nothing was taken (seed 004: refused at once) */
  TOB_ENOTFOUND = -1011,   /* tob_kv_read: no version of the key published in [t_min, now] */
  TOB_EEVICTED = -1012,    /* tob_kv_read: that range reaches into versions dropped by retention */
  TOB_EREDUCTION = -1013   /* tob_kv_read: the value published for the range could not be
                              reduced (too many missing or faulty copies): no value rather than
                              a wrong one */
};

/* One delivered message. Identical on every node: seq, cycle, sender, client, msg_id,
 * submit_ns, deliver_ns, release_ns and the payload. */
struct tob_delivery {
  uint64_t seq;            /* global sequence number: strictly increasing, the same on every
                              node for the same message (not dense: turn * 65536 + index) */
  int64_t cycle;           /* cycle (instance) in which the sender transmitted it */
  uint64_t msg_id;         /* the sender node's id of the message */
  int64_t submit_ns;       /* when the sender's application submitted it (global time) */
  int64_t deliver_ns;      /* the membership point that delivered it (global time) */
  int64_t release_ns;      /* absolute release instant, the same on every node (seed 001
                              WRITE_WAIT/READ_WAIT): the end of the delivering cycle */
  uint16_t sender;         /* sender node id */
  uint16_t client;         /* client id on the sender node (tob_client_id) */
  uint32_t length;         /* payload bytes */
  const uint8_t *payload;  /* points into the node's delivery ring: valid until the next
                              tob_poll or tob_detach on this client. A client so far behind that
                              the ring had to write over what it holds is told at its next
                              tob_poll (TOB_EOVERRUN): copy what must outlive the next poll */
};

/* One message of a burst (tob_submit_burst). */
struct tob_msg {
  const void *payload;
  size_t length;
};

struct tob_attach_options {
  /* 0: deliveries from now on. Otherwise resume after this global sequence number (the seq of
   * the last delivery the application handled before it detached): the daemon replays what it
   * still holds (TOB_ETOOLATE when it does not hold that far back). */
  uint64_t resume_after_seq;
};

struct tob_client_stats {
  uint64_t submitted;      /* messages handed to the daemon */
  uint64_t refused;        /* messages not taken for backpressure (tob_submit calls answered
                              TOB_EAGAIN, and the rest of bursts stopped short by it) */
  uint64_t delivered;      /* deliveries returned by tob_poll */
  uint64_t lagging_events; /* times the daemon flagged this client as lagging (backpressure) */
  uint64_t pending;        /* deliveries the daemon holds for this client, not yet polled */
  uint64_t last_seq;       /* seq of the last delivery returned */
  /* Key-value store ([ic]). */
  uint64_t kv_written;     /* tob_kv_write calls handed to the daemon */
  uint64_t kv_refused;     /* tob_kv_write calls refused at once (any error) */
  uint64_t kv_late;        /* handed over, then refused by the daemon: the write crossed the end of
                              its period on the way and its instance could no longer make t_pub */
  uint64_t kv_dropped;     /* handed over, then refused by the daemon for another reason (the
                              period's batch was full: [ic] keys_per_period) */
};

struct tob_client;

int tob_attach(const char *cluster_name, const struct tob_attach_options *options,
               struct tob_client **out);
int tob_detach(struct tob_client *client);
/* Non-blocking. 0 when the message was taken: the daemon sends it in a coming slot of this
 * node and every node delivers it once, in the same order (or reports it undelivered in its
 * events when the node fails before confirming it). */
int tob_submit(struct tob_client *client, const void *payload, size_t length);
/* Non-blocking. Submits msgs[0..n) in this order, as n tob_submit calls would, with one store to
 * the shared ring for the whole burst. Returns how many were taken, a prefix (n when all were);
 * when none was taken, the reason: TOB_EAGAIN (backpressure), TOB_ETOOLARGE or TOB_EINVAL for
 * msgs[0], TOB_EDETACHED. A burst stopped short by a message that is too large or invalid
 * returns the count before it; submitting from that message again returns its error. */
int tob_submit_burst(struct tob_client *client, const struct tob_msg *msgs, unsigned n);
/* Up to max deliveries in total order (0 when none is ready); payload pointers stay valid
 * until the next tob_poll. A negative value is an error (TOB_EOVERRUN, TOB_EDETACHED...). */
int tob_poll(struct tob_client *client, struct tob_delivery *out, unsigned max);
/* Waits until the delivery's release instant: sleeps through all but the last 300 us, then
 * spins on the TSC. Returns how late it woke (ns, >= 0; large when the call came after the
 * instant). Run the thread SCHED_FIFO for the tightest wake-ups. The daemon is told the instant
 * and the lateness (two stores into shared memory, no system call): its /tob/release telemetry
 * estimates from them the wake-up skew across the nodes (docs/operations.md). */
int64_t tob_wait_release(struct tob_client *client, const struct tob_delivery *delivery);
/* Global time now, as the daemon's calibrated TSC sees it. */
int64_t tob_now_ns(struct tob_client *client);
uint16_t tob_client_id(const struct tob_client *client);
uint16_t tob_node_id(const struct tob_client *client);
int tob_get_stats(const struct tob_client *client, struct tob_client_stats *out);
const char *tob_strerror(int error);

/* Interactive consistency and the time-aware key-value store (seed 004, docs/protocol-ic.md).
 * Replicas of a control application write their values for a publishing instant; every node
 * agrees on all replicas' values (RT-EIGByz, tolerating f lying, omitting or crashed nodes),
 * reduces them per key (majority, fault-tolerant median or midpoint, from cluster.ini [ic]) and
 * publishes the result at exactly t_pub on every node. Both calls are non-blocking.
 *
 * Numbers for the median and midpoint reductions are 8 bytes big-endian: an IEEE double or an
 * int64, per key class; tob_kv_f64/tob_kv_to_f64 convert. */

/* Writes `value` for `key`, to be published at t_pub_ns (global time). 0 when taken; then the
 * IC instance of the current period carries it. TOB_EDEADLINE when that instance cannot finish
 * by t_pub_ns (tob_kv_earliest_pub_ns tells the earliest possible), TOB_ETOOLARGE for a key or
 * value beyond the [ic] bounds, TOB_EINVAL for an empty or NULL key or a value that is not a
 * number for a numeric key, TOB_EAGAIN when the ring or the pool to the daemon is full,
 * TOB_EDETACHED after detach, TOB_ENOIC without IC. A taken write can still be refused by the
 * daemon (it crossed its period's end on the way, or the batch was full): tob_get_stats counts
 * those as kv_late and kv_dropped. */
int tob_kv_write(struct tob_client *client, const void *key, size_t key_len, int64_t t_pub_ns,
                 const void *value, size_t value_len);
/* The value of the latest version of `key` published in [t_min_ns, now] (seed 004 §IV-B:
 * "the latest value published no earlier than t_min"), copied to `value` (at most `capacity`
 * bytes); returns its length (>= 0) and, if t_pub_ns is not NULL, its publishing instant.
 * Errors: TOB_ENOTFOUND, TOB_EEVICTED, TOB_EREDUCTION, TOB_ETOOLARGE (capacity too small, or
 * a key beyond [ic] key_bytes), TOB_EAGAIN (the daemon is publishing that very instant: at
 * t_pub itself, for up to a few hundred microseconds; retry), TOB_ENODAEMON (the daemon is gone),
 * TOB_EINVAL (empty or NULL key), TOB_EDETACHED, TOB_ENOIC. */
int tob_kv_read(struct tob_client *client, const void *key, size_t key_len, int64_t t_min_ns,
                void *value, size_t capacity, int64_t *t_pub_ns);
/* The earliest publishing instant a write made at now_ns can get (the finish of the instance of
 * the period containing now_ns); negative errors: TOB_ENOIC without IC, TOB_EINVAL for a NULL
 * client or an instant before the schedule's epoch. */
int64_t tob_kv_earliest_pub_ns(struct tob_client *client, int64_t now_ns);
/* 8-byte big-endian numbers for the numeric reductions. */
void tob_kv_f64(double v, uint8_t out[8]);
double tob_kv_to_f64(const uint8_t in[8]);
void tob_kv_i64(int64_t v, uint8_t out[8]);
int64_t tob_kv_to_i64(const uint8_t in[8]);

#ifdef __cplusplus
}
#endif

#endif /* TOB_H */
