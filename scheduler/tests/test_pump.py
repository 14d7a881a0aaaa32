"""The feasibility pump (pump.py) only ever returns valid schedules and never more flows than the
optimum, whatever target it is given; it proves nothing, so the solve's proofs stay with the
master's bound."""

from __future__ import annotations

import pytest

from tobsched.generate import TopologyParams, generate
from tobsched.greedy import Assignment
from tobsched.highs_model import SolveOptions
from tobsched.network import network_from_obj
from tobsched.paths import Candidate, candidates
from tobsched.pump import feasibility_pump
from tobsched.slot_ilp import solve_slot_ilp


def _valid(assign: list[Assignment], cands: list[Candidate]) -> bool:
    used: set[tuple[int, int]] = set()
    for f, a in enumerate(assign):
        if a is None:
            continue
        slot, ci = a
        if cands[ci].flow != f:
            return False
        for arc in cands[ci].arcs:
            if (slot, arc) in used:
                return False
            used.add((slot, arc))
    return True


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("fixed", [True, False])
def test_pump_schedules_are_valid_and_never_beat_the_optimum(seed: int, fixed: bool) -> None:
    obj = generate(TopologyParams(model="rrg", hosts=16, switches=8, degree=3 + seed % 2), flows=30,
                   slots=3 + seed % 2, seed=seed)
    net = network_from_obj(obj)
    cands = candidates(net, fixed=fixed)
    _, r = solve_slot_ilp(len(net.flows), cands, net.slots, SolveOptions(60.0), symmetry_breaking=False)
    assert r.optimal
    best = int(round(r.objective))
    for target in (best - 2, best, best + 1, best + 5):
        got = feasibility_pump(len(net.flows), cands, net.slots, target, 10.0)
        assert _valid(got, cands)
        assert sum(a is not None for a in got) <= best


def test_pump_with_nothing_to_schedule_returns_nothing() -> None:
    obj = generate(TopologyParams(model="rrg", hosts=8, switches=4, degree=2), flows=0, slots=2, seed=1)
    net = network_from_obj(obj)
    assert feasibility_pump(0, candidates(net, fixed=False), 2, 0, 1.0) == []
