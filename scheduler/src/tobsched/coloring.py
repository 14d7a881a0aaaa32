"""Slot assignment for a fixed set of paths: a slot is a colour, two paths sharing a directed link
must get different colours. DSatur first; an exact slot ILP when DSatur runs out of colours.

Tabucol and the DSatur branch and bound also exist compiled (lsearch.c, through native.py), with the
same moves and draws; tabu_colour and exact_colour run that one when it is loaded, and their Python
code is its specification (tests/test_native.py compares the two)."""

from __future__ import annotations

from collections.abc import Sequence

from tobsched import native


def conflict_graph(items: Sequence[Sequence[int]]) -> list[set[int]]:
    """Neighbours of each item: the items sharing at least one directed link with it."""
    by_arc: dict[int, list[int]] = {}
    for i, arcs in enumerate(items):
        for a in arcs:
            by_arc.setdefault(a, []).append(i)
    adj: list[set[int]] = [set() for _ in items]
    for members in by_arc.values():
        for i in members:
            adj[i].update(members)
    for i, s in enumerate(adj):
        s.discard(i)
    return adj


def dsatur(adj: list[set[int]], colours: int) -> list[int | None]:
    """DSatur with at most `colours` colours; items it cannot colour stay None."""
    n = len(adj)
    colour: list[int | None] = [None] * n
    seen: list[set[int]] = [set() for _ in range(n)]
    pending = set(range(n))
    # The largest (saturation, degree, -index) as one integer per vertex, kept up to date:
    # saturation * SAT + degree * n + (n - 1 - index), as in exact_colour.
    SAT = (n + 1) * n + n
    score = [len(adj[u]) * n + (n - 1 - u) for u in range(n)]
    while pending:
        v = max(pending, key=score.__getitem__)
        pending.discard(v)
        c = next((k for k in range(colours) if k not in seen[v]), None)
        if c is None:
            continue
        colour[v] = c
        for u in adj[v]:
            if c not in seen[u]:
                seen[u].add(c)
                score[u] += SAT
    return colour


def components(adj: list[set[int]], members: Sequence[int]) -> list[list[int]]:
    """Connected components of the conflict graph restricted to `members`."""
    allowed = set(members)
    done: set[int] = set()
    out: list[list[int]] = []
    for s in members:
        if s in done:
            continue
        comp = [s]
        done.add(s)
        k = 0
        while k < len(comp):
            for u in adj[comp[k]]:
                if u in allowed and u not in done:
                    done.add(u)
                    comp.append(u)
            k += 1
        out.append(sorted(comp))
    return out


def tabu_colour(
    adj: list[set[int]], colours: int, start: list[int | None], iterations_max: int = 20_000, seed: int = 0
) -> list[int] | None:
    """Tabucol (Hertz & de Werra): local search for a complete colouring without conflicts.
    Returns one, or None when the iteration budget runs out (that proves nothing)."""
    if native.LIB is not None:
        return native.tabu_colour(adj, colours, start, iterations_max, seed)
    import random

    n = len(adj)
    if n == 0:
        return []
    rng = random.Random(seed)
    col = [c if c is not None else rng.randrange(colours) for c in start]
    nbrs = [list(a) for a in adj]
    # gamma[v][c]: neighbours of v that have colour c.
    gamma = [[0] * colours for _ in range(n)]
    for v in range(n):
        gv = gamma[v]
        for u in nbrs[v]:
            gv[col[u]] += 1
    conflicts = sum(gamma[v][col[v]] for v in range(n)) // 2
    # The vertices in conflict (few, once the search is under way): only they have moves. Scanned
    # in ascending order, so the moves and the generator's draws are those of a scan over all.
    conflicted = {v for v in range(n) if gamma[v][col[v]]}
    # tabu[v][c]: moving v to colour c is tabu up to this iteration (lists, not a dict keyed by
    # (v, c): a quarter less time, same moves and draws).
    tabu = [[-1] * colours for _ in range(n)]
    best = conflicts
    draw = rng.random
    palette = range(colours)
    for it in range(iterations_max):
        if conflicts == 0:
            return col
        move_v = -1
        move_c = 0
        move_delta = 1 << 30
        for v in sorted(conflicted):
            gv = gamma[v]
            cv = col[v]
            cur = gv[cv]
            tv = tabu[v]
            for c in palette:
                if c == cv:
                    continue
                d = gv[c] - cur
                if d < move_delta or (d == move_delta and draw() < 0.3):
                    if tv[c] >= it and conflicts + d >= best:
                        continue
                    move_v, move_c, move_delta = v, c, d
        if move_v < 0:
            continue
        v, c = move_v, move_c
        old = col[v]
        col[v] = c
        for u in nbrs[v]:
            gu = gamma[u]
            gu[old] -= 1
            gu[c] += 1
            if gu[col[u]]:
                conflicted.add(u)
            else:
                conflicted.discard(u)
        if gamma[v][c]:
            conflicted.add(v)
        else:
            conflicted.discard(v)
        conflicts += move_delta
        if conflicts < best:
            best = conflicts
        tabu[v][old] = it + 7 + rng.randrange(10) + conflicts
    return col if conflicts == 0 else None


