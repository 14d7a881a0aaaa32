"""S/PR and S/FR (seed 003 §5.3, §5.4) solved by decomposition.

Master (no slot index, so no slot symmetry): choose at most one candidate path per flow such that
every directed link carries at most T chosen paths, plus cuts learnt below. It is a relaxation of
the slot ILP (any schedule gives a master solution with the same number of flows), so its bound is
a valid upper bound. Then colour the chosen paths with T slots: DSatur, and on each component it
could not colour an exact DSatur branch and bound with a small node budget, then Tabucol
(colour_paths). A complete colouring of an optimal master solution is optimal: most instances end
here, in milliseconds.
When the colouring fails, the master's bound is usually the optimum and a schedule meeting it is
what is missing. First other optima of the master (fewest hops, least congestion, fewest
conflicts, fewest of the paths left uncoloured: an LP vertex each, OTHER_OPTIMA), coloured in
turn. Then, optionally (ODD_SET_ROUNDS, off), odd-set cuts (oddset.py) as a test of the bound:
where it is one above the optimum they often lower it. Then, in order
(_steps), each stopping as soon as the bound is met: CP-SAT deciding whether a schedule of the
bound's size exists (cpsat.py; a proof that none does lowers the bound by one), within a short
budget of deterministic time, told what the master LP's duals fix for that size (fixing.py) and
hinted by a short PartialCol from the master's colouring (once per solve); a feasibility pump on
the slot LP (pump.py) from the master's colouring; when that was the LP vertex's, the MIP's
optimum of the master, coloured, and the pump from its colouring; the pump from the slot LP's
optimum; CP-SAT's decision again with a longer budget; the pump from the LP optimum again with
another seed; greedy; the slot MIP of HiGHS deciding the same question with a longer time limit.
Then the rounds: a component that cannot be coloured gives a cut (each clique of more than T paths
a clique cut, else a minimal non-colourable core) and the master is solved again. If that does
not settle it within ROUNDS_MAX rounds, the symmetry-broken slot ILP runs with the master's bound
and the best schedule as start.
"""
from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import NamedTuple

import highspy
import numpy as np

from tobsched import cpsat
from tobsched.coloring import (
    components,
    conflict_graph,
    dsatur,
    exact_colour,
    non_colourable_core,
    tabu_component,
)
from tobsched.fixing import fixing_from_duals, lp_fixing
from tobsched.greedy import Assignment, greedy_assign, partialcol
from tobsched.highs_model import INTEGRAL_TOL, LP_VERTEX_STATUS, MipResult, RowBuilder, SolveOptions, highs_lp, solve_max
from tobsched.oddset import odd_set_row, odd_set_search
from tobsched.paths import Candidate, by_flow_and_arc
from tobsched.progress import Notes
from tobsched.pump import feasibility_pump
from tobsched.slot_ilp import schedule_of_size, solve_slot_ilp

