"""Odd-set cuts (oddset.py): what the separation finds is violated by the paths it was given, the
cuts hold for every schedule, and on the benchmark's rrg3 seed 1, 110 flows, 3 slots, S/PR they
close the master's bound (55) to the optimum (54) without CP-SAT's decision."""

from __future__ import annotations

import itertools
import random

import pytest

from tobsched import greedy, oddset
from tobsched.generate import TopologyParams, generate
from tobsched.highs_model import SolveOptions
from tobsched.network import network_from_obj
from tobsched.paths import candidates
from tobsched.pathset import solve_pathsets


def _violation(paths, links, slots: int) -> int:  # type: ignore[no-untyped-def]
    s = set(links)
    return sum(len(s.intersection(p)) // 2 for p in paths) - slots * (len(s) // 2)


def test_shannons_triangle_is_found() -> None:
    # Three links; two paths over (0, 1), one over (1, 2), one over (2, 0): any two share a link,
    # so they need four slots, while no link carries more than three. S = {0, 1, 2}: 4 > 3 * 1.
    paths = [(0, 1), (0, 1), (1, 2), (2, 0)]
    assert oddset.odd_set_search(paths, 3) == [(0, 1, 2)]
    # With two slots a triangle of single paths is the odd cycle that two colours cannot colour.
    assert oddset.odd_set_search([(0, 1), (1, 2), (2, 0)], 2) == [(0, 1, 2)]
    # Colourable: a fourth slot, or one path fewer.
    assert oddset.odd_set_search(paths, 4) == []
    assert oddset.odd_set_search(paths[1:], 3) == []


@pytest.mark.parametrize("case", range(60))
def test_every_set_found_is_odd_and_violated(case: int) -> None:
    rng = random.Random(case)
    links, slots = rng.randrange(3, 30), rng.randrange(2, 6)
    paths = [tuple(rng.sample(range(links), rng.randrange(1, min(links, 6) + 1))) for _ in range(rng.randrange(0, 80))]
    found = oddset.odd_set_search(paths, slots)
    assert len(set(found)) == len(found)
    for s in found:
        assert list(s) == sorted(set(s)) and len(s) % 2 == 1
        assert _violation(paths, s, slots) > 0, (s, paths)


def test_the_search_finds_what_exhaustive_enumeration_finds_on_small_cases() -> None:
    # Not a guarantee (it is a heuristic), but on these small cases it must not miss a violated set.
    missed = 0
    checked = 0
    for case in range(1500):
        rng = random.Random(10_000 + case)
        links, slots = rng.randrange(3, 8), 3
        paths = [tuple(rng.sample(range(links), rng.randrange(2, 4))) for _ in range(rng.randrange(3, 12))]
        load = [sum(a in p for p in paths) for a in range(links)]
        if max(load) > slots:
            continue  # not a master answer: a link over capacity
        exists = any(_violation(paths, s, slots) > 0 for k in range(3, links + 1, 2)
                     for s in itertools.combinations(range(links), k))
        checked += exists
        missed += exists and not oddset.odd_set_search(paths, slots)
    assert checked >= 20 and missed == 0, (checked, missed)


def _greedy_schedule(seed: int):  # type: ignore[no-untyped-def]
    """A generated network, its S/PR candidates, greedy's schedule and the candidates it uses."""
    net = network_from_obj(generate(TopologyParams(model="rrg", degree=3 + seed % 2), flows=60 + 10 * seed,
                                    slots=3 + seed % 3, seed=seed))
    cands = candidates(net, fixed=False)
    sched = greedy.greedy_assign(len(net.flows), cands, net.slots)
    return net, cands, sched, [cands[a[1]] for a in sched if a is not None]


@pytest.mark.parametrize("seed", range(6))
def test_the_cuts_hold_for_every_schedule(seed: int) -> None:
    # Schedules (greedy's, of every flow it places) against odd sets of the links they load most.
    net, cands, sched, used = _greedy_schedule(seed)
    rng = random.Random(seed)
    arcs = sorted({x for c in used for x in c.arcs})
    for _ in range(300):
        s = sorted(rng.sample(arcs, min(len(arcs), rng.randrange(1, 12) | 1)))
        members, bound, coefs = oddset.odd_set_row([c.arcs for c in cands], s, net.slots)
        index = {ci: j for j, ci in enumerate(members)}
        lhs = sum(coefs[index[a[1]]] for a in sched if a is not None and a[1] in index)
        assert bound == net.slots * (len(s) // 2)
        assert lhs <= bound
        assert lhs == sum(len(set(s) & set(c.arcs)) // 2 for c in used)


def test_a_bound_above_the_optimum_is_closed_without_a_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    from tobsched import pathset

    net = network_from_obj(generate(TopologyParams(model="rrg", degree=3), flows=110, slots=3, seed=1))
    cands = candidates(net, fixed=False)
    monkeypatch.setattr(pathset, "ODD_SET_ROUNDS", 5)  # off by default (pathset.py)
    got, proven, upper, notes = solve_pathsets(len(net.flows), cands, net.slots, SolveOptions(60.0))
    assert proven and upper == sum(a is not None for a in got) == 54, (upper, notes)
    assert any(n.startswith("odd-set cuts") for n in notes), notes
    assert not any("CP-SAT" in n for n in notes), notes
    # Without them the master's bound stays 55 and CP-SAT has to prove that no schedule of 55 exists.
    monkeypatch.setattr(pathset, "ODD_SET_ROUNDS", 0)
    got, proven, upper, notes = solve_pathsets(len(net.flows), cands, net.slots, SolveOptions(60.0))
    assert proven and upper == 54 and "schedule of 55 flows (CP-SAT): none" in notes, notes


@pytest.mark.parametrize(("degree", "seed", "flows"), [(3, 10, 42), (3, 21, 42), (3, 57, 30), (4, 3, 36)])
def test_a_lowered_bound_is_the_plain_mips_optimum(monkeypatch: pytest.MonkeyPatch, degree: int, seed: int,
                                                  flows: int) -> None:
    # Small S/FR instances (12 hosts, 6 switches, 3 slots) whose master bound the cuts lower by one
    # (without the other optima, which would settle them first): the bound they give is never
    # below the optimum of the plain slot MIP, and the solve proves that optimum.
    from tobsched import pathset
    from tobsched.slot_ilp import solve_slot_ilp

    monkeypatch.setattr(pathset, "OTHER_OPTIMA", ())
    monkeypatch.setattr(pathset, "ODD_SET_ROUNDS", 5)
    net = network_from_obj(generate(TopologyParams(model="rrg", hosts=12, switches=6, degree=degree), flows=flows,
                                    slots=3, seed=seed))
    cands = candidates(net, fixed=True)
    _, plain = solve_slot_ilp(len(net.flows), cands, net.slots, SolveOptions(120.0), symmetry_breaking=False)
    assert plain.optimal
    got, proven, upper, notes = solve_pathsets(len(net.flows), cands, net.slots, SolveOptions(60.0))
    lowered = [n for n in notes if n.startswith("odd-set cuts") and "->" in n]
    assert lowered, notes
    assert int(lowered[0].rsplit(" ", 1)[1]) >= round(plain.objective), (lowered, plain.objective)
    assert proven and upper == sum(a is not None for a in got) == round(plain.objective), (upper, notes)


def test_bad_arguments_are_refused() -> None:
    for slots, steps, tenure in ((0, 10, 1), (3, -1, 1), (3, 10, -1)):
        with pytest.raises(ValueError, match="bad odd-set search"):
            oddset.odd_set_search([(0, 1)], slots, steps, tenure)
    assert oddset.odd_set_search([], 3) == []


def _mod4_violation(paths, k, slots: int) -> int:  # type: ignore[no-untyped-def]
    # sum of floor(K_p / 4) over the paths minus the cut's bound: > 0 when violated.
    return sum(sum(k.get(a, 0) for a in p) // 4 for p in paths) - slots * (sum(k.values()) // 4)


@pytest.mark.parametrize("seed", range(6))
def test_mod4_cuts_hold_for_every_schedule(seed: int) -> None:
    net, cands, sched, chosen = _greedy_schedule(seed)
    used = [c.arcs for c in chosen]
    rng = random.Random(seed)
    arcs = sorted({x for p in used for x in p})
    for _ in range(300):
        k = {a: rng.randrange(1, 4) for a in rng.sample(arcs, min(len(arcs), rng.randrange(1, 15)))}
        members, bound, coefs = oddset.mod4_row([c.arcs for c in cands], k, net.slots)
        index = {ci: j for j, ci in enumerate(members)}
        lhs = sum(coefs[index[a[1]]] for a in sched if a is not None and a[1] in index)
        assert lhs <= bound and _mod4_violation(used, k, net.slots) <= 0


@pytest.mark.parametrize("case", range(40))
def test_every_mod4_cut_found_is_violated(case: int) -> None:
    rng = random.Random(20_000 + case)
    links, slots = rng.randrange(3, 25), 3
    paths: list[tuple[int, ...]] = []
    load = [0] * links
    for _ in range(200):  # paths while every link stays within its capacity (a master answer)
        p = tuple(rng.sample(range(links), rng.randrange(2, min(links, 5) + 1)))
        if all(load[a] < slots for a in p):
            paths.append(p)
            for a in p:
                load[a] += 1
    for k in oddset.mod4_cuts(paths, slots):
        assert all(1 <= v <= 3 and load[a] == slots for a, v in k.items()), k
        assert _mod4_violation(paths, k, slots) > 0, (k, paths)


def test_mod4_cuts_prove_a_bound_above_the_optimum() -> None:
    # rrg3 seed 0, 90 flows, 3 slots, S/PR (the benchmark's): master bound 54, optimum 53, and no
    # odd set closes it. The mod-4 cuts that the master MIP's answer violates, added to the master,
    # bring its LP below 54: a proof that no schedule of 54 exists (what CP-SAT's decision proves in
    # the solver; perf/scheduler/mod4_cuts.py shows the rounds).
    import math

    import numpy as np

    from tobsched import pathset
    from tobsched.highs_model import lp_value

    net = network_from_obj(generate(TopologyParams(model="rrg", degree=3), flows=90, slots=3, seed=0))
    cands = candidates(net, fixed=False)
    n = len(net.flows)
    mip = pathset._master(n, cands, net.slots, [], SolveOptions(60.0), [None] * n)
    assert mip.x is not None and math.floor(mip.dual_bound + 1e-6) == 54
    chosen = [int(ci) for ci in np.flatnonzero(mip.x > 0.5)]
    found = oddset.mod4_cuts([cands[ci].arcs for ci in chosen], net.slots)
    assert found
    cand_arcs = [c.arcs for c in cands]
    plain = lp_value(np.ones(len(cands)), pathset._master_rows(cands, net.slots, []), SolveOptions(60.0))
    rows = pathset._master_rows(cands, net.slots, [oddset.mod4_row(cand_arcs, k, net.slots) for k in found])
    value = lp_value(np.ones(len(cands)), rows, SolveOptions(60.0))
    assert plain is not None and plain >= 54 and value is not None and math.floor(value + 1e-6) == 53, (plain, value)


def test_lp_value_is_the_relaxations_optimum() -> None:
    import numpy as np

    from tobsched.highs_model import RowBuilder, lp_value

    rows = RowBuilder()  # max x0 + x1 + x2, pairwise sums at most 1: 1.5 at (1/2, 1/2, 1/2)
    for pair in ([0, 1], [1, 2], [0, 2]):
        rows.add(pair, -np.inf, 1.0)
    value = lp_value(np.ones(3), rows, SolveOptions(10.0))
    assert value is not None and abs(value - 1.5) < 1e-9
