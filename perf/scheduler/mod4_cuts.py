#!/usr/bin/env python3
"""Mod-4 cuts for the slot-free master (issue 23): the separation (tobsched.oddset.mod4_cuts) round
by round, with the master's bound after each.

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
(docs/scheduler.md "Odd-set cuts"). The solver ran it (pathset.MOD4_SHORT) only where the warm
pumps ended two or more flows below the bound, just before CP-SAT's decision, until CP-SAT's first
decision (before the pumps, without its LP) proved those bounds sooner.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

from tobsched import pathset
from tobsched.highs_model import SolveOptions
from tobsched.oddset import mod4_cuts, mod4_row
from tobsched.paths import candidates

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpsat_decide import _net  # noqa: E402


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
            cuts.extend(mod4_row(arcs, k, slots) for k in found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
