"""Reduced-cost fixing (tobsched/fixing.py): what the master LP's duals fix must hold for every
schedule of the target's size. Checked on a model small enough to know the duals, against several
optimal schedules per instance (the plain slot MIP's and CP-SAT's from four seeds), and through
CP-SAT's decision on both sides of the optimum."""

from __future__ import annotations

import numpy as np
import pytest

from tobsched import cpsat
from tobsched.fixing import Fixing, fixing_from_duals, lp_fixing
from tobsched.generate import TopologyParams, generate
from tobsched.highs_model import RowBuilder, SolveOptions
from tobsched.network import network_from_obj
from tobsched.pathset import _master_rows
from tobsched.paths import candidates
from tobsched.slot_ilp import solve_slot_ilp


def test_known_duals_fix_what_they_must_and_nothing_more() -> None:
    # max x0 + x1 + x2 with x0 + x1 <= 1: LP 2, every reduced cost and dual 0 or 1.
    rows = RowBuilder()
    rows.add([0, 1], -np.inf, 1.0)
    fix = lp_fixing(np.ones(3), rows, 2, 10.0)
    assert fix is not None and fix.lp_value == pytest.approx(2.0)
    # Worth 2: x2 is in every such solution and the row is full; nothing is out.
    assert (fix.out, fix.fixed_in, fix.tight) == ([], [2], [([0, 1], 1)])
    # Worth 1 leaves a gap of 1 that no dual exceeds: nothing is fixed.
    fix = lp_fixing(np.ones(3), rows, 1, 10.0)
    assert fix is not None and (fix.out, fix.fixed_in, fix.tight) == ([], [], [])
    # Above the LP's value: no fixing (no solution reaches it).
    assert lp_fixing(np.ones(3), rows, 3, 10.0) is None
    # max 2 x0 + x1 with x0 + x1 <= 1, worth 2: only x = (1, 0). The optimal duals are not unique
    # (y = 2 puts x1 out, y = 1 puts x0 in with the row full); either way x1 = 0 follows.
    fix = lp_fixing(np.array([2.0, 1.0]), rows, 2, 10.0)
    assert fix is not None and (1 in fix.out or (0 in fix.fixed_in and ([0, 1], 1) in fix.tight))
    assert 0 not in fix.out and 1 not in fix.fixed_in


def test_rows_outside_its_model_are_refused() -> None:
    rows = RowBuilder()
    rows.add([0, 1], 1.0, 2.0)
    with pytest.raises(ValueError):
        lp_fixing(np.ones(2), rows, 1, 10.0)
    rows = RowBuilder()
    rows.add([0, 1], -np.inf, 1.5)
    with pytest.raises(ValueError):
        lp_fixing(np.ones(2), rows, 1, 10.0)


def _instance(seed: int):
    fixed = seed % 3 == 2
    net = network_from_obj(generate(TopologyParams(model="rrg", hosts=14, switches=6, degree=3 + seed % 2),
                                    flows=30 + 3 * seed, slots=3 + seed % 2, seed=seed))
    return net, candidates(net, fixed=fixed)


def _obeys(fix: Fixing, got) -> list[str]:
    used = {a[1] for a in got if a is not None}
    wrong = [f"candidate {c} is out but used" for c in fix.out if c in used]
    wrong += [f"candidate {c} is in but unused" for c in fix.fixed_in if c not in used]
    wrong += [f"row {m} holds {len(used & set(m))}, not {b}" for m, b in fix.tight if len(used & set(m)) != b]
    return wrong


@pytest.mark.parametrize("seed", range(8))
def test_every_optimal_schedule_obeys_the_fixing_at_the_optimum(seed: int) -> None:
    net, cands = _instance(seed)
    got, r = solve_slot_ilp(len(net.flows), cands, net.slots, SolveOptions(120.0), symmetry_breaking=False)
    assert r.optimal
    best = int(round(r.objective))
    fix = lp_fixing(np.ones(len(cands)), _master_rows(cands, net.slots, []), best, 10.0)
    assert fix is not None
    schedules = [got]
    for s in range(1, 5):
        exists, other = cpsat.schedule_of_size(len(net.flows), cands, net.slots, best, time_limit_s=60.0,
                                               deterministic_time=30.0, seed=s)
        assert exists is True
        schedules.append(other)
    for sched in schedules:
        assert _obeys(fix, sched) == []