ROUNDS_MAX = 20
# A cut of the master: sum over members of coef * x <= bound (every coefficient 1 when None).
Cut = tuple[list[int], int, list[float] | None]
# Iterations of the pump from the master's colouring and from the LP optimum.
PUMP_WARM_ITERATIONS = 8
PUMP_COLD_ITERATIONS = 8
PUMP_COLD2_ITERATIONS = 17
# Time for deciding whether a schedule meets the master's bound (slot_ilp.schedule_of_size).
DECIDE_TIME_S = 1.0
# CP-SAT's decisions (cpsat.py), their budgets of deterministic time; 0 to skip one. The first comes
# before the pumps, from a hint of HINT_EVALUATIONS PartialCol evaluations on the master's colouring:
# with its own LP off (cpsat.py), CP-SAT settles most decisions of the hard instances in 10-40 ms,
# less than a pump. Its budget is short, because where it runs out a pump usually finds the
# schedule, and it runs once per solve, because after a proof has lowered the bound the pumps find a
# schedule one below it sooner than CP-SAT does (rrg4/5 110/3 S/FR: undecided at 0.5, the cold pump
# in 20 ms). The second follows the pumps that stall. docs/scheduler.md "Deciding the bound with
# CP-SAT".
CPSAT_FIRST_DTIME = 0.1
CPSAT_DECIDE_DTIME = cpsat.DETERMINISTIC_TIME
HINT_EVALUATIONS = 10_000
# Reduced-cost fixing from the master's LP for that decision (fixing.py): CP-SAT without its own LP
# depends on it (without it, undecided after 5 s on every hard instance).
CPSAT_FIXING = True
# The warm pump's final PartialCol after CP-SAT's second decision rather than in the pump.
WARM_POLISH_AFTER_DECIDE = True
# Node budget of the first exact colouring of a component DSatur could not colour (about 6 ms
# when it runs out at 110 paths). Every component of the benchmark's hard instances is decided
# within it; at 300 nodes (1000 with 3 slots), before the search was compiled, the master's
# colourable paths of rrg4/0 110/4 went to the pump instead (docs/scheduler.md).
EXACT_FIRST_NODES = 10_000
LP_FIRST = True
# Odd-set cuts (oddset.py) as a test of the bound once the other optima have failed: rounds of
# separation, each followed by the master again, at most this many; 0: no test. Off: CP-SAT's first
# decision proves the bounds they close as fast (rrg3/1 110/3 S/PR, bound 55 to the optimum 54: 53
# ms with the test, 66 without), and where they do not close the bound the test costs 3-10 ms
# before it (rrg4/1 110/3 S/PR 48.8 -> 43.1 ms; the 150 small instances of seeds 0-5 that reach
# the other optima: 3053 -> 2982 ms in sum, medians of 3). docs/scheduler.md "Odd-set cuts".
ODD_SET_ROUNDS = 0
# When the LP vertex's paths cannot be coloured (nor the other optima below), the warm pump starts
# from the vertex's colouring and the MIP's optimum comes after it, with a second warm pump from
# its colouring; False: the MIP first, one warm pump from its colouring. Measured on 151 small
# instances that reach this step (topologies 0-5): 5075 -> 4433 ms in sum; docs/scheduler.md.
MIP_AFTER_WARM_PUMP = True
# Other optima of the master tried when its paths cannot be coloured, before the MIP and the
# pumps: the LP vertex of "at least U paths" of least total weight, for each weight in turn
# (_path_weights). About 3 ms each. On the 44 small instances of the benchmark whose first LP
# vertex cannot be coloured or that needed a pump: fewest hops colour 25 of them, least congestion
# 24, fewest conflicts and fewest of the uncoloured paths settle five more that hops and congestion
# do not (the MIP's optimum colours 16, in about 12 ms). docs/scheduler.md "Other master optima".
OTHER_OPTIMA: tuple[str, ...] = ("hops", "congestion", "conflicts", "away")
OTHER_OPTIMA_LABEL = {"hops": "fewest hops", "congestion": "least congestion", "conflicts": "fewest conflicts",
                      "away": "fewest uncoloured paths"}


class Step(NamedTuple):
    """A step between the master and greedy (_steps): a pump (pump.py) from the master's colouring
    ("warm"), from the colouring of the master's MIP optimum ("mip") or from the slot LP's optimum
    ("cold"), or CP-SAT's decision ("decide") within `dtime` of deterministic time; the `first`
    decision runs once per solve, from a PartialCol hint."""

    kind: str
    iterations: int = 0
    seed: int = 0
    dtime: float = 0.0
    first: bool = False


# Read at each solve (tests change the constants).
def _steps() -> list[Step]:
    return [Step("decide", dtime=CPSAT_FIRST_DTIME, first=True), Step("warm", PUMP_WARM_ITERATIONS),
            Step("mip", PUMP_WARM_ITERATIONS), Step("cold", PUMP_COLD_ITERATIONS),
            Step("decide", dtime=CPSAT_DECIDE_DTIME), Step("cold", PUMP_COLD2_ITERATIONS, 1)]


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.end = time.perf_counter() + seconds

    def left(self) -> float:
        return max(0.0, self.end - time.perf_counter())


