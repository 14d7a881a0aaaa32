/* The scheduler's local searches, compiled: Tabucol and the DSatur branch and bound (coloring.py),
 * the ejection chains and PartialCol (greedy.py), the odd-set cuts' separation (oddset.py). Each function here makes exactly the moves, and
 * draws exactly the random numbers, of the Python function it replaces: Python's Mersenne Twister
 * is reproduced (seeding, random(), randrange()), and every scan visits items in the Python
 * version's order. tests/test_native.py checks that draw for draw on random instances, so the
 * Python code stays the readable specification and the results do not depend on which one ran.
 *
 * Loaded with ctypes (tobsched/native.py): plain C, no Python headers. Every array belongs to the
 * caller; scratch memory is allocated once per call and freed before return. Functions return a
 * negative LS_E* code on bad input or out of memory, never abort the interpreter. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { LS_ENOMEM = -1, LS_EINPUT = -2 };

/* Bumped with every change of a signature below: native.py refuses a library built from other
 * sources (a stale build in an editable install would otherwise be called with the wrong
 * arguments). */
#define LS_ABI_VERSION 3

int ls_abi_version(void) { return LS_ABI_VERSION; }

/* ---- Python's random.Random (MT19937, CPython Modules/_randommodule.c) ---- */

enum { MT_N = 624, MT_M = 397 };

typedef struct {
    uint32_t state[MT_N];
    int index;
} mt_rng;

static void mt_init_genrand(mt_rng *r, uint32_t s) {
    r->state[0] = s;
    for (int i = 1; i < MT_N; i++)
        r->state[i] = 1812433253U * (r->state[i - 1] ^ (r->state[i - 1] >> 30)) + (uint32_t)i;
    r->index = MT_N;
}

/* random.Random(seed) for 0 <= seed < 2**64: init_by_array over the seed's 32-bit words. */
static void mt_seed(mt_rng *r, uint64_t seed) {
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    int key_length = key[1] ? 2 : 1;
    mt_init_genrand(r, 19650218U);
    int i = 1, j = 0;
    for (int k = MT_N > key_length ? MT_N : key_length; k; k--) {
        r->state[i] = (r->state[i] ^ ((r->state[i - 1] ^ (r->state[i - 1] >> 30)) * 1664525U)) + key[j] + (uint32_t)j;
        i++;
        j++;
        if (i >= MT_N) {
            r->state[0] = r->state[MT_N - 1];
            i = 1;
        }
        if (j >= key_length)
            j = 0;
    }
    for (int k = MT_N - 1; k; k--) {
        r->state[i] = (r->state[i] ^ ((r->state[i - 1] ^ (r->state[i - 1] >> 30)) * 1566083941U)) - (uint32_t)i;
        i++;
        if (i >= MT_N) {
            r->state[0] = r->state[MT_N - 1];
            i = 1;
        }
    }
    r->state[0] = 0x80000000U;
}

