"""Deciding "is there a schedule of `target` flows?" with OR-Tools' CP-SAT.

The question the path-set decomposition (pathset.py) is left with when the master's paths cannot
be coloured: its bound U is valid, and either a schedule of U flows exists (usually: the pumps
look for one) or none does and the bound drops by one. HiGHS answers both with branch and bound on
the slot ILP, which on the 3-slot instances of 70-110 flows takes 0.1-1.5 s: the LP relaxation of
"one slot per link per slot" is weak there, and most of the work is proving that a handful of
paths cannot share three slots. CP-SAT's clause learning is made for that kind of argument
(docs/scheduler.md "Deciding the bound with CP-SAT").

The model is the slot ILP of slot_ilp.py in CP-SAT's terms: a Boolean per (candidate, slot) that
the symmetry breaking allows (the flow of rank r uses slots 0..r), at most one per flow, at most
one per directed link and slot, and at least `target` of them; with a fixing (fixing.py), what it
fixes, as "exactly one" constraints where it can be (EXACTLY_ONE). It is built directly as a
CpModelProto through the `cp_model_helper` bindings: the `cp_model` wrapper imports pandas, which
costs more than most solves (1-2 s on this machine).

Determinism: one worker, a fixed random seed and a limit in deterministic time (CP-SAT's work
units, independent of the machine's load), so the same instance gets the same answer on a busy
machine as on a quiet one. A wall-clock limit (the caller's deadline) is set as well, as a guard.
"""

from __future__ import annotations

from tobsched.fixing import Fixing
from tobsched.greedy import Assignment
from tobsched.paths import Candidate, by_flow_and_arc
from tobsched.slot_ilp import canonical, flow_ranks

# Work units of a decision (CP-SAT's deterministic time: roughly seconds of a fast core).
DETERMINISTIC_TIME = 0.5
SEED = 1
# CP-SAT's LP relaxation and symmetry detection when `own_lp` is off (pathset.py's first decision,
# which has a fixing from the master's LP): level 0 and none, against CP-SAT's defaults (1 and 2).
# On the 8 decisions the hard instances of seeds 0-5 reach before any pump, medians of 12 seeds:
# 1011 -> 272 ms in sum. Without a fixing, or after a proof has lowered the bound (the master's LP
# then sits exactly on the target), CP-SAT without its LP can be lost for seconds where it
# decides in milliseconds with it (docs/scheduler.md "CP-SAT first, without its LP").
LINEARIZATION_LEVEL = 0
SYMMETRY_LEVEL = 0
# The fixing's rows as "exactly one" constraints where they can be (schedule_of_size), else as
# linear equalities (False). CP-SAT without its LP propagates a linear equality only once its sum
# is settled, a clause at each literal, and learns short clauses from it: on the 50 first decisions
# of the small instances of seeds 0-11, 2050 -> 1563 ms in sum, proofs most (rrg3/1 110/3 S/PR "no
# 55" 0.026 -> 0.006 units); whole solves of 161 small instances 2156 -> 1818 ms (docs/scheduler.md
# "The fixing's rows as clauses").
EXACTLY_ONE = True
# Where the model's at-most-one rows already hold the row's members (one flow's Booleans; one link's
# in a slot), only the other half of "exactly one", the clause "at least one" (False: "exactly
# one" all the same). The same answers with less propagation: er/0 110/3 S/PR 0.024 -> 0.008 units,
# the 161 solves 1721 -> 1683 ms.
AT_LEAST_ONE = True
# The hint covers the flows it schedules (their Booleans: 1 for the slot and candidate it gives, 0
# for the others) and leaves the other flows' Booleans to CP-SAT; True: hints those 0 as well. The
# hint schedules fewer flows than the target, so as a complete hint it is infeasible and CP-SAT
# starts by repairing it; as a partial one, CP-SAT completes it. On the 22 first decisions of the
# small instances of seeds 0-5, 530 -> 444 ms in sum; on 50 of seeds 0-11, 2064 -> 1907 ms; rrg4/1
# 110/3 S/PR 26 -> 10 ms, rrg4/0 110/3 S/PR 12 -> 22 ms (docs/scheduler.md "The first decision's
# hint covers only the flows it schedules").
HINT_UNSCHEDULED = False


def _helper():  # type: ignore[no-untyped-def]
    # Imported on first use: tob-schedule's other formulations never pay for it.
    from ortools.sat.python import cp_model_helper

    return cp_model_helper