# The master's rows without cuts (CSR arrays) of the last candidate list: a solve builds the master
# a dozen times over the same candidates (about 0.6 ms each at 110 flows).
_base_rows_of: list[tuple[list[Candidate], int, tuple[np.ndarray, ...]]] = []


def _base_rows(cands: list[Candidate], slots: int) -> tuple[np.ndarray, ...]:
    """At most one candidate per flow, at most `slots` chosen paths per directed link."""
    if _base_rows_of and _base_rows_of[0][0] is cands and _base_rows_of[0][1] == slots:
        return _base_rows_of[0][2]
    rows = RowBuilder()
    by_flow, by_arc = by_flow_and_arc(cands)
    for members in by_flow:
        if len(members) > 1:
            rows.add(members, -np.inf, 1.0)
    for members in by_arc:
        if len({cands[ci].flow for ci in members}) > slots:
            rows.add(members, -np.inf, float(slots))
    arrays = rows.arrays()
    _base_rows_of[:] = [(cands, slots, arrays)]
    return arrays


def _master_rows(cands: list[Candidate], slots: int, cuts: list[Cut]) -> RowBuilder:
    """The master's rows (_base_rows), then the cuts."""
    rows = RowBuilder()
    rows.add_csr(*_base_rows(cands, slots))
    for members, bound, coefs in cuts:
        rows.add(members, -np.inf, float(bound), coefs)
    return rows


def colour_paths(
    adj: list[set[int]], slots: int, short_tabu: bool = False
) -> tuple[list[int | None], list[tuple[list[int], bool | None]]]:
    """Colours a conflict graph (of the master's chosen paths) with `slots` colours: DSatur, then
    settle_component on each component DSatur left partly uncoloured. Returns the colour of each
    vertex (None where it failed) and the components left uncoloured with the exact search's
    answer (False: proven uncolourable; None: undecided)."""
    colour = dsatur(adj, slots)
    hard: list[tuple[list[int], bool | None]] = []
    failed = {v for v, c in enumerate(colour) if c is None}
    if failed:
        for members in components(adj, list(range(len(adj)))):
            if failed.isdisjoint(members):
                continue
            ok, got = settle_component(adj, members, slots, [colour[v] for v in members], short_tabu)
            if got is not None:
                for j, v in enumerate(members):
                    colour[v] = got[j]
            else:
                hard.append((members, ok))
    return colour, hard


def _master(
    num_flows: int,
    cands: list[Candidate],
    slots: int,
    cuts: list[Cut],
    opts: SolveOptions,
    start: list[Assignment],
    lp_first: bool = False,
) -> MipResult:
    rows = _master_rows(cands, slots, cuts)
    x0 = np.zeros(len(cands))
    for asg in start:
        if asg is not None:
            x0[asg[1]] = 1.0
    return solve_max(np.ones(len(cands)), rows, opts, start=x0, integral_objective=True, lp_first=lp_first)


def _mip_optimum(
    num_flows: int, cands: list[Candidate], slots: int, cuts: list[Cut], opts: SolveOptions,
    start: list[Assignment], chosen: list[int], bound: int,
) -> tuple[MipResult, list[int]] | None:
    """The master's optimum by HiGHS's MIP and its candidates, when it is another one than
    `chosen` with the same bound; else None."""
    mip = _master(num_flows, cands, slots, cuts, opts, start)
    other = [] if mip.x is None else [int(ci) for ci in np.flatnonzero(mip.x > 0.5)]
    if not other or other == chosen or math.floor(mip.dual_bound + 1e-6) < bound:
        return None
    return mip, other


