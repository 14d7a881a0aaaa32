"""S/UR, scheduling with unconstrained routing (seed 003 §5.2).

Variables as in the paper: f[i,j] (flow i uses directed link j), t[i,k] (flow i in slot k) and
m[i,j,k] = f[i,j] * t[i,k]. Objective: flows scheduled minus 1/(|TS||E|+1) times the total path
length (the paper's secondary term), so shorter routes win among equal counts.

Solved in three steps, each keeping the best schedule so far (never fewer flows than S/PR):
1. S/PR (all minimum-hop paths) gives an incumbent and a warm start.
2. Master without slots: integer multicommodity flow with conservation on f and at most T flows
   per directed link. It relaxes S/UR (drop the slot of any schedule), so its bound is valid. The
   chosen routes are coloured with T slots; a complete colouring is an optimal S/UR schedule.
3. Otherwise the slot-indexed model: m carries the flow conservation per slot (sum_k m[i,j,k] =
   f[i,j], source outflow in slot k = t[i,k]), which implies the paper's three linearisation rows
   m <= f, m <= t, m >= f + t - 1 and has a far tighter LP; slot symmetry broken by flow rank; the
   master's bound is added as a row and the incumbent is the warm start.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from tobsched.coloring import components, conflict_graph, dsatur, exact_colour, tabu_component
from tobsched.greedy import Assignment
from tobsched.highs_model import RowBuilder, SolveOptions, solve_max
from tobsched.network import Network
from tobsched.paths import ArcIndex, Candidate, candidates
from tobsched.pathset import Deadline, solve_pathsets
from tobsched.progress import Notes
from tobsched.slot_ilp import canonical, flow_ranks, solve_slot_ilp

Route = tuple[int, tuple[str, ...]] | None  # (slot, nodes) per flow
# Measured on the 8 slowest small instances: rank fixing 45 s in total, worst 11 s;
# HiGHS's own symmetry handling alone 72 s in total, worst 35 s.
SUR_RANK_SYMMETRY_BREAKING = True


@dataclass
class _FlowArcs:
    arcs: list[int]  # arc ids this flow may use
    nodes: list[str]  # nodes with conservation rows


def _flow_arcs(net: Network, index: ArcIndex) -> list[_FlowArcs]:
    """A flow may leave only its source host, enter only its destination host; inner nodes are
    switches (hosts do not forward). This prunes most host links from each commodity."""
    out: list[_FlowArcs] = []
    for f in net.flows:
        arcs = [
            ai
            for ai, (u, v) in enumerate(index.arcs)
            if (u == f.src or not net.is_host(u)) and (v == f.dst or not net.is_host(v))
            and u != f.dst and v != f.src
        ]
        out.append(_FlowArcs(arcs, [f.src, f.dst] + list(net.switches)))
    return out


def _extract_path(net: Network, index: ArcIndex, flow: int, used: list[int]) -> tuple[str, ...]:
    """A simple src->dst path inside the chosen links (stray cycles are dropped)."""
    f = net.flows[flow]
    succ: dict[str, list[str]] = {}
    for ai in used:
        u, v = index.arcs[ai]
        succ.setdefault(u, []).append(v)
    stack: list[tuple[str, tuple[str, ...]]] = [(f.src, (f.src,))]
    seen = {f.src}
    while stack:
        n, path = stack.pop()
        if n == f.dst:
            return path
        for m in succ.get(n, []):
            if m not in seen:
                seen.add(m)
                stack.append((m, path + (m,)))
    raise AssertionError(f"flow {flow}: chosen links do not join {f.src} to {f.dst}")


def _conservation_rows(
    rows: RowBuilder,
    net: Network,
    index: ArcIndex,
    fa: _FlowArcs,
    flow: int,
    col_of_arc: dict[int, int],
    supply_col: int,
) -> None:
    """out - in - supply = 0 at src, out - in + supply = 0 at dst, out - in = 0 elsewhere
    (supply_col < 0: out - in = 1 at src and -1 at dst)."""
    f = net.flows[flow]
    terms: dict[str, list[tuple[int, float]]] = {n: [] for n in fa.nodes}
    for ai in fa.arcs:
        u, v = index.arcs[ai]
        terms[u].append((col_of_arc[ai], 1.0))
        terms[v].append((col_of_arc[ai], -1.0))
    rhs = {n: 0.0 for n in fa.nodes}
    if supply_col >= 0:
        terms[f.src].append((supply_col, -1.0))
        terms[f.dst].append((supply_col, 1.0))
    else:  # a constant unit of flow (the paper's plain model routes every flow)
        rhs[f.src], rhs[f.dst] = 1.0, -1.0
    for n in fa.nodes:
        if terms[n]:
            cols, coefs = zip(*terms[n])
            rows.add(list(cols), rhs[n], rhs[n], list(coefs))


def _master(
    net: Network, index: ArcIndex, fas: list[_FlowArcs], opts: SolveOptions, start: list[Route]
) -> tuple[list[tuple[str, ...] | None], float, int, bool]:
    """Multicommodity flow without slots. Returns routes, dual bound on flows, eps-free bound, optimal."""
    T = net.slots
    nf = len(net.flows)
    # Columns: x[i] (scheduled) then f[i, a] for the allowed arcs of each flow.
    offset = [nf]
    for fa in fas:
        offset.append(offset[-1] + len(fa.arcs))
    n = offset[-1]
    n_f = n - nf
    eps = 1.0 / (n_f + 1)
    cost = np.full(n, -eps)
    cost[:nf] = 1.0
    rows = RowBuilder()
    by_arc: dict[int, list[int]] = {}
    for i, fa in enumerate(fas):
        col_of_arc = {ai: offset[i] + k for k, ai in enumerate(fa.arcs)}
        _conservation_rows(rows, net, index, fa, i, col_of_arc, i)
        for ai, col in col_of_arc.items():
            by_arc.setdefault(ai, []).append(col)
    for cols in by_arc.values():
        if len(cols) > T:
            rows.add(cols, -np.inf, float(T))
    x0 = np.zeros(n)
    for i, r in enumerate(start):
        if r is None:
            continue
        x0[i] = 1.0
        pos = {ai: k for k, ai in enumerate(fas[i].arcs)}
        for ai in index.path_arcs(r[1]):
            x0[offset[i] + pos[ai]] = 1.0
    res = solve_max(cost, rows, opts, start=x0)
    # Primary bound: a schedule with P flows has objective >= P - eps * n_f > P - 1.
    bound = math.floor(res.dual_bound + eps * n_f + 1e-9)
    routes: list[tuple[str, ...] | None] = [None] * nf
    if res.x is not None:
        for i in range(nf):
            if res.x[i] > 0.5:
                seg = res.x[offset[i] : offset[i + 1]]
                used = [fas[i].arcs[k] for k in np.flatnonzero(seg > 0.5)]
                routes[i] = _extract_path(net, index, i, used)
    return routes, res.dual_bound, bound, res.optimal


def _slot_model(
    net: Network,
    index: ArcIndex,
    fas: list[_FlowArcs],
    opts: SolveOptions,
    start: list[Route],
    upper_bound: int | None,
    symmetry_breaking: bool = SUR_RANK_SYMMETRY_BREAKING,
) -> tuple[list[Route], int | None]:
    T = net.slots
    nf = len(net.flows)
    # Rank flows for symmetry breaking with their minimum-hop candidates as a load proxy.
    rank = flow_ranks(nf, candidates(net, fixed=False)) if symmetry_breaking else [T] * nf
    # Columns: t[i, k] at i*T + k, then m[i, a, k] per flow block.
    offset = [nf * T]
    for fa in fas:
        offset.append(offset[-1] + len(fa.arcs) * T)
    n = offset[-1]
    n_m = n - nf * T
    eps = 1.0 / (n_m + 1)
    cost = np.full(n, -eps)
    cost[: nf * T] = 1.0
    upper = np.ones(n)
    rows = RowBuilder()
    by_arc_slot: dict[tuple[int, int], list[int]] = {}
    for i, fa in enumerate(fas):
        rows.add(np.arange(i * T, (i + 1) * T), -np.inf, 1.0)
        for k in range(T):
            col_of_arc = {ai: offset[i] + j * T + k for j, ai in enumerate(fa.arcs)}
            if k > rank[i]:
                upper[i * T + k] = 0.0
                for col in col_of_arc.values():
                    upper[col] = 0.0
                continue
            _conservation_rows(rows, net, index, fa, i, col_of_arc, i * T + k)
            for ai, col in col_of_arc.items():
                by_arc_slot.setdefault((ai, k), []).append(col)
    for cols in by_arc_slot.values():
        if len(cols) > 1:
            rows.add(cols, -np.inf, 1.0)
    if upper_bound is not None:
        rows.add(np.arange(nf * T), -np.inf, float(upper_bound))

    # Warm start, slots relabelled along the ranking.
    pseudo = [(r[0], i) if r is not None else None for i, r in enumerate(start)]
    x0 = np.zeros(n)
    for i, a in enumerate(canonical(pseudo, rank) if symmetry_breaking else pseudo):
        r = start[i]
        if a is None or r is None:
            continue
        k = a[0]
        x0[i * T + k] = 1.0
        pos = {ai: j for j, ai in enumerate(fas[i].arcs)}
        for ai in index.path_arcs(r[1]):
            x0[offset[i] + pos[ai] * T + k] = 1.0
    res = solve_max(cost, rows, opts, upper=upper, start=x0)
    routes: list[Route] = [None] * nf
    if res.x is not None:
        for i, fa in enumerate(fas):
            for k in range(T):
                if res.x[i * T + k] > 0.5:
                    used = [ai for j, ai in enumerate(fa.arcs) if res.x[offset[i] + j * T + k] > 0.5]
                    routes[i] = (k, _extract_path(net, index, i, used))
    bound = math.floor(res.dual_bound + eps * n_m + 1e-9) if res.x is not None else None
    return routes, bound


def _colour_routes(net: Network, index: ArcIndex, routes: list[tuple[str, ...] | None], opts: SolveOptions) -> list[Route]:
    """Slots for fixed routes: DSatur, then the exact slot ILP on components DSatur left."""
    chosen = [i for i, r in enumerate(routes) if r is not None]
    arcs = [index.path_arcs(routes[i]) for i in chosen]  # type: ignore[arg-type]
    adj = conflict_graph(arcs)
    colour = dsatur(adj, net.slots)
    failed = {v for v, c in enumerate(colour) if c is None}
    for members in components(adj, list(range(len(chosen)))):
        if failed.isdisjoint(members):
            continue
        tabu = tabu_component(adj, members, net.slots, [colour[v] for v in members])
        if tabu is not None:
            for j, v in enumerate(members):
                colour[v] = tabu[j]
            continue
        local = {v: j for j, v in enumerate(members)}
        ok, exact = exact_colour([{local[u] for u in adj[v] if u in local} for v in members], net.slots)
        if ok and exact is not None:
            for j, v in enumerate(members):
                colour[v] = exact[j]
            continue
        sub = [Candidate(j, (), arcs[v]) for j, v in enumerate(members)]
        hint: list[Assignment] = [(c, j) if (c := colour[v]) is not None else None for j, v in enumerate(members)]
        got, _ = solve_slot_ilp(len(members), sub, net.slots, opts, start=hint)
        for j, v in enumerate(members):
            a = got[j]
            colour[v] = a[0] if a is not None else None
    out: list[Route] = [None] * len(routes)
    for v, i in enumerate(chosen):
        c = colour[v]
        r = routes[i]
        if c is not None and r is not None:
            out[i] = (c, r)
    return out


def _count(routes: list[Route]) -> int:
    return sum(r is not None for r in routes)


def solve_sur(net: Network, opts: SolveOptions) -> tuple[list[Route], bool, int | None, list[str]]:
    deadline = Deadline(opts.time_limit_s)
    notes = Notes(opts.progress)

    def sub(share: float = 1.0) -> SolveOptions:
        return replace(opts, time_limit_s=deadline.left() * share)

    # 1. S/PR incumbent.
    cands = candidates(net, fixed=False)
    pr, pr_optimal, _, _ = solve_pathsets(len(net.flows), cands, net.slots, sub(0.3))
    best: list[Route] = [(a[0], cands[a[1]].nodes) if a is not None else None for a in pr]
    notes.append(f"S/PR incumbent: {_count(best)} flows (proven {pr_optimal})")

    # 2. Slot-free master and colouring.
    index = ArcIndex(net)
    fas = _flow_arcs(net, index)
    routes, _, upper, master_optimal = _master(net, index, fas, sub(0.5), best)
    notes.append(f"master bound {upper} (optimal {master_optimal})")
    if any(r is not None for r in routes):
        coloured = _colour_routes(net, index, routes, sub(0.3))
        if _count(coloured) > _count(best):
            best = coloured
    if _count(best) >= upper:
        return best, True, upper, notes

    # 3. Slot-indexed model with the bound and the incumbent.
    if deadline.left() > 0.05:
        notes.append("slot-indexed S/UR model")
        got, bound = _slot_model(net, index, fas, sub(), best, upper)
        if _count(got) > _count(best):
            best = got
        if bound is not None:
            upper = min(upper, bound)
    return best, _count(best) >= upper, upper, notes


def solve_sur_plain(net: Network, opts: SolveOptions) -> tuple[int, int | None, float]:
    """The paper's S/UR model as written (§5.2): f, t, m with m <= f, m <= t, m >= f + t - 1,
    conservation on f, at most one m per link and slot, no symmetry breaking, no warm start.
    Kept for the benchmark's comparison only. Returns (flows scheduled, upper bound, seconds)."""
    T = net.slots
    nf = len(net.flows)
    index = ArcIndex(net)
    fas = _flow_arcs(net, index)
    # Columns: t[i, k] at i*T + k; then per flow its f[i, a] followed by m[i, a, k].
    offset = [nf * T]
    for fa in fas:
        offset.append(offset[-1] + len(fa.arcs) * (T + 1))
    n = offset[-1]
    n_f = sum(len(fa.arcs) for fa in fas)
    eps = 1.0 / (n_f + 1)
    cost = np.zeros(n)
    cost[: nf * T] = 1.0
    rows = RowBuilder()
    by_arc_slot: dict[tuple[int, int], list[int]] = {}
    for i, fa in enumerate(fas):
        rows.add(np.arange(i * T, (i + 1) * T), -np.inf, 1.0)
        f_col = {ai: offset[i] + j for j, ai in enumerate(fa.arcs)}
        for col in f_col.values():
            cost[col] = -eps
        # Path from src to dst whether or not the flow gets a slot, as in the paper.
        _conservation_rows(rows, net, index, fa, i, f_col, -1)
        for j, ai in enumerate(fa.arcs):
            for k in range(T):
                m = offset[i] + len(fa.arcs) + j * T + k
                t = i * T + k
                rows.add([m, f_col[ai]], -np.inf, 0.0, [1.0, -1.0])
                rows.add([m, t], -np.inf, 0.0, [1.0, -1.0])
                rows.add([m, f_col[ai], t], -1.0, np.inf, [1.0, -1.0, -1.0])
                by_arc_slot.setdefault((ai, k), []).append(m)
    for cols in by_arc_slot.values():
        rows.add(cols, -np.inf, 1.0)
    res = solve_max(cost, rows, opts)
    scheduled = int(round(float(np.sum(res.x[: nf * T])))) if res.x is not None else 0
    bound = math.floor(res.dual_bound + eps * n_f + 1e-9) if math.isfinite(res.dual_bound) else None
    return scheduled, bound, res.solve_s
