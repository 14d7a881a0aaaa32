"""A binary maximisation MIP handed to HiGHS in one call (row-wise CSR arrays), with a warm start.

Building through numpy arrays and one passModel call keeps model building in milliseconds even for
tens of thousands of columns; one Python call per coefficient would dominate the solve time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import highspy
import numpy as np
import numpy.typing as npt

from tobsched.progress import Reporter

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int32]


@dataclass
class SolveOptions:
    time_limit_s: float = 60.0
    mip_gap: float = 0.0
    threads: int = 1
    # Called with each step of the solve as it is taken (progress.Notes), and by a HiGHS MIP that
    # runs PROGRESS_EVERY_S or more (_report_mip).
    progress: Reporter | None = None


class RowBuilder:
    """Collects sparse rows lo <= a.x <= hi as CSR pieces. Rows added one at a time are kept in
    Python lists until the next bulk piece or arrays(): a model has hundreds of small rows, and a
    handful of numpy arrays per row cost more than the rest of building it."""

    def __init__(self) -> None:
        self._starts: list[npt.NDArray[np.int64]] = [np.zeros(1, dtype=np.int64)]
        self._cols: list[npt.NDArray[np.int32]] = []
        self._coefs: list[FloatArray] = []
        self._lower: list[FloatArray] = []
        self._upper: list[FloatArray] = []
        self._nnz = 0
        self._flushed_rows = 0
        # Rows added by add() since the last flush: ends (nnz after each row), columns,
        # coefficients, bounds.
        self._row_ends: list[int] = []
        self._row_cols: list[int] = []
        self._row_coefs: list[float] = []
        self._row_lo: list[float] = []
        self._row_hi: list[float] = []
        # arrays() of the rows so far, until the next row (lp_fixing and highs_lp both ask).
        self._arrays: tuple[IntArray, IntArray, FloatArray, FloatArray, FloatArray] | None = None

    def add(self, cols: npt.ArrayLike, lo: float, hi: float, coefs: npt.ArrayLike | None = None) -> None:
        idx = cols.ravel().tolist() if isinstance(cols, np.ndarray) else list(cols)  # type: ignore[arg-type]
        if coefs is None:
            c = [1.0] * len(idx)
        else:
            c = coefs.ravel().tolist() if isinstance(coefs, np.ndarray) else list(coefs)  # type: ignore[arg-type]
        assert len(c) == len(idx)
        self._arrays = None
        self._row_cols.extend(idx)
        self._row_coefs.extend(c)
        self._row_ends.append(self._nnz + len(self._row_cols))
        self._row_lo.append(float(lo))
        self._row_hi.append(float(hi))

    def _flush(self) -> None:
        if not self._row_ends:
            return
        self._starts.append(np.asarray(self._row_ends, dtype=np.int64))
        self._cols.append(np.asarray(self._row_cols, dtype=np.int32))
        self._coefs.append(np.asarray(self._row_coefs, dtype=np.float64))
        self._lower.append(np.asarray(self._row_lo, dtype=np.float64))
        self._upper.append(np.asarray(self._row_hi, dtype=np.float64))
        self._nnz += len(self._row_cols)
        self._flushed_rows += len(self._row_ends)
        self._row_ends, self._row_cols, self._row_coefs, self._row_lo, self._row_hi = [], [], [], [], []

    def add_csr(
        self,
        starts: npt.ArrayLike,
        cols: npt.ArrayLike,
        coefs: npt.ArrayLike,
        lo: npt.ArrayLike,
        hi: npt.ArrayLike,
    ) -> None:
        """Bulk form: rows given as CSR, starts relative to cols (starts[0] == 0)."""
        self._flush()
        self._arrays = None
        st = np.asarray(starts, dtype=np.int64)
        count = st.size - 1
        assert st[0] == 0 and count >= 0
        c = np.asarray(cols, dtype=np.int32).ravel()
        v = np.asarray(coefs, dtype=np.float64).ravel()
        assert c.size == v.size == int(st[-1])
        self._starts.append(st[1:] + self._nnz)
        self._cols.append(c)
        self._coefs.append(v)
        self._lower.append(np.broadcast_to(np.asarray(lo, dtype=np.float64), (count,)).copy())
        self._upper.append(np.broadcast_to(np.asarray(hi, dtype=np.float64), (count,)).copy())
        self._nnz += int(st[-1])
        self._flushed_rows += count

    @property
    def num_rows(self) -> int:
        return self._flushed_rows + len(self._row_ends)

    def arrays(self) -> tuple[IntArray, IntArray, FloatArray, FloatArray, FloatArray]:
        """CSR row starts, columns, coefficients, lower and upper bounds. Built once until the next
        row is added, and shared between callers: read-only."""
        if self._arrays is None:
            self._arrays = self._concatenated()
            for a in self._arrays:
                a.setflags(write=False)
        return self._arrays

    def _concatenated(self) -> tuple[IntArray, IntArray, FloatArray, FloatArray, FloatArray]:
        self._flush()

        def ints(parts: Sequence[npt.NDArray[np.integer[Any]]]) -> IntArray:
            return np.concatenate(parts).astype(np.int32) if parts else np.zeros(0, dtype=np.int32)

        def floats(parts: Sequence[FloatArray]) -> FloatArray:
            return np.concatenate(parts).astype(np.float64) if parts else np.zeros(0)

        return ints(self._starts), ints(self._cols), floats(self._coefs), floats(self._lower), floats(self._upper)


@dataclass
class MipResult:
    x: FloatArray | None  # None when no feasible point was found
    objective: float
    dual_bound: float
    status: str
    optimal: bool
    solve_s: float
    # The LP's column and row duals when the answer is its integral vertex (LP_VERTEX_STATUS): what
    # fixing.fixing_from_duals reads, without solving the LP again.
    lp_duals: tuple[FloatArray, FloatArray] | None = None


def highs_lp(
    cost: FloatArray,
    rows: RowBuilder,
    *,
    upper: FloatArray | None = None,
    integer: npt.NDArray[np.bool_] | None = None,
) -> Any:
    """The maximisation of cost.x over 0 <= x <= upper subject to rows as one HighsLp (integer
    columns where `integer` says so, all of them by default)."""
    n = int(cost.size)
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = rows.num_rows
    lp.col_cost_ = np.asarray(cost, dtype=np.float64)
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = np.ones(n) if upper is None else np.asarray(upper, dtype=np.float64)
    starts, index, value, lower, upper_r = rows.arrays()
    lp.row_lower_ = lower
    lp.row_upper_ = upper_r
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = rows.num_rows
    lp.a_matrix_.start_ = starts
    lp.a_matrix_.index_ = index
    lp.a_matrix_.value_ = value
    lp.sense_ = highspy.ObjSense.kMaximize
    kinds = np.ones(n, dtype=bool) if integer is None else integer
    lp.integrality_ = [
        highspy.HighsVarType.kInteger if k else highspy.HighsVarType.kContinuous for k in kinds
    ]
    return lp


def solve_max(
    cost: FloatArray,
    rows: RowBuilder,
    opts: SolveOptions,
    *,
    integer: npt.NDArray[np.bool_] | None = None,
    upper: FloatArray | None = None,
    start: FloatArray | None = None,
    integral_objective: bool = False,
    lp_first: bool = False,
) -> MipResult:
    """Maximises cost.x over 0 <= x <= upper (binary where integer) subject to rows. With
    `lp_first` the LP relaxation is solved first (by simplex, so its optimum is a vertex) and,
    when that vertex is integral, it is the answer: an optimum of the MIP, proven by its own LP
    bound, at a fraction of the MIP's set-up cost."""
    t0 = time.perf_counter()
    lp = highs_lp(cost, rows, upper=upper, integer=integer)
    if lp_first:
        res = _integral_lp_vertex(lp, opts, t0)
        if res is not None and _consistent(res, lp, cost):
            return res
    res = _run(lp, opts, integral_objective, start, t0)
    if start is not None and not _consistent(res, lp, cost):
        # HiGHS 1.16 can end a warm-started solve with an objective and a dual bound that its own
        # solution does not have (seen: x worth 87, "optimal" 89, the true optimum 88): neither
        # is to be trusted. Solve again without the start.
        res = _run(lp, replace(opts, time_limit_s=max(0.01, opts.time_limit_s - (time.perf_counter() - t0))),
                   integral_objective, None, t0)
    if not _consistent(res, lp, cost):
        raise AssertionError(f"HiGHS returned a solution inconsistent with its objective ({res.status})")
    return res