def _path_weights(objective: str, cands: list[Candidate], away: set[int]) -> np.ndarray:
    """What another master optimum minimises (OTHER_OPTIMA): per candidate its hops, its
    congestion (the candidates using each of its links, summed), its conflicts (the candidates
    sharing a link with it), or "away": 1 for the paths in `away` (those of the answer that could
    not be coloured)."""
    if objective == "hops":
        return np.array([len(c.arcs) for c in cands], dtype=np.float64)
    if objective == "congestion":
        load: dict[int, int] = {}
        for c in cands:
            for a in c.arcs:
                load[a] = load.get(a, 0) + 1
        return np.array([sum(load[a] for a in c.arcs) for c in cands], dtype=np.float64)
    if objective == "conflicts":
        return np.array([len(n) for n in conflict_graph([c.arcs for c in cands])], dtype=np.float64)
    assert objective == "away", objective
    return np.array([1.0 if ci in away else 0.0 for ci in range(len(cands))])


class _OtherOptima:
    """Master solutions with `upper` paths of least total weight, for one weight after another: the
    master with "at least `upper` paths" as one HiGHS LP, each weight solved by simplex from the
    last one's optimal basis (it stays feasible: only the costs change). Warm-started, each takes a
    fraction of a cold solve, and the optima it reaches colour more often: on the 150 small
    instances of seeds 0-5 that reach this step, 2531 -> 1873 ms in sum (medians of 3); rrg4/5
    100/3 S/FR 287 -> 9 ms, its optimum of the fewest conflicts now colourable (docs/scheduler.md
    "Other master optima")."""

    def __init__(self, cands: list[Candidate], slots: int, cuts: list[Cut], upper: int, time_limit_s: float) -> None:
        rows = _master_rows(cands, slots, cuts)
        rows.add(list(range(len(cands))), float(upper), np.inf)
        self.n = len(cands)
        self.upper = upper
        self.h = highspy.Highs()  # type: ignore[no-untyped-call]
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("threads", 1)
        self.h.setOptionValue("random_seed", 0)
        self.h.setOptionValue("solver", "simplex")
        self.h.setOptionValue("time_limit", max(0.01, float(time_limit_s)))
        self.h.passModel(highs_lp(np.zeros(self.n), rows, integer=np.zeros(self.n, dtype=bool)))

    def pick(self, weights: np.ndarray) -> list[int] | None:
        """The candidates of the LP optimum of least total weight, when that vertex is integral (it
        nearly always is); else None."""
        # highs_lp maximises: the costs are the negated weights.
        self.h.changeColsCost(self.n, np.arange(self.n, dtype=np.int32), -np.asarray(weights, dtype=np.float64))
        self.h.run()
        if self.h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        x = np.asarray(self.h.getSolution().col_value, dtype=np.float64)
        if np.any(np.abs(x - np.round(x)) > INTEGRAL_TOL):
            return None
        chosen = [int(ci) for ci in np.flatnonzero(x > 0.5)]
        return chosen if len(chosen) >= self.upper else None


def _coloured_other_optimum(
    num_flows: int, cands: list[Candidate], slots: int, cuts: list[Cut], upper: int,
    away: set[int], deadline: Deadline, notes: list[str],
) -> list[Assignment] | None:
    """OTHER_OPTIMA in turn: the schedule of the first whose paths colour completely (`upper`
    flows), or None. `away` are the paths of the answer that could not be coloured."""
    optima = _OtherOptima(cands, slots, cuts, upper, deadline.left())
    for objective in OTHER_OPTIMA:
        picked = optima.pick(_path_weights(objective, cands, away))
        if picked is None:
            continue
        colour, _ = colour_paths(conflict_graph([cands[ci].arcs for ci in picked]), slots)
        coloured_all = all(c is not None for c in colour)
        notes.append(f"master optimum of {OTHER_OPTIMA_LABEL[objective]}: {'coloured' if coloured_all else 'not coloured'}")
        if coloured_all:
            return _coloured(num_flows, cands, picked, colour)
    return None


def _cliques_over(adj: list[set[int]], comp: list[int], size_min: int) -> list[list[int]]:
    """Maximal cliques with at least size_min members inside one component (small graphs)."""
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(comp)
    for u in comp:
        for v in adj[u]:
            if u < v:
                g.add_edge(u, v)
    return [sorted(c) for c in nx.find_cliques(g) if len(c) >= size_min]


