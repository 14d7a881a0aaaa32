"""CP-SAT's decision "is there a schedule of `target` flows?" (tobsched/cpsat.py) against the plain
slot MIP of HiGHS: a schedule it finds is valid and large enough, a "none" means the plain optimum
is below the target, the same question gets the same answer (one worker, fixed seed, deterministic
time), and a budget that runs out says "undecided", never "none"."""

from __future__ import annotations

import pytest

from tobsched import cpsat
from tobsched.generate import TopologyParams, generate
from tobsched.highs_model import SolveOptions
from tobsched.network import network_from_obj
from tobsched.paths import candidates
from tobsched.slot_ilp import solve_slot_ilp


def _instance(seed: int, flows: int, slots: int, degree: int = 3, fixed: bool = False):
    net = network_from_obj(generate(TopologyParams(model="rrg", hosts=12, switches=6, degree=degree),
                                    flows=flows, slots=slots, seed=seed))
    return net, candidates(net, fixed=fixed)


def _plain_optimum(net, cands) -> int:
    _, r = solve_slot_ilp(len(net.flows), cands, net.slots, SolveOptions(120.0), symmetry_breaking=False)
    assert r.optimal, r.status
    return int(round(r.objective))


def _check_valid(cands, slots: int, got, target: int) -> None:
    assert sum(a is not None for a in got) >= target
    used: set[tuple[int, int]] = set()
    for flow, a in enumerate(got):
        if a is None:
            continue
        k, ci = a
        assert 0 <= k < slots and cands[ci].flow == flow
        for arc in cands[ci].arcs:
            assert (k, arc) not in used, "two flows on one link in one slot"
            used.add((k, arc))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("fixed", [False, True])
def test_decision_agrees_with_the_plain_mip_on_both_sides(seed: int, fixed: bool) -> None:
    net, cands = _instance(seed, flows=26 + 2 * seed, slots=3 + seed % 2, fixed=fixed)
    best = _plain_optimum(net, cands)
    exists, got = cpsat.schedule_of_size(len(net.flows), cands, net.slots, best, time_limit_s=60.0,
                                         deterministic_time=30.0)
    assert exists is True
    _check_valid(cands, net.slots, got, best)
    exists, got = cpsat.schedule_of_size(len(net.flows), cands, net.slots, best + 1, time_limit_s=60.0,
                                         deterministic_time=30.0)
    assert (exists, got) == (False, [])


def test_answers_are_repeatable() -> None:
    net, cands = _instance(3, flows=40, slots=3)
    best = _plain_optimum(net, cands)
    first = cpsat.schedule_of_size(len(net.flows), cands, net.slots, best, time_limit_s=60.0)
    again = cpsat.schedule_of_size(len(net.flows), cands, net.slots, best, time_limit_s=60.0)
    assert first[0] is True and first == again
    assert cpsat.schedule_of_size(len(net.flows), cands, net.slots, 0, time_limit_s=1.0) == (True, [None] * len(net.flows))


def test_an_exhausted_budget_is_undecided_never_none() -> None:
    # rrg3 seed 1, 110 flows, 3 slots, S/PR: optimum 54 (docs/experiments/scheduler-scalability.md);
    # proving that no schedule of 55 exists takes CP-SAT far more than a thousandth of a unit.
    net = network_from_obj(generate(TopologyParams(model="rrg", degree=3), flows=110, slots=3, seed=1))
    cands = candidates(net, fixed=False)
    exists, got = cpsat.schedule_of_size(len(net.flows), cands, net.slots, 55, time_limit_s=60.0,
                                         deterministic_time=0.001)
    assert (exists, got) == (None, [])


def test_a_hint_in_any_slot_labelling_gives_the_same_answers() -> None:
    # The hint is a schedule whose slots may be labelled in any order: schedule_of_size relabels
    # them in rank order (the symmetry breaking's), so an optimal schedule with its slots permuted
    # still leads to a valid schedule of the optimum's size, and the answer below it stays "none".
    net, cands = _instance(2, flows=34, slots=3)
    best = _plain_optimum(net, cands)
    exists, sched = cpsat.schedule_of_size(len(net.flows), cands, net.slots, best, time_limit_s=60.0,
                                           deterministic_time=30.0)
    assert exists is True
    for perm in ((0, 1, 2), (2, 0, 1), (1, 2, 0)):
        hint = [None if a is None else (perm[a[0]], a[1]) for a in sched]
        exists, got = cpsat.schedule_of_size(len(net.flows), cands, net.slots, best, time_limit_s=60.0,
                                             deterministic_time=30.0, hint=hint)
        assert exists is True
        _check_valid(cands, net.slots, got, best)
        assert cpsat.schedule_of_size(len(net.flows), cands, net.slots, best + 1, time_limit_s=60.0,
                                      deterministic_time=30.0, hint=hint) == (False, [])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("exactly_one", "at_least_one"), [(False, False), (True, False), (True, True)])