def test_the_fixing_is_not_empty_on_these_instances() -> None:
    # Otherwise the test above would hold for any fixing that fixes nothing.
    fixed = 0
    for seed in range(8):
        net, cands = _instance(seed)
        _, r = solve_slot_ilp(len(net.flows), cands, net.slots, SolveOptions(120.0), symmetry_breaking=False)
        fix = lp_fixing(np.ones(len(cands)), _master_rows(cands, net.slots, []), int(round(r.objective)), 10.0)
        assert fix is not None
        fixed += len(fix.out) + len(fix.fixed_in) + len(fix.tight)
    assert fixed >= 20


@pytest.mark.parametrize("seed", range(6))
def test_the_decision_with_the_fixing_agrees_with_the_plain_mip_on_both_sides(seed: int) -> None:
    net, cands = _instance(seed)
    _, r = solve_slot_ilp(len(net.flows), cands, net.slots, SolveOptions(120.0), symmetry_breaking=False)
    best = int(round(r.objective))
    for target, want in ((best, True), (best + 1, False)):
        fix = lp_fixing(np.ones(len(cands)), _master_rows(cands, net.slots, []), target, 10.0)
        exists, got = cpsat.schedule_of_size(len(net.flows), cands, net.slots, target, time_limit_s=60.0,
                                             deterministic_time=30.0, fixing=fix)
        assert exists is want
        if want:
            assert sum(a is not None for a in got) >= target and fix is not None and _obeys(fix, got) == []


def test_a_fixing_for_a_lower_target_is_refused() -> None:
    net, cands = _instance(0)
    fix = lp_fixing(np.ones(len(cands)), _master_rows(cands, net.slots, []), 10, 10.0)
    with pytest.raises(AssertionError):
        cpsat.schedule_of_size(len(net.flows), cands, net.slots, 9, time_limit_s=10.0, fixing=fix)


@pytest.mark.parametrize("seed", range(8))
def test_the_masters_own_duals_give_the_same_fixing_as_solving_again(seed: int) -> None:
    # pathset.py derives the first decision's fixing from the duals of the master's LP vertex
    # (MipResult.lp_duals) instead of solving the same LP once more: the same fixing, for the
    # bound and for the target below it.
    from tobsched.highs_model import LP_VERTEX_STATUS, solve_max

    net, cands = _instance(seed)
    rows = _master_rows(cands, net.slots, [])
    res = solve_max(np.ones(len(cands)), rows, SolveOptions(10.0), lp_first=True)
    if res.status != LP_VERTEX_STATUS:
        pytest.skip("a fractional vertex: no duals to reuse")
    assert res.lp_duals is not None and res.x is not None
    bound = int(np.floor(res.objective + 1e-6))
    for target in (bound, bound - 1):
        again = lp_fixing(np.ones(len(cands)), rows, target, 10.0)
        own = fixing_from_duals(rows, target, res.objective, res.x, *res.lp_duals)
        assert own == again


def test_a_value_below_the_target_gives_no_fixing_from_duals() -> None:
    rows = RowBuilder()
    rows.add([0, 1], -np.inf, 1.0)
    res = lp_fixing(np.ones(2), rows, 1, 10.0)
    assert res is not None
    zero = np.zeros(2)
    assert fixing_from_duals(rows, 2, 1.0, zero, zero, np.zeros(1)) is None
    bad = RowBuilder()
    bad.add([0, 1], -np.inf, 1.5)
    with pytest.raises(ValueError):
        fixing_from_duals(bad, 1, 1.5, zero, zero, np.zeros(1))