def settle_component(
    adj: list[set[int]], members: list[int], slots: int, hint: list[int | None], short_tabu: bool = False
) -> tuple[bool | None, list[int] | None]:
    """Colours the subgraph induced by `members` with `slots` colours: the exact DSatur branch
    and bound within EXACT_FIRST_NODES nodes, then
    Tabucol from `hint`. Returns (True, colouring indexed like members), (False, None) when the
    exact search proved that none exists, or (None, None) when neither decided."""
    local = {v: j for j, v in enumerate(members)}
    sub = [{local[u] for u in adj[v] if u in local} for v in members]
    ok, exact = exact_colour(sub, slots, nodes_max=EXACT_FIRST_NODES)
    if ok and exact is not None:
        return True, exact
    if ok is False:
        return False, None
    got = tabu_component(adj, members, slots, hint, short=short_tabu)
    if got is not None:
        return True, got
    return None, None


def tabu_hard(
    adj: list[set[int]], colour: list[int | None], hard: list[tuple[list[int], bool | None]], slots: int
) -> list[tuple[list[int], bool | None]]:
    """Tabucol on the components colour_paths left undecided: fills `colour` where it succeeds and
    returns the components still uncoloured."""
    left = []
    for members, ok in hard:
        got = tabu_component(adj, members, slots, [colour[v] for v in members]) if ok is None else None
        if got is None:
            left.append((members, ok))
            continue
        for j, v in enumerate(members):
            colour[v] = got[j]
    return left


def _coloured(num_flows: int, cands: list[Candidate], chosen: list[int], colour: list[int | None]) -> list[Assignment]:
    """The coloured part of a master answer as a schedule."""
    out: list[Assignment] = [None] * num_flows
    for v, ci in enumerate(chosen):
        c = colour[v]
        if c is not None:
            out[cands[ci].flow] = (c, ci)
    return out