def test_without_its_lp_the_decision_with_a_fixing_agrees_with_the_plain_mip(
    monkeypatch: pytest.MonkeyPatch, seed: int, exactly_one: bool, at_least_one: bool
) -> None:
    # With a fixing CP-SAT runs without its own LP (LINEARIZATION_LEVEL 0), as pathset.py's first
    # decision does, the fixing's rows as linear equalities or as clauses (EXACTLY_ONE,
    # AT_LEAST_ONE); both answers against the plain MIP, from a PartialCol hint. (Above the LP's
    # value there is no fixing, and pathset.py never asks: CP-SAT keeps its LP there.)
    import numpy as np

    monkeypatch.setattr(cpsat, "EXACTLY_ONE", exactly_one)
    monkeypatch.setattr(cpsat, "AT_LEAST_ONE", at_least_one)

    from tobsched.fixing import lp_fixing
    from tobsched.greedy import greedy_assign, partialcol
    from tobsched.pathset import _master_rows

    net, cands = _instance(seed, flows=30 + 2 * seed, slots=3)
    best = _plain_optimum(net, cands)
    n = len(net.flows)
    hint = partialcol(n, cands, net.slots, greedy_assign(n, cands, net.slots), 10_000)
    for target, want in ((best, True), (best + 1, False)):
        fix = lp_fixing(np.ones(len(cands)), _master_rows(cands, net.slots, []), target, 10.0)
        exists, got = cpsat.schedule_of_size(n, cands, net.slots, target, time_limit_s=60.0,
                                             deterministic_time=30.0, fixing=fix, hint=hint, own_lp=fix is None)
        assert exists is want
        if want:
            _check_valid(cands, net.slots, got, best)


def _capture_models(monkeypatch: pytest.MonkeyPatch) -> list:
    """The models schedule_of_size hands to CP-SAT from now on, in order."""
    models = []
    real = cpsat._helper()

    class Capture:
        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            return getattr(real, name)

        class SolveWrapper(real.SolveWrapper):  # type: ignore[misc, name-defined]
            def solve(self, model):  # type: ignore[no-untyped-def]
                models.append(model)
                return super().solve(model)

    monkeypatch.setattr(cpsat, "_helper", lambda: Capture())
    return models


@pytest.mark.parametrize("unscheduled", [False, True])
def test_the_hint_covers_the_flows_it_schedules(monkeypatch: pytest.MonkeyPatch, unscheduled: bool) -> None:
    # HINT_UNSCHEDULED off: CP-SAT is hinted the Booleans of the flows the partial schedule
    # schedules (1 on its slot, relabelled in rank order, and candidate; 0 on the flow's others) and
    # none of the other flows'; on: every Boolean, the unscheduled flows' at 0. Both find a schedule.
    from tobsched.slot_ilp import canonical, flow_ranks

    net, cands = _instance(2, flows=34, slots=3)
    n = len(net.flows)
    best = _plain_optimum(net, cands)
    exists, sched = cpsat.schedule_of_size(n, cands, net.slots, best, time_limit_s=60.0, deterministic_time=30.0)
    assert exists is True
    dropped = [f for f, a in enumerate(sched) if a is not None][::3]
    hint = [None if f in dropped else (2 - a[0], a[1]) if a is not None else None for f, a in enumerate(sched)]
    models = _capture_models(monkeypatch)
    monkeypatch.setattr(cpsat, "HINT_UNSCHEDULED", unscheduled)
    exists, got = cpsat.schedule_of_size(n, cands, net.slots, best, time_limit_s=60.0, deterministic_time=30.0,
                                         hint=hint)
    assert exists is True
    _check_valid(cands, net.slots, got, best)
    # The model's Booleans, in order: each candidate's slots 0..min(rank, T - 1).
    rank = flow_ranks(n, cands)
    cols = [(ci, k) for ci, c in enumerate(cands) for k in range(min(rank[c.flow] + 1, net.slots))]
    want_one = {(a[1], a[0]) for a in canonical(hint, rank) if a is not None}
    hinted = dict(zip(models[0].solution_hint.vars, models[0].solution_hint.values))
    covered = {j for j, (ci, _) in enumerate(cols) if unscheduled or hint[cands[ci].flow] is not None}
    assert len(models[0].variables) == len(cols)
    assert set(hinted) == covered and (len(covered) == len(cols)) == unscheduled
    assert {cols[j] for j, v in hinted.items() if v == 1} == want_one
    assert all(v == 0 for j, v in hinted.items() if cols[j] not in want_one)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("at_least_one", [False, True])