def _run(lp: Any, opts: SolveOptions, integral_objective: bool, start: FloatArray | None, t0: float) -> MipResult:
    n = int(lp.num_col_)
    h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", max(0.01, float(opts.time_limit_s)))
    h.setOptionValue("mip_rel_gap", float(opts.mip_gap))
    if integral_objective:
        # The objective counts flows: a gap below 1 already proves optimality.
        h.setOptionValue("mip_abs_gap", 0.999)
    h.setOptionValue("threads", int(opts.threads))
    h.setOptionValue("random_seed", 0)
    h.passModel(lp)
    if start is not None:
        h.setSolution(n, np.arange(n, dtype=np.int32), np.asarray(start, dtype=np.float64))
    if opts.progress is not None:
        _report_mip(h, opts.progress)
    h.run()

    status = h.getModelStatus()
    info = h.getInfo()
    has_x = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.asarray(h.getSolution().col_value, dtype=np.float64) if has_x else None
    objective = float(info.objective_function_value) if has_x else -math.inf
    dual = float(info.mip_dual_bound) if n else 0.0
    optimal = status == highspy.HighsModelStatus.kOptimal
    if integral_objective and has_x and math.floor(dual + 1e-6) <= round(objective):
        optimal = True
    return MipResult(x, objective, dual, h.modelStatusToString(status), optimal, time.perf_counter() - t0)


# A MIP that runs this long reports its incumbent and bound (SolveOptions.progress), then again
# at this interval and at each better incumbent.
PROGRESS_EVERY_S = 2.0