def solve_pathsets(
    num_flows: int, cands: list[Candidate], slots: int, opts: SolveOptions
) -> tuple[list[Assignment], bool, int | None, list[str]]:
    """Returns (assignment per flow, proven optimal, upper bound, notes)."""
    deadline = Deadline(opts.time_limit_s)
    notes = Notes(opts.progress)
    # No heuristic start: the master and a colouring of its answer settle most instances in a
    # few milliseconds, and greedy's local search alone would cost more than that.
    best: list[Assignment] = [None] * num_flows
    best_count = 0
    greedy_done = False
    cuts: list[Cut] = []
    upper: int | None = None
    pumped_target: int | None = None
    other_target: int | None = None  # the bound OTHER_OPTIMA were tried for
    odd_tested: int | None = None  # the bound the odd-set cuts were tried on
    odd_last = False  # the last round only lowered the bound by odd-set cuts
    first_decided = False  # the first decision (Step.first) has run
    # (cuts, answer) of this round's master when the answer is its LP's vertex (fixing_from_duals).
    vertex_lp: tuple[int, MipResult] | None = None
    polish_pending = False  # a warm pump left its final PartialCol for after the second decision
    cand_arcs = [c.arcs for c in cands]

    def keep(got: list[Assignment]) -> int:
        """The flows `got` schedules; it becomes the best schedule when it has more."""
        nonlocal best, best_count
        count = sum(a is not None for a in got)
        if count > best_count:
            best, best_count = got, count
        return count

    def sub(limit_share: float = 1.0) -> SolveOptions:
        return replace(opts, time_limit_s=deadline.left() * limit_share)

    def decide(label: str, dtime: float = 0.0, hint: list[Assignment] | None = None,
               first: bool = False) -> tuple[bool | None, list[Assignment]]:
        """A schedule of `upper` flows, or a proof that none exists: then the bound drops by one,
        with the cut that says so (True / False / None: undecided). CP-SAT within `dtime` of
        deterministic time from `hint` (label "CP-SAT"; the `first` decision, with a fixing,
        without CP-SAT's own LP), else HiGHS within DECIDE_TIME_S."""
        nonlocal upper
        if label == "CP-SAT":
            fix = None
            if CPSAT_FIXING:
                rows = _master_rows(cands, slots, cuts)
                if vertex_lp is not None and vertex_lp[0] == len(cuts) and vertex_lp[1].lp_duals is not None:
                    # This round's master was its LP's vertex, over the same cuts (they only grow).
                    lp = vertex_lp[1]
                    fix = fixing_from_duals(rows, upper, lp.objective, lp.x, *lp.lp_duals)
                else:
                    fix = lp_fixing(np.ones(len(cands)), rows, upper, deadline.left())
            exists, got = cpsat.schedule_of_size(num_flows, cands, slots, upper, time_limit_s=deadline.left(),
                                                 deterministic_time=dtime, fixing=fix, hint=hint,
                                                 own_lp=not (first and fix is not None))
        else:
            exists, got = schedule_of_size(num_flows, cands, slots, upper,
                                           SolveOptions(min(DECIDE_TIME_S, deadline.left()), 0.0, opts.threads))
        notes.append(f"schedule of {upper} flows ({label}): "
                     f"{'found' if exists else 'none' if exists is False else 'undecided'}")
        if exists is False:
            upper -= 1
            cuts.append((list(range(len(cands))), upper, None))
        return exists, got

    def odd_test(chosen: list[int], bound: int) -> tuple[bool, list[Assignment] | None]:
        """Odd-set cuts as a test of the bound: cuts violated by `chosen`, the master again with
        them, as long as new ones are found. (True, None) when the bound dropped (the cuts are
        kept), (False, a schedule of `bound` flows) when an answer on the way colours, else
        (False, None): the cuts are dropped, and the steps after this one go on from the answer
        they had (kept, the cuts made later steps slower: docs/scheduler.md "Odd-set cuts")."""
        trial: list[Cut] = []
        current = chosen
        for _ in range(ODD_SET_ROUNDS):
            sets = odd_set_search([cands[ci].arcs for ci in current], slots)
            if not sets:
                break
            trial.extend(odd_set_row(cand_arcs, links, slots) for links in sets)
            res = _master(num_flows, cands, slots, cuts + trial, sub(), best, lp_first=True)
            if res.x is None:
                break
            if math.floor(res.dual_bound + 1e-6) < bound:
                cuts.extend(trial)
                notes.append(f"odd-set cuts: {len(trial)}, bound {bound} -> {math.floor(res.dual_bound + 1e-6)}")
                return True, None
            current = [int(ci) for ci in np.flatnonzero(res.x > 0.5)]
            colour, _ = colour_paths(conflict_graph([cands[ci].arcs for ci in current]), slots, short_tabu=True)
            if all(c is not None for c in colour) and len(current) >= bound:
                notes.append(f"odd-set cuts: {len(trial)}, an answer of the master with them coloured")
                return False, _coloured(num_flows, cands, current, colour)
        if trial:
            notes.append(f"odd-set cuts: {len(trial)}, bound {bound} stays")
        return False, None

    for rnd in range(ROUNDS_MAX):
        if deadline.left() <= 0:
            break
        # The first master's LP optimum first: a simplex vertex, integral on 466 of the
        # benchmark's 480 small instances, in about 1 ms where the MIP takes about 6. When its
        # paths cannot be coloured, other optima (OTHER_OPTIMA), then the MIP's, are the next tries.
        res = _master(num_flows, cands, slots, cuts, sub(), best, lp_first=(rnd == 0 or odd_last) and LP_FIRST)
        if res.x is None:
            break
        bound = math.floor(res.dual_bound + 1e-6)
        upper = bound if upper is None else min(upper, bound)
        vertex_lp = None if res.lp_duals is None else (len(cuts), res)
        chosen = [int(ci) for ci in np.flatnonzero(res.x > 0.5)]
        adj = conflict_graph([cands[ci].arcs for ci in chosen])
        # DSatur, and where it gave up an exact colouring within a small node budget (it also
        # proves most uncolourable components in a millisecond), then Tabucol. On about a third
        # of the hard instances the master's paths are colourable after all, and this is far
        # cheaper than the pump (docs/experiments/scheduler-scalability.md).
        vertex = res.status == LP_VERTEX_STATUS
        lowered = False  # CP-SAT proved the bound one too high in this round
        colour, hard = colour_paths(adj, slots, short_tabu=vertex)
        failed = [v for v, c in enumerate(colour) if c is None]
        odd_last = False
        if failed and other_target != upper and OTHER_OPTIMA:
            other_target = upper
            got = _coloured_other_optimum(num_flows, cands, slots, cuts, upper, {chosen[v] for v in failed},
                                          deadline, notes)
            if got is not None:
                return got, True, upper, notes  # `upper` flows, and `upper` bounds every schedule
        if failed and ODD_SET_ROUNDS and odd_tested != upper:
            # Odd-set cuts as a test of the bound (oddset.py): where it is one above the optimum,
            # they often close it, much cheaper than the pumps failing and CP-SAT's proof.
            odd_tested = upper
            odd_last, got = odd_test(chosen, upper)
            if odd_last:
                continue
            if got is not None:
                return got, True, upper, notes
        # The MIP's optimum of the master, the try after the other optima when the LP vertex's
        # paths cannot be coloured: after the warm pump from the vertex's colouring ("mip" in
        # _steps), or here.
        mip_deferred = False
        if failed and vertex and MIP_AFTER_WARM_PUMP:
            notes.append("master's LP vertex: not coloured")
            hard = tabu_hard(adj, colour, hard, slots)
            failed = [v for v, c in enumerate(colour) if c is None]
            mip_deferred = bool(failed)
        elif failed and vertex:
            notes.append("master's LP vertex: not coloured")
            mip = _mip_optimum(num_flows, cands, slots, cuts, sub(), best, chosen, bound)
            if mip is not None:
                res, chosen = mip
                adj = conflict_graph([cands[ci].arcs for ci in chosen])
                colour, hard = colour_paths(adj, slots)
            else:
                hard = tabu_hard(adj, colour, hard, slots)
            failed = [v for v, c in enumerate(colour) if c is None]
        if failed and pumped_target != upper and best_count < upper:
            # The bound is usually tight here and the hard part is a schedule that meets it;
            # pump again only when cuts have lowered the bound.
            pumped_target = upper
            coloured = _coloured(num_flows, cands, chosen, colour)
            for step in _steps():
                kind = step.kind
                if kind == "mip":
                    # The MIP's optimum of the master (usually another one) after the warm pump from
                    # the LP vertex's colouring failed: colour it, and pump from its colouring.
                    mip = _mip_optimum(num_flows, cands, slots, cuts, sub(), best, chosen, bound) \
                        if mip_deferred else None
                    if mip is None:
                        continue
                    res, chosen = mip
                    adj = conflict_graph([cands[ci].arcs for ci in chosen])
                    colour, hard = colour_paths(adj, slots)
                    failed = [v for v, c in enumerate(colour) if c is None]
                    notes.append(f"master's MIP optimum: {'not coloured' if failed else 'coloured'}")
                    if not failed and len(chosen) >= upper:
                        return _coloured(num_flows, cands, chosen, colour), True, upper, notes
                    coloured = _coloured(num_flows, cands, chosen, colour)
                    kind = "warm"
                if kind == "decide":
                    if step.dtime <= 0 or (step.first and first_decided):
                        continue
                    hint = None
                    first_decided = first_decided or step.first
                    if step.first and HINT_EVALUATIONS:
                        hint = partialcol(num_flows, cands, slots, coloured, HINT_EVALUATIONS)
                        notes.append(f"PartialCol from the master's colouring: {keep(hint)} of {upper}")
                        if best_count >= upper:
                            return best, True, upper, notes
                    exists, got = decide("CP-SAT", step.dtime, hint, step.first)
                    if exists:
                        return got, True, upper, notes
                    if polish_pending and 0 < best_count < upper:
                        # The warm pumps' final PartialCol, run only now that it can matter.
                        polish_pending = False
                        got = partialcol(num_flows, cands, slots, best)
                        notes.append(f"PartialCol after the decision: {keep(got)} of {upper}")
                    if exists is False:
                        if best_count >= upper:
                            return best, True, upper, notes
                        # The pumps run again for the lower target after the next master (greedy
                        # and HiGHS's decision only if that does not settle it either).
                        lowered = True
                        break
                    continue
                # The warm pump's final PartialCol on its best rounding (15-25 ms at 110 flows) is
                # wasted when CP-SAT's second decision then finds a schedule of the bound's size: it
                # runs after that decision instead, when it proves the bound one too high or is
                # undecided (29 hard instances, medians of 3: 1421 -> 1347 ms in sum).
                defer = kind == "warm" and CPSAT_DECIDE_DTIME > 0 and WARM_POLISH_AFTER_DECIDE
                polish_pending = polish_pending or defer
                got = feasibility_pump(num_flows, cands, slots, upper, deadline.left(), iterations_max=step.iterations,
                                       start=coloured if kind == "warm" else None, seed=step.seed,
                                       final_polish=not defer)
                notes.append(f"feasibility pump ({kind}{'' if step.seed == 0 else f', seed {step.seed}'}): "
                             f"{keep(got)} of target {upper}")
                if best_count >= upper:
                    return best, True, upper, notes
        if failed and not greedy_done and not lowered:
            greedy_done = True
            notes.append(f"greedy: {keep(greedy_assign(num_flows, cands, slots))}")
            if best_count >= upper:
                return best, True, upper, notes
            # Decide the bound directly: a schedule of `upper` flows, or a proof that none exists
            # (then the bound drops by one), within a short time limit.
            exists, got = decide("HiGHS")
            if exists:
                return got, True, upper, notes
            if exists is False and best_count >= upper:
                return best, True, upper, notes
        cut_added = False
        unknown = False
        for members, exact_answer in hard:
            # Neither the exact colouring's first budget nor Tabucol coloured this component:
            # clique cuts (cheap), then a non-colourable core, then a longer exact search.
            cliques = _cliques_over(adj, members, slots + 1)
            if cliques:
                cuts.extend(([chosen[v] for v in c], slots, None) for c in cliques)
                cut_added = True
                continue
            core = non_colourable_core(adj, members, slots)
            if core is not None:
                cuts.append(([chosen[v] for v in core], len(core) - 1, None))
                cut_added = True
                continue
            if exact_answer is False:
                unknown = True  # proven uncolourable, yet neither a clique nor a core was found
                continue
            local = {v: j for j, v in enumerate(members)}
            ok, exact = exact_colour([{local[u] for u in adj[v] if u in local} for v in members], slots)
            if ok and exact is not None:
                for j, v in enumerate(members):
                    colour[v] = exact[j]
                continue
            unknown = True
        keep(_coloured(num_flows, cands, chosen, colour))
        if not cut_added and not unknown:
            notes.append(f"master solved in {rnd + 1} round(s)")
            return best, res.optimal and best_count >= bound, upper, notes
        if unknown:
            break
        notes.append(f"round {rnd + 1}: {len(cuts)} cut(s)")
        if upper is not None and best_count >= upper:
            return best, True, upper, notes

    if upper is not None and best_count >= upper:
        return best, True, upper, notes
    if deadline.left() <= 0:
        return best, False, upper, notes
    notes.append("fallback: symmetry-broken slot ILP")
    got, r = solve_slot_ilp(
        num_flows,
        cands,
        slots,
        sub(),
        start=best,
        upper_bound=upper,
        clique_cuts=[m for m, b, coefs in cuts if b == slots and coefs is None],
    )
    if r.x is not None:
        keep(got)
    last_bound = math.floor(r.dual_bound + 1e-6) if r.x is not None else None
    if last_bound is not None:
        upper = last_bound if upper is None else min(upper, last_bound)
    return best, upper is not None and best_count >= upper, upper, notes
