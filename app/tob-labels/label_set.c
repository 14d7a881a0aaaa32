/* Label sets in the proportions of the automotive benchmark (label_set.h). */
#include "label_set.h"

#include <assert.h>
#include <stdio.h>

const struct label_share label_period_shares[] = {
    {1, 1, 3.0},   {2, 2, 2.0},     {5, 5, 2.0},     {10, 10, 25.0},     {20, 20, 25.0},
    {50, 50, 3.0}, {100, 100, 20.0}, {200, 200, 1.0}, {1000, 1000, 4.0},
};
const size_t label_period_share_count = sizeof label_period_shares / sizeof label_period_shares[0];

const struct label_share label_size_shares[] = {
    {1, 1, 35.0}, {2, 2, 49.0}, {4, 4, 13.0}, {5, 8, 0.8}, {9, 16, 1.3},
};
const size_t label_size_share_count = sizeof label_size_shares / sizeof label_size_shares[0];

const uint32_t label_seed_periods_ms[] = {1, 2, 5, 10, 50, 100, 200, 1000};
const size_t label_seed_period_count = sizeof label_seed_periods_ms / sizeof label_seed_periods_ms[0];

_Static_assert(sizeof label_period_shares / sizeof label_period_shares[0] <= LABEL_PERIODS_MAX,
               "every period of Table III fits a mix");

uint64_t label_rng_next(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [0, n) without modulo bias (n >= 1). */
static uint32_t rng_below(uint64_t *rng, uint32_t n) {
  assert(n >= 1);
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = label_rng_next(rng);
  while (x >= limit);
  return (uint32_t)(x % n);
}

void label_apportion(const double *shares, size_t n, uint32_t total, uint32_t *counts) {
  assert(shares != NULL && counts != NULL && n >= 1 && n <= LABEL_PERIODS_MAX);
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    assert(shares[i] > 0);
    sum += shares[i];
  }
  double remainder[LABEL_PERIODS_MAX];
  uint32_t given = 0;
  for (size_t i = 0; i < n; i++) {
    const double exact = (double)total * shares[i] / sum;
    counts[i] = (uint32_t)exact;
    remainder[i] = exact - counts[i];
    given += counts[i];
  }
  assert(given <= total && total - given <= n);
  /* The rest, one each, to the largest remainders (ties: the earlier entry, so the result is
   * the same on every machine). */
  while (given < total) {
    size_t best = 0;
    for (size_t i = 1; i < n; i++) {
      if (remainder[i] > remainder[best]) best = i;
    }
    counts[best]++;
    remainder[best] = -1;
    given++;
  }
}

static const struct label_share *period_share(uint32_t period_ms) {
  for (size_t i = 0; i < label_period_share_count; i++) {
    if (label_period_shares[i].lo == period_ms) return &label_period_shares[i];
  }
  return NULL;
}

