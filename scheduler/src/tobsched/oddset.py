"""Odd-set cuts for the slot-free master (pathset.py): the paths of one slot share no directed link,
so for any set S of links, the paths of a slot hold at most |S| link-uses inside S, and those that
use two or more of S at most floor(|S| / 2) halves of them. Over the T slots, every schedule obeys

    sum over chosen paths p of floor(|p & S| / 2)  <=  T * floor(|S| / 2).

For odd |S| this is not implied by the master's rows (at most T paths per link: they give
T * |S| / 2). It is Edmonds' odd-set inequality of b-matching, applied to the paths as hyperedges
over links; with two links per path it is what bounds the chromatic index of a multigraph by its
odd subgraphs (Shannon's triangle of three links carrying 3/2 T paths each way needs more than T
slots). On 3-slot instances it closes master bounds that are one above the optimum: rrg3/1 110/3
S/PR, docs/scheduler.md "Odd-set cuts" (pathset.ODD_SET_ROUNDS, off since CP-SAT decides first).

Separation (odd_set_search) on the master's chosen paths: with load(a) the chosen paths on link a,
slack(S) = sum over S of T - load(a) and odd(S) the chosen paths meeting S an odd number of times,
the cut is violated by exactly (T - slack(S) - odd(S)) / 2, so a violated S is an odd set with
slack + odd < T: nearly saturated links that the chosen paths enter and leave in pairs. Only links
with load >= 2 can be in one (slack + odd <= T - 1 in all). A tabu search over toggling a link
in or out of S, from each such link in turn, minimises slack + odd and records every odd S that
reaches below T. It is deterministic; lsearch.c's ls_odd_sets makes the same moves (native.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from tobsched import native

# Moves of the tabu search from each start link, and how long a toggled link stays untouched.
STEPS = 60
TENURE = 5


def odd_set_search(paths: Sequence[Sequence[int]], slots: int, steps: int = STEPS,
                   tenure: int = TENURE) -> list[tuple[int, ...]]:
    """The odd link sets whose cut the chosen `paths` (each its directed links, distinct) violate,
    each sorted, in the order found, without repeats."""
    if not 1 <= slots < 2**31 or steps < 0 or tenure < 0:
        raise ValueError(f"bad odd-set search: slots {slots}, steps {steps}, tenure {tenure}")
    if native.LIB is not None:
        return native.odd_sets(paths, slots, steps, tenure)
    load: dict[int, int] = {}
    for p in paths:
        for a in p:
            load[a] = load.get(a, 0) + 1
    useful = sorted(a for a, n in load.items() if n >= 2)
    on: dict[int, list[int]] = {a: [] for a in useful}
    for j, p in enumerate(paths):
        for a in p:
            if a in on:
                on[a].append(j)
    found: list[tuple[int, ...]] = []
    seen: set[tuple[int, ...]] = set()
    for start in useful:
        inside = {start}
        count = [0] * len(paths)  # |p & S|
        for j in on[start]:
            count[j] = 1
        value = slots  # slack + odd of {start}: T - load + load
        tabu_until = {start: tenure}
        for step in range(steps):
            best_delta = 0
            best = -1
            for a in useful:
                if tabu_until.get(a, -1) >= step or (a in inside and len(inside) == 1):
                    continue
                delta = (-1 if a in inside else 1) * (slots - load[a])
                for j in on[a]:
                    delta += -1 if count[j] & 1 else 1
                if best < 0 or delta < best_delta:
                    best_delta, best = delta, a
            if best < 0:
                break
            step_in = best not in inside
            if step_in:
                inside.add(best)
            else:
                inside.discard(best)
            for j in on[best]:
                count[j] += 1 if step_in else -1
            value += best_delta
            tabu_until[best] = step + tenure
            if len(inside) % 2 == 1 and value < slots:
                key = tuple(sorted(inside))
                if key not in seen:
                    seen.add(key)
                    found.append(key)
                break
    return found


# ---- Mod-4 cuts: multipliers k_a / 4, k_a in 0..3 (odd sets are the k_a = 2 ones) ----
#
# Every schedule obeys sum over its paths p of floor(K_p / 4) <= T floor(sum_a k_a / 4), with
# K_p = sum over p's links of k_a (the same argument per slot, divided by 4 instead of 2). A master
# answer violates it exactly when sum_a k_a (T - load_a) + sum_p (K_p mod 4) - T (sum_a k_a mod 4)
# < 0. mod4_cuts finds such k over the answer's saturated links with GF(2) algebra: k = k0 + 2 k1;
# the syndromes of the path-link incidence (plus an all-ones row) say which sets D of one or three
# paths can be the only ones meeting S0 = {k0 = 1} oddly (in O(paths^2)), each D gives S0, and the
# same syndromes give k1 with at most two paths' sums left at 2 mod 4. As a proof, the master's LP
# with all of them, when its value is below the bound, lowers it (perf/scheduler/mod4_cuts.py; the
# solver no longer runs it: CP-SAT's first decision proves those bounds sooner, docs/scheduler.md).


def _parity(x: int) -> int:
    return bin(x).count("1") & 1


def _eliminate(rows: list[int]) -> tuple[list[tuple[int, int, int]], list[int]]:
    """GF(2) elimination of bitmask rows: pivots (leading bit, row, combination of input rows)
    and the dependencies (combinations of input rows that add up to zero)."""
    pivots: list[tuple[int, int, int]] = []
    deps: list[int] = []
    for i, r in enumerate(rows):
        combo = 1 << i
        for lead, m, c in pivots:
            if r >> lead & 1:
                r ^= m
                combo ^= c
        if r == 0:
            deps.append(combo)
        else:
            pivots.append((r.bit_length() - 1, r, combo))
    return pivots, deps


def _solve(pivots: list[tuple[int, int, int]], rhs: int) -> int:
    """A solution x of the (consistent) system whose right-hand sides are the bits of rhs."""
    x = 0
    for lead, m, c in sorted(pivots):
        if _parity(c & rhs) ^ _parity(m & ~(1 << lead) & x):
            x |= 1 << lead
    return x


def mod4_cuts(paths: Sequence[Sequence[int]], slots: int) -> list[dict[int, int]]:
    """Multipliers k (link -> 1..3) of mod-4 cuts that the chosen `paths` violate."""
    load: dict[int, int] = {}
    for p in paths:
        for a in p:
            load[a] = load.get(a, 0) + 1
    sat = sorted(a for a, n in load.items() if n == slots)
    index = {a: i for i, a in enumerate(sat)}
    n = len(paths)
    rows = [sum(1 << index[a] for a in p if a in index) for p in paths] + [(1 << len(sat)) - 1]
    pivots, deps = _eliminate(rows)
    syn = [0] * (n + 1)
    for j, h in enumerate(deps):
        for i in range(n + 1):
            if h >> i & 1:
                syn[i] |= 1 << j
    by_syn: dict[int, list[int]] = {}
    for r in range(n):
        by_syn.setdefault(syn[r], []).append(r)
    target = syn[n]
    odd_sets: list[tuple[int, ...]] = [(p,) for p in range(n) if syn[p] == target]
    for p in range(n):
        for q in range(p + 1, n):
            odd_sets.extend((p, q, r) for r in by_syn.get(target ^ syn[p] ^ syn[q], []) if r > q)
    found: list[dict[int, int]] = []
    seen: set[frozenset[int]] = set()
    for odd in odd_sets:
        x0 = _solve(pivots, sum(1 << p for p in odd) | 1 << n)
        s0 = frozenset(sat[i] for i in range(len(sat)) if x0 >> i & 1)
        if not s0 or s0 in seen:
            continue
        seen.add(s0)
        rhs = 0
        for i, p in enumerate(paths):
            c0 = sum(1 for a in p if a in s0)
            if (c0 // 2 if c0 % 2 == 0 else (1 - c0) // 2) % 2:
                rhs |= 1 << i
        if ((3 - len(s0)) // 2) % 2:
            rhs |= 1 << n
        s = 0
        for i in range(n + 1):
            if rhs >> i & 1:
                s ^= syn[i]
        give_up: tuple[int, ...] | None = () if s == 0 else None
        if give_up is None and s in by_syn:
            give_up = (by_syn[s][0],)
        if give_up is None:
            give_up = next(((j, by_syn[s ^ syn[j]][0]) for j in range(n) if s ^ syn[j] in by_syn), None)
        if give_up is None:
            continue
        for j in give_up:
            rhs ^= 1 << j
        x1 = _solve(pivots, rhs)
        k = {a: v for i, a in enumerate(sat) if (v := (1 if a in s0 else 0) + 2 * (x1 >> i & 1))}
        weighted = [sum(k.get(a, 0) for a in p) for p in paths]
        total = sum(k.values())
        value = sum(v * (slots - load[a]) for a, v in k.items()) + sum(w % 4 for w in weighted) - slots * (total % 4)
        if value < 0:
            found.append(k)
    return found


def mod4_row(cand_arcs: Sequence[Sequence[int]], k: dict[int, int], slots: int) -> tuple[list[int], int, list[float]]:
    """The master row of the mod-4 cut with multipliers k: candidates, bound, coefficients."""
    members: list[int] = []
    coefs: list[float] = []
    for ci, arcs in enumerate(cand_arcs):
        w = sum(k.get(a, 0) for a in arcs) // 4
        if w:
            members.append(ci)
            coefs.append(float(w))
    return members, slots * (sum(k.values()) // 4), coefs


def odd_set_row(cand_arcs: Sequence[Sequence[int]], links: Sequence[int], slots: int) -> tuple[list[int], int, list[float]]:
    """The master row of the odd set `links`: the mod-4 cut with k = 2 on them, that is
    coefficients floor(|p & S| / 2) and bound T floor(|S| / 2)."""
    return mod4_row(cand_arcs, dict.fromkeys(links, 2), slots)
