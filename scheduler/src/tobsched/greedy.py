"""Fast heuristic: first fit over (slot, minimum-hop path) in a few least-contended-first orders,
a repair pass that moves one blocking flow to make room, then a PartialCol-style tabu search.
Used alone for inputs too large for the ILP and as the warm start of the ILPs.

Occupancy is kept as one integer bitset of directed links per slot (a candidate fits a slot when
its link mask and the slot's bitset do not intersect) plus the holder of each (slot, link), so the
inner loops are integer operations. Everything is deterministic: orders break ties by index and
the tabu search uses a seeded generator and a fixed work budget, never the clock.

The ejection chains and PartialCol also exist compiled (lsearch.c, through native.py), making the
same moves and draws; the functions here run that one when it is loaded, and the Python code below
is its specification (tests/test_native.py compares the two)."""

from __future__ import annotations

import random

from tobsched import native
from tobsched.paths import Candidate

Assignment = tuple[int, int] | None  # (slot, candidate index) per flow

# Work budgets in (slot, candidate) evaluations, each well under a microsecond, so that greedy
# stays in the tens of milliseconds whatever the size (and never depends on the clock).
AUGMENT_EVALUATIONS = 30_000
PARTIALCOL_EVALUATIONS = 50_000
TABU_ALPHA = 0.6
TABU_RANDOM = 10


class _Instance:
    """Candidates of each flow with their directed links as tuples and as bitsets."""

    def __init__(self, num_flows: int, cands: list[Candidate]) -> None:
        self.num_flows = num_flows
        self.by_flow: list[list[int]] = [[] for _ in range(num_flows)]
        for ci, c in enumerate(cands):
            self.by_flow[c.flow].append(ci)
        self.arcs: list[tuple[int, ...]] = [c.arcs for c in cands]
        self.mask: list[int] = []
        for arcs in self.arcs:
            m = 0
            for a in arcs:
                m |= 1 << a
            self.mask.append(m)
        self.num_arcs = 1 + max((a for arcs in self.arcs for a in arcs), default=-1)


class _Occupancy:
    """Per slot: a bitset of the directed links in use and the flow holding each of them."""

    def __init__(self, inst: _Instance, slots: int) -> None:
        self.inst = inst
        self.slots = slots
        self.bits = [0] * slots
        self.hold = [[-1] * inst.num_arcs for _ in range(slots)]

    def take(self, slot: int, ci: int, flow: int) -> None:
        assert not self.bits[slot] & self.inst.mask[ci], "taking a held link"
        self.bits[slot] |= self.inst.mask[ci]
        h = self.hold[slot]
        for a in self.inst.arcs[ci]:
            h[a] = flow

    def release(self, slot: int, ci: int) -> None:
        self.bits[slot] &= ~self.inst.mask[ci]
        h = self.hold[slot]
        for a in self.inst.arcs[ci]:
            h[a] = -1

    def blockers(self, slot: int, ci: int) -> set[int]:
        h = self.hold[slot]
        out = {h[a] for a in self.inst.arcs[ci]}
        out.discard(-1)
        return out

    def first_fit(self, f: int) -> Assignment:
        mask = self.inst.mask
        options = self.inst.by_flow[f]
        for slot, b in enumerate(self.bits):
            for ci in options:
                if not b & mask[ci]:
                    return (slot, ci)
        return None


def greedy_assign(
    num_flows: int,
    cands: list[Candidate],
    slots: int,
) -> list[Assignment]:
    """Best of two first-fit starts (two least-contended-first orders, each with a repair pass),
    improved by ejection chains, then by PartialCol."""
    inst = _Instance(num_flows, cands)
    tries = [
        _first_fit_assign(inst, slots, _order(inst, "sum")),
        _first_fit_assign(inst, slots, _order(inst, "max")),
    ]
    start = max(tries, key=lambda t: sum(x is not None for x in t))
    if native.LIB is not None:
        p = native.paths_of(num_flows, cands)
        start = native.augment_all(p, slots, start, AUGMENT_EVALUATIONS)
        return native.partialcol(p, slots, start, PARTIALCOL_EVALUATIONS, 0, TABU_ALPHA, TABU_RANDOM)
    start = _augment_all(inst, slots, start)
    return _partialcol(inst, slots, start)


def _augment_all(inst: _Instance, slots: int, start: list[Assignment]) -> list[Assignment]:
    """Ejection chains: for each unscheduled flow, a breadth-first search for a chain f0 -> f1 ->
    ... -> fn where f0 takes a place whose only blocker is f1, f1 moves to a place whose only
    blocker is f2, ..., and fn moves to a free place (an augmenting path, as in matching)."""
    occ = _Occupancy(inst, slots)
    cur = list(start)
    for f, a in enumerate(cur):
        if a is not None:
            occ.take(a[0], a[1], f)
    budget = [AUGMENT_EVALUATIONS]
    improved = True
    while improved and budget[0] > 0:
        improved = False
        for f in range(inst.num_flows):
            if budget[0] <= 0:
                break
            if cur[f] is None and inst.by_flow[f] and _augment(inst, occ, cur, f, budget):
                improved = True
    return cur