int label_set_generate(const struct label_set_spec *spec, struct label *out, char *err, size_t err_len) {
  assert(spec != NULL && out != NULL && err != NULL);
  if (spec->count < 1 || spec->count > LABEL_COUNT_MAX) {
    snprintf(err, err_len, "label count %u is outside 1..%u", spec->count, LABEL_COUNT_MAX);
    return -1;
  }
  if (spec->period_count < 1 || spec->period_count > LABEL_PERIODS_MAX) {
    snprintf(err, err_len, "%zu periods given, 1..%d allowed", spec->period_count, LABEL_PERIODS_MAX);
    return -1;
  }
  double period_weights[LABEL_PERIODS_MAX];
  for (size_t i = 0; i < spec->period_count; i++) {
    const uint32_t p = spec->periods_ms[i];
    if (p < 1 || p > LABEL_PERIOD_MS_MAX) {
      snprintf(err, err_len, "period %u ms is outside 1..%u ms", p, LABEL_PERIOD_MS_MAX);
      return -1;
    }
    for (size_t j = 0; j < i; j++) {
      if (spec->periods_ms[j] == p) {
        snprintf(err, err_len, "period %u ms is named twice", p);
        return -1;
      }
    }
    const struct label_share *s = period_share(p);
    if (s == NULL && spec->period_count > 1) {
      snprintf(err, err_len,
               "period %u ms is not one of the benchmark's (1, 2, 5, 10, 20, 50, 100, 200, 1000): "
               "a mix needs their shares; a single period may be any",
               p);
      return -1;
    }
    period_weights[i] = s != NULL ? s->share_pc : 1.0;
  }

  uint32_t per_period[LABEL_PERIODS_MAX];
  label_apportion(period_weights, spec->period_count, spec->count, per_period);
  double size_weights[LABEL_PERIODS_MAX];
  for (size_t i = 0; i < label_size_share_count; i++) size_weights[i] = label_size_shares[i].share_pc;
  uint32_t per_size[LABEL_PERIODS_MAX];
  label_apportion(size_weights, label_size_share_count, spec->count, per_size);

  /* Compositions in order, then one seeded shuffle of each column: which id gets which period
   * and which size is the seed's; how many of each is not. */
  uint64_t rng = spec->seed;
  uint32_t id = 0;
  for (size_t i = 0; i < spec->period_count; i++) {
    for (uint32_t k = 0; k < per_period[i]; k++) out[id++].period_ms = spec->periods_ms[i];
  }
  assert(id == spec->count);
  id = 0;
  for (size_t i = 0; i < label_size_share_count; i++) {
    const struct label_share *s = &label_size_shares[i];
    for (uint32_t k = 0; k < per_size[i]; k++) {
      out[id++].size_bytes = (uint8_t)(s->lo + rng_below(&rng, s->hi - s->lo + 1));
    }
  }
  assert(id == spec->count);
  for (uint32_t i = spec->count - 1; i > 0; i--) {
    const uint32_t j = rng_below(&rng, i + 1);
    const uint32_t p = out[i].period_ms;
    out[i].period_ms = out[j].period_ms;
    out[j].period_ms = p;
    const uint32_t k = rng_below(&rng, i + 1);
    const uint8_t s = out[i].size_bytes;
    out[i].size_bytes = out[k].size_bytes;
    out[k].size_bytes = s;
  }
  for (uint32_t i = 0; i < spec->count; i++) {
    out[i].id = i;
    assert(out[i].size_bytes >= 1 && out[i].size_bytes <= LABEL_SIZE_MAX);
  }
  return 0;
}

static uint32_t gcd_u32(uint32_t a, uint32_t b) {
  while (b != 0) {
    const uint32_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

uint32_t label_tick_ms(const struct label *labels, size_t n) {
  assert(labels != NULL && n >= 1);
  uint32_t g = 0;
  for (size_t i = 0; i < n; i++) g = gcd_u32(g, labels[i].period_ms);
  assert(g >= 1);
  return g;
}

bool label_due(const struct label *l, uint64_t tick_abs, uint32_t tick_ms) {
  assert(l != NULL && tick_ms >= 1 && l->period_ms % tick_ms == 0);
  return tick_abs % (l->period_ms / tick_ms) == 0;
}

void label_value(uint32_t id, uint64_t tick_abs, uint8_t out[LABEL_SIZE_MAX]) {
  assert(out != NULL);
  uint64_t rng = ((uint64_t)id << 40) ^ tick_abs ^ 0x6C6162656C73ull; /* "labels" */
  for (int i = 0; i < LABEL_SIZE_MAX; i += 8) {
    const uint64_t x = label_rng_next(&rng);
    for (int b = 0; b < 8; b++) out[i + b] = (uint8_t)(x >> (8 * b)); /* same bytes on any host */
  }
}

int label_key(char *out, size_t out_len, const char *prefix, uint32_t id) {
  assert(out != NULL && prefix != NULL);
  const int n = snprintf(out, out_len, "%s%u", prefix, id);
  return n < 0 || (size_t)n >= out_len ? -1 : n;
}