static uint32_t mt_next(mt_rng *r) {
    static const uint32_t mag01[2] = {0x0U, 0x9908b0dfU};
    uint32_t y;
    if (r->index >= MT_N) {
        int kk;
        for (kk = 0; kk < MT_N - MT_M; kk++) {
            y = (r->state[kk] & 0x80000000U) | (r->state[kk + 1] & 0x7fffffffU);
            r->state[kk] = r->state[kk + MT_M] ^ (y >> 1) ^ mag01[y & 1U];
        }
        for (; kk < MT_N - 1; kk++) {
            y = (r->state[kk] & 0x80000000U) | (r->state[kk + 1] & 0x7fffffffU);
            r->state[kk] = r->state[kk + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 1U];
        }
        y = (r->state[MT_N - 1] & 0x80000000U) | (r->state[0] & 0x7fffffffU);
        r->state[MT_N - 1] = r->state[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1U];
        r->index = 0;
    }
    y = r->state[r->index++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

/* random.random(): 53 bits from two draws. */
static double mt_random(mt_rng *r) {
    uint32_t a = mt_next(r) >> 5, b = mt_next(r) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

/* random.randrange(n) for 0 < n < 2**31: getrandbits(n.bit_length()) until below n. */
static int32_t mt_randrange(mt_rng *r, int32_t n) {
    int k = 32 - __builtin_clz((uint32_t)n);
    uint32_t v;
    do
        v = mt_next(r) >> (32 - k);
    while (v >= (uint32_t)n);
    return (int32_t)v;
}

/* Exposed for tests/test_native.py: `count` values of random() (kind 0) or randrange(n) (kind 1). */
int ls_rng_draws(uint64_t seed, int kind, int32_t n, int32_t count, double *out) {
    if (count < 0 || (kind != 0 && kind != 1) || (kind == 1 && n <= 0))
        return LS_EINPUT;
    mt_rng r;
    mt_seed(&r, seed);
    for (int32_t i = 0; i < count; i++)
        out[i] = kind == 0 ? mt_random(&r) : (double)mt_randrange(&r, n);
    return 0;
}

/* ---- Tabucol (coloring.tabu_colour) ---- */

/* A CSR graph's neighbour lists are in range and hold no self-loop. */
static int graph_valid(int32_t n, const int32_t *off, const int32_t *adj) {
    if (n < 0 || off[0] != 0)
        return 0;
    for (int32_t v = 0; v < n; v++) {
        if (off[v + 1] < off[v])
            return 0;
        for (int32_t e = off[v]; e < off[v + 1]; e++)
            if (adj[e] < 0 || adj[e] >= n || adj[e] == v)
                return 0;
    }
    return 1;
}

/* Graph in CSR form: the neighbours of v are adj[off[v] .. off[v + 1]). `col` holds the start
 * (-1 for none) and receives the colouring. Returns 1 when it found one without conflicts, 0 when
 * the iteration budget ran out (then `col` is the last state, as in Python: meaningless). */
int ls_tabucol(int32_t n, const int32_t *off, const int32_t *adj, int32_t colours, int32_t *col,
               int64_t iterations_max, uint64_t seed) {
    if (colours <= 0 || !graph_valid(n, off, adj))
        return LS_EINPUT;
    if (n == 0)
        return 1;
    mt_rng rng;
    mt_seed(&rng, seed);
    for (int32_t v = 0; v < n; v++) {
        if (col[v] < 0)
            col[v] = mt_randrange(&rng, colours);
        else if (col[v] >= colours)
            return LS_EINPUT;
    }
    size_t cells = (size_t)n * (size_t)colours;
    int32_t words = (n + 63) / 64;
    int32_t *gamma = calloc(cells, sizeof *gamma);
    int64_t *tabu = malloc(cells * sizeof *tabu);
    uint64_t *conflicted = calloc((size_t)words, sizeof *conflicted);
    if (!gamma || !tabu || !conflicted) {
        free(gamma), free(tabu), free(conflicted);
        return LS_ENOMEM;
    }
    for (size_t i = 0; i < cells; i++)
        tabu[i] = -1;
    int64_t conflicts = 0;
    for (int32_t v = 0; v < n; v++)
        for (int32_t e = off[v]; e < off[v + 1]; e++)
            gamma[(size_t)v * colours + col[adj[e]]]++;
    for (int32_t v = 0; v < n; v++) {
        int32_t g = gamma[(size_t)v * colours + col[v]];
        conflicts += g;
        if (g)
            conflicted[v / 64] |= 1ULL << (v % 64);
    }
    conflicts /= 2;
    int64_t best = conflicts;
    for (int64_t it = 0; it < iterations_max; it++) {
        if (conflicts == 0)
            break;
        int32_t move_v = -1, move_c = 0;
        int32_t move_delta = 1 << 30;
        /* The conflicted vertices in ascending order, as Python's sorted(conflicted). */
        for (int32_t w = 0; w < words; w++) {
            for (uint64_t bits = conflicted[w]; bits; bits &= bits - 1) {
                int32_t v = w * 64 + __builtin_ctzll(bits);
                const int32_t *gv = gamma + (size_t)v * colours;
                const int64_t *tv = tabu + (size_t)v * colours;
                int32_t cv = col[v], cur = gv[cv];
                for (int32_t c = 0; c < colours; c++) {
                    if (c == cv)
                        continue;
                    int32_t d = gv[c] - cur;
                    if (d < move_delta || (d == move_delta && mt_random(&rng) < 0.3)) {
                        if (tv[c] >= it && conflicts + d >= best)
                            continue;
                        move_v = v, move_c = c, move_delta = d;
                    }
                }
            }
        }
        if (move_v < 0)
            continue;
        int32_t v = move_v, c = move_c, old = col[v];
        col[v] = c;
        for (int32_t e = off[v]; e < off[v + 1]; e++) {
            int32_t u = adj[e];
            int32_t *gu = gamma + (size_t)u * colours;
            gu[old]--;
            gu[c]++;
            if (gu[col[u]])
                conflicted[u / 64] |= 1ULL << (u % 64);
            else
                conflicted[u / 64] &= ~(1ULL << (u % 64));
        }
        if (gamma[(size_t)v * colours + c])
            conflicted[v / 64] |= 1ULL << (v % 64);
        else
            conflicted[v / 64] &= ~(1ULL << (v % 64));
        conflicts += move_delta;
        if (conflicts < best)
            best = conflicts;
        tabu[(size_t)v * colours + old] = it + 7 + mt_randrange(&rng, 10) + conflicts;
    }
    free(gamma), free(tabu), free(conflicted);
    return conflicts == 0;
}

/* ---- DSatur branch and bound (coloring.exact_colour) ---- */

typedef struct {
    int32_t n, colours;
    const int32_t *off, *adj;
    int32_t *col, *cnt, *sat;
    int64_t *score;
    int64_t sat_unit, coloured;
    int64_t nodes, nodes_max;
} dsatur_bb;

static void bb_assign(dsatur_bb *s, int32_t v, int32_t c, int sign) {
    s->col[v] = sign > 0 ? c : -1;
    s->score[v] -= sign * s->coloured;
    for (int32_t e = s->off[v]; e < s->off[v + 1]; e++) {
        int32_t u = s->adj[e];
        int32_t *cu = s->cnt + (size_t)u * s->colours + c;
        int32_t before = *cu;
        *cu += sign;
        if (before == 0 && sign > 0) {
            s->sat[u]++;
            s->score[u] += s->sat_unit;
        } else if (*cu == 0 && sign < 0) {
            s->sat[u]--;
            s->score[u] -= s->sat_unit;
        }
    }
}

/* The recursion's depth limit (about 100 bytes of stack a level, within 8 MB): deeper searches
 * give up as past the budget. Python's version has no such limit; below it the two agree. */
enum { BB_DEPTH_MAX = 40000 };

/* 1: coloured, 0: no colouring below this node, -1: past the node budget. */
static int bb_rec(dsatur_bb *s, int32_t done, int32_t used) {
    if (done == s->n)
        return 1;
    if (++s->nodes > s->nodes_max || done >= BB_DEPTH_MAX)
        return -1;
    int32_t v = 0;
    for (int32_t u = 1; u < s->n; u++)
        if (s->score[u] > s->score[v])
            v = u;
    int32_t top = used + 1 < s->colours ? used + 1 : s->colours;
    for (int32_t c = 0; c < top; c++) {
        if (s->cnt[(size_t)v * s->colours + c])
            continue;
        bb_assign(s, v, c, +1);
        int dead = 0;
        for (int32_t e = s->off[v]; e < s->off[v + 1] && !dead; e++) {
            int32_t u = s->adj[e];
            dead = s->col[u] < 0 && s->sat[u] == s->colours;
        }
        if (!dead) {
            int got = bb_rec(s, done + 1, used > c + 1 ? used : c + 1);
            if (got != 0)
                return got;
        }
        bb_assign(s, v, c, -1);
    }
    return 0;
}

/* Returns 1 with the colouring in `col`, 0 when none exists (proven), 2 past the node budget. */
int ls_exact_colour(int32_t n, const int32_t *off, const int32_t *adj, int32_t colours, int64_t nodes_max,
                    int32_t *col) {
    if (colours <= 0 || !graph_valid(n, off, adj))
        return LS_EINPUT;
    dsatur_bb s = {.n = n, .colours = colours, .off = off, .adj = adj, .col = col, .nodes_max = nodes_max};
    s.cnt = calloc((size_t)n * (size_t)colours + 1, sizeof *s.cnt);
    s.sat = calloc((size_t)n + 1, sizeof *s.sat);
    s.score = malloc(((size_t)n + 1) * sizeof *s.score);
    if (!s.cnt || !s.sat || !s.score) {
        free(s.cnt), free(s.sat), free(s.score);
        return LS_ENOMEM;
    }
    /* As in Python: saturation * SAT + degree * n + (n - 1 - index), minus COLOURED when coloured. */
    s.sat_unit = ((int64_t)n + 1) * n + n;
    s.coloured = ((int64_t)colours + 1) * s.sat_unit;
    for (int32_t u = 0; u < n; u++) {
        col[u] = -1;
        s.score[u] = (int64_t)(off[u + 1] - off[u]) * n + (n - 1 - u);
    }
    int got = bb_rec(&s, 0, 0);
    free(s.cnt), free(s.sat), free(s.score);
    return got == 1 ? 1 : got == 0 ? 0 : 2;
}

/* ---- Paths in slots: ejection chains and PartialCol (greedy.py) ---- */

/* Candidate ci is a path of flow cand_flow[ci] over the directed links arcs[arc_off[ci] ..
 * arc_off[ci + 1]); flow f's candidates are by_flow[flow_off[f] .. flow_off[f + 1]) in ascending
 * order. A schedule is slot[f], cand[f] per flow, -1 when the flow is not scheduled. */
typedef struct {
    int32_t flows, slots, num_arcs, cands;
    const int32_t *cand_flow, *arc_off, *arcs, *flow_off, *by_flow;
} paths;

typedef struct {
    const paths *p;
    int32_t *hold; /* hold[slot * num_arcs + arc]: the flow using the link in that slot, or -1 */
    int32_t *slot, *cand;
} occupancy;

static int32_t *hold_row(const occupancy *o, int32_t k) { return o->hold + (size_t)k * o->p->num_arcs; }

static int occ_free(const occupancy *o, int32_t k, int32_t ci) {
    const int32_t *h = hold_row(o, k);
    for (int32_t e = o->p->arc_off[ci]; e < o->p->arc_off[ci + 1]; e++)
        if (h[o->p->arcs[e]] >= 0)
            return 0;
    return 1;
}

static void occ_set(occupancy *o, int32_t k, int32_t ci, int32_t flow) {
    int32_t *h = hold_row(o, k);
    for (int32_t e = o->p->arc_off[ci]; e < o->p->arc_off[ci + 1]; e++)
        h[o->p->arcs[e]] = flow;
}

/* The distinct flows other than `self` holding links of ci in slot k, up to `cap` of them into
 * out[] (cap >= 1); returns how many there are (counted up to cap + 1). */
static int32_t occ_blockers(const occupancy *o, int32_t k, int32_t ci, int32_t self, int32_t *out, int32_t cap) {
    const int32_t *h = hold_row(o, k);
    int32_t m = 0;
    for (int32_t e = o->p->arc_off[ci]; e < o->p->arc_off[ci + 1]; e++) {
        int32_t g = h[o->p->arcs[e]];
        if (g < 0 || g == self)
            continue;
        int32_t j = 0;
        while (j < m && j < cap && out[j] != g)
            j++;
        if (j < m && j < cap)
            continue;
        if (m < cap)
            out[m] = g;
        if (++m > cap)
            break;
    }
    return m;
}

static void occ_take(occupancy *o, int32_t f, int32_t k, int32_t ci) {
    occ_set(o, k, ci, f);
    o->slot[f] = k;
    o->cand[f] = ci;
}

static void occ_release(occupancy *o, int32_t f) {
    occ_set(o, o->slot[f], o->cand[f], -1);
    o->slot[f] = -1;
    o->cand[f] = -1;
}

static int paths_valid(const paths *p) {
    if (p->flows < 0 || p->slots <= 0 || p->num_arcs < 0 || p->cands < 0 || p->arc_off[0] != 0)
        return 0;
    for (int32_t ci = 0; ci < p->cands; ci++) {
        if (p->cand_flow[ci] < 0 || p->cand_flow[ci] >= p->flows || p->arc_off[ci + 1] < p->arc_off[ci])
            return 0;
        for (int32_t e = p->arc_off[ci]; e < p->arc_off[ci + 1]; e++)
            if (p->arcs[e] < 0 || p->arcs[e] >= p->num_arcs)
                return 0;
    }
    if (p->flow_off[0] != 0 || p->flow_off[p->flows] != p->cands)
        return 0;
    for (int32_t f = 0; f < p->flows; f++)
        for (int32_t j = p->flow_off[f]; j < p->flow_off[f + 1]; j++) {
            if (j < 0 || j >= p->cands || p->by_flow[j] < 0 || p->by_flow[j] >= p->cands || p->cand_flow[p->by_flow[j]] != f)
                return 0;
            /* Ascending within a flow, as Python scans them; with the counts above, a permutation. */
            if (j > p->flow_off[f] && p->by_flow[j] <= p->by_flow[j - 1])
                return 0;
        }
    return 1;
}

/* Occupancy from the schedule in slot[]/cand[] (taken over); LS_EINPUT when two flows share a
 * link in a slot or an entry is out of range. */
static int occ_init(occupancy *o, const paths *p, int32_t *slot, int32_t *cand) {
    o->p = p;
    o->slot = slot;
    o->cand = cand;
    size_t cells = (size_t)p->slots * (size_t)p->num_arcs;
    o->hold = malloc((cells + 1) * sizeof *o->hold);
    if (!o->hold)
        return LS_ENOMEM;
    for (size_t i = 0; i < cells; i++)
        o->hold[i] = -1;
    for (int32_t f = 0; f < p->flows; f++) {
        if (slot[f] < 0)
            continue;
        int32_t k = slot[f], ci = cand[f];
        if (k >= p->slots || ci < 0 || ci >= p->cands || p->cand_flow[ci] != f || !occ_free(o, k, ci))
            return LS_EINPUT;
        occ_set(o, k, ci, f);
    }
    return 0;
}

/* One ejection chain for unscheduled flow f0 (greedy._augment): breadth-first over flows, each
 * step a place whose only blocker is the next flow, ending at a free place. */
typedef struct {
    int32_t *parent_flow, *parent_slot, *parent_cand; /* parent_flow -2: not reached */
    int32_t *queue, *touched;
    int32_t *saved_slot, *saved_cand, *moved;
} chain_scratch;

static int augment(occupancy *o, chain_scratch *cs, int32_t f0, int64_t *budget) {
    const paths *p = o->p;
    int32_t qn = 0, qi = 0;
    cs->parent_flow[f0] = -1;
    cs->queue[qn++] = f0;
    int32_t end_g = -1, end_k = -1, end_ci = -1;
    while (qi < qn && end_g < 0) {
        int32_t g = cs->queue[qi++];
        int32_t options = p->flow_off[g + 1] - p->flow_off[g];
        *budget -= (int64_t)p->slots * options;
        for (int32_t k = 0; k < p->slots && end_g < 0; k++) {
            for (int32_t j = p->flow_off[g]; j < p->flow_off[g + 1]; j++) {
                int32_t ci = p->by_flow[j];
                if (o->slot[g] == k && o->cand[g] == ci)
                    continue;
                int32_t h;
                int32_t m = occ_blockers(o, k, ci, g, &h, 1);
                if (m == 0) {
                    end_g = g, end_k = k, end_ci = ci;
                    break;
                }
                if (m != 1)
                    continue;
                if (cs->parent_flow[h] == -2) {
                    cs->parent_flow[h] = g, cs->parent_slot[h] = k, cs->parent_cand[h] = ci;
                    cs->queue[qn++] = h;
                }
            }
        }
    }
    int ok = 0;
    if (end_g >= 0) {
        /* The chain of moves, terminal first; applied in that order, undone if one fails. */
        int32_t mn = 0;
        int32_t *mf = cs->touched, *mk = cs->saved_slot + p->flows, *mc = cs->saved_cand + p->flows;
        mf[mn] = end_g, mk[mn] = end_k, mc[mn] = end_ci, mn++;
        for (int32_t g = end_g; cs->parent_flow[g] >= 0; g = cs->parent_flow[g])
            mf[mn] = cs->parent_flow[g], mk[mn] = cs->parent_slot[g], mc[mn] = cs->parent_cand[g], mn++;
        for (int32_t i = 0; i < mn; i++)
            cs->saved_slot[i] = o->slot[mf[i]], cs->saved_cand[i] = o->cand[mf[i]];
        int32_t done = 0;
        ok = 1;
        for (int32_t i = 0; i < mn; i++) {
            int32_t g = mf[i];
            int32_t old_k = o->slot[g], old_ci = o->cand[g];
            if (old_k >= 0)
                occ_release(o, g);
            if (!occ_free(o, mk[i], mc[i])) {
                if (old_k >= 0)
                    occ_take(o, g, old_k, old_ci);
                ok = 0;
                break;
            }
            occ_take(o, g, mk[i], mc[i]);
            cs->moved[done++] = i;
        }
        if (!ok) {
            for (int32_t d = done - 1; d >= 0; d--)
                occ_release(o, mf[cs->moved[d]]);
            for (int32_t i = 0; i < mn; i++) {
                int32_t g = mf[i];
                o->slot[g] = cs->saved_slot[i], o->cand[g] = cs->saved_cand[i];
            }
            for (int32_t i = 0; i < mn; i++) {
                int32_t g = mf[i];
                int was_moved = 0;
                for (int32_t d = 0; d < done && !was_moved; d++)
                    was_moved = mf[cs->moved[d]] == g;
                if (was_moved && o->slot[g] >= 0)
                    occ_set(o, o->slot[g], o->cand[g], g);
            }
        }
    }
    for (int32_t i = 0; i < qn; i++)
        cs->parent_flow[cs->queue[i]] = -2;
    return ok;
}

static int augment_all(occupancy *o, int64_t budget) {
    const paths *p = o->p;
    int32_t n = p->flows;
    chain_scratch cs;
    int32_t *mem = malloc(((size_t)n * 11 + 1) * sizeof *mem);
    if (!mem)
        return LS_ENOMEM;
    cs.parent_flow = mem, cs.parent_slot = mem + n, cs.parent_cand = mem + 2 * (size_t)n;
    cs.queue = mem + 3 * (size_t)n, cs.touched = mem + 4 * (size_t)n;
    cs.saved_slot = mem + 5 * (size_t)n, cs.saved_cand = mem + 7 * (size_t)n, cs.moved = mem + 9 * (size_t)n;
    for (int32_t f = 0; f < n; f++)
        cs.parent_flow[f] = -2;
    int improved = 1;
    while (improved && budget > 0) {
        improved = 0;
        for (int32_t f = 0; f < n; f++) {
            if (budget <= 0)
                break;
            if (o->slot[f] < 0 && p->flow_off[f + 1] > p->flow_off[f] && augment(o, &cs, f, &budget))
                improved = 1;
        }
    }
    free(mem);
    return 0;
}

#define PATHS_ARGS                                                                                      \
    int32_t flows, int32_t slots, int32_t num_arcs, int32_t cands, const int32_t *cand_flow,        \
        const int32_t *arc_off, const int32_t *arcs, const int32_t *flow_off, const int32_t *by_flow
#define PATHS_INIT {flows, slots, num_arcs, cands, cand_flow, arc_off, arcs, flow_off, by_flow}

/* greedy.round_and_augment: take the (order_slot[i], order_cand[i]) pairs in order where they fit,
 * then ejection chains. slot[]/cand[] receive the schedule. */
int ls_round_and_augment(PATHS_ARGS, int32_t order_len, const int32_t *order_slot, const int32_t *order_cand,
                         int64_t budget, int32_t *slot, int32_t *cand) {
    paths p = PATHS_INIT;
    if (!paths_valid(&p))
        return LS_EINPUT;
    for (int32_t f = 0; f < flows; f++)
        slot[f] = cand[f] = -1;
    occupancy o;
    int rc = occ_init(&o, &p, slot, cand);
    if (rc < 0) {
        free(o.hold);
        return rc;
    }
    for (int32_t i = 0; i < order_len && rc == 0; i++) {
        int32_t k = order_slot[i], ci = order_cand[i];
        if (k < 0 || k >= slots || ci < 0 || ci >= cands) {
            rc = LS_EINPUT;
            break;
        }
        int32_t f = cand_flow[ci];
        if (slot[f] < 0 && occ_free(&o, k, ci))
            occ_take(&o, f, k, ci);
    }
    if (rc == 0)
        rc = augment_all(&o, budget);
    free(o.hold);
    return rc;
}

/* greedy._augment_all on a valid schedule in slot[]/cand[] (improved in place). */
int ls_augment_all(PATHS_ARGS, int64_t budget, int32_t *slot, int32_t *cand) {
    paths p = PATHS_INIT;
    if (!paths_valid(&p))
        return LS_EINPUT;
    occupancy o;
    int rc = occ_init(&o, &p, slot, cand);
    if (rc == 0)
        rc = augment_all(&o, budget);
    free(o.hold);
    return rc;
}

/* PartialCol's state beside the occupancy: the cheapest placement of each unscheduled flow in
 * each slot (cost, candidate), and the unscheduled flows in the order Python's dict keeps them. */
typedef struct {
    int32_t *cost, *cell_cand; /* [flow * slots + slot] */
    int32_t *rows;             /* unscheduled flows with candidates, insertion order */
    int32_t row_count;
    int32_t *blockers;         /* scratch for one candidate's blockers: num_arcs + 1 */
    int64_t *tabu;             /* [flow * slots + slot]: tabu up to this iteration */
} partialcol_state;

static void pc_cell(const occupancy *o, partialcol_state *s, int32_t f, int32_t k) {
    const paths *p = o->p;
    int32_t bc = 1 << 30, bci = -1;
    for (int32_t j = p->flow_off[f]; j < p->flow_off[f + 1]; j++) {
        int32_t ci = p->by_flow[j];
        /* Distinct blockers are at most the candidate's distinct links, so at most num_arcs. */
        int32_t c = occ_blockers(o, k, ci, -1, s->blockers, p->num_arcs);
        if (c == 0) {
            bc = 0, bci = ci;
            break;
        }
        if (c < bc)
            bc = c, bci = ci;
    }
    s->cost[(size_t)f * p->slots + k] = bc;
    s->cell_cand[(size_t)f * p->slots + k] = bci;
}

static void row_remove(partialcol_state *s, int32_t f) {
    int32_t j = 0;
    while (s->rows[j] != f)
        j++;
    memmove(s->rows + j, s->rows + j + 1, (size_t)(s->row_count - j - 1) * sizeof *s->rows);
    s->row_count--;
}

static int cmp_int32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* greedy._partialcol: slot[]/cand[] hold the start and receive the best schedule seen. */
int ls_partialcol(PATHS_ARGS, int64_t evaluations, uint64_t seed, double tabu_alpha, int32_t tabu_random,
                  int32_t *slot, int32_t *cand) {
    paths p = PATHS_INIT;
    if (!paths_valid(&p) || tabu_random <= 0 || !(tabu_alpha >= 0.0 && tabu_alpha <= 1e6))
        return LS_EINPUT;
    size_t cells = (size_t)flows * (size_t)slots;
    int32_t *cur_slot = malloc(((size_t)flows * 2 + 1) * sizeof *cur_slot);
    partialcol_state s = {0};
    s.cost = malloc((cells + 1) * sizeof *s.cost);
    s.cell_cand = malloc((cells + 1) * sizeof *s.cell_cand);
    s.rows = malloc(((size_t)flows + 1) * sizeof *s.rows);
    s.tabu = calloc(cells + 1, sizeof *s.tabu);
    s.blockers = malloc(((size_t)p.num_arcs + 1) * sizeof *s.blockers);
    int32_t *evicted = malloc(((size_t)p.num_arcs + 1) * sizeof *evicted);
    uint8_t *changed = calloc((size_t)slots, 1);
    occupancy o = {0};
    int rc = LS_ENOMEM;
    if (!cur_slot || !s.cost || !s.cell_cand || !s.rows || !s.tabu || !s.blockers || !evicted || !changed)
        goto out;
    int32_t *cur_cand = cur_slot + flows;
    memcpy(cur_slot, slot, (size_t)flows * sizeof *slot);
    memcpy(cur_cand, cand, (size_t)flows * sizeof *cand);
    rc = occ_init(&o, &p, cur_slot, cur_cand);
    if (rc < 0)
        goto out;
    mt_rng rng;
    mt_seed(&rng, seed);
    int32_t count = 0;
    for (int32_t f = 0; f < flows; f++)
        count += cur_slot[f] >= 0;
    int32_t best_count = count;
    const int32_t big = 1 << 30;
    int64_t work = 0;
    for (int32_t f = 0; f < flows; f++) {
        int32_t options = p.flow_off[f + 1] - p.flow_off[f];
        if (cur_slot[f] < 0 && options) {
            s.rows[s.row_count++] = f;
            for (int32_t k = 0; k < slots; k++)
                pc_cell(&o, &s, f, k);
            work += (int64_t)slots * options;
        }
    }
    int64_t it = 0;
    while (s.row_count && work < evaluations) {
        it++;
        int32_t mc = big, mv_f = -1, mv_k = -1;
        int64_t ties = 0;
        for (int32_t r = 0; r < s.row_count; r++) {
            int32_t f = s.rows[r];
            for (int32_t k = 0; k < slots; k++) {
                int32_t c = s.cost[(size_t)f * slots + k];
                if (c > mc)
                    continue;
                if (s.tabu[(size_t)f * slots + k] > it && count + 1 - c <= best_count)
                    continue;
                if (c < mc) {
                    mc = c, mv_f = f, mv_k = k, ties = 1;
                } else {
                    ties++;
                    if (mt_random(&rng) * (double)ties < 1.0)
                        mv_f = f, mv_k = k;
                }
            }
        }
        work += (int64_t)s.row_count * slots;
        if (mv_f < 0)
            break;
        int32_t f = mv_f, k = mv_k;
        int32_t ci = s.cell_cand[(size_t)f * slots + k];
        if (ci < 0) { /* unreachable with paths_valid's input: every row's flow has candidates */
            rc = LS_EINPUT;
            goto out;
        }
        /* The flows to evict, in ascending order (Python iterates sorted(evicted)). */
        int32_t ne = occ_blockers(&o, k, ci, -1, evicted, p.num_arcs);
        qsort(evicted, (size_t)ne, sizeof *evicted, cmp_int32);
        memset(changed, 0, (size_t)slots);
        changed[k] = 1;
        row_remove(&s, f);
        for (int32_t i = 0; i < ne; i++) {
            int32_t bf = evicted[i];
            int32_t old_k = cur_slot[bf];
            occ_release(&o, bf);
            changed[old_k] = 1;
            int64_t tenure = (int64_t)(tabu_alpha * (double)(s.row_count + ne));
            s.tabu[(size_t)bf * slots + old_k] = it + tenure + mt_randrange(&rng, tabu_random);
        }
        occ_take(&o, f, k, ci);
        count += 1 - ne;
        for (int32_t r = 0; r < s.row_count; r++) {
            int32_t g = s.rows[r];
            int32_t updated = 0;
            for (int32_t kk = 0; kk < slots; kk++)
                if (changed[kk])
                    pc_cell(&o, &s, g, kk), updated++;
            work += (int64_t)updated * (p.flow_off[g + 1] - p.flow_off[g]);
        }
        for (int32_t i = 0; i < ne; i++) {
            int32_t bf = evicted[i];
            s.rows[s.row_count++] = bf;
            for (int32_t kk = 0; kk < slots; kk++)
                pc_cell(&o, &s, bf, kk);
            work += (int64_t)slots * (p.flow_off[bf + 1] - p.flow_off[bf]);
        }
        if (count > best_count) {
            best_count = count;
            memcpy(slot, cur_slot, (size_t)flows * sizeof *slot);
            memcpy(cand, cur_cand, (size_t)flows * sizeof *cand);
        }
    }
    rc = 0;
out:
    free(cur_slot), free(s.cost), free(s.cell_cand), free(s.rows), free(s.tabu), free(s.blockers), free(evicted);
    free(changed);
    free(o.hold);
    return rc;
}

/* ---- Odd-set cuts' separation (oddset.odd_set_search) ---- */

/* Path j uses the links arcs[off[j] .. off[j + 1]), each in [0, num_arcs) (dense ids: scratch is
 * O(num_arcs)). Writes each odd link set found (sorted) to out_links, its size to out_size, at
 * most cap_sets sets and cap_links links in all; returns the number of sets, or LS_EINPUT (also
 * when the output would not fit). Each start link gives at most one set, of at most
 * min(links with load >= 2, steps + 1) links. */
int ls_odd_sets(int32_t npaths, const int32_t *off, const int32_t *arcs, int32_t num_arcs, int32_t slots,
                int32_t steps, int32_t tenure, int32_t cap_sets, int32_t cap_links, int32_t *out_size,
                int32_t *out_links) {
    if (npaths < 0 || num_arcs < 0 || slots < 1 || steps < 0 || tenure < 0 || cap_sets < 0 || cap_links < 0 ||
        off[0] != 0)
        return LS_EINPUT;
    for (int32_t j = 0; j < npaths; j++) {
        if (off[j + 1] < off[j])
            return LS_EINPUT;
        for (int32_t e = off[j]; e < off[j + 1]; e++)
            if (arcs[e] < 0 || arcs[e] >= num_arcs)
                return LS_EINPUT;
    }
    int32_t total = off[npaths];
    int32_t *load = calloc((size_t)num_arcs + 1, sizeof *load);
    int32_t *pos = malloc(((size_t)num_arcs + 1) * sizeof *pos);
    int32_t *useful = malloc(((size_t)num_arcs + 1) * sizeof *useful);
    int32_t *on_off = calloc((size_t)num_arcs + 2, sizeof *on_off);
    int32_t *on = malloc(((size_t)total + 1) * sizeof *on);
    int32_t *count = malloc(((size_t)npaths + 1) * sizeof *count);
    int64_t *tabu_until = malloc(((size_t)num_arcs + 1) * sizeof *tabu_until);
    unsigned char *inside = malloc((size_t)num_arcs + 1);
    int32_t *set = malloc(((size_t)num_arcs + 1) * sizeof *set);
    int rc = LS_ENOMEM;
    if (!load || !pos || !useful || !on_off || !on || !count || !tabu_until || !inside || !set)
        goto out;
    for (int32_t e = 0; e < total; e++)
        load[arcs[e]]++;
    int32_t nu = 0;
    for (int32_t a = 0; a < num_arcs; a++) {
        pos[a] = -1;
        if (load[a] >= 2)
            pos[a] = nu, useful[nu++] = a;
    }
    /* The paths on each useful link, ascending (one entry per use, as in Python). */
    for (int32_t e = 0; e < total; e++)
        if (pos[arcs[e]] >= 0)
            on_off[pos[arcs[e]] + 1]++;
    for (int32_t u = 0; u < nu; u++)
        on_off[u + 1] += on_off[u];
    {
        int32_t *fill = set; /* scratch until the search starts */
        memcpy(fill, on_off, (size_t)nu * sizeof *fill);
        for (int32_t j = 0; j < npaths; j++)
            for (int32_t e = off[j]; e < off[j + 1]; e++)
                if (pos[arcs[e]] >= 0)
                    on[fill[pos[arcs[e]]]++] = j;
    }
    int32_t found = 0, used = 0;
    for (int32_t start = 0; start < nu; start++) {
        memset(count, 0, (size_t)npaths * sizeof *count);
        memset(inside, 0, (size_t)nu);
        for (int32_t u = 0; u < nu; u++)
            tabu_until[u] = -1;
        inside[start] = 1;
        int32_t size = 1;
        for (int32_t i = on_off[start]; i < on_off[start + 1]; i++)
            count[on[i]] = 1;
        int64_t value = slots;
        tabu_until[start] = tenure;
        for (int32_t step = 0; step < steps; step++) {
            int32_t best = -1;
            int64_t best_delta = 0;
            for (int32_t u = 0; u < nu; u++) {
                if (tabu_until[u] >= step || (inside[u] && size == 1))
                    continue;
                int64_t delta = (inside[u] ? -1 : 1) * (int64_t)(slots - load[useful[u]]);
                for (int32_t i = on_off[u]; i < on_off[u + 1]; i++)
                    delta += (count[on[i]] & 1) ? -1 : 1;
                if (best < 0 || delta < best_delta)
                    best_delta = delta, best = u;
            }
            if (best < 0)
                break;
            int32_t step_in = !inside[best];
            inside[best] = (unsigned char)step_in;
            size += step_in ? 1 : -1;
            for (int32_t i = on_off[best]; i < on_off[best + 1]; i++)
                count[on[i]] += step_in ? 1 : -1;
            value += best_delta;
            tabu_until[best] = (int64_t)step + tenure;
            if (size % 2 == 1 && value < slots) {
                int32_t n = 0;
                for (int32_t u = 0; u < nu; u++)
                    if (inside[u])
                        set[n++] = useful[u];
                int dup = 0;
                for (int32_t k = 0, at = 0; k < found && !dup; at += out_size[k], k++)
                    dup = out_size[k] == n && memcmp(out_links + at, set, (size_t)n * sizeof *set) == 0;
                if (!dup) {
                    if (found >= cap_sets || n > cap_links - used) {
                        rc = LS_EINPUT;
                        goto out;
                    }
                    memcpy(out_links + used, set, (size_t)n * sizeof *set);
                    out_size[found++] = n;
                    used += n;
                }
                break;
            }
        }
    }
    rc = found;
out:
    free(load), free(pos), free(useful), free(on_off), free(on), free(count), free(tabu_until), free(inside);
    free(set);
    return rc;
}
