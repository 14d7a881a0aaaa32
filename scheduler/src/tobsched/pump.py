"""A feasibility pump (Fischetti, Glover & Lodi 2005) on the slot LP of S/PR and S/FR, used to
find a schedule of `target` flows once the master has proven that no more are possible.

On the hard instances the bound is found at once and finding a schedule that meets it is what
takes time: the master's optimal path sets are often not T-colourable, local search stalls one
or two flows short, and branch and bound on the slot ILP takes seconds. The pump alternates an
LP point x* of {slot LP, sum x >= target} with a schedule rounded from it (pairs taken in
decreasing x*, then ejection chains), and moves the LP towards the rounding (minimise the L1
distance) until the rounding reaches the target. Every rounding is a valid schedule by
construction; the pump never proves anything, so a miss only costs its time.
"""

from __future__ import annotations

import numpy as np

import highspy

from tobsched.greedy import Assignment, partialcol, round_and_augment
from tobsched.highs_model import highs_lp
from tobsched.paths import Candidate
from tobsched.slot_ilp import canonical, slot_model

ITERATIONS_MAX = 25
# Share of the columns pushed the other way when the pump cycles (same rounding twice).
PERTURB_SHARE = 0.05
# PartialCol work on a rounding one flow short of the target (a few milliseconds).
POLISH_EVALUATIONS = 10_000


def feasibility_pump(
    num_flows: int,
    cands: list[Candidate],
    slots: int,
    target: int,
    time_limit_s: float,
    iterations_max: int = ITERATIONS_MAX,
    seed: int = 0,
    start: list[Assignment] | None = None,
    final_polish: bool = True,
) -> list[Assignment]:
    """The best schedule the pump rounded (target flows when it succeeded). `start`, a valid
    partial schedule (the master's coloured paths), replaces the first LP solve as the first
    rounding. The first rounding one flow short of the target gets a short PartialCol run (later
    ones do not: over the benchmark's hard instances they never closed a gap the first had left,
    docs/scheduler.md), the best rounding a longer one at the end (unless `final_polish` is off:
    the caller then runs it when it can still matter). Deterministic for a given
    input, seed and iteration count (HiGHS runs with one thread and a fixed seed)."""
    T = slots
    n = len(cands) * T
    best: list[Assignment] = [None] * num_flows
    if n == 0 or target <= 0:
        return best
    rows, upper, rank = slot_model(num_flows, cands, slots)
    rows.add(np.arange(n), float(target), np.inf)
    lp = highs_lp(np.ones(n), rows, upper=upper, integer=np.zeros(n, dtype=bool))
    h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", 0)
    h.setOptionValue("time_limit", max(0.01, float(time_limit_s)))
    # Every solve after the first only changes the costs: start from the last basis.
    h.setOptionValue("presolve", "off")
    h.passModel(lp)
    rng = np.random.default_rng(seed)
    cols = np.arange(n, dtype=np.int32)
    best_count = 0
    seen: set[bytes] = set()
    x = np.zeros(n)
    polished = False
    for it in range(iterations_max):
        if it == 0 and start is not None:
            # Slots relabelled in rank order, as the symmetry-broken LP expects.
            got = round_and_augment(num_flows, cands, T, [a for a in canonical(start, rank) if a is not None])
            x = np.full(n, 0.5)
        else:
            h.run()
            if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                break  # the target is above the LP bound, or out of time
            x = np.asarray(h.getSolution().col_value, dtype=np.float64)
            order = np.argsort(-x, kind="stable")
            order = order[x[order] > 1e-6]
            got = round_and_augment(num_flows, cands, T, [(int(c) % T, int(c) // T) for c in order])
        count = sum(a is not None for a in got)
        if count == target - 1 and not polished:
            polished = True
            got = partialcol(num_flows, cands, T, got, POLISH_EVALUATIONS, seed=seed + it)
            count = sum(a is not None for a in got)
        if count > best_count:
            best, best_count = got, count
        if count >= target:
            break
        rounded = np.zeros(n, dtype=bool)
        for a in got:
            if a is not None:
                rounded[a[1] * T + a[0]] = True
        # Maximise agreement with the rounding: +1 on its ones, -1 elsewhere.
        cost = np.where(rounded, 1.0, -1.0)
        key = rounded.tobytes()
        if key in seen:
            k = max(1, int(PERTURB_SHARE * n))
            flip = np.argsort(np.abs(x - 0.5) - 0.3 * rng.random(n))[:k]
            cost[flip] = -cost[flip]
        seen.add(key)
        h.changeColsCost(n, cols, cost)
    if final_polish and 0 < best_count < target:
        # One or two short: a PartialCol run from the pump's best often gains one (on the hard
        # instances of the benchmark it once reached the optimum CP-SAT then proved).
        last = partialcol(num_flows, cands, T, best, seed=seed)
        if sum(a is not None for a in last) > best_count:
            best = last
    return best
