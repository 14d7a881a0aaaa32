/* The label workload of tob-labels (seed 004 §V-B): a set of labels, each with a period and a
 * size, in the proportions of the automotive benchmark of Kramer, Ziegenbein and Hamann ("Real
 * World Automotive Benchmarks for Free", WATERS 2015; the seed's reference [41]), and the values
 * every replica writes for them. Pure C, no I/O.
 *
 * - Periods: a label takes the period of the runnable that writes it; runnables are spread over
 *   periods as in the benchmark's Table III (1 ms 3%, 2 ms 2%, 5 ms 2%, 10 ms 25%, 20 ms 25%,
 *   50 ms 3%, 100 ms 20%, 200 ms 1%, 1000 ms 4%; angle-synchronous runnables, 15%, have no fixed
 *   period and are left out as in the seed). The seed's list {1,2,5,10,50,100,200,1000} omits
 *   20 ms; it is the default mix here, and 20 can be named explicitly.
 * - Sizes: the benchmark's Table I up to 16 bytes, which the seed keeps (99.1% of all labels):
 *   1 byte 35%, 2 bytes 49%, 4 bytes 13%, 5-8 bytes 0.8%, 9-16 bytes 1.3%.
 * - Counts per period and per size class are apportioned exactly (largest remainder), so a set
 *   of L labels always has the same composition; the seed only decides which label id gets which
 *   period and size, and the sizes inside the 5-8 and 9-16 classes.
 * - Values depend only on (label id, absolute tick), so every correct replica writes the same
 *   bytes for the same activation and a majority reduction publishes them.
 */
#ifndef TOB_LABEL_SET_H
#define TOB_LABEL_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LABEL_SIZE_MAX 16
#define LABEL_PERIODS_MAX 16
#define LABEL_COUNT_MAX 100000u
#define LABEL_PERIOD_MS_MAX 3600000u

struct label {
  uint32_t id;         /* 0..count-1; the key is prefix + id */
  uint32_t period_ms;
  uint8_t size_bytes;  /* 1..LABEL_SIZE_MAX */
};

struct label_share {
  uint32_t lo, hi; /* a period (lo == hi, ms) or a size class (bytes) */
  double share_pc;
};

/* Table III (periods, ms) and Table I up to 16 bytes (sizes); shares in percent as published. */
extern const struct label_share label_period_shares[];
extern const size_t label_period_share_count;
extern const struct label_share label_size_shares[];
extern const size_t label_size_share_count;

/* The seed's period list, the default mix. */
extern const uint32_t label_seed_periods_ms[];
extern const size_t label_seed_period_count;

struct label_set_spec {
  uint32_t count;                          /* 1..LABEL_COUNT_MAX */
  uint32_t periods_ms[LABEL_PERIODS_MAX];  /* one period: every label has it; several: the mix */
  size_t period_count;
  uint64_t seed;
};

/* Fills out[0..count) (ids in order). 0, or -1 with a message (count or periods out of range, a
 * period of a mix that Table III does not list, a period named twice). */
int label_set_generate(const struct label_set_spec *spec, struct label *out, char *err, size_t err_len);

/* Largest-remainder apportionment of `total` over shares[0..n) (any positive scale): counts sum
 * to total, each within one of its exact share. */
void label_apportion(const double *shares, size_t n, uint32_t total, uint32_t *counts);

/* The tick of a set: the greatest common divisor of its periods (ms). */
uint32_t label_tick_ms(const struct label *labels, size_t n);
/* Whether the label is activated at absolute tick `tick_abs` (tick_abs * tick_ms ms of global
 * time since the epoch): its period divides that instant. */
bool label_due(const struct label *l, uint64_t tick_abs, uint32_t tick_ms);
/* The value every replica writes for the label's activation at tick_abs: size_bytes bytes. */
void label_value(uint32_t id, uint64_t tick_abs, uint8_t out[LABEL_SIZE_MAX]);
/* prefix + decimal id, NUL-terminated: its length, or -1 when it does not fit. */
int label_key(char *out, size_t out_len, const char *prefix, uint32_t id);

/* splitmix64: the generator behind the set and the values. */
uint64_t label_rng_next(uint64_t *state);

#ifdef __cplusplus
}
#endif

#endif /* TOB_LABEL_SET_H */