def _augment(inst: _Instance, occ: _Occupancy, cur: list[Assignment], f0: int, budget: list[int]) -> bool:
    mask, by_flow, bits = inst.mask, inst.by_flow, occ.bits
    parent: dict[int, tuple[int, int, int] | None] = {f0: None}
    queue = [f0]
    end: tuple[int, int, int] | None = None
    qi = 0
    while qi < len(queue) and end is None:
        g = queue[qi]
        qi += 1
        own = cur[g]
        budget[0] -= occ.slots * len(by_flow[g])
        for k in range(occ.slots):
            b = bits[k]
            if own is not None and own[0] == k:
                b &= ~mask[own[1]]
            for ci in by_flow[g]:
                if own is not None and own == (k, ci):
                    continue
                hit = b & mask[ci]
                if not hit:
                    end = (g, k, ci)
                    break
                if hit.bit_count() == 1:
                    h = occ.hold[k][hit.bit_length() - 1]
                else:
                    bl = occ.blockers(k, ci)
                    bl.discard(g)
                    if len(bl) != 1:
                        continue
                    (h,) = bl
                if h not in parent:
                    parent[h] = (g, k, ci)
                    queue.append(h)
            if end is not None:
                break
    if end is None:
        return False
    # Chain of moves, terminal first: (flow, slot, candidate).
    moves = [end]
    g = end[0]
    while parent[g] is not None:
        pg, k, ci = parent[g]
        moves.append((pg, k, ci))
        g = pg
    saved = [(m[0], cur[m[0]]) for m in moves]
    done: list[tuple[int, int, int]] = []
    ok = True
    for g, k, ci in moves:
        old = cur[g]
        if old is not None:
            occ.release(old[0], old[1])
        if bits[k] & mask[ci]:
            if old is not None:
                occ.take(old[0], old[1], g)
            ok = False
            break
        occ.take(k, ci, g)
        cur[g] = (k, ci)
        done.append((g, k, ci))
    if ok:
        return True
    for g, k, ci in reversed(done):
        occ.release(k, ci)
    for g, a in saved:
        cur[g] = a
    for g, a in saved:
        if a is not None and any(d[0] == g for d in done):
            occ.take(a[0], a[1], g)
    return False


def round_and_augment(num_flows: int, cands: list[Candidate], slots: int, order: list[tuple[int, int]]) -> list[Assignment]:
    """A schedule from a preference list of (slot, candidate) pairs: each pair is taken when its
    flow is still unscheduled and its links are free in that slot, then ejection chains add what
    they can (the rounding step of the feasibility pump)."""
    if native.LIB is not None:
        return native.round_and_augment(native.paths_of(num_flows, cands), slots, order, AUGMENT_EVALUATIONS)
    inst = _Instance(num_flows, cands)
    occ = _Occupancy(inst, slots)
    result: list[Assignment] = [None] * num_flows
    mask = inst.mask
    for slot, ci in order:
        f = cands[ci].flow
        if result[f] is None and not occ.bits[slot] & mask[ci]:
            occ.take(slot, ci, f)
            result[f] = (slot, ci)
    return _augment_all(inst, slots, result)


def first_fit_assign(
    num_flows: int,
    cands: list[Candidate],
    slots: int,
    initial: list[Assignment] | None = None,
    by_max: bool = False,
) -> list[Assignment]:
    """First fit plus repair alone. Returns per flow (slot, candidate index) or None; `initial`
    (feasible) is kept and extended."""
    inst = _Instance(num_flows, cands)
    return _first_fit_assign(inst, slots, _order(inst, "max" if by_max else "sum"), initial)


def partialcol(
    num_flows: int,
    cands: list[Candidate],
    slots: int,
    start: list[Assignment],
    evaluations: int = PARTIALCOL_EVALUATIONS,
    seed: int = 0,
) -> list[Assignment]:
    if native.LIB is not None:
        p = native.paths_of(num_flows, cands)
        return native.partialcol(p, slots, start, evaluations, seed, TABU_ALPHA, TABU_RANDOM)
    return _partialcol(_Instance(num_flows, cands), slots, start, evaluations, seed)


def _order(inst: _Instance, rule: str) -> list[int]:
    """Flows on quiet links first, since each of them blocks few others (as min-degree first for
    independent sets): by the least total link demand over the flow's candidates ("sum"), or the
    least maximum link demand, then total ("max"); ties by fewer alternatives, then input order."""
    load = [0] * inst.num_arcs
    for opts in inst.by_flow:
        for a in {a for ci in opts for a in inst.arcs[ci]}:
            load[a] += 1

    def key(f: int) -> tuple[int, int, int]:
        opts = inst.by_flow[f]
        if not opts:
            return (0, 0, f)
        if rule == "max":
            best = min(max(load[a] for a in inst.arcs[ci]) * 10_000 + sum(load[a] for a in inst.arcs[ci]) for ci in opts)
        else:
            best = min(sum(load[a] for a in inst.arcs[ci]) for ci in opts)
        return (best, len(opts), f)

    return sorted(range(inst.num_flows), key=key)


