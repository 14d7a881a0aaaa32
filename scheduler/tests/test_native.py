"""The compiled local searches (lsearch.c through native.py) against their Python specifications in
coloring.py, greedy.py and oddset.py: the same results, move for move and draw for draw, on random graphs and
on generated networks' candidate paths, plus bad input answered by an error, never a crash."""

from __future__ import annotations

import random

import pytest

from tobsched import coloring, greedy, native, oddset
from tobsched.generate import TopologyParams, generate
from tobsched.network import network_from_obj
from tobsched.paths import candidates


@pytest.fixture(autouse=True)
def _needs_library() -> None:
    # The installed package must carry the library: without it every solve runs the Python code,
    # 10-25x slower, and these tests would compare Python with itself.
    assert native.LIB is not None, native.LOAD_ERROR


def _python(monkeypatch: pytest.MonkeyPatch, fn, *args):  # type: ignore[no-untyped-def]
    with monkeypatch.context() as m:
        m.setattr(native, "LIB", None)
        return fn(*args)


@pytest.mark.parametrize("seed", [0, 1, 7, 123_456, 2**32 + 5, 2**63 + 11])
def test_random_numbers_are_pythons(seed: int) -> None:
    ref = random.Random(seed)
    assert native.rng_draws(seed, 1500) == [ref.random() for _ in range(1500)]
    for below in (1, 2, 3, 10, 17, 1000, 2**31 - 1):
        ref = random.Random(seed)
        assert native.rng_draws(seed, 700, below=below) == [float(ref.randrange(below)) for _ in range(700)]


def _random_graph(rng: random.Random, n: int, p: float) -> list[set[int]]:
    adj: list[set[int]] = [set() for _ in range(n)]
    for u in range(n):
        for v in range(u + 1, n):
            if rng.random() < p:
                adj[u].add(v)
                adj[v].add(u)
    return adj