# Tabucol's budget on a component of n paths: max(MIN, PER_PATH * n) iterations. With up to
# FEW_SLOTS slots a failing run costs more than the feasibility pump that follows it, and its
# successes come early (all but one within 700 iterations over the benchmark's instances); with
# more slots the pump's slot LP is larger and slower, and the long budget pays
# (docs/scheduler.md "Colouring the master's paths").
TABU_FEW_SLOTS = 4
TABU_FEW = (1_000, 12)
TABU_MANY = (2_000, 40)


def tabu_iterations(n: int, colours: int, short: bool = False) -> int:
    """The budget; `short` asks for the few-slot one whatever the slots (a first try)."""
    low, per_path = TABU_FEW if short or colours <= TABU_FEW_SLOTS else TABU_MANY
    return max(low, per_path * n)


def tabu_component(
    adj: list[set[int]], members: Sequence[int], colours: int, hint: list[int | None], short: bool = False
) -> list[int] | None:
    """Tabucol on the subgraph induced by members; hint and result are indexed like members."""
    local = {v: j for j, v in enumerate(members)}
    sub = [{local[u] for u in adj[v] if u in local} for v in members]
    return tabu_colour(sub, colours, hint, iterations_max=tabu_iterations(len(members), colours, short))


class _Abort(Exception):
    pass


def exact_colour(adj: list[set[int]], colours: int, nodes_max: int = 50_000) -> tuple[bool | None, list[int] | None]:
    """DSatur branch and bound with forward checking. Returns (True, colouring), (False, None) when
    no colouring with `colours` colours exists (proven), or (None, None) past the node budget."""
    if native.LIB is not None:
        return native.exact_colour(adj, colours, nodes_max)
    import sys

    n = len(adj)
    col = [-1] * n
    cnt = [[0] * colours for _ in range(n)]
    sat = [0] * n
    nodes = 0
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * n + 100))
    # DSatur's choice, the uncoloured vertex of the largest (saturation, degree, -index), as one
    # integer per vertex kept up to date, so that the choice is a max over a list (most of the
    # search's time went into comparing those tuples): saturation * SAT + degree * n + (n - 1 -
    # index), minus COLOURED while the vertex has a colour.
    SAT = (n + 1) * n + n
    COLOURED = (colours + 1) * SAT
    score = [len(adj[u]) * n + (n - 1 - u) for u in range(n)]

    def assign(v: int, c: int, sign: int) -> None:
        col[v] = c if sign > 0 else -1
        score[v] -= sign * COLOURED
        for u in adj[v]:
            before = cnt[u][c]
            cnt[u][c] += sign
            if before == 0 and sign > 0:
                sat[u] += 1
                score[u] += SAT
            elif cnt[u][c] == 0 and sign < 0:
                sat[u] -= 1
                score[u] -= SAT

    def rec(done: int, used: int) -> bool:
        nonlocal nodes
        if done == n:
            return True
        nodes += 1
        if nodes > nodes_max:
            raise _Abort
        v = max(range(n), key=score.__getitem__)
        for c in range(min(used + 1, colours)):
            if cnt[v][c]:
                continue
            assign(v, c, +1)
            dead = any(col[u] < 0 and sat[u] == colours for u in adj[v])
            if not dead and rec(done + 1, max(used, c + 1)):
                return True
            assign(v, c, -1)
        return False

    try:
        ok = rec(0, 0)
    except _Abort:
        return None, None
    return (True, list(col)) if ok else (False, None)


def colour_core(adj: list[set[int]], members: Sequence[int], colours: int) -> list[int]:
    """The members left after repeatedly removing those with fewer than `colours` neighbours
    among the rest: such a vertex can always be coloured last, so the members are colourable
    exactly when what is left is."""
    alive = set(members)
    deg = {v: len(adj[v] & alive) for v in alive}
    stack = [v for v in alive if deg[v] < colours]
    while stack:
        v = stack.pop()
        if v not in alive:
            continue
        alive.discard(v)
        for u in adj[v]:
            if u in alive:
                deg[u] -= 1
                if deg[u] == colours - 1:
                    stack.append(u)
    return [v for v in members if v in alive]


def non_colourable_core(adj: list[set[int]], members: Sequence[int], colours: int) -> list[int] | None:
    """A small subset of members that provably cannot be coloured, or None when the members can
    be coloured or the search gives up. First the colouring core (colour_core), then a deletion
    filter that tries to drop whole chunks of vertices at a time (halving the chunk after a
    failure, as in QuickXplain), re-reducing to the colouring core after each success."""
    def induced(vs: Sequence[int]) -> list[set[int]]:
        local = {v: j for j, v in enumerate(vs)}
        return [{local[u] for u in adj[v] if u in local} for v in vs]

    core = colour_core(adj, members, colours)
    ok, _ = exact_colour(induced(core), colours)
    if ok is not False:
        return None
    # Low-degree vertices first: they are the likeliest to be inessential.
    order = sorted(core, key=lambda u: (len(adj[u]), u))
    chunk = max(1, len(order) // 4)
    i = 0
    while i < len(order):
        drop = set(order[i : i + chunk]) & set(core)
        if not drop:
            i += chunk
            continue
        trial = colour_core(adj, [u for u in core if u not in drop], colours)
        ok, _ = exact_colour(induced(trial), colours, nodes_max=5_000) if trial else (True, None)
        if ok is False:
            core = trial
            i += chunk
        elif chunk > 1:
            chunk = max(1, chunk // 2)
        else:
            i += 1
    return core
