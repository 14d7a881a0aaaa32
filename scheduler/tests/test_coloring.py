"""The colouring helpers of the S/PR and S/FR decomposition (coloring.py, pathset.settle_component):
their answers are checked against brute force on small graphs, including the failure modes (a
node budget too small to decide, graphs that cannot be coloured)."""

from __future__ import annotations

import itertools

import pytest

from tobsched import pathset
from tobsched.coloring import colour_core, exact_colour, non_colourable_core, tabu_colour, tabu_iterations


def _graph(n: int, edges: list[tuple[int, int]]) -> list[set[int]]:
    adj: list[set[int]] = [set() for _ in range(n)]
    for u, v in edges:
        adj[u].add(v)
        adj[v].add(u)
    return adj


def _colourable(adj: list[set[int]], vs: list[int], k: int) -> bool:
    """Brute force over all colourings of the subgraph induced by vs."""
    for cols in itertools.product(range(k), repeat=len(vs)):
        c = dict(zip(vs, cols))
        if all(c[u] != c[v] for u in vs for v in adj[u] if v in c):
            return True
    return False


def _proper(adj: list[set[int]], vs: list[int], colours: list[int], k: int) -> bool:
    c = dict(zip(vs, colours))
    return all(0 <= x < k for x in colours) and all(c[u] != c[v] for u in vs for v in adj[u] if v in c)


K4 = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
C5 = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]
# Grötzsch graph (Mycielski of C5): 11 vertices, triangle-free, 4-chromatic and 4-critical.
GROTZSCH = C5 + [(5, 1), (5, 4), (6, 0), (6, 2), (7, 1), (7, 3), (8, 2), (8, 4), (9, 3), (9, 0)] + [
    (10, v) for v in range(5, 10)]


def test_colour_core_drops_vertices_that_can_always_be_coloured_last() -> None:
    # K4 with a pendant path 3-4-5: the path goes, K4 stays.
    adj = _graph(6, K4 + [(3, 4), (4, 5)])
    assert colour_core(adj, list(range(6)), 3) == [0, 1, 2, 3]
    # A tree has an empty 2-core; an odd cycle is its own 2-core.
    assert colour_core(_graph(4, [(0, 1), (1, 2), (1, 3)]), [0, 1, 2, 3], 2) == []
    assert colour_core(_graph(5, C5), list(range(5)), 2) == list(range(5))


@pytest.mark.parametrize("seed", range(6))
def test_colour_core_keeps_the_answer_of_random_graphs(seed: int) -> None:
    import random

    rng = random.Random(seed)
    n = 9
    edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.45]
    adj = _graph(n, edges)
    for k in (2, 3):
        core = colour_core(adj, list(range(n)), k)
        assert _colourable(adj, list(range(n)), k) == (not core or _colourable(adj, core, k))


def test_non_colourable_core_finds_the_clique_inside_a_larger_graph() -> None:
    # K4 on 0-3, joined to a 3-colourable rest (a 6-cycle through vertex 3).
    adj = _graph(9, K4 + [(3, 4), (4, 5), (5, 6), (6, 7), (7, 8), (8, 3), (4, 7)])
    core = non_colourable_core(adj, list(range(9)), 3)
    assert core is not None and sorted(core) == [0, 1, 2, 3]


def test_non_colourable_core_is_minimal_on_a_critical_graph() -> None:
    adj = _graph(11, GROTZSCH)
    assert not _colourable(adj, list(range(11)), 3)
    core = non_colourable_core(adj, list(range(11)), 3)
    assert core is not None and sorted(core) == list(range(11))  # 4-critical: nothing can go
    # Every vertex of a core is needed: without any one of them the rest is colourable.
    adj2 = _graph(14, GROTZSCH + [(11, 0), (12, 11), (13, 12), (13, 0)])
    core2 = non_colourable_core(adj2, list(range(14)), 3)
    assert core2 is not None and not _colourable(adj2, core2, 3)
    for v in core2:
        assert _colourable(adj2, [u for u in core2 if u != v], 3)


