#!/usr/bin/env python3
"""The configuration LP (tobsched/colgen.py) on given instances, side by side with tob-schedule and
PuLP + CBC (an experiment for issue 23; the solver does not use the configuration LP).

A column is one slot's content (link-disjoint paths, at most one per flow); the configuration LP
relaxes the slot ILP without slot symmetry and is at least as strong as the solver's master. The
question: how fast does column generation prove "no schedule of U flows" (U = the master's bound)
where the master's bound is above the optimum, and what does it cost where it is not?

Per instance and repeat, interleaved in one process as perf/scheduler/scalability.py does: the
solver (`solve`, as in the benchmark), the master and its colouring (the generation's start), the
column generation with target U, and PuLP + CBC on the seed's plain formulation (`prob.solve()`,
wall time and the CBC child's CPU time). Medians over the repeats; CPU time is this process's
(`time.process_time`), wall time `perf_counter`. Load average (1 min) before each instance.

    build/venv-sched/bin/python perf/scheduler/config_lp.py                          # the six misses
    build/venv-sched/bin/python perf/scheduler/config_lp.py --instance rrg3/0/90/3/spr --repeats 5
    build/venv-sched/bin/python perf/scheduler/config_lp.py --plain                  # exact pricing only

Prints one markdown table row per instance: optimum (the solver's, proven), the master's bound,
the configuration LP's outcome (`bound B`: no schedule of more than B proven; `LP reached U`: it
cannot prove the bound below U; `schedule`: a schedule of U among the columns), its LP value,
iterations, HiGHS pricing MIPs, columns, times.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import statistics
import sys
import time

import numpy as np

from tobsched import colgen
from tobsched.coloring import conflict_graph
from tobsched.generate import generate
from tobsched.highs_model import SolveOptions
from tobsched.network import network_from_obj
from tobsched.paths import candidates
from tobsched.pathset import _coloured, _master, colour_paths
from tobsched.solve import solve

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scalability import SMALL_MODELS, TARGET_FLOOR_S, TARGET_RATIO, pulp_solve  # noqa: E402

# The six instances that missed issue 23's target in docs/experiments/scheduler-scalability.md.
DEFAULT_INSTANCES = ["er/0/110/3/spr", "rrg3/0/90/3/spr", "rrg4/0/110/3/sfr", "rrg4/0/110/3/spr",
                     "rrg4/0/70/3/sfr", "rrg3/1/110/3/spr"]


def children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instance", action="append", help="model/seed/flows/slots/spr|sfr (repeatable); "
                    "the small topologies of scalability.py")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=10.0, help="column generation time per run [s]")
    ap.add_argument("--plain", action="store_true", help="the exact pricing MIP at every iteration")
    ap.add_argument("--smoothing", type=float, default=0.0, help="Wentges smoothing factor (0: off)")
    ap.add_argument("--central-duals", action="store_true", help="restricted LP by interior point, no crossover")
    ap.add_argument("--no-lp-start", action="store_true", help="no pricing-LP start in the search")
    ap.add_argument("--no-cbc", action="store_true", help="skip PuLP + CBC")
    args = ap.parse_args()
    opts = colgen.ColgenOptions(time_limit_s=args.time_limit, heuristic_pricing=not args.plain,
                                smoothing=args.smoothing, central_duals=args.central_duals,
                                lp_start=not args.no_lp_start)
    print(f"# options: {opts}, repeats {args.repeats}")
    print("| instance | load | optimum | master bound | configuration LP | LP value | iterations | MIPs | columns "
          "| CG ms CPU | CG ms wall | master+colour ms CPU | solver ms wall | solver ms CPU | CBC ms wall "
          "| CBC ms CPU | target ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for spec in args.instance or DEFAULT_INSTANCES:
        try:
            model, seed, flows, slots, form = spec.split("/")
            net = network_from_obj(generate(SMALL_MODELS[model], int(flows), int(slots), int(seed)))
            assert form in ("spr", "sfr")
        except (ValueError, KeyError, AssertionError):
            ap.error(f"bad instance {spec!r}: model/seed/flows/slots/spr|sfr with model in {', '.join(SMALL_MODELS)}")
        load = os.getloadavg()[0]
        n, T = len(net.flows), net.slots
        times: dict[str, list[float]] = {k: [] for k in ("cg_cpu", "cg_wall", "master_cpu", "solver_wall",
                                                         "solver_cpu", "cbc_wall", "cbc_cpu")}
        last: colgen.ColgenResult | None = None
        optimum = upper = 0
        for _ in range(args.repeats):
            c0 = time.process_time()
            s = solve(net, form, SolveOptions(60.0))
            times["solver_cpu"].append(time.process_time() - c0)
            times["solver_wall"].append(s.solve_s)
            assert s.proven_optimal, f"{spec}: the solver did not prove its answer"
            optimum = s.scheduled

            c0 = time.process_time()
            cands = candidates(net, fixed=form == "sfr")
            res = _master(n, cands, T, [], SolveOptions(60.0), [None] * n)
            assert res.x is not None
            upper = math.floor(res.dual_bound + 1e-6)
            chosen = [int(ci) for ci in np.flatnonzero(res.x > 0.5)]
            colour, _ = colour_paths(conflict_graph([cands[ci].arcs for ci in chosen]), T)
            start = _coloured(n, cands, chosen, colour)
            c1 = time.process_time()
            t1 = time.perf_counter()
            r = colgen.configuration_lp(n, cands, T, upper, [start], opts)
            times["cg_wall"].append(time.perf_counter() - t1)
            times["cg_cpu"].append(time.process_time() - c1)
            times["master_cpu"].append(c1 - c0)
            # Every claim checked against the solver's proven optimum.
            assert r.bound is None or r.bound >= optimum, f"{spec}: bound {r.bound} below the optimum {optimum}"
            if r.schedule is not None:
                assert sum(a is not None for a in r.schedule) <= optimum
            last = r

            if not args.no_cbc:
                k0 = children_cpu_s()
                got, status, _, t = pulp_solve(net, form)
                times["cbc_cpu"].append(children_cpu_s() - k0)
                times["cbc_wall"].append(t)
                assert got is None or status != "Optimal" or got == optimum, f"{spec}: CBC {got}, ours {optimum}"
        assert last is not None

        def ms(key: str) -> str:
            return f"{1000 * statistics.median(times[key]):.0f}" if times[key] else "-"

        outcome = (f"bound {last.bound}" if last.bound is not None else
                   f"schedule of {upper}" if last.schedule is not None else last.why)
        target = "-" if not times["cbc_wall"] else \
            f"{1000 * max(statistics.median(times['cbc_wall']) / TARGET_RATIO, TARGET_FLOOR_S):.0f}"
        print(f"| {spec} | {load:.1f} | {optimum} | {upper} | {outcome} | {last.lp_value:.3f} | {last.iterations} "
              f"| {last.exact_pricings} | {last.columns} | {ms('cg_cpu')} | {ms('cg_wall')} | {ms('master_cpu')} "
              f"| {ms('solver_wall')} | {ms('solver_cpu')} | {ms('cbc_wall')} | {ms('cbc_cpu')} | {target} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