def _first_fit_assign(
    inst: _Instance, slots: int, order: list[int], initial: list[Assignment] | None = None
) -> list[Assignment]:
    occ = _Occupancy(inst, slots)
    result: list[Assignment] = [None] * inst.num_flows
    if initial is not None:
        for f, asg in enumerate(initial):
            if asg is not None:
                occ.take(asg[0], asg[1], f)
                result[f] = asg
    todo = [f for f in order if result[f] is None and inst.by_flow[f]]
    for f in todo:
        placed = occ.first_fit(f)
        if placed is not None:
            result[f] = placed
            occ.take(placed[0], placed[1], f)

    # Repair: an unscheduled flow may fit if the one flow blocking it moves elsewhere.
    mask = inst.mask
    for f in todo:
        if result[f] is not None:
            continue
        done = False
        for slot in range(slots):
            for ci in inst.by_flow[f]:
                hit = occ.bits[slot] & mask[ci]
                if not hit:  # freed by an earlier repair
                    occ.take(slot, ci, f)
                    result[f] = (slot, ci)
                    done = True
                    break
                blockers = occ.blockers(slot, ci)
                if len(blockers) != 1:
                    continue
                (b,) = blockers
                b_assign = result[b]
                assert b_assign is not None
                occ.release(b_assign[0], b_assign[1])
                occ.take(slot, ci, f)
                moved = occ.first_fit(b)
                if moved is not None:
                    occ.take(moved[0], moved[1], b)
                    result[b] = moved
                    result[f] = (slot, ci)
                    done = True
                    break
                occ.release(slot, ci)
                occ.take(b_assign[0], b_assign[1], b)
            if done:
                break
    return result


def _partialcol(
    inst: _Instance,
    slots: int,
    start: list[Assignment],
    evaluations: int = PARTIALCOL_EVALUATIONS,
    seed: int = 0,
) -> list[Assignment]:
    """PartialCol (Bloechliger & Zufferey) with its full neighbourhood: each step makes the best
    non-tabu move over all unscheduled flows and slots (fewest evicted flows, ties at random).
    The cost of each (unscheduled flow, slot) is cached and recomputed only for the slots a move
    changed. Keeps the best schedule seen; deterministic for a given seed and budget."""
    rng = random.Random(seed)
    by_flow, mask = inst.by_flow, inst.mask
    occ = _Occupancy(inst, slots)
    bits = occ.bits
    cur: list[Assignment] = list(start)
    for f, a in enumerate(cur):
        if a is not None:
            occ.take(a[0], a[1], f)
    best = list(cur)
    count = best_count = sum(a is not None for a in cur)
    big = 1 << 30
    # row[f][k] = (cost, candidate) of the cheapest placement of unscheduled flow f in slot k.
    row: dict[int, list[tuple[int, int]]] = {}

    def cell(f: int, k: int) -> tuple[int, int]:
        b = bits[k]
        bc, bci = big, -1
        for ci in by_flow[f]:
            hit = b & mask[ci]
            if not hit:
                return (0, ci)
            if hit.bit_count() == 1:
                c = 1
            else:
                h = occ.hold[k]
                c = len({h[a] for a in inst.arcs[ci]} - {-1})
            if c < bc:
                bc, bci = c, ci
        return (bc, bci)

    work = 0
    for f in range(inst.num_flows):
        if cur[f] is None and by_flow[f]:
            row[f] = [cell(f, k) for k in range(slots)]
            work += slots * len(by_flow[f])
    tabu: dict[tuple[int, int], int] = {}
    it = 0
    while row and work < evaluations:
        it += 1
        mc, mv, ties = big, None, 0
        for f, r in row.items():
            for k in range(slots):
                c = r[k][0]
                if c > mc:
                    continue
                if tabu.get((f, k), 0) > it and count + 1 - c <= best_count:
                    continue
                if c < mc:
                    mc, mv, ties = c, (f, k), 1
                else:
                    ties += 1
                    if rng.random() * ties < 1.0:
                        mv = (f, k)
        work += len(row) * slots
        if mv is None:
            break
        f, k = mv
        ci = row[f][k][1]
        h = occ.hold[k]
        # Sorted: the compiled version evicts (and draws tabu tenures) in the same order.
        evicted = sorted({h[a] for a in inst.arcs[ci]} - {-1})
        changed = {k}
        del row[f]
        for bf in evicted:
            ab = cur[bf]
            assert ab is not None
            occ.release(ab[0], ab[1])
            cur[bf] = None
            changed.add(ab[0])
            tabu[(bf, ab[0])] = it + int(TABU_ALPHA * (len(row) + len(evicted))) + rng.randrange(TABU_RANDOM)
        occ.take(k, ci, f)
        cur[f] = (k, ci)
        count += 1 - len(evicted)
        for g, r in row.items():
            for kk in changed:
                r[kk] = cell(g, kk)
            work += len(changed) * len(by_flow[g])
        for bf in evicted:
            row[bf] = [cell(bf, kk) for kk in range(slots)]
            work += slots * len(by_flow[bf])
        if count > best_count:
            best, best_count = list(cur), count
    return best
