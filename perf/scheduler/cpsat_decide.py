#!/usr/bin/env python3
"""The solver on the instances where the master's paths cannot be coloured (the ones CP-SAT's
decision in pathset.py touches), side by side with PuLP + CBC, as perf/scheduler/scalability.py
measures them; an experiment for issue 23, much shorter than the full benchmark.

Per instance and repeat, interleaved in one process: tob-schedule's solve (`Schedule.solve_s`) and
PuLP's `prob.solve()` with CBC on the seed's plain formulation; medians over the repeats, the
target max(CBC / 10, 50 ms). The stage that settled the instance is read from the solve's notes.
Optionally CP-SAT's decision alone at the master's bound with several random seeds (--seeds-cpsat),
to see how much its time depends on the seed.

    build/venv-sched/bin/python perf/scheduler/cpsat_decide.py                     # the listed misses
    build/venv-sched/bin/python perf/scheduler/cpsat_decide.py --hard              # every such instance
    build/venv-sched/bin/python perf/scheduler/cpsat_decide.py --instance er/0/110/3/spr --repeats 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from tobsched import cpsat
from tobsched.generate import generate
from tobsched.highs_model import SolveOptions
from tobsched.network import Network, network_from_obj
from tobsched.paths import candidates
from tobsched.solve import solve

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scalability import SMALL_MODELS, TARGET_FLOOR_S, TARGET_RATIO, TIME_LIMIT_S, pulp_solve  # noqa: E402

# Missed issue 23's target in docs/experiments/scheduler-scalability.md before CP-SAT (3 slots).
DEFAULT_INSTANCES = ["er/0/110/3/spr", "rrg3/0/90/3/spr", "rrg4/0/110/3/sfr", "rrg4/0/110/3/spr",
                     "rrg4/0/70/3/sfr", "rrg3/1/110/3/spr", "rrg3/0/80/3/spr", "rrg4/1/110/3/spr",
                     "rrg4/0/100/3/sfr", "rrg3/0/60/3/spr"]


def _net(spec: str) -> tuple[Network, str]:
    model, seed, flows, slots, form = spec.split("/")
    if model not in SMALL_MODELS or form not in ("spr", "sfr"):
        raise SystemExit(f"bad instance {spec!r}: model/seed/flows/slots/spr|sfr, model one of {list(SMALL_MODELS)}")
    return network_from_obj(generate(SMALL_MODELS[model], int(flows), int(slots), int(seed))), form


def _hard_instances(seeds: int) -> list[str]:
    """Every small instance of the benchmark whose first master optimum cannot be coloured."""
    out = []
    for model in SMALL_MODELS:
        for seed in range(seeds):
            for flows in range(20, 111, 10):
                for slots in (3, 4, 5):
                    for form in ("spr", "sfr"):
                        spec = f"{model}/{seed}/{flows}/{slots}/{form}"
                        net, _ = _net(spec)
                        s = solve(net, form, SolveOptions(TIME_LIMIT_S))
                        if any(n.startswith("feasibility pump") for n in s.notes):
                            out.append(spec)
    return out


def _settled_by(notes: list[str]) -> str:
    for n in reversed(notes):
        if n.startswith(("feasibility pump", "schedule of", "greedy", "fallback", "master solved")):
            return n
    return notes[-1] if notes else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instance", action="append", default=[], help="model/seed/flows/slots/spr|sfr (repeatable)")
    ap.add_argument("--hard", action="store_true", help="every small instance whose master cannot be coloured")
    ap.add_argument("--seeds", type=int, default=2, help="topologies per model with --hard")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seeds-cpsat", type=int, default=0, help="also time CP-SAT alone at the bound, seeds 1..N")
    args = ap.parse_args()
    if args.repeats < 1:
        raise SystemExit("--repeats must be at least 1")
    cpsat._helper()  # the import, once, outside the timings
    specs = args.instance or (_hard_instances(args.seeds) if args.hard else DEFAULT_INSTANCES)
    print(f"# {len(specs)} instances, repeats {args.repeats}, load {os.getloadavg()[0]:.2f}", flush=True)
    print("| instance | scheduled | ours [ms] | CBC [ms] | target [ms] | meets | settled by |"
          + (" CP-SAT alone at the bound, by seed [ms] |" if args.seeds_cpsat else ""))
    print("|---|---|---|---|---|---|---|" + ("---|" if args.seeds_cpsat else ""))
    met = 0
    for spec in specs:
        net, form = _net(spec)
        ours: list[float] = []
        cbc: list[float] = []
        last = None
        for _ in range(args.repeats):
            last = solve(net, form, SolveOptions(TIME_LIMIT_S))
            ours.append(last.solve_s)
            got, status, _, t = pulp_solve(net, form)
            cbc.append(t)
            if status == "Optimal" and last.proven_optimal:
                assert got == last.scheduled, f"{spec}: CBC proves {got}, we prove {last.scheduled}"
        assert last is not None
        o, c = statistics.median(ours), statistics.median(cbc)
        target = max(c / TARGET_RATIO, TARGET_FLOOR_S)
        ok = last.proven_optimal and o <= target
        met += ok
        line = (f"| {spec} | {last.scheduled}{'' if last.proven_optimal else ' (not proven)'} | {o * 1e3:.0f} "
                f"({min(ours) * 1e3:.0f}-{max(ours) * 1e3:.0f}) | {c * 1e3:.0f} | {target * 1e3:.0f} | "
                f"{'yes' if ok else 'no'} | {_settled_by(last.notes)} |")
        if args.seeds_cpsat:
            cands = candidates(net, fixed=form == "sfr")
            bound = last.upper_bound if last.upper_bound is not None else last.scheduled
            cells = []
            for seed in range(1, args.seeds_cpsat + 1):
                t0 = time.perf_counter()
                exists, _ = cpsat.schedule_of_size(len(net.flows), cands, net.slots, bound, time_limit_s=30.0,
                                                   deterministic_time=10.0, seed=seed)
                cells.append(f"{(time.perf_counter() - t0) * 1e3:.0f}"
                             f"{'' if exists else ' none' if exists is False else ' undecided'}")
            line += f" {', '.join(cells)} |"
        print(line, flush=True)
    print(f"# within the target: {met} of {len(specs)}; load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
