"""Odd-set cuts for the slot-free master (pathset.py): the paths of one slot share no directed link,
so for any set S of links, the paths of a slot hold at most |S| link-uses inside S, and those that
use two or more of S at most floor(|S| / 2) halves of them. Over the T slots, every schedule obeys

    sum over chosen paths p of floor(|p & S| / 2)  <=  T * floor(|S| / 2).

For odd |S| this is not implied by the master's rows (at most T paths per link: they give
T * |S| / 2). It is Edmonds' odd-set inequality of b-matching, applied to the paths as hyperedges
over links; with two links per path it is what bounds the chromatic index of a multigraph by its
odd subgraphs (Shannon's triangle of three links carrying 3/2 T paths each way needs more than T
slots). On 3-slot instances it closes master bounds that are one above the optimum: rrg3/1 110/3
S/PR, docs/scheduler.md "Odd-set cuts".

Separation (odd_set_search) on the master's chosen paths: with load(a) the chosen paths on link a,
slack(S) = sum over S of T - load(a) and odd(S) the chosen paths meeting S an odd number of times,
the cut is violated by exactly (T - slack(S) - odd(S)) / 2, so a violated S is an odd set with
slack + odd < T: nearly saturated links that the chosen paths enter and leave in pairs. Only links
with load >= 2 can be in one (slack + odd <= T - 1 in all). A tabu search over toggling a link
in or out of S, from each such link in turn, minimises slack + odd and records every odd S that
reaches below T. It is deterministic; lsearch.c's ls_odd_sets makes the same moves (native.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from tobsched import native

# Moves of the tabu search from each start link, and how long a toggled link stays untouched.
STEPS = 60
TENURE = 5


def odd_set_search(paths: Sequence[Sequence[int]], slots: int, steps: int = STEPS,
                   tenure: int = TENURE) -> list[tuple[int, ...]]:
    """The odd link sets whose cut the chosen `paths` (each its directed links, distinct) violate,
    each sorted, in the order found, without repeats."""
    if not 1 <= slots < 2**31 or steps < 0 or tenure < 0:
        raise ValueError(f"bad odd-set search: slots {slots}, steps {steps}, tenure {tenure}")
    if native.LIB is not None:
        return native.odd_sets(paths, slots, steps, tenure)
    load: dict[int, int] = {}
    for p in paths:
        for a in p:
            load[a] = load.get(a, 0) + 1
    useful = sorted(a for a, n in load.items() if n >= 2)
    on: dict[int, list[int]] = {a: [] for a in useful}
    for j, p in enumerate(paths):
        for a in p:
            if a in on:
                on[a].append(j)
    found: list[tuple[int, ...]] = []
    seen: set[tuple[int, ...]] = set()
    for start in useful:
        inside = {start}
        count = [0] * len(paths)  # |p & S|
        for j in on[start]:
            count[j] = 1
        value = slots  # slack + odd of {start}: T - load + load
        tabu_until = {start: tenure}
        for step in range(steps):
            best_delta = 0
            best = -1
            for a in useful:
                if tabu_until.get(a, -1) >= step or (a in inside and len(inside) == 1):
                    continue
                delta = (-1 if a in inside else 1) * (slots - load[a])
                for j in on[a]:
                    delta += -1 if count[j] & 1 else 1
                if best < 0 or delta < best_delta:
                    best_delta, best = delta, a
            if best < 0:
                break
            step_in = best not in inside
            if step_in:
                inside.add(best)
            else:
                inside.discard(best)
            for j in on[best]:
                count[j] += 1 if step_in else -1
            value += best_delta
            tabu_until[best] = step + tenure
            if len(inside) % 2 == 1 and value < slots:
                key = tuple(sorted(inside))
                if key not in seen:
                    seen.add(key)
                    found.append(key)
                break
    return found


def cut_coefficients(cand_arcs: Sequence[Sequence[int]], links: Sequence[int]) -> tuple[list[int], list[float]]:
    """The master row of the odd set `links`: the candidates using two or more of them and their
    coefficients floor(|p & S| / 2)."""
    s = set(links)
    members: list[int] = []
    coefs: list[float] = []
    for ci, arcs in enumerate(cand_arcs):
        k = sum(1 for a in arcs if a in s) // 2
        if k:
            members.append(ci)
            coefs.append(float(k))
    return members, coefs


def cut_bound(links: Sequence[int], slots: int) -> int:
    return slots * (len(links) // 2)
