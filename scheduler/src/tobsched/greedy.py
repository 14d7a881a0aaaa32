"""Fast heuristic: first fit over (slot, minimum-hop path), most constrained flows first, then a
repair pass that moves one blocking flow to make room. Used alone for inputs too large for the ILP
and as the warm start of the ILPs."""

from __future__ import annotations

import random
from collections.abc import Sequence

from tobsched.coloring import conflict_graph, dsatur
from tobsched.paths import Candidate

Assignment = tuple[int, int] | None  # (slot, candidate index) per flow

PARTIALCOL_ITERATIONS = 2_000


class Occupancy:
    """Which flow holds each (slot, directed link)."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.holder: dict[tuple[int, int], int] = {}

    def free(self, slot: int, arcs: Sequence[int], ignore: int = -1) -> bool:
        return all(self.holder.get((slot, a), ignore) == ignore for a in arcs)

    def blockers(self, slot: int, arcs: Sequence[int]) -> set[int]:
        return {self.holder[(slot, a)] for a in arcs if (slot, a) in self.holder}

    def take(self, slot: int, arcs: Sequence[int], flow: int) -> None:
        for a in arcs:
            assert (slot, a) not in self.holder, "taking a held link"
            self.holder[(slot, a)] = flow

    def release(self, slot: int, arcs: Sequence[int], flow: int) -> None:
        for a in arcs:
            assert self.holder.get((slot, a)) == flow
            del self.holder[(slot, a)]


def greedy_assign(
    num_flows: int,
    cands: list[Candidate],
    slots: int,
) -> list[Assignment]:
    """Best of three starts (first fit in two least-contested-first orders; balanced routing +
    DSatur), improved by PartialCol."""
    tries = [
        first_fit_assign(num_flows, cands, slots),
        first_fit_assign(num_flows, cands, slots, by_max=True),
        first_fit_assign(num_flows, cands, slots, initial=_balanced_dsatur(num_flows, cands, slots)),
    ]
    start = max(tries, key=lambda t: sum(x is not None for x in t))
    return partialcol(num_flows, cands, slots, start)


def partialcol(
    num_flows: int,
    cands: list[Candidate],
    slots: int,
    start: list[Assignment],
    iterations: int = PARTIALCOL_ITERATIONS,
    seed: int = 0,
) -> list[Assignment]:
    """PartialCol-style tabu search (Bloechliger & Zufferey) over (slot, path) placements: put an
    unscheduled flow where it evicts the fewest flows; evicted flows may not return to their slot
    for a while. Keeps the best schedule seen. Deterministic for a given seed."""
    rng = random.Random(seed)
    by_flow: list[list[int]] = [[] for _ in range(num_flows)]
    for ci, c in enumerate(cands):
        by_flow[c.flow].append(ci)
    occ = Occupancy(slots)
    cur: list[Assignment] = list(start)
    for f, a in enumerate(cur):
        if a is not None:
            occ.take(a[0], cands[a[1]].arcs, f)
    unscheduled = [f for f in range(num_flows) if cur[f] is None and by_flow[f]]
    best, best_count = list(cur), num_flows - len(unscheduled) - sum(1 for b in by_flow if not b)
    count = best_count
    tabu: dict[tuple[int, int], int] = {}
    for it in range(iterations):
        if not unscheduled:
            break
        f = unscheduled[rng.randrange(len(unscheduled))]
        move: tuple[int, int] | None = None
        move_cost = 1 << 30
        move_blockers: set[int] = set()
        for k in range(slots):
            if tabu.get((f, k), -1) > it:
                continue
            for ci in by_flow[f]:
                bl = occ.blockers(k, cands[ci].arcs)
                if len(bl) < move_cost or (len(bl) == move_cost and rng.random() < 0.5):
                    move, move_cost, move_blockers = (k, ci), len(bl), bl
        if move is None:
            continue
        for b in move_blockers:
            ab = cur[b]
            assert ab is not None
            occ.release(ab[0], cands[ab[1]].arcs, b)
            cur[b] = None
            unscheduled.append(b)
            tabu[(b, ab[0])] = it + int(0.6 * len(unscheduled)) + rng.randrange(10)
        occ.take(move[0], cands[move[1]].arcs, f)
        cur[f] = move
        unscheduled.remove(f)
        count += 1 - len(move_blockers)
        if count > best_count:
            best, best_count = list(cur), count
    return best


def _balanced_dsatur(num_flows: int, cands: list[Candidate], slots: int) -> list[Assignment]:
    """Route each flow on its least loaded minimum-hop path, then colour with DSatur."""
    by_flow: list[list[int]] = [[] for _ in range(num_flows)]
    for ci, c in enumerate(cands):
        by_flow[c.flow].append(ci)
    load: dict[int, int] = {}
    chosen: list[int] = []
    for f in sorted(range(num_flows), key=lambda f: (len(by_flow[f]), f)):
        if not by_flow[f]:
            continue
        ci = min(by_flow[f], key=lambda c: (sum(load.get(a, 0) ** 2 for a in cands[c].arcs), c))
        for a in cands[ci].arcs:
            load[a] = load.get(a, 0) + 1
        chosen.append(ci)
    colour = dsatur(conflict_graph([cands[ci].arcs for ci in chosen]), slots)
    out: list[Assignment] = [None] * num_flows
    for ci_chosen, slot in zip(chosen, colour):
        if slot is not None:
            out[cands[ci_chosen].flow] = (slot, ci_chosen)
    return out


def first_fit_assign(
    num_flows: int,
    cands: list[Candidate],
    slots: int,
    initial: list[Assignment] | None = None,
    by_max: bool = False,
) -> list[Assignment]:
    """Returns per flow (slot, candidate index) or None. `initial` (feasible) is kept and extended."""
    by_flow: list[list[int]] = [[] for _ in range(num_flows)]
    for ci, c in enumerate(cands):
        by_flow[c.flow].append(ci)

    # How many flows want each directed link: flows on quiet links are placed first, since each
    # of them blocks few others (as min-degree first for independent sets); ties by fewer
    # alternatives, then input order.
    load: dict[int, int] = {}
    for f in range(num_flows):
        for a in {a for ci in by_flow[f] for a in cands[ci].arcs}:
            load[a] = load.get(a, 0) + 1

    def pressure(f: int) -> tuple[int, int, int]:
        if not by_flow[f]:
            return (0, 0, f)
        if by_max:
            best = min(max(load[a] for a in cands[ci].arcs) * 10_000 + sum(load[a] for a in cands[ci].arcs) for ci in by_flow[f])
        else:
            best = min(sum(load[a] for a in cands[ci].arcs) for ci in by_flow[f])
        return (best, len(by_flow[f]), f)

    occ = Occupancy(slots)
    result: list[Assignment] = [None] * num_flows
    if initial is not None:
        for f, asg in enumerate(initial):
            if asg is not None:
                occ.take(asg[0], cands[asg[1]].arcs, f)
                result[f] = asg

    order = sorted((f for f in range(num_flows) if result[f] is None), key=pressure)
    for f in order:
        placed = _first_fit(f, by_flow[f], cands, occ)
        if placed is not None:
            result[f] = placed
            occ.take(placed[0], cands[placed[1]].arcs, f)

    # Repair: an unscheduled flow may fit if one flow blocking it moves elsewhere.
    for f in order:
        if result[f] is not None:
            continue
        for slot in range(slots):
            done = False
            for ci in by_flow[f]:
                blockers = occ.blockers(slot, cands[ci].arcs)
                if len(blockers) != 1:
                    continue
                (b,) = blockers
                b_assign = result[b]
                assert b_assign is not None
                occ.release(b_assign[0], cands[b_assign[1]].arcs, b)
                occ.take(slot, cands[ci].arcs, f)
                moved = _first_fit(b, by_flow[b], cands, occ)
                if moved is not None:
                    occ.take(moved[0], cands[moved[1]].arcs, b)
                    result[b] = moved
                    result[f] = (slot, ci)
                    done = True
                    break
                occ.release(slot, cands[ci].arcs, f)
                occ.take(b_assign[0], cands[b_assign[1]].arcs, b)
            if done:
                break
    return result


def _first_fit(f: int, options: list[int], cands: list[Candidate], occ: Occupancy) -> Assignment:
    for slot in range(occ.slots):
        for ci in options:
            if occ.free(slot, cands[ci].arcs):
                return (slot, ci)
    return None
