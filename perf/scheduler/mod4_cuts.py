#!/usr/bin/env python3
"""Mod-4 cuts for the slot-free master (issue 23, an experiment: not in the solver yet).

Odd-set cuts (tobsched/oddset.py) are the Chvatal-Gomory cuts of one slot's link rows with
multipliers 1/2. With multipliers k_a / 4 (k_a in 0..3) the same argument gives, for every
schedule,

    sum over its paths p of floor(K_p / 4)  <=  T * floor(sum_a k_a / 4),   K_p = sum_{a in p} k_a,

and a master answer violates it exactly when
sum_a k_a (T - load_a) + sum_p (K_p mod 4) - T (sum_a k_a mod 4) < 0. On rrg3/0 90/3 S/PR (master
bound 54, optimum 53), where no odd set is violated, mod-4 cuts lower the bound to 53.

The separation here, on the master's integral answer, over its saturated links (load = T):
- k = k0 + 2 k1 with k0, k1 in {0, 1}. The paths that meet S0 = {a: k0_a = 1} an odd number of
  times have K_p odd: a defect of at least 1 each. S0 must have odd size (sum k = 3 mod 4).
- Over GF(2), with A the path-link incidence plus an all-ones row, S0 with exactly the paths D
  odd exists iff the syndromes (left null space of A) of D and of the all-ones row cancel: D of
  size 1 or 3 are enumerated in O(paths^2) by a dictionary of syndromes.
- k1 then solves A k1 = b (b: what makes each K_p 0 mod 4, or 1 when p meets S0 oddly, and
  sum k = 3 mod 4) with at most two equations given up (a defect of 2 each), found the same way.
- Every k so found is checked with the violation formula above.

    build/venv-sched/bin/python perf/scheduler/mod4_cuts.py --instance rrg3/0/90/3/spr
    build/venv-sched/bin/python perf/scheduler/mod4_cuts.py --instance rrg3/1/110/3/spr --rounds 8

Measured (2026-11-30, pure Python, one round = the separation, then the master again with every
cut found): rrg3/0 90/3 S/PR 54 -> 53 in one round (180 cuts, 17 ms); rrg3/1 110/3 S/PR 55 -> 54
in one round (668 cuts, 75 ms); on instances whose bound is the optimum (rrg4/0 110/3 S/PR) or
one above it but not closed this way (rrg4/5 110/3 S/FR, rrg3/5 80/3 S/FR), 2-125 ms per round
for nothing. The bound drops only with all the cuts of the round: with the first 5, 10, 20 or 40
found it stays on both instances, and the master MIP with all of them takes 146 ms (rrg3/0 90/3)
and 218 ms (rrg3/1 110/3). But its LP relaxation alone proves the drop: 53.800 in 8 ms on rrg3/0
90/3 (54.667 in 39 ms on rrg3/1 110/3), and the master with the single row "at most 53 paths"
in place of the cuts is an integral LP vertex in 3 ms. So a solver step costs the separation
(17-66 ms in this Python on the benchmark's 3-slot instances at 110 flows, nothing found or not)
plus an LP of 6-40 ms: too much for the instances at the 50 ms floor (rrg4/1 110/3 S/PR takes
41 ms) and for rrg4/0 110/3 S/FR after its first warm pump (157 ms against 178) unless compiled
(docs/scheduler.md "Odd-set cuts").
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Sequence

import numpy as np

from tobsched import pathset
from tobsched.highs_model import SolveOptions
from tobsched.paths import candidates

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpsat_decide import _net  # noqa: E402


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instance", action="append", required=True, help="model/seed/flows/slots/spr|sfr (repeatable)")
    ap.add_argument("--rounds", type=int, default=4, help="separation rounds at most (default 4)")
    args = ap.parse_args()
    for spec in args.instance:
        net, form = _net(spec)
        cands = candidates(net, fixed=form == "sfr")
        arcs = [c.arcs for c in cands]
        slots, flows = net.slots, len(net.flows)
        cuts: list[pathset.Cut] = []
        for rnd in range(args.rounds):
            res = pathset._master(flows, cands, slots, cuts, SolveOptions(30.0), [], lp_first=True)
            chosen = [int(ci) for ci in np.flatnonzero(res.x > 0.5)]
            t = time.perf_counter()
            found = mod4_cuts([arcs[ci] for ci in chosen], slots)
            ms = (time.perf_counter() - t) * 1000
            print(f"{spec}: round {rnd + 1}: master bound {math.floor(res.dual_bound + 1e-6)}, "
                  f"{len(found)} violated mod-4 cuts found in {ms:.0f} ms", flush=True)
            if not found:
                break
            for k in found:
                members = [ci for ci, a in enumerate(arcs) if sum(k.get(x, 0) for x in a) >= 4]
                coefs = [float(sum(k.get(x, 0) for x in arcs[ci]) // 4) for ci in members]
                cuts.append((members, slots * (sum(k.values()) // 4), coefs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