def _report_mip(h: highspy.Highs, report: Reporter) -> None:
    """Subscribes to HiGHS's MIP callbacks: a line when a solve has run PROGRESS_EVERY_S, then
    every PROGRESS_EVERY_S and at each improving solution after that (short MIPs stay quiet)."""
    last = [0.0]

    def value(v: float) -> str:
        return f"{v + 0.0:.4f}" if math.isfinite(v) else "none yet"

    def line(out: Any, why: str) -> str:
        # Objective values: flows, less a small length term in S/UR's models.
        return (f"HiGHS MIP {why}: objective {value(out.mip_primal_bound)}, bound {value(out.mip_dual_bound)}, "
                f"{out.mip_node_count} nodes, {out.running_time:.1f} s")

    def on_interrupt(e: Any) -> None:
        t = float(e.data_out.running_time)
        if t - last[0] >= PROGRESS_EVERY_S:
            last[0] = t
            report(line(e.data_out, "running"))

    def on_improving(e: Any) -> None:
        t = float(e.data_out.running_time)
        if t >= PROGRESS_EVERY_S:
            last[0] = t
            report(line(e.data_out, "better solution"))

    h.cbMipInterrupt.subscribe(on_interrupt)
    h.cbMipImprovingSolution.subscribe(on_improving)


LP_VERTEX_STATUS = "Optimal (integral LP vertex)"
# A vertex whose values are all within this of an integer is integral (HiGHS's own feasibility
# tolerance is 1e-7).
INTEGRAL_TOL = 1e-9


def _simplex(lp: Any, opts: SolveOptions) -> Any:
    """The LP relaxation of `lp` (integrality dropped) solved by simplex: the Highs object."""
    kinds = list(lp.integrality_)
    lp.integrality_ = []
    try:
        h = highspy.Highs()  # type: ignore[no-untyped-call]
        h.setOptionValue("output_flag", False)
        h.setOptionValue("time_limit", max(0.01, float(opts.time_limit_s)))
        h.setOptionValue("threads", int(opts.threads))
        h.setOptionValue("random_seed", 0)
        h.setOptionValue("solver", "simplex")
        h.passModel(lp)
        h.run()
    finally:
        lp.integrality_ = kinds
    return h


def lp_value(cost: FloatArray, rows: RowBuilder, opts: SolveOptions) -> float | None:
    """The optimum of the LP relaxation of max cost.x over 0 <= x <= 1 and rows (None when it is
    not solved to optimality within the time limit): an upper bound on the MIP's."""
    h = _simplex(highs_lp(cost, rows), opts)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return float(h.getInfo().objective_function_value)


def _integral_lp_vertex(lp: Any, opts: SolveOptions, t0: float) -> MipResult | None:
    """The LP relaxation's optimal vertex as a MIP result when it is integral where the model asks
    for integers, else None. The model is solved as an LP (integrality dropped) by simplex."""
    kinds = list(lp.integrality_)
    h = _simplex(lp, opts)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    x = np.asarray(h.getSolution().col_value, dtype=np.float64)
    ints = np.asarray([k == highspy.HighsVarType.kInteger for k in kinds], dtype=bool)
    rounded = np.round(x)
    if np.any(np.abs(x[ints] - rounded[ints]) > INTEGRAL_TOL):
        return None
    x = np.where(ints, rounded, x)
    objective = float(np.dot(np.asarray(lp.col_cost_, dtype=np.float64), x))
    sol = h.getSolution()
    duals = (np.asarray(sol.col_dual, dtype=np.float64), np.asarray(sol.row_dual, dtype=np.float64))
    return MipResult(x, objective, objective, LP_VERTEX_STATUS, True, time.perf_counter() - t0, duals)


def _consistent(res: MipResult, lp: Any, cost: FloatArray) -> bool:
    """The solution has the objective HiGHS reports, within its bounds and rows, and the dual
    bound is not below it (a maximisation)."""
    if res.x is None:
        return True
    x = res.x
    tol = 1e-6 * max(1.0, abs(res.objective))
    if abs(float(np.dot(np.asarray(cost, dtype=np.float64), x)) - res.objective) > max(tol, 1e-6):
        return False
    if res.dual_bound < res.objective - max(tol, 1e-6):
        return False
    if np.any(x < np.asarray(lp.col_lower_) - 1e-6) or np.any(x > np.asarray(lp.col_upper_) + 1e-6):
        return False
    a = lp.a_matrix_
    starts = np.asarray(a.start_, dtype=np.int64)
    index = np.asarray(a.index_, dtype=np.int64)
    value = np.asarray(a.value_, dtype=np.float64)
    prefix = np.concatenate(([0.0], np.cumsum(value * x[index])))
    rows = prefix[starts[1:]] - prefix[starts[:-1]]
    lo = np.asarray(lp.row_lower_)
    hi = np.asarray(lp.row_upper_)
    return bool(np.all(rows >= lo - 1e-6) and np.all(rows <= hi + 1e-6))