def test_non_colourable_core_is_none_for_colourable_graphs() -> None:
    assert non_colourable_core(_graph(11, GROTZSCH), list(range(11)), 4) is None
    assert non_colourable_core(_graph(5, C5), list(range(5)), 3) is None


def test_settle_component_colours_proves_or_gives_up(monkeypatch: pytest.MonkeyPatch) -> None:
    c5 = _graph(5, C5)
    ok, col = pathset.settle_component(c5, list(range(5)), 3, [None] * 5)
    assert ok is True and col is not None and _proper(c5, list(range(5)), col, 3)
    k4 = _graph(4, K4)
    assert pathset.settle_component(k4, [0, 1, 2, 3], 3, [None] * 4) == (False, None)
    # Members are a subset: only the induced subgraph counts (K4 minus a vertex is a triangle).
    ok, col = pathset.settle_component(k4, [0, 1, 2], 3, [0, 0, 0])
    assert ok is True and col is not None and _proper(k4, [0, 1, 2], col, 3)
    # No node budget for the exact search: Tabucol still colours the cycle, and an uncolourable
    # graph is left undecided rather than claimed either way.
    monkeypatch.setattr(pathset, "EXACT_FIRST_NODES", 0)
    ok, col = pathset.settle_component(c5, list(range(5)), 3, [None] * 5)
    assert ok is True and col is not None and _proper(c5, list(range(5)), col, 3)
    assert pathset.settle_component(k4, [0, 1, 2, 3], 3, [None] * 4) == (None, None)
    assert exact_colour(k4, 3, nodes_max=0) == (None, None)


def test_colour_paths_reports_what_it_could_not_colour() -> None:
    # Two components: a 5-cycle (3-colourable; DSatur may need help) and a K4 (not 3-colourable).
    adj = _graph(9, C5 + [(a + 5, b + 5) for a, b in K4])
    colour, hard = pathset.colour_paths(adj, 3)
    assert all(colour[v] is not None for v in range(5))
    assert _proper(adj, list(range(5)), [colour[v] for v in range(5)], 3)  # type: ignore[misc]
    assert hard == [([5, 6, 7, 8], False)]
    assert any(colour[v] is None for v in range(5, 9))


@pytest.mark.parametrize("seed", range(40))
def test_tabu_colour_is_proper_or_gives_up_on_random_graphs(seed: int) -> None:
    import random

    rng = random.Random(seed)
    n = rng.randrange(4, 9)
    adj = _graph(n, [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.5])
    k = rng.randrange(2, 4)
    start = [rng.choice([None, *range(k)]) for _ in range(n)]
    got = tabu_colour(adj, k, start, iterations_max=2_000, seed=seed)
    if got is None:
        # It may give up on a colourable graph (that proves nothing), never on an easy one.
        assert not _colourable(adj, list(range(n)), k) or n > 6
    else:
        assert _proper(adj, list(range(n)), got, k)
    # Same input, same answer (it is seeded, and its scan order does not depend on set order).
    assert tabu_colour(adj, k, start, iterations_max=2_000, seed=seed) == got


def test_tabu_colour_gives_up_on_an_uncolourable_graph() -> None:
    assert tabu_colour(_graph(4, K4), 3, [0, 0, 0, 0], iterations_max=500) is None
    assert tabu_colour(_graph(11, GROTZSCH), 3, [None] * 11, iterations_max=500) is None
    got = tabu_colour(_graph(11, GROTZSCH), 4, [0] * 11, iterations_max=5_000)
    assert got is not None and _proper(_graph(11, GROTZSCH), list(range(11)), got, 4)


def test_tabu_budget_is_short_with_few_slots() -> None:
    # docs/scheduler.md "Colouring the master's paths: Tabucol's budget".
    assert tabu_iterations(50, 3) == 1_000 and tabu_iterations(80, 4) == 1_000
    assert tabu_iterations(100, 4) == 1_200
    assert tabu_iterations(50, 5) == 2_000 and tabu_iterations(80, 5) == 3_200
