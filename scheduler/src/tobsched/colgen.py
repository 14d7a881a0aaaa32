"""The configuration LP of S/PR and S/FR by column generation with a dedicated pricing search.

Not called by the solver (pathset.py): on the two hard 3-slot instances where the master's bound
is one above the optimum it proves the optimum's bound, but in 0.18-0.46 s of CPU, 2-3x what
issue 23 allows, and where the master's bound is the optimum it proves nothing after 0.16-2.5 s
(figures and reasons in docs/experiments/scheduler-scalability.md). It is kept, tested, for
perf/scheduler/config_lp.py and as the starting point of the next attempt.

A column is one slot's content: a set of link-disjoint candidate paths, at most one per flow. A
schedule is at most T columns that share no flow, so

    max sum_S |S| l_S   s.t.   sum_S l_S <= T (dual mu),   sum_{S contains f} l_S <= 1 (dual pi_f)

relaxes the slot ILP without its slot symmetry and is at least as strong as pathset.py's master.

The bound. For ANY pi in [0, 1]^flows, a schedule's count is sum_f pi_f x_f + sum_f (1 - pi_f) x_f,
and the second sum splits over the T slots, each a packing, so every schedule has at most

    L(pi) = sum_f pi_f + T * max(0, P(pi)),   P(pi) = max over packings S of sum_{c in S} (1 - pi_f(c)).

Only HiGHS's answers on P are used as proofs: the dual bound of the pricing MIP (plain mode), or
"no packing weighs theta or more" with theta = (target - sum(pi)) / T - DECIDE_MARGIN (then
L(pi) < target, so no schedule has `target` flows). Everything else here only finds columns, so
a weak search costs time and never a wrong bound.

The search (the issue's "dedicated pricing"): greedy packings from several orders (weight, weight
per hop, shuffled, the pricing LP relaxation's values) and from the restricted LP's basic columns,
each improved by (many,1)-swaps (a path enters when it outweighs the members it conflicts with)
and (1,many)-swaps (a member leaves for paths whose only conflicting member it is), then kicks
(two random paths forced in, swaps again: iterated local search). The exact decision runs only
when the search finds no column of reduced cost at least (target - LP) / T: below that, the LP's
own duals might prove the bound, and only HiGHS can say.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field

import highspy
import numpy as np

from tobsched.greedy import Assignment
from tobsched.highs_model import RowBuilder, SolveOptions, highs_lp, solve_max
from tobsched.paths import Candidate

# Work limits per call of configuration_lp.
ITERATIONS_MAX = 300
# Greedy starts and kicks of the search per pricing.
PRICING_STARTS = 4
PRICING_KICKS = 20
# The restricted LP's basic columns (largest values first) the search also starts from.
SUPPORT_SEEDS = 6
# New columns per iteration at most.
COLUMNS_PER_ITERATION = 20
# Time for the integer programme over the columns once the LP reaches the target.
INTEGER_TIME_S = 0.05
# theta's margin below (target - sum(pi)) / T: a proof leaves L(pi) <= target - T * margin.
DECIDE_MARGIN = 1e-4
EPS = 1e-9


@dataclass
class ColgenOptions:
    time_limit_s: float = 10.0
    # False: the exact pricing MIP at every iteration (plain column generation, for comparison).
    heuristic_pricing: bool = True
    # Wentges smoothing: price first at smoothing * centre + (1 - smoothing) * the LP's duals,
    # the centre being the dual point of the lowest estimated L so far (0: off).
    smoothing: float = 0.0
    # Solve the restricted LP by interior point without crossover (duals from the centre of the
    # optimal face rather than a vertex).
    central_duals: bool = False
    # The pricing LP relaxation as one of the search's starts.
    lp_start: bool = True


@dataclass
class ColgenResult:
    bound: int | None  # proven: no schedule has more flows; None when nothing was proven
    schedule: list[Assignment] | None  # a schedule of at least `target` flows, when found
    lp_value: float
    iterations: int
    exact_pricings: int  # HiGHS pricing MIPs (exact or decision)
    columns: int
    why: str
    clock_s: dict[str, float] = field(default_factory=dict)


def _bits(m: int) -> list[int]:
    out = []
    while m:
        b = m & -m
        out.append(b.bit_length() - 1)
        m ^= b
    return out


class Pricing:
    """Packings of link-disjoint candidate paths, at most one per flow, of large weight (the
    weight of a path is its flow's)."""

    def __init__(self, cands: list[Candidate]) -> None:
        n = len(cands)
        self.n = n
        self.flow_of = np.array([c.flow for c in cands], dtype=np.int64)
        self.hops = [len(c.arcs) for c in cands]
        by_arc: dict[int, int] = {}
        by_flow: dict[int, int] = {}
        for ci, c in enumerate(cands):
            by_flow[c.flow] = by_flow.get(c.flow, 0) | (1 << ci)
            for a in set(c.arcs):
                by_arc[a] = by_arc.get(a, 0) | (1 << ci)
        # conflict[c]: the other paths c cannot share a slot with (same flow or a shared directed link).
        self.conflict: list[int] = []
        for ci, c in enumerate(cands):
            m = by_flow[c.flow]
            for a in set(c.arcs):
                m |= by_arc[a]
            self.conflict.append(m & ~(1 << ci))
        groups = [m for m in list(by_flow.values()) + list(by_arc.values()) if m & (m - 1)]
        self._groups = [np.array(_bits(m), dtype=np.int64) for m in groups]
        self._lp: highspy.Highs | None = None

    def is_packing(self, members: list[int]) -> bool:
        inside = 0
        for m in members:
            inside |= 1 << m
        return len(set(members)) == len(members) and all(not self.conflict[m] & inside for m in members)

    def greedy(self, order: list[int], w: list[float], start: list[int] | None = None) -> list[int]:
        members = list(start or [])
        blocked = 0
        for m in members:
            blocked |= self.conflict[m] | (1 << m)
        for ci in order:
            if w[ci] > EPS and not (blocked >> ci) & 1:
                members.append(ci)
                blocked |= self.conflict[ci] | (1 << ci)
        return members

    def _enter(self, members: list[int], order: list[int], w: list[float]) -> list[int]:
        """(many,1)-swaps until none gains: path v enters, the members it conflicts with leave,
        the freed places are refilled greedily in `order`."""
        inside = 0
        for m in members:
            inside |= 1 << m
        for _ in range(self.n):  # each pass gains at least EPS; a limit all the same
            improved = False
            for v in order:
                if w[v] <= EPS or (inside >> v) & 1:
                    continue
                out = self.conflict[v] & inside
                loss = 0.0
                o = out
                while o:
                    b = o & -o
                    loss += w[b.bit_length() - 1]
                    o ^= b
                if w[v] > loss + EPS:
                    inside = (inside & ~out) | (1 << v)
                    improved = True
            if not improved:
                break
            refill = self.greedy(order, w, _bits(inside))
            inside = 0
            for m in refill:
                inside |= 1 << m
        return _bits(inside)

    def _leave(self, inside: int, w: list[float]) -> int | None:
        """The best (1,many)-swap: member u leaves and the paths whose only conflicting member is
        u enter (greedily by weight) when they outweigh u. The new set, or None."""
        best_gain = EPS
        best: int | None = None
        free: dict[int, list[int]] = {}
        for v in range(self.n):
            if w[v] <= EPS or (inside >> v) & 1:
                continue
            c = self.conflict[v] & inside
            if c and not c & (c - 1):
                free.setdefault(c.bit_length() - 1, []).append(v)
        for u, vs in free.items():
            if len(vs) < 2:
                continue
            vs.sort(key=lambda v: -w[v])
            got = 0
            gain = -w[u]
            blocked = 0
            for v in vs:
                if not (blocked >> v) & 1:
                    got |= 1 << v
                    gain += w[v]
                    blocked |= self.conflict[v]
            if gain > best_gain:
                best_gain, best = gain, (inside & ~(1 << u)) | got
        return best

    def improve(self, members: list[int], order: list[int], w: list[float]) -> list[int]:
        got = self._enter(members, order, w)
        for _ in range(self.n):
            inside = 0
            for m in got:
                inside |= 1 << m
            better = self._leave(inside, w)
            if better is None:
                break
            got = self._enter(_bits(better), order, w)
        return got

    def lp_order(self, w: list[float]) -> list[int]:
        """Paths of positive weight by their value in the pricing's LP relaxation, then weight.
        One HiGHS model kept across calls; only the costs change (warm basis)."""
        if self._lp is None:
            rows = RowBuilder()
            for g in self._groups:
                rows.add(g, -np.inf, 1.0)
            h = highspy.Highs()  # type: ignore[no-untyped-call]
            h.setOptionValue("output_flag", False)
            h.setOptionValue("threads", 1)
            h.setOptionValue("presolve", "off")
            h.passModel(highs_lp(np.zeros(self.n), rows, integer=np.zeros(self.n, dtype=bool)))
            self._lp = h
        h = self._lp
        h.changeColsCost(self.n, np.arange(self.n, dtype=np.int32), np.maximum(np.asarray(w), 0.0))
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return []
        x = np.asarray(h.getSolution().col_value, dtype=np.float64)
        pos = [ci for ci in range(self.n) if w[ci] > EPS]
        return sorted(pos, key=lambda c: (-round(float(x[c]), 6), -w[c]))

    def search(self, w: list[float], rng: random.Random, lp_start: bool,
               seeds: list[tuple[int, ...]] | None = None) -> list[list[int]]:
        """Packings of large weight (distinct), best first."""
        pos = [ci for ci in range(self.n) if w[ci] > EPS]
        if not pos:
            return []
        orders = [sorted(pos, key=lambda c: -w[c]), sorted(pos, key=lambda c: -w[c] / self.hops[c])]
        while len(orders) < PRICING_STARTS:
            o = list(pos)
            rng.shuffle(o)
            o.sort(key=lambda c: -w[c] * (0.7 + 0.6 * rng.random()))
            orders.append(o)
        if lp_start:
            o = self.lp_order(w)
            if o:
                orders.append(o)
        found: dict[tuple[int, ...], float] = {}

        def keep(got: list[int]) -> None:
            key = tuple(sorted(got))
            found[key] = sum(w[c] for c in key)

        for order in orders:
            keep(self.improve(self.greedy(order, w), order, w))
        for seed in seeds or []:
            keep(self.improve([c for c in seed if w[c] > EPS], orders[1], w))
        cur, cur_w = max(found.items(), key=lambda kv: kv[1])
        for _ in range(PRICING_KICKS):
            inside = 0
            for m in cur:
                inside |= 1 << m
            for _k in range(2):
                v = pos[rng.randrange(len(pos))]
                inside = (inside & ~self.conflict[v]) | (1 << v)
            got = self.improve(_bits(inside), orders[1], w)
            keep(got)
            if found[tuple(sorted(got))] >= cur_w - EPS:
                cur, cur_w = tuple(sorted(got)), found[tuple(sorted(got))]
        return [list(k) for k, _ in sorted(found.items(), key=lambda kv: -kv[1])]

    def _model(self, w: np.ndarray) -> tuple[np.ndarray, RowBuilder]:
        pos = np.flatnonzero(w > EPS)
        local = np.full(w.size, -1, dtype=np.int64)
        local[pos] = np.arange(pos.size)
        rows = RowBuilder()
        for g in self._groups:
            m = local[g]
            m = m[m >= 0]
            if m.size > 1:
                rows.add(m, -np.inf, 1.0)
        return pos, rows

    def exact(self, w: np.ndarray, time_limit_s: float) -> tuple[float, list[int]]:
        """(an upper bound on P: HiGHS's dual bound, the best packing HiGHS found), over the
        paths of positive weight (the others never help)."""
        pos, rows = self._model(w)
        if pos.size == 0:
            return 0.0, []
        res = solve_max(w[pos], rows, SolveOptions(max(0.01, time_limit_s)))
        got = [] if res.x is None else [int(pos[j]) for j in np.flatnonzero(res.x > 0.5)]
        return max(0.0, res.dual_bound), got

    def decide(self, w: np.ndarray, theta: float, time_limit_s: float) -> tuple[bool | None, list[int]]:
        """Is there a packing of weight >= theta? (False: HiGHS proved none; True with one;
        None: undecided in time.) HiGHS stops at its first solution."""
        pos, rows = self._model(w)
        if pos.size == 0 or float(w[pos].sum()) < theta:
            return (True, []) if theta <= 0.0 else (False, [])
        rows.add(np.arange(pos.size), theta, np.inf, w[pos])
        h = highspy.Highs()  # type: ignore[no-untyped-call]
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.setOptionValue("random_seed", 0)
        h.setOptionValue("time_limit", max(0.01, time_limit_s))
        h.setOptionValue("mip_max_improving_sols", 1)
        h.passModel(highs_lp(w[pos], rows))
        h.run()
        if h.getModelStatus() == highspy.HighsModelStatus.kInfeasible:
            return False, []
        if h.getInfo().primal_solution_status == 2:
            x = np.asarray(h.getSolution().col_value, dtype=np.float64)
            got = [int(pos[j]) for j in np.flatnonzero(x > 0.5)]
            # Used only when it is a packing of the weight asked for.
            if self.is_packing(got) and float(w[got].sum()) >= theta - 1e-7:
                return True, got
        return None, []


class ConfigurationLP:
    """The restricted configuration LP in HiGHS (columns added with addCol, warm basis)."""

    def __init__(self, num_flows: int, cands: list[Candidate], slots: int, central_duals: bool = False) -> None:
        self.num_flows = num_flows
        self.cands = cands
        self.slots = slots
        self.pricing = Pricing(cands)
        self.columns: list[tuple[int, ...]] = []
        self._seen: set[tuple[int, ...]] = set()
        h = highspy.Highs()  # type: ignore[no-untyped-call]
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.setOptionValue("random_seed", 0)
        if central_duals:
            h.setOptionValue("solver", "ipm")
            h.setOptionValue("run_crossover", "off")
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        lo = np.full(1 + num_flows, -highspy.kHighsInf)
        hi = np.concatenate(([float(slots)], np.ones(num_flows)))
        h.addRows(1 + num_flows, lo, hi, 0, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        self.h = h

    def add(self, members: list[int]) -> bool:
        key = tuple(sorted(members))
        if not key or key in self._seen:
            return False
        assert self.pricing.is_packing(list(key)), "a column is a packing"
        self._seen.add(key)
        self.columns.append(key)
        flows = [self.cands[c].flow for c in key]
        rows = np.concatenate(([0], 1 + np.asarray(flows, dtype=np.int64))).astype(np.int32)
        self.h.addCol(float(len(key)), 0.0, highspy.kHighsInf, rows.size, rows, np.ones(rows.size))
        return True

    def add_schedule(self, assign: list[Assignment]) -> None:
        per: dict[int, list[int]] = {}
        for a in assign:
            if a is not None:
                per.setdefault(a[0], []).append(a[1])
        for members in per.values():
            self.add(members)

    def solve(self, time_limit_s: float) -> tuple[float, np.ndarray, float, np.ndarray] | None:
        """(LP value, flow duals, mu, column values), or None when HiGHS did not solve it."""
        if not self.columns:
            return 0.0, np.zeros(self.num_flows), 0.0, np.zeros(0)  # HiGHS refuses a model without columns
        self.h.setOptionValue("time_limit", max(0.01, time_limit_s))
        self.h.run()
        if self.h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        sol = self.h.getSolution()
        dual = np.asarray(sol.row_dual, dtype=np.float64)
        # Duals of the <= rows of a maximisation, as HiGHS reports them (>= 0 here).
        return (float(self.h.getInfo().objective_function_value), np.maximum(dual[1:], 0.0),
                max(float(dual[0]), 0.0), np.asarray(sol.col_value, dtype=np.float64))

    def schedule_from(self, chosen: list[int]) -> list[Assignment]:
        out: list[Assignment] = [None] * self.num_flows
        for k, j in enumerate(chosen):
            for ci in self.columns[j]:
                f = self.cands[ci].flow
                assert out[f] is None, "chosen columns share a flow"
                out[f] = (k, ci)
        return out

    def integer(self, target: int, time_limit_s: float) -> list[Assignment] | None:
        """A schedule of at least `target` flows from the generated columns (a MIP over them)."""
        m = len(self.columns)
        sizes = np.array([len(c) for c in self.columns], dtype=np.float64)
        rows = RowBuilder()
        rows.add(np.arange(m), -np.inf, float(self.slots))
        by_flow: dict[int, list[int]] = {}
        for j, col in enumerate(self.columns):
            for ci in col:
                by_flow.setdefault(self.cands[ci].flow, []).append(j)
        for members in by_flow.values():
            if len(members) > 1:
                rows.add(members, -np.inf, 1.0)
        rows.add(np.arange(m), float(target), np.inf, sizes)
        res = solve_max(sizes, rows, SolveOptions(max(0.01, time_limit_s)), integral_objective=True)
        if res.x is None or res.objective < target - 0.5:
            return None
        return self.schedule_from([int(j) for j in np.flatnonzero(res.x > 0.5)])


def lagrangian_bound(pricing: Pricing, pi: np.ndarray, slots: int, time_limit_s: float = 60.0) -> float:
    """L(pi) with P replaced by HiGHS's dual bound: no schedule has more flows, for any pi >= 0."""
    pi = np.clip(pi, 0.0, 1.0)  # clipping keeps P and lowers sum(pi)
    ub, _ = pricing.exact(1.0 - pi[pricing.flow_of], time_limit_s)
    return float(pi.sum()) + slots * ub


def configuration_lp(
    num_flows: int,
    cands: list[Candidate],
    slots: int,
    target: int,
    schedules: list[list[Assignment]],
    options: ColgenOptions | None = None,
) -> ColgenResult:
    """Column generation until no schedule of `target` flows is proven to exist (bound target - 1
    or less), or one is found among the columns, or the LP reaches `target` (the configuration
    LP cannot prove it then), or time or ITERATIONS_MAX runs out. `schedules` seed the columns
    (each slot a column)."""
    opts = options or ColgenOptions()
    t_end = time.perf_counter() + opts.time_limit_s
    lp = ConfigurationLP(num_flows, cands, slots, opts.central_duals)
    pricing = lp.pricing
    flow_of = pricing.flow_of
    rng = random.Random(0)
    for s in schedules:
        lp.add_schedule(s)
    exact_pricings = 0
    lp_value = math.nan
    it = 0
    centre: np.ndarray | None = None
    centre_est = math.inf
    clock = {"lp": 0.0, "search": 0.0, "exact": 0.0, "integer": 0.0}

    def left() -> float:
        return t_end - time.perf_counter()

    def result(bound: int | None, schedule: list[Assignment] | None, why: str) -> ColgenResult:
        return ColgenResult(bound, schedule, lp_value, it, exact_pricings, len(lp.columns), why, clock)

    def offer(members: list[int], w_lp: np.ndarray, mu: float) -> bool:
        """Adds a column, extended by any path that fits at no loss, when its reduced cost at
        the LP's duals is positive."""
        if not members or float(np.sum(w_lp[members])) <= mu + 1e-7:
            return False
        order = np.argsort(-w_lp, kind="stable")
        full = pricing.greedy([int(c) for c in order if w_lp[c] > -1e-9], [1.0] * pricing.n, members)
        return lp.add(full) or lp.add(members)

    while it < ITERATIONS_MAX and left() > 0:
        it += 1
        t = time.perf_counter()
        got = lp.solve(left())
        clock["lp"] += time.perf_counter() - t
        if got is None:
            return result(None, None, "HiGHS did not solve the restricted LP")
        lp_value, pi_raw, mu, x = got
        w_lp = 1.0 - pi_raw[flow_of]  # a path's share of a column's reduced cost (then minus mu)
        pi = np.minimum(pi_raw, 1.0)
        if lp_value >= target - 1e-6:
            # The LP only grows: it cannot prove the target impossible any more. Price and
            # branch: the columns may hold a schedule of the target's size.
            t = time.perf_counter()
            sched = lp.integer(target, min(left(), INTEGER_TIME_S))
            clock["integer"] += time.perf_counter() - t
            if sched is not None:
                return result(None, sched, f"a schedule of {target} from the columns")
            return result(None, None, f"the LP reached {target}")
        if not opts.heuristic_pricing:
            t = time.perf_counter()
            ub, col = pricing.exact(1.0 - pi[flow_of], max(0.01, left()))
            clock["exact"] += time.perf_counter() - t
            exact_pricings += 1
            bound = float(pi.sum()) + slots * ub
            if math.floor(bound + 1e-6) < target:
                return result(math.floor(bound + 1e-6), None, f"bound {bound:.3f}")
            if not offer(col, w_lp, mu):
                return result(None, None, "converged")
            continue
        support = [lp.columns[int(j)] for j in np.argsort(-x, kind="stable")[:SUPPORT_SEEDS] if x[j] > 1e-9]
        added = 0
        points = [pi_raw] if centre is None or opts.smoothing <= 0 else \
            [opts.smoothing * centre + (1.0 - opts.smoothing) * pi_raw, pi_raw]
        for p in points:
            w = np.maximum(1.0 - p[flow_of], 0.0).tolist()
            t = time.perf_counter()
            found = pricing.search(w, rng, opts.lp_start, support)
            clock["search"] += time.perf_counter() - t
            if found:
                pc = np.minimum(p, 1.0)
                est = float(pc.sum()) + slots * sum(w[c] for c in found[0])
                if est < centre_est:
                    centre, centre_est = pc.copy(), est
            for members in found:
                if added < COLUMNS_PER_ITERATION and offer(members, w_lp, mu):
                    added += 1
            if added:
                break
        if added:
            continue
        # The search found no column: ask HiGHS for a packing of weight >= theta at the LP's
        # duals. None means P(pi) < theta, so L(pi) < target: the proof. (Asking as soon as the
        # search finds no column of reduced cost (target - LP) / T, before the LP converges,
        # needed 2-3x more of these MIPs, each slower: 0.6-1.3 s on rrg3/0 90/3.)
        theta = (target - float(pi.sum())) / slots - DECIDE_MARGIN
        t = time.perf_counter()
        answer, col = pricing.decide(1.0 - pi[flow_of], theta, max(0.01, left()))
        clock["exact"] += time.perf_counter() - t
        exact_pricings += 1
        if answer is False:
            return result(target - 1, None, f"no schedule of {target} (L(pi) < {target})")
        if answer is None:
            return result(None, None, "the exact pricing was undecided in time")
        if not offer(col, w_lp, mu) and added == 0:
            return result(None, None, "no new column")  # theta > mu: cannot happen
    return result(None, None, "out of time or iterations")