@pytest.mark.parametrize("case", range(40))
def test_tabucol_makes_pythons_moves(case: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(case)
    n = rng.randrange(1, 160)
    adj = _random_graph(rng, n, rng.uniform(0.02, 0.3))
    colours = rng.randrange(2, 7)
    start = [None if rng.random() < 0.3 else rng.randrange(colours) for _ in range(n)]
    iterations, seed = rng.choice([50, 500, 5_000]), rng.randrange(1000)
    got = coloring.tabu_colour(adj, colours, start, iterations, seed)
    assert got == _python(monkeypatch, coloring.tabu_colour, adj, colours, start, iterations, seed)
    if got is not None:
        assert all(got[u] != got[v] for u in range(n) for v in adj[u])


@pytest.mark.parametrize("case", range(40))
def test_exact_colour_searches_pythons_tree(case: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(1000 + case)
    n = rng.randrange(0, 70)
    adj = _random_graph(rng, n, rng.uniform(0.05, 0.5))
    colours, nodes = rng.randrange(1, 6), rng.choice([0, 10, 1_000, 50_000])
    got = coloring.exact_colour(adj, colours, nodes)
    assert got == _python(monkeypatch, coloring.exact_colour, adj, colours, nodes)


# The benchmark's small topologies (perf/scheduler/scalability.py).
TOPOLOGIES = [
    TopologyParams(model="er", hosts=24, switches=6, switch_links=14),
    TopologyParams(model="rrg", hosts=24, switches=6, degree=3),
    TopologyParams(model="rrg", hosts=24, switches=6, degree=4),
    TopologyParams(model="ba", hosts=24, switches=6, ba_m=2),
]


def _instance(case: int):  # type: ignore[no-untyped-def]
    rng = random.Random(2000 + case)
    net = network_from_obj(generate(rng.choice(TOPOLOGIES), rng.randrange(10, 120), rng.randrange(2, 6),
                                    rng.randrange(5)))
    return rng, net, candidates(net, fixed=rng.random() < 0.3)


@pytest.mark.parametrize("case", range(30))
def test_path_searches_make_pythons_moves(case: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng, net, cands = _instance(case)
    n, slots = len(net.flows), net.slots
    order = [(rng.randrange(slots), rng.randrange(len(cands))) for _ in range(rng.randrange(3 * n))]
    rounded = greedy.round_and_augment(n, cands, slots, order)
    assert rounded == _python(monkeypatch, greedy.round_and_augment, n, cands, slots, order)
    evaluations, seed = rng.choice([0, 1_000, 50_000]), rng.randrange(1000)
    polished = greedy.partialcol(n, cands, slots, rounded, evaluations, seed)
    assert polished == _python(monkeypatch, greedy.partialcol, n, cands, slots, rounded, evaluations, seed)
    assert sum(a is not None for a in polished) >= sum(a is not None for a in rounded)
    assert greedy.greedy_assign(n, cands, slots) == _python(monkeypatch, greedy.greedy_assign, n, cands, slots)


@pytest.mark.parametrize("case", range(40))
def test_odd_set_search_makes_pythons_moves(case: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Random path sets, and generated networks' candidate paths (overloaded links included).
    rng = random.Random(3000 + case)
    if case % 2:
        links, slots = rng.randrange(1, 60), rng.randrange(1, 6)
        paths = [tuple(rng.sample(range(links), rng.randrange(1, min(links, 7) + 1))) for _ in range(rng.randrange(90))]
    else:
        _, net, cands = _instance(case)
        slots = net.slots
        paths = [c.arcs for c in cands[: rng.randrange(200)]]
    steps, tenure = rng.choice([0, 5, 60, 200]), rng.randrange(0, 9)
    got = oddset.odd_set_search(paths, slots, steps, tenure)
    assert got == _python(monkeypatch, oddset.odd_set_search, paths, slots, steps, tenure)


def test_bad_input_is_an_error_not_a_crash() -> None:
    _, net, cands = _instance(0)
    n, slots = len(net.flows), net.slots
    f = cands[0].flow
    clash = [None] * n
    clash[f] = (0, 0)
    other = next(ci for ci, c in enumerate(cands) if c.flow != f and set(c.arcs) & set(cands[0].arcs))
    clash[cands[other].flow] = (0, other)
    with pytest.raises(native.NativeError, match="invalid input"):
        greedy.partialcol(n, cands, slots, clash)
    wrong_flow = [None] * n
    wrong_flow[(f + 1) % n] = (0, 0)
    with pytest.raises(native.NativeError, match="invalid input"):
        greedy.partialcol(n, cands, slots, wrong_flow)
    with pytest.raises(native.NativeError, match="invalid input"):
        greedy.round_and_augment(n, cands, slots, [(slots, 0)])
    with pytest.raises(native.NativeError, match="invalid input"):
        greedy.round_and_augment(n, cands, slots, [(0, len(cands))])
    with pytest.raises(native.NativeError, match="invalid input"):
        greedy.partialcol(n, cands, slots, [(0, len(cands))] + [None] * (n - 1))
    with pytest.raises(native.NativeError, match="invalid input"):
        greedy.partialcol(n - 1, cands, slots, [None] * (n - 1))  # a candidate of flow n - 1
    with pytest.raises(native.NativeError, match="invalid input"):
        coloring.tabu_colour([{1}, {0}], 2, [0, 5], 10, 0)
    for bad in ([{1}, {2}], [{0}, set()], [{-1}, set()]):  # a vertex out of range, a self-loop
        with pytest.raises(native.NativeError, match="invalid input"):
            coloring.tabu_colour(bad, 2, [None, None], 10, 0)
        with pytest.raises(native.NativeError, match="invalid input"):
            coloring.exact_colour(bad, 2, 10)
    with pytest.raises(ValueError, match="seed"):
        coloring.tabu_colour([{1}, {0}], 2, [0, 1], 10, -1)


def test_a_library_built_from_other_sources_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "ABI_VERSION", native.ABI_VERSION + 1)
    lib, why = native._load()
    assert lib is None and "built from other sources" in why
    monkeypatch.setenv("TOBSCHED_NATIVE", "0")
    assert native._load() == (None, "TOBSCHED_NATIVE=0")


def test_long_paths_with_many_blockers_are_counted_like_python(monkeypatch: pytest.MonkeyPatch) -> None:
    # Flows 0..B-1 hold one link each in the only slot; flow B's one path crosses all B links, so
    # placing it evicts B flows (PartialCol once kept at most 8 blockers in a fixed buffer).
    from tobsched.paths import Candidate

    for blockers in (9, 12, 40):
        cands = [Candidate(i, ("a", "b"), (i,)) for i in range(blockers)]
        cands.append(Candidate(blockers, ("a", "z"), tuple(range(blockers))))
        start: list[native.Assignment] = [(0, i) for i in range(blockers)] + [None]
        got = greedy.partialcol(blockers + 1, cands, 1, start, 1000, 0)
        assert got == _python(monkeypatch, greedy.partialcol, blockers + 1, cands, 1, start, 1000, 0)
        assert sum(a is not None for a in got) == blockers


def test_malformed_arrays_and_arguments_are_refused() -> None:
    import ctypes

    import numpy as np

    i32 = lambda *v: np.array(v, dtype=np.int32)  # noqa: E731
    ptr = native._ptr
    # Flow 0's candidates listed twice (by_flow not a permutation), flow 1 scheduled.
    cand_flow, arc_off, arcs = i32(0, 1), i32(0, 1, 2), i32(0, 1)
    slot, cand = i32(-1, 0), i32(-1, 1)
    for by_flow, flow_off in ((i32(0, 0), i32(0, 2, 2)), (i32(1, 0), i32(0, 1, 2))):
        rc = native.LIB.ls_partialcol(2, 1, 2, 2, ptr(cand_flow), ptr(arc_off), ptr(arcs), ptr(flow_off), ptr(by_flow),
                                      100, 0, 0.6, 10, ptr(slot), ptr(cand))
        assert rc == -2
    by_flow, flow_off = i32(0, 1), i32(0, 1, 2)
    for alpha in (float("nan"), float("inf"), -1.0):
        rc = native.LIB.ls_partialcol(2, 1, 2, 2, ptr(cand_flow), ptr(arc_off), ptr(arcs), ptr(flow_off), ptr(by_flow),
                                      100, 0, alpha, 10, ptr(slot), ptr(cand))
        assert rc == -2
    out = np.zeros(4)
    assert native.LIB.ls_rng_draws(0, 2, 0, 4, out.ctypes.data_as(ctypes.POINTER(ctypes.c_double))) == -2
    with pytest.raises(ValueError, match="start colours"):
        coloring.tabu_colour([{1}, {0}, set()], 2, [0], 10, 0)
    # Odd sets: a link out of range, offsets going back, no room for the sets found.
    off, links = i32(0, 2, 4, 6), i32(0, 1, 1, 2, 2, 0)
    sizes, found = i32(0, 0, 0), i32(*[0] * 9)
    assert native.LIB.ls_odd_sets(3, ptr(off), ptr(links), 3, 2, 60, 5, 3, 9, ptr(sizes), ptr(found)) == 1
    assert found[:3].tolist() == [0, 1, 2]
    assert native.LIB.ls_odd_sets(3, ptr(off), ptr(links), 2, 2, 60, 5, 3, 9, ptr(sizes), ptr(found)) == -2
    assert native.LIB.ls_odd_sets(3, ptr(i32(0, 2, 1, 6)), ptr(links), 3, 2, 60, 5, 3, 9, ptr(sizes), ptr(found)) == -2
    assert native.LIB.ls_odd_sets(3, ptr(off), ptr(links), 3, 2, 60, 5, 3, 2, ptr(sizes), ptr(found)) == -2
    assert native.LIB.ls_odd_sets(3, ptr(off), ptr(links), 3, 2, 60, 5, 3, 9, ptr(sizes), ptr(found)) == 1


def test_odd_set_search_takes_any_link_ids_and_extreme_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    # Link ids are made dense before the compiled search (negative ones, ones past 2**31, far apart:
    # scratch memory does not grow with them); a tenure past any step; a helper's fuzzing found the
    # C's step + tenure overflowing at INT32_MAX.
    tri = [(0, 1), (1, 2), (2, 0)]
    for base in (-7, 10**6, 2**40):
        paths = [tuple(base + a for a in p) for p in tri]
        assert oddset.odd_set_search(paths, 2) == [tuple(sorted({base + a for p in tri for a in p}))]
    paths = [(14, 7), (10, 2), (14, 7), (10, 0), (0, 2)]
    for tenure in (2**31 - 1, 2**40):
        got = oddset.odd_set_search(paths, 2, 4, tenure)
        assert got == _python(monkeypatch, oddset.odd_set_search, paths, 2, 4, tenure) == [(0, 2, 10), (0, 2, 7, 10, 14)]
    with pytest.raises(ValueError, match="bad odd-set search"):
        oddset.odd_set_search(paths, 2**31, 4, 1)


def test_a_search_deeper_than_the_stack_allows_gives_up() -> None:
    # A path of 45 000 vertices: 2-colourable, but the compiled branch and bound stops at a depth
    # of 40 000 (undecided, which proves nothing) instead of overflowing the stack.
    def path(n: int) -> list[set[int]]:
        return [{u for u in (v - 1, v + 1) if 0 <= u < n} for v in range(n)]

    assert coloring.exact_colour(path(45_000), 2, 100_000) == (None, None)
    assert coloring.exact_colour(path(1_000), 2, 100_000)[0] is True