def schedule_of_size(
    num_flows: int,
    cands: list[Candidate],
    slots: int,
    target: int,
    *,
    time_limit_s: float,
    deterministic_time: float = DETERMINISTIC_TIME,
    seed: int | None = None,
    fixing: Fixing | None = None,
    hint: list[Assignment] | None = None,
    own_lp: bool = True,
) -> tuple[bool | None, list[Assignment]]:
    """(True, a schedule of at least `target` flows), (False, []) when CP-SAT proves that none
    exists, or (None, []) when it reached a limit. `fixing` (fixing.py, from the master's LP for
    the same target; columns are candidates) leaves out the candidates no such schedule uses and
    adds "exactly" for the candidates and master rows every such schedule fills. `hint`, a valid
    partial schedule, is CP-SAT's solution hint (pathset.py gives its first decision a PartialCol
    run's; with CP-SAT's LP on, the pumps' best as a hint made most decisions slower:
    docs/scheduler.md). `own_lp` off: CP-SAT without its LP relaxation and symmetry detection
    (LINEARIZATION_LEVEL), for a decision whose fixing already carries the LP's information."""
    assert fixing is None or fixing.target <= target, "a fixing holds only for its own target or above"
    if target <= 0:
        return True, [None] * num_flows
    h = _helper()
    T = slots
    rank = flow_ranks(num_flows, cands)
    left_out = set(fixing.out) if fixing else set()
    # Candidate ci's variables are first[ci] + k for its slots k < count[ci].
    first = [0] * len(cands)
    count = [0] * len(cands)
    cols: list[tuple[int, int]] = []
    for ci, c in enumerate(cands):
        first[ci] = len(cols)
        if ci not in left_out:
            count[ci] = min(rank[c.flow] + 1, T)
            cols.extend((ci, k) for k in range(count[ci]))
    model = h.CpModelProto()
    for _ in cols:
        model.variables.add().domain.extend([0, 1])

    def every_slot(members: list[int]) -> list[int]:
        return [first[ci] + k for ci in members for k in range(count[ci])]

    by_flow, by_arc = by_flow_and_arc(cands)
    for members in by_flow:
        lits = every_slot(members)
        if len(lits) > 1:
            model.constraints.add().at_most_one.literals.extend(lits)
    for members in by_arc:
        if len({cands[ci].flow for ci in members}) < 2:
            continue
        for k in range(T):
            lits = [first[ci] + k for ci in members if k < count[ci]]
            if len(lits) > 1:
                model.constraints.add().at_most_one.literals.extend(lits)
    if fixing:
        # The candidates and master rows every schedule of `target` flows fills (over all slots), as
        # clauses where they are (EXACTLY_ONE): a row of bound 1 is "exactly one" of its Booleans,
        # "at least one" where they are one flow's (AT_LEAST_ONE); a row of bound T over candidates
        # that share a link (the link's own row) holds T of them, at most one per slot, so one in
        # each slot; any other row is a linear equality.
        for members, bound in [([ci], 1) for ci in fixing.fixed_in] + fixing.tight:
            if EXACTLY_ONE and bound == 1:
                c = model.constraints.add()
                one_flow = AT_LEAST_ONE and len({cands[ci].flow for ci in members}) == 1
                (c.bool_or if one_flow else c.exactly_one).literals.extend(every_slot(members))
            elif EXACTLY_ONE and bound == T and set.intersection(*(set(cands[ci].arcs) for ci in members)):
                for k in range(T):
                    c = model.constraints.add()
                    (c.bool_or if AT_LEAST_ONE else c.exactly_one).literals.extend(
                        [first[ci] + k for ci in members if k < count[ci]])
            else:
                lits = every_slot(members)
                row = model.constraints.add().linear
                row.vars.extend(lits)
                row.coeffs.extend([1] * len(lits))
                row.domain.extend([bound, bound])
    total = model.constraints.add().linear
    total.vars.extend(range(len(cols)))
    total.coeffs.extend([1] * len(cols))
    total.domain.extend([target, max(target, len(cols))])

    if hint is not None:
        # Its slots relabelled in rank order, as the symmetry breaking expects; the Booleans of the
        # flows it schedules (HINT_UNSCHEDULED).
        slot_of = {a[1]: a[0] for a in canonical(hint, rank) if a is not None}
        scheduled = {cands[ci].flow for ci in slot_of}
        hinted = [j for j, (ci, _) in enumerate(cols) if HINT_UNSCHEDULED or cands[ci].flow in scheduled]
        model.solution_hint.vars.extend(hinted)
        model.solution_hint.values.extend([1 if slot_of.get(cols[j][0]) == cols[j][1] else 0 for j in hinted])
    params = h.SatParameters()
    params.num_workers = 1
    params.random_seed = SEED if seed is None else seed
    params.max_deterministic_time = deterministic_time
    params.max_time_in_seconds = max(0.01, time_limit_s)
    # The model is already small and tight; CP-SAT's presolve cost more than it saved on the hard
    # instances (28% less time in all without it, 3 seeds x 7 instances: docs/scheduler.md).
    params.cp_model_presolve = False
    if not own_lp:
        params.linearization_level = LINEARIZATION_LEVEL
        params.symmetry_level = SYMMETRY_LEVEL
    solver = h.SolveWrapper()
    solver.set_parameters(params)
    response = solver.solve(model)
    status = response.status
    if status in (h.CpSolverStatus.OPTIMAL, h.CpSolverStatus.FEASIBLE):
        values = response.solution
        out: list[Assignment] = [None] * num_flows
        for j, (ci, k) in enumerate(cols):
            if values[j]:
                flow = cands[ci].flow
                assert out[flow] is None, "a flow got two slots"
                out[flow] = (k, ci)
        assert sum(a is not None for a in out) >= target
        return True, out
    if status == h.CpSolverStatus.INFEASIBLE:
        return False, []
    return None, []
