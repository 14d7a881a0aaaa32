"""The compiled local searches (lsearch.c), loaded with ctypes: Tabucol, the DSatur branch and bound,
the ejection chains, PartialCol and the odd-set cuts' separation. Each makes the same moves and random draws as its Python
version in coloring.py, greedy.py and oddset.py (tests/test_native.py checks it), 10-25x faster: in the
feasibility pump and the colourings of the hard instances, Python's local search was about 40% of
the time (docs/scheduler.md "Compiled local search").

The library is built by `pip install` (setup.py) as tobsched/_lsearch*.so. `LIB` is None, and
`LOAD_ERROR` says why, when it is missing (a source tree used without installing), was built from
other sources, or TOBSCHED_NATIVE=0 asks for the Python versions; the callers then run those."""

from __future__ import annotations

import ctypes
import importlib.machinery
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from tobsched.paths import Candidate

Assignment = tuple[int, int] | None

_I32 = ctypes.POINTER(ctypes.c_int32)
_F64 = ctypes.POINTER(ctypes.c_double)
_ERRORS = {-1: "out of memory", -2: "invalid input"}
_PATHS_ARGS = [ctypes.c_int32] * 4 + [_I32] * 5


# lsearch.c's LS_ABI_VERSION: the signatures declared below.
ABI_VERSION = 3


def _load() -> tuple[Any, str]:
    """(the library, "") or (None, why not)."""
    if os.environ.get("TOBSCHED_NATIVE", "1") == "0":
        return None, "TOBSCHED_NATIVE=0"
    here = os.path.dirname(os.path.abspath(__file__))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(here, "_lsearch" + suffix)
        if os.path.exists(path):
            lib = ctypes.CDLL(path)
            break
    else:
        return None, f"no _lsearch library in {here}: install the package (pip install)"
    lib.ls_abi_version.restype = ctypes.c_int
    if lib.ls_abi_version() != ABI_VERSION:
        return None, f"{path} was built from other sources: reinstall the package (pip install)"
    i32, i64, u64 = ctypes.c_int32, ctypes.c_int64, ctypes.c_uint64
    lib.ls_rng_draws.argtypes = [u64, ctypes.c_int, i32, i32, _F64]
    lib.ls_tabucol.argtypes = [i32, _I32, _I32, i32, _I32, i64, u64]
    lib.ls_exact_colour.argtypes = [i32, _I32, _I32, i32, i64, _I32]
    lib.ls_round_and_augment.argtypes = _PATHS_ARGS + [i32, _I32, _I32, i64, _I32, _I32]
    lib.ls_augment_all.argtypes = _PATHS_ARGS + [i64, _I32, _I32]
    lib.ls_partialcol.argtypes = _PATHS_ARGS + [i64, u64, ctypes.c_double, i32, _I32, _I32]
    lib.ls_odd_sets.argtypes = [i32, _I32, _I32] + [i32] * 6 + [_I32, _I32]
    return lib, ""


LIB, LOAD_ERROR = _load()


class NativeError(RuntimeError):
    pass


def _check(rc: int, what: str) -> int:
    if rc < 0:
        raise NativeError(f"{what}: {_ERRORS.get(rc, f'error {rc}')}")
    return rc


def _ptr(a: np.ndarray) -> Any:
    assert a.dtype == np.int32 and a.flags.c_contiguous
    return a.ctypes.data_as(_I32)


def _seed(seed: int) -> int:
    if not 0 <= seed < 1 << 64:
        raise ValueError(f"seed must be in [0, 2**64), not {seed}")
    return seed


def rng_draws(seed: int, count: int, below: int | None = None) -> list[float]:
    """`count` values of random.Random(seed).random(), or of .randrange(below) (for the tests)."""
    out = np.zeros(count, dtype=np.float64)
    kind, n = (0, 0) if below is None else (1, below)
    _check(LIB.ls_rng_draws(_seed(seed), kind, n, count, out.ctypes.data_as(_F64)), "rng_draws")
    return out.tolist()


def _csr(adj: Sequence[set[int]]) -> tuple[np.ndarray, np.ndarray]:
    off = np.zeros(len(adj) + 1, dtype=np.int32)
    off[1:] = np.cumsum([len(a) for a in adj])
    flat = np.fromiter((u for a in adj for u in a), dtype=np.int32, count=int(off[-1]))
    return off, flat


def tabu_colour(adj: Sequence[set[int]], colours: int, start: Sequence[int | None], iterations_max: int,
                seed: int) -> list[int] | None:
    if len(start) != len(adj):
        raise ValueError(f"tabu_colour: {len(start)} start colours for {len(adj)} vertices")
    off, flat = _csr(adj)
    col = np.array([-1 if c is None else c for c in start], dtype=np.int32)
    ok = _check(LIB.ls_tabucol(len(adj), _ptr(off), _ptr(flat), colours, _ptr(col), iterations_max, _seed(seed)),
                "tabu_colour")
    return col.tolist() if ok else None


def exact_colour(adj: Sequence[set[int]], colours: int, nodes_max: int) -> tuple[bool | None, list[int] | None]:
    off, flat = _csr(adj)
    col = np.zeros(len(adj), dtype=np.int32)
    got = _check(LIB.ls_exact_colour(len(adj), _ptr(off), _ptr(flat), colours, nodes_max, _ptr(col)), "exact_colour")
    return {1: (True, col.tolist()), 0: (False, None)}.get(got, (None, None))


