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
one per directed link and slot, and at least `target` of them. It is built directly as a
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
from tobsched.slot_ilp import flow_ranks

# Work units of a decision (CP-SAT's deterministic time: roughly seconds of a fast core).
DETERMINISTIC_TIME = 0.5
SEED = 1


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
    seed: int = SEED,
    fixing: Fixing | None = None,
) -> tuple[bool | None, list[Assignment]]:
    """(True, a schedule of at least `target` flows), (False, []) when CP-SAT proves that none
    exists, or (None, []) when it reached a limit. `fixing` (fixing.py, from the master's LP for
    the same target; columns are candidates) leaves out the candidates no such schedule uses and
    adds "exactly" for the candidates and master rows every such schedule fills. (A solution hint
    from the pump's best schedule made it slower on most of the hard instances: docs/scheduler.md.)"""
    assert fixing is None or fixing.target <= target, "a fixing holds only for its own target or above"
    if target <= 0:
        return True, [None] * num_flows
    h = _helper()
    T = slots
    rank = flow_ranks(num_flows, cands)
    model = h.CpModelProto()
    var_of: dict[tuple[int, int], int] = {}
    cols: list[tuple[int, int]] = []
    left_out = set(fixing.out) if fixing else set()
    for ci, c in enumerate(cands):
        if ci in left_out:
            continue
        for k in range(min(rank[c.flow] + 1, T)):
            var_of[(ci, k)] = len(cols)
            cols.append((ci, k))
            model.variables.add().domain.extend([0, 1])
    by_flow, by_arc = by_flow_and_arc(cands)
    for members in by_flow:
        lits = [var_of[(ci, k)] for ci in members for k in range(T) if (ci, k) in var_of]
        if len(lits) > 1:
            model.constraints.add().at_most_one.literals.extend(lits)
    for members in by_arc:
        if len({cands[ci].flow for ci in members}) < 2:
            continue
        for k in range(T):
            lits = [var_of[(ci, k)] for ci in members if (ci, k) in var_of]
            if len(lits) > 1:
                model.constraints.add().at_most_one.literals.extend(lits)
    if fixing:
        # The candidates and master rows every schedule of `target` flows fills (over all slots).
        for members, bound in [([ci], 1) for ci in fixing.fixed_in] + fixing.tight:
            lits = [var_of[(ci, k)] for ci in members for k in range(T) if (ci, k) in var_of]
            row = model.constraints.add().linear
            row.vars.extend(lits)
            row.coeffs.extend([1] * len(lits))
            row.domain.extend([bound, bound])
    total = model.constraints.add().linear
    total.vars.extend(range(len(cols)))
    total.coeffs.extend([1] * len(cols))
    total.domain.extend([target, max(target, len(cols))])

    params = h.SatParameters()
    params.num_workers = 1
    params.random_seed = seed
    params.max_deterministic_time = deterministic_time
    params.max_time_in_seconds = max(0.01, time_limit_s)
    # The model is already small and tight; CP-SAT's presolve cost more than it saved on the hard
    # instances (28% less time in all without it, 3 seeds x 7 instances: docs/scheduler.md).
    params.cp_model_presolve = False
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
