"""The slot-indexed ILP of S/PR (seed 003 §5.3) and S/FR (§5.4, one candidate per flow):
pt[l,k] = 1 when candidate path l is sent in slot k.

Slots are interchangeable, so every solution has T! copies. We break that symmetry by ranking the
flows (the flows of the most loaded directed link first) and letting the flow of rank r use only
slots 0..r: any schedule can be relabelled so that slots appear in rank order, hence no optimum is
lost. The warm start is relabelled the same way.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tobsched.greedy import Assignment
from tobsched.highs_model import MipResult, RowBuilder, SolveOptions, solve_max
from tobsched.paths import Candidate, by_flow_and_arc


def flow_ranks(num_flows: int, cands: list[Candidate]) -> list[int]:
    """Rank of each flow for symmetry breaking: flows of the most loaded link first."""
    flows_on_arc: dict[int, set[int]] = {}
    for c in cands:
        for a in c.arcs:
            flows_on_arc.setdefault(a, set()).add(c.flow)
    load = {a: len(s) for a, s in flows_on_arc.items()}
    first: list[int] = []
    if load:
        busiest = max(load, key=lambda a: (load[a], -a))
        first = sorted(flows_on_arc[busiest])
    weight = [0] * num_flows
    for c in cands:
        weight[c.flow] = max(weight[c.flow], max((load[a] for a in c.arcs), default=0))
    in_first = set(first)
    rest = sorted((f for f in range(num_flows) if f not in in_first), key=lambda f: (-weight[f], f))
    order = first + rest
    rank = [0] * num_flows
    for r, f in enumerate(order):
        rank[f] = r
    return rank


def canonical(assign: list[Assignment], rank: list[int]) -> list[Assignment]:
    """Relabels slots in order of first use along the ranking."""
    order = sorted(range(len(assign)), key=lambda f: rank[f])
    label: dict[int, int] = {}
    out: list[Assignment] = [None] * len(assign)
    for f in order:
        a = assign[f]
        if a is None:
            continue
        if a[0] not in label:
            label[a[0]] = len(label)
        out[f] = (label[a[0]], a[1])
    return out


def slot_model(
    num_flows: int,
    cands: list[Candidate],
    slots: int,
    *,
    symmetry_breaking: bool = True,
    clique_cuts: list[list[int]] | None = None,
) -> tuple[RowBuilder, npt.NDArray[np.float64], list[int]]:
    """Rows and column upper bounds of the slot ILP (columns: candidate c, slot k -> c * slots + k)
    and the flow ranks used for symmetry breaking."""
    T = slots
    n_c = len(cands)
    n = n_c * T
    rank = flow_ranks(num_flows, cands) if symmetry_breaking else [T] * num_flows
    upper = np.ones(n)
    for ci, c in enumerate(cands):
        r = rank[c.flow]
        if r + 1 < T:
            upper[ci * T + r + 1 : (ci + 1) * T] = 0.0

    rows = RowBuilder()
    by_flow, by_arc = by_flow_and_arc(cands)
    for members in by_flow:
        rows.add([ci * T + k for ci in members for k in range(T)], -np.inf, 1.0)

    groups = [m for m in by_arc if len({cands[ci].flow for ci in m}) > 1]
    groups += clique_cuts or []
    for members in groups:
        # One row per slot: all candidates using this link in slot k.
        for k in range(T):
            rows.add([ci * T + k for ci in members], -np.inf, 1.0)
    return rows, upper, rank


def solve_slot_ilp(
    num_flows: int,
    cands: list[Candidate],
    slots: int,
    opts: SolveOptions,
    *,
    start: list[Assignment] | None = None,
    upper_bound: int | None = None,
    clique_cuts: list[list[int]] | None = None,
    symmetry_breaking: bool = True,
) -> tuple[list[Assignment], MipResult]:
    """Maximises scheduled flows. Columns: candidate c, slot k -> c * slots + k."""
    T = slots
    n = len(cands) * T
    rows, upper, rank = slot_model(num_flows, cands, slots, symmetry_breaking=symmetry_breaking,
                                   clique_cuts=clique_cuts)
    if upper_bound is not None:
        rows.add(np.arange(n), -np.inf, float(upper_bound))

    x0 = None
    if start is not None:
        x0 = np.zeros(n)
        for asg in canonical(start, rank) if symmetry_breaking else start:
            if asg is not None:
                x0[asg[1] * T + asg[0]] = 1.0
    res = solve_max(np.ones(n), rows, opts, upper=upper, start=x0, integral_objective=True)
    out: list[Assignment] = [None] * num_flows
    if res.x is not None:
        for col in np.flatnonzero(res.x > 0.5):
            ci, k = divmod(int(col), T)
            assert out[cands[ci].flow] is None, "a flow got two slots"
            out[cands[ci].flow] = (k, ci)
    return out, res


def schedule_of_size(
    num_flows: int, cands: list[Candidate], slots: int, target: int, opts: SolveOptions
) -> tuple[bool | None, list[Assignment]]:
    """Is there a schedule of at least `target` flows? The symmetry-broken slot model with
    sum >= target and no objective, so HiGHS stops at the first schedule it finds. Returns
    (True, that schedule), (False, []) when HiGHS proves there is none, (None, []) at the time
    limit."""
    T = slots
    n = len(cands) * T
    rows, upper, _ = slot_model(num_flows, cands, slots)
    rows.add(np.arange(n), float(target), np.inf)
    res = solve_max(np.zeros(n), rows, opts, upper=upper)
    if res.x is not None:
        out: list[Assignment] = [None] * num_flows
        for col in np.flatnonzero(res.x > 0.5):
            ci, k = divmod(int(col), T)
            assert out[cands[ci].flow] is None, "a flow got two slots"
            out[cands[ci].flow] = (k, ci)
        assert sum(a is not None for a in out) >= target
        return True, out
    if res.status == "Infeasible":
        return False, []
    return None, []