class Paths:
    """Candidates as flat arrays: each candidate's flow and links, each flow's candidates."""

    def __init__(self, num_flows: int, cands: Sequence[Candidate]) -> None:
        self.num_flows = num_flows
        self.count = len(cands)
        self.cand_flow = np.fromiter((c.flow for c in cands), dtype=np.int32, count=len(cands))
        self.arc_off = np.zeros(len(cands) + 1, dtype=np.int32)
        self.arc_off[1:] = np.cumsum([len(c.arcs) for c in cands])
        self.arcs = np.fromiter((a for c in cands for a in c.arcs), dtype=np.int32, count=int(self.arc_off[-1]))
        self.num_arcs = int(self.arcs.max()) + 1 if len(self.arcs) else 0
        self.by_flow = np.argsort(self.cand_flow, kind="stable").astype(np.int32)
        self.flow_off = np.searchsorted(self.cand_flow[self.by_flow], np.arange(num_flows + 1)).astype(np.int32)

    def args(self, slots: int) -> tuple[Any, ...]:
        return (self.num_flows, slots, self.num_arcs, self.count, _ptr(self.cand_flow), _ptr(self.arc_off), _ptr(self.arcs),
                _ptr(self.flow_off), _ptr(self.by_flow))


# The last list converted: the pump rounds many times over one list of candidates. A solve never
# changes its list of candidates (Candidate is frozen); a new list is a new entry.
_last: list[Any] = [None, None]


def paths_of(num_flows: int, cands: Sequence[Candidate]) -> Paths:
    held, p = _last
    if held is cands and p.num_flows == num_flows and p.count == len(cands):
        return p
    p = Paths(num_flows, cands)
    _last[:] = [cands, p]
    return p


def _arrays(num_flows: int, schedule: Sequence[Assignment]) -> tuple[np.ndarray, np.ndarray]:
    slot = np.full(num_flows, -1, dtype=np.int32)
    cand = np.full(num_flows, -1, dtype=np.int32)
    for f, a in enumerate(schedule):
        if a is not None:
            slot[f], cand[f] = a
    return slot, cand


def _schedule(slot: np.ndarray, cand: np.ndarray) -> list[Assignment]:
    return [None if k < 0 else (k, c) for k, c in zip(slot.tolist(), cand.tolist())]


def round_and_augment(p: Paths, slots: int, order: Sequence[tuple[int, int]], budget: int) -> list[Assignment]:
    pairs = np.array(order, dtype=np.int32).reshape(-1, 2)
    order_slot, order_cand = np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1])
    slot, cand = _arrays(p.num_flows, ())
    _check(LIB.ls_round_and_augment(*p.args(slots), len(pairs), _ptr(order_slot), _ptr(order_cand), budget,
                                    _ptr(slot), _ptr(cand)), "round_and_augment")
    return _schedule(slot, cand)


def augment_all(p: Paths, slots: int, start: Sequence[Assignment], budget: int) -> list[Assignment]:
    slot, cand = _arrays(p.num_flows, start)
    _check(LIB.ls_augment_all(*p.args(slots), budget, _ptr(slot), _ptr(cand)), "augment_all")
    return _schedule(slot, cand)


def partialcol(p: Paths, slots: int, start: Sequence[Assignment], evaluations: int, seed: int, alpha: float,
               random_span: int) -> list[Assignment]:
    slot, cand = _arrays(p.num_flows, start)
    _check(LIB.ls_partialcol(*p.args(slots), evaluations, _seed(seed), alpha, random_span, _ptr(slot), _ptr(cand)),
           "partialcol")
    return _schedule(slot, cand)


def odd_sets(paths: Sequence[Sequence[int]], slots: int, steps: int, tenure: int) -> list[tuple[int, ...]]:
    """oddset.odd_set_search compiled. Link ids are made dense first (in ascending order, so the
    search visits them in the same order), the sets found mapped back."""
    off = np.zeros(len(paths) + 1, dtype=np.int32)
    off[1:] = np.cumsum([len(p) for p in paths])
    ids = np.fromiter((a for p in paths for a in p), dtype=np.int64, count=int(off[-1]))
    names, dense = np.unique(ids, return_inverse=True)
    flat = dense.astype(np.int32)
    useful = int(np.count_nonzero(np.bincount(flat, minlength=len(names)) >= 2)) if len(flat) else 0
    per_set = min(useful, steps + 1)
    if useful * per_set >= 1 << 31:
        raise ValueError(f"odd_sets: {useful} links with two or more paths: too many")
    sizes = np.zeros(max(1, useful), dtype=np.int32)
    links = np.zeros(max(1, useful * per_set), dtype=np.int32)
    n = _check(LIB.ls_odd_sets(len(paths), _ptr(off), _ptr(flat), len(names), slots, min(steps, 2**31 - 1),
                               min(tenure, 2**31 - 1), len(sizes), len(links), _ptr(sizes), _ptr(links)), "odd_sets")
    out: list[tuple[int, ...]] = []
    at = 0
    for k in sizes[:n].tolist():
        out.append(tuple(int(names[j]) for j in links[at:at + k]))
        at += k
    return out
