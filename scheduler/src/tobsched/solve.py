"""Entry point of the formulations: runs one, checks the result with the independent verifier."""

from __future__ import annotations

import time

from tobsched.greedy import greedy_assign
from tobsched.highs_model import SolveOptions
from tobsched.network import Network, network_to_obj
from tobsched.paths import candidates
from tobsched.pathset import solve_pathsets
from tobsched.schedule import Schedule
from tobsched.sur import solve_sur
from tobsched.verify import verify_schedule

FORMULATIONS = ("sur", "spr", "sfr", "greedy")


class ScheduleInvalid(AssertionError):
    """The verifier rejected a schedule we computed: a bug in a formulation."""


def solve(net: Network, formulation: str, opts: SolveOptions | None = None) -> Schedule:
    assert formulation in FORMULATIONS, formulation
    opts = opts or SolveOptions()
    t0 = time.perf_counter()
    n = len(net.flows)
    upper: int | None = None
    notes: list[str] = []
    if formulation == "sur":
        routes, proven, upper, notes = solve_sur(net, opts)
        assignments = [(r[0], r[1]) if r is not None else None for r in routes]
    else:
        cands = candidates(net, fixed=formulation == "sfr")
        if formulation == "greedy":
            got = greedy_assign(n, cands, net.slots)
            proven = False
        else:
            got, proven, upper, notes = solve_pathsets(n, cands, net.slots, opts)
        assignments = [(a[0], cands[a[1]].nodes) if a is not None else None for a in got]
    sched = Schedule(formulation, net.slots, assignments, proven, time.perf_counter() - t0, upper, notes)
    problems = verify_schedule(network_to_obj(net), sched.to_obj(net))
    if problems:
        raise ScheduleInvalid(f"{formulation} produced an invalid schedule: {problems[:5]}")
    return sched
