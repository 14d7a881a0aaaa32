#!/usr/bin/env python3
"""The configuration LP bound of S/PR and S/FR on given instances (an experiment for issue 23).

A column is one slot's content: a set of link-disjoint candidate paths, at most one per flow. A
schedule is at most T columns sharing no flow, so

    max sum_S |S| l_S   s.t.   sum_S l_S <= T (dual mu),   sum_{S contains f} l_S <= 1 (dual pi_f),   l >= 0

relaxes the slot ILP without its slot symmetry, and it is at least as strong as tob-schedule's
slot-free master (the master's duals give a dual point of this LP of the same value). The question
this script answers: on the 3-slot instances where the master's bound is one above the optimum
(pathset.py then spends its time on the proof), is floor(configuration LP) the optimum, and what
does plain column generation cost in Python?

Column generation: the restricted LP in HiGHS (columns added with addCol, warm basis), pricing by
a few greedy packings and, each iteration (with --lazy only when those find nothing), a small MIP (the column of greatest
sum_{c in S} (1 - pi_f(c)): paths, at most one per flow and per directed link). Every pi in
[0, 1]^flows gives the valid bound sum_f pi_f + T * (pricing optimum), with the pricing MIP's own
dual bound in place of its optimum, so the reported bound holds even when the generation stops
early. Columns: the slots of tob-schedule's greedy schedule to start with, each new one extended
with any path that still fits.

    build/venv-sched/bin/python perf/scheduler/config_lp.py                       # the default instances
    build/venv-sched/bin/python perf/scheduler/config_lp.py --instance rrg3/0/90/3/spr --time-limit 30

Prints one line per instance: the master's bound, the restricted LP's last value (the
configuration LP's once converged) and the best bound, the optimum tob-schedule proves,
iterations, exact pricings and seconds (wall and CPU).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import highspy
import numpy as np

from tobsched.generate import generate
from tobsched.greedy import Assignment, greedy_assign
from tobsched.highs_model import RowBuilder, SolveOptions, solve_max
from tobsched.network import network_from_obj
from tobsched.paths import Candidate, candidates
from tobsched.pathset import _master
from tobsched.solve import solve

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scalability import SMALL_MODELS  # noqa: E402

# The 3-slot instances of docs/experiments/scheduler-scalability.md that missed the target.
DEFAULT_INSTANCES = ["er/0/110/3/spr", "rrg3/0/90/3/spr", "rrg4/0/110/3/sfr", "rrg3/1/110/3/spr",
                     "rrg4/0/110/3/spr", "rrg4/0/70/3/sfr"]


class ConfigLP:
    def __init__(self, num_flows: int, cands: list[Candidate], slots: int) -> None:
        self.num_flows = num_flows
        self.slots = slots
        self.flow_of = np.array([c.flow for c in cands], dtype=np.int64)
        self.mask = [sum(1 << a for a in set(c.arcs)) for c in cands]
        self.len = np.array([len(c.arcs) for c in cands], dtype=np.float64)
        self.columns: list[tuple[int, ...]] = []
        self._seen: set[tuple[int, ...]] = set()
        self.bound = math.inf
        self.lp_value = math.nan
        self.iterations = 0
        self.exact_pricings = 0
        self.lazy = False
        h = highspy.Highs()  # type: ignore[no-untyped-call]
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        lo = np.full(1 + num_flows, -highspy.kHighsInf)
        hi = np.concatenate(([float(slots)], np.ones(num_flows)))
        h.addRows(1 + num_flows, lo, hi, 0, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        self.h = h
        by_flow: dict[int, list[int]] = {}
        by_arc: dict[int, list[int]] = {}
        for ci, c in enumerate(cands):
            by_flow.setdefault(c.flow, []).append(ci)
            for a in c.arcs:
                by_arc.setdefault(a, []).append(ci)
        self._groups = [np.asarray(m, dtype=np.int64) for m in list(by_flow.values()) + list(by_arc.values()) if len(m) > 1]

    def add_schedule(self, assign: list[Assignment]) -> None:
        per: dict[int, list[int]] = {}
        for a in assign:
            if a is not None:
                per.setdefault(a[0], []).append(a[1])
        for members in per.values():
            self._add_column(members)

    def _add_column(self, members: list[int]) -> bool:
        key = tuple(sorted(members))
        if not key or key in self._seen:
            return False
        self._seen.add(key)
        self.columns.append(key)
        rows = np.concatenate(([0], 1 + self.flow_of[list(key)])).astype(np.int32)
        self.h.addCol(float(len(key)), 0.0, highspy.kHighsInf, rows.size, rows, np.ones(rows.size))
        return True

    def _pack(self, order: np.ndarray, start: list[int]) -> list[int]:
        """Adds paths in `order` to `start` wherever they fit (link-disjoint, one per flow)."""
        used = 0
        flows: set[int] = set()
        out = list(start)
        for ci in out:
            used |= self.mask[ci]
            flows.add(int(self.flow_of[ci]))
        for ci in order:
            ci = int(ci)
            f = int(self.flow_of[ci])
            if f not in flows and not used & self.mask[ci]:
                used |= self.mask[ci]
                flows.add(f)
                out.append(ci)
        return out

    def _exact_pricing(self, weight: np.ndarray, time_limit_s: float) -> tuple[float, list[int]]:
        """(upper bound on the pricing optimum, the best column found)."""
        pos = np.flatnonzero(weight > 1e-9)
        if pos.size == 0:
            return 0.0, []
        local = np.full(weight.size, -1, dtype=np.int64)
        local[pos] = np.arange(pos.size)
        rows = RowBuilder()
        for g in self._groups:
            m = local[g]
            m = m[m >= 0]
            if m.size > 1:
                rows.add(m, -np.inf, 1.0)
        res = solve_max(weight[pos], rows, SolveOptions(max(0.01, time_limit_s)))
        self.exact_pricings += 1
        cols = [] if res.x is None else [int(pos[j]) for j in np.flatnonzero(res.x > 0.5)]
        return max(0.0, res.dual_bound), cols

    def run(self, deadline: float) -> None:
        """Column generation until no column prices out or perf_counter() reaches `deadline`."""
        while time.perf_counter() < deadline:
            self.iterations += 1
            self.h.setOptionValue("time_limit", max(0.01, deadline - time.perf_counter()))
            self.h.run()
            if self.h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                break
            self.lp_value = float(self.h.getInfo().objective_function_value)
            dual = np.asarray(self.h.getSolution().row_dual, dtype=np.float64)
            # Duals of the <= rows of a maximisation (HiGHS reports them >= 0). Any pi >= 0 gives a
            # valid bound; pi_f above 1 only adds to sum(pi) (its paths' weights are negative and
            # pricing leaves them out), so it is clipped for the bound.
            pi_lp = np.maximum(dual[1:], 0.0)
            mu = max(float(dual[0]), 0.0)
            pi = np.minimum(pi_lp, 1.0)
            weight = 1.0 - pi[self.flow_of]  # for pricing: the positive part is all it uses
            reduced = 1.0 - pi_lp[self.flow_of]  # a path's share of a column's reduced cost
            # Fill a column only with paths that cost nothing at the LP's duals, so that it keeps
            # the reduced cost of the packing it extends.
            fill = np.argsort(-reduced, kind="stable")
            fill = fill[reduced[fill] > -1e-9]
            added = False

            def offer(got: list[int]) -> bool:
                if float(reduced[got].sum()) <= mu + 1e-6:
                    return False
                return self._add_column(self._pack(fill, got)) or self._add_column(got)

            for key in (weight, weight / self.len, weight - 0.1 * self.len):
                order = np.argsort(-key, kind="stable")
                added |= offer(self._pack(order[weight[order] > 1e-9], []))
            if added and self.lazy:
                continue  # the exact pricing only when the greedy ones find nothing
            ub, col = self._exact_pricing(weight, deadline - time.perf_counter())
            self.bound = min(self.bound, float(pi.sum()) + self.slots * ub)
            if col:
                added |= offer(col)
            if not added:
                break


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instance", action="append", help="model/seed/flows/slots/spr|sfr (repeatable); "
                    "the small topologies of scalability.py")
    ap.add_argument("--lazy", action="store_true", help="price exactly only when the greedy packings find nothing")
    ap.add_argument("--time-limit", type=float, default=30.0, help="column generation time per instance [s]")
    args = ap.parse_args()
    for spec in args.instance or DEFAULT_INSTANCES:
        try:
            model, seed, flows, slots, form = spec.split("/")
            params = SMALL_MODELS[model]
            net = network_from_obj(generate(params, int(flows), int(slots), int(seed)))
            assert form in ("spr", "sfr")
        except (ValueError, KeyError, AssertionError):
            ap.error(f"bad instance {spec!r}: model/seed/flows/slots/spr|sfr with model in {', '.join(SMALL_MODELS)}")
        cands = candidates(net, fixed=form == "sfr")
        ours = solve(net, form, SolveOptions(60.0))
        n = len(net.flows)
        master = _master(n, cands, net.slots, [], SolveOptions(60.0), [None] * n)
        t0 = time.perf_counter()
        c0 = time.process_time()
        lp = ConfigLP(n, cands, net.slots)
        lp.lazy = args.lazy
        lp.add_schedule(greedy_assign(n, cands, net.slots))
        lp.run(t0 + args.time_limit)
        dt = time.perf_counter() - t0
        cpu = time.process_time() - c0
        print(f"{spec}: master bound {math.floor(master.dual_bound + 1e-6)}, configuration LP {lp.lp_value:.3f} "
              f"(bound {lp.bound:.3f}, floor {math.floor(lp.bound + 1e-6)}), optimum {ours.scheduled} "
              f"(proven {ours.proven_optimal}); {lp.iterations} iterations, {lp.exact_pricings} exact pricings, "
              f"{len(lp.columns)} columns, {dt:.2f} s ({cpu:.2f} s CPU)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