def test_the_fixing_s_rows_become_clauses(monkeypatch: pytest.MonkeyPatch, seed: int, at_least_one: bool) -> None:
    # EXACTLY_ONE: a fixed-in candidate and a tight row of bound 1 become "exactly one" over their
    # Booleans, a tight link row of bound T one per slot over the candidates allowed in it, any
    # other tight row a linear equality. AT_LEAST_ONE: where the model's at-most-one rows already
    # cover the members (one flow's Booleans; one link's in a slot), only the clause "at least one".
    # The answers stay the plain MIP's on both sides.
    import numpy as np

    from tobsched.fixing import lp_fixing
    from tobsched.pathset import _master_rows
    from tobsched.slot_ilp import flow_ranks

    monkeypatch.setattr(cpsat, "AT_LEAST_ONE", at_least_one)
    net, cands = _instance(seed, flows=44 + 2 * seed, slots=3, degree=4)
    n, T = len(net.flows), net.slots
    best = _plain_optimum(net, cands)
    fix = lp_fixing(np.ones(len(cands)), _master_rows(cands, T, []), best, 10.0)
    assert fix is not None
    rank = flow_ranks(n, cands)
    allowed = {ci: min(rank[c.flow] + 1, T) for ci, c in enumerate(cands) if ci not in set(fix.out)}
    ones = [m for m, b in [([ci], 1) for ci in fix.fixed_in] + fix.tight if b == 1]
    per_slot = [m for m, b in fix.tight if b == T and set.intersection(*(set(cands[ci].arcs) for ci in m))]
    assert ones and per_slot, "the instance should have both kinds"
    rows = [sorted((ci, k) for ci in m if ci in allowed for k in range(allowed[ci])) for m in ones]
    rows += [sorted((ci, k) for ci in m if ci in allowed and k < allowed[ci]) for m in per_slot for k in range(T)]
    clause = [at_least_one and (len({cands[ci].flow for ci in m}) == 1) for m in ones] + [at_least_one] * (T * len(per_slot))
    models = _capture_models(monkeypatch)
    exists, got = cpsat.schedule_of_size(n, cands, T, best, time_limit_s=60.0, deterministic_time=30.0,
                                         fixing=fix, own_lp=False)
    assert exists is True
    _check_valid(cands, T, got, best)
    cols = [(ci, k) for ci in range(len(cands)) if ci in allowed for k in range(allowed[ci])]
    model = models[0]
    got_eo = [sorted(cols[j] for j in c.exactly_one.literals) for c in model.constraints if c.has_exactly_one()]
    got_or = [sorted(cols[j] for j in c.bool_or.literals) for c in model.constraints if c.has_bool_or()]
    assert sorted(got_eo) == sorted(r for r, c in zip(rows, clause) if not c)
    assert sorted(got_or) == sorted(r for r, c in zip(rows, clause) if c)
    assert not at_least_one or got_or
    equalities = [c for c in model.constraints if c.has_linear() and c.linear.domain[0] == c.linear.domain[1]]
    assert len(equalities) == len(fix.tight) - (len(ones) - len(fix.fixed_in)) - len(per_slot)
    no = lp_fixing(np.ones(len(cands)), _master_rows(cands, T, []), best + 1, 10.0)
    assert cpsat.schedule_of_size(n, cands, T, best + 1, time_limit_s=60.0, deterministic_time=30.0,
                                  fixing=no, own_lp=no is None) == (False, [])
