#!/usr/bin/env python3
"""Scalability study of tob-schedule (seed 003 §7.2) against PuLP with its bundled CBC.

Small: 24 hosts and 6 switches; Erdos-Renyi (14 switch links, 38 links in all, the paper's
       scalability topology), random regular graphs of degree 3 and 4 and Barabasi-Albert (the
       models of the paper's quality study); 20-110 flows; 3-5 slots.
Large: Waxman switch graphs, 200 hosts, 10 switches, 256 links; 300 flows; 5-50 slots.

Per instance, S/PR and S/FR of tob-schedule and the seed's plain formulations of S/PR (§5.3,
pt[l,k]) and S/FR (§5.4, t[i,k]) written with PuLP and solved by its bundled CBC run side by
side, interleaved, `--repeats` times; medians are kept. S/UR (ours) and greedy run on the same
instances. tob-schedule's time is `Schedule.solve_s` (candidate paths, model building, solving;
not the verifier, which still runs); PuLP's is the `prob.solve()` call (writing the MPS file,
CBC, reading its solution), its model building excluded. Target of issue 23: S/PR and S/FR
prove the optimum in at most max(PuLP+CBC / 10, 50 ms) on each instance.

Setup (PuLP is a benchmark-only dependency, the `bench` extra):
    python3 -m venv build/venv-sched
    build/venv-sched/bin/pip install -e 'scheduler[bench]'
Run (10-15 minutes with the defaults on 2 shared cores):
    build/venv-sched/bin/python perf/scheduler/scalability.py
    build/venv-sched/bin/python perf/scheduler/scalability.py --quick          # a smoke run
    build/venv-sched/bin/python perf/scheduler/scalability.py --sizes large --repeats 5
Writes docs/experiments/scheduler-scalability.{csv,md} and its PNG plots (--out-dir).
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, fields
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tobsched import native  # noqa: E402
from tobsched.generate import TopologyParams, generate  # noqa: E402
from tobsched.highs_model import SolveOptions  # noqa: E402
from tobsched.network import Network, network_from_obj  # noqa: E402
from tobsched.paths import Candidate, candidates  # noqa: E402
from tobsched.solve import solve  # noqa: E402

try:
    import pulp
except ImportError:  # pragma: no cover - the message is the point
    sys.exit("PuLP is missing: build/venv-sched/bin/pip install -e 'scheduler[bench]' (or --no-pulp)")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(REPO, "docs", "experiments")
STEM = "scheduler-scalability"
TIME_LIMIT_S = 60.0
TARGET_FLOOR_S = 0.050
TARGET_RATIO = 10.0
SMALL_MODELS = {
    "er": TopologyParams(model="er", hosts=24, switches=6, switch_links=14),
    "rrg3": TopologyParams(model="rrg", hosts=24, switches=6, degree=3),
    "rrg4": TopologyParams(model="rrg", hosts=24, switches=6, degree=4),
    "ba": TopologyParams(model="ba", hosts=24, switches=6, ba_m=2),
}
LARGE = TopologyParams(model="waxman", hosts=200, switches=10, links_total=256)
LABEL = {"sur": "S/UR", "spr": "S/PR", "sfr": "S/FR", "greedy": "greedy"}


@dataclass
class Row:
    study: str
    model: str
    seed: int
    flows: int
    slots: int
    links: int
    formulation: str
    scheduled: int
    upper_bound: int | None
    proven_optimal: bool
    time_s_median: float
    time_s_max: float
    repeats: int
    pulp_scheduled: int | None = None
    pulp_status: str = ""
    pulp_solve_s_median: float | None = None
    pulp_build_s_median: float | None = None
    time_s_min: float | None = None
    pulp_solve_s_min: float | None = None
    pulp_solve_s_max: float | None = None
    load_1min: float | None = None  # load average (1 min) when the instance was done

    @property
    def target_s(self) -> float | None:
        if self.pulp_solve_s_median is None:
            return None
        return max(self.pulp_solve_s_median / TARGET_RATIO, TARGET_FLOOR_S)

    @property
    def meets(self) -> bool | None:
        t = self.target_s
        return None if t is None else (self.proven_optimal and self.time_s_median <= t)

    @property
    def ratio(self) -> float | None:
        if self.pulp_solve_s_median is None:
            return None
        return self.pulp_solve_s_median / max(self.time_s_median, 1e-9)


def pulp_model(net: Network, cands: list[Candidate]) -> Any:
    """The seed's formulation as stated: pt[l,k] per candidate path and slot (§5.3; with one
    path per flow it is §5.4's t[i,k]), at most one slot per path, one per flow, one path per
    directed link and slot."""
    T = net.slots
    prob = pulp.LpProblem("tssdn", pulp.LpMaximize)
    pt = {(l, k): pulp.LpVariable(f"pt_{l}_{k}", cat="Binary") for l in range(len(cands)) for k in range(T)}
    prob += pulp.lpSum(pt.values())
    by_flow: dict[int, list[int]] = {}
    by_arc: dict[int, list[int]] = {}
    for l, c in enumerate(cands):
        by_flow.setdefault(c.flow, []).append(l)
        for a in c.arcs:
            by_arc.setdefault(a, []).append(l)
    if any(len(m) > 1 for m in by_flow.values()):  # S/PR: the per-path row of §5.3
        for l in range(len(cands)):
            prob += pulp.lpSum(pt[l, k] for k in range(T)) <= 1
    for members in by_flow.values():
        prob += pulp.lpSum(pt[l, k] for l in members for k in range(T)) <= 1
    for members in by_arc.values():
        for k in range(T):
            prob += pulp.lpSum(pt[l, k] for l in members) <= 1
    return prob


def pulp_solve(net: Network, form: str) -> tuple[int | None, str, float, float]:
    """(flows scheduled, CBC status, build seconds, solve seconds)."""
    t0 = time.perf_counter()
    prob = pulp_model(net, candidates(net, fixed=form == "sfr"))
    t1 = time.perf_counter()
    prob.solve(pulp.PULP_CBC_CMD(msg=0, threads=1, timeLimit=TIME_LIMIT_S))
    t2 = time.perf_counter()
    value = pulp.value(prob.objective)
    return (None if value is None else int(round(value))), pulp.LpStatus[prob.status], t1 - t0, t2 - t1


def cbc_version() -> str:
    try:
        path = pulp.PULP_CBC_CMD().path
        out = subprocess.run([path, "-quit"], capture_output=True, text=True, timeout=10).stdout
        m = re.search(r"Version:\s*(\S+)", out)
        return f"CBC {m.group(1)}" if m else "CBC (version unknown)"
    except (OSError, subprocess.SubprocessError):
        return "CBC (version unknown)"


class Progress:
    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.t0 = time.perf_counter()

    def step(self, label: str) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.t0
        sys.stderr.write(f"\r{self.done}/{self.total} {elapsed:6.1f}s {label:<48}")
        sys.stderr.flush()
        if self.done == self.total:
            sys.stderr.write("\n")


def measure_instance(study: str, model: str, seed: int, net: Network, forms: list[str], args: argparse.Namespace) -> list[Row]:
    """Ours and PuLP+CBC interleaved: each repeat runs every formulation and its CBC twin."""
    times: dict[str, list[float]] = {f: [] for f in forms}
    last: dict[str, Any] = {}
    p_times: dict[str, list[float]] = {f: [] for f in forms}
    p_build: dict[str, list[float]] = {f: [] for f in forms}
    p_last: dict[str, tuple[int | None, str]] = {}
    for rep in range(args.repeats):
        for form in forms:
            if form == "sur" and rep > 0 and max(times["sur"]) > args.sur_repeat_max_s:
                continue  # one slow S/UR run is enough to report it
            s = solve(net, form, SolveOptions(time_limit_s=TIME_LIMIT_S, threads=1))
            if form in last:
                assert s.scheduled == last[form].scheduled, f"{form}: not deterministic"
            last[form] = s
            times[form].append(s.solve_s)
            if form in ("spr", "sfr") and not args.no_pulp:
                got, status, b, t = pulp_solve(net, form)
                p_times[form].append(t)
                p_build[form].append(b)
                p_last[form] = (got, status)
    rows = []
    for form in forms:
        s = last[form]
        r = Row(study, model, seed, len(net.flows), net.slots, len(net.links), form, s.scheduled, s.upper_bound,
                s.proven_optimal, statistics.median(times[form]), max(times[form]), len(times[form]),
                time_s_min=min(times[form]), load_1min=os.getloadavg()[0])
        if p_times.get(form):
            r.pulp_scheduled, r.pulp_status = p_last[form]
            r.pulp_solve_s_median = statistics.median(p_times[form])
            r.pulp_solve_s_min, r.pulp_solve_s_max = min(p_times[form]), max(p_times[form])
            r.pulp_build_s_median = statistics.median(p_build[form])
            if r.pulp_status == "Optimal" and s.proven_optimal:
                assert r.pulp_scheduled == s.scheduled, f"{form}: CBC proves {r.pulp_scheduled}, we prove {s.scheduled}"
        rows.append(r)
    return rows


def plan(args: argparse.Namespace) -> list[tuple[str, str, int, int, int]]:
    out: list[tuple[str, str, int, int, int]] = []
    if "small" in args.sizes:
        flows = [20, 50, 80, 110] if args.quick else list(range(20, 111, 10))
        for model in args.models:
            for seed in range(args.seeds):
                for fl in flows:
                    for sl in args.slots_small:
                        out.append(("small", model, seed, fl, sl))
    if "large" in args.sizes:
        slots = [5, 20, 50] if args.quick else args.slots_large
        for seed in range(args.seeds_large):
            for sl in slots:
                out.append(("large", "waxman", seed, 300, sl))
    return out


def run(args: argparse.Namespace) -> list[Row]:
    todo = plan(args)
    bar = Progress(len(todo))
    rows: list[Row] = []
    for study, model, seed, flows, slots in todo:
        params = SMALL_MODELS[model] if study == "small" else LARGE
        net = network_from_obj(generate(params, flows, slots, seed))
        forms = ["spr", "sfr", "sur", "greedy"]
        rows += measure_instance(study, model, seed, net, forms, args)
        if args.progress_csv:
            write_csv(rows, args.progress_csv)  # what is measured so far, should the run be cut short
        bar.step(f"{study} {model} s{seed} {flows}f {slots}T")
    return rows


def write_csv(rows: list[Row], path: str) -> None:
    names = [f.name for f in fields(Row)] + ["target_s", "meets_target"]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for r in rows:
            vals = [getattr(r, f.name) for f in fields(Row)] + [r.target_s, r.meets]
            w.writerow([f"{v:.6f}" if isinstance(v, float) else ("" if v is None else v) for v in vals])


def _ms(x: float | None) -> str:
    return "" if x is None else (f"{x * 1e3:.1f}" if x < 10 else f"{x * 1e3:.0f}")


def _spread(lo: float | None, hi: float | None) -> str:
    return "" if lo is None or hi is None else f"{_ms(lo)}-{_ms(hi)}"


def spread_lines(rows: list[Row]) -> list[str]:
    """How much single runs varied: max/min over the repeats of each instance, ours and CBC's."""
    out = []
    for form in ("spr", "sfr"):
        sel = [r for r in rows if r.formulation == form and r.repeats > 1 and r.time_s_min]
        if not sel:
            continue
        ours = [r.time_s_max / r.time_s_min for r in sel]
        cbc = [r.pulp_solve_s_max / r.pulp_solve_s_min for r in sel if r.pulp_solve_s_min and r.pulp_solve_s_max]
        line = (f"- {LABEL[form]}: slowest / fastest of the {sel[0].repeats} runs of an instance, median "
                f"{statistics.median(ours):.2f}, 90th percentile {statistics.quantiles(ours, n=10)[-1]:.2f}, max {max(ours):.1f}")
        if cbc:
            line += (f"; CBC median {statistics.median(cbc):.2f}, 90th percentile "
                     f"{statistics.quantiles(cbc, n=10)[-1]:.2f}, max {max(cbc):.1f}")
        out.append(line + ".")
    loads = [r.load_1min for r in rows if r.load_1min is not None]
    if loads:
        out.append(f"- Load average (1 min) sampled after each instance: median {statistics.median(loads):.1f}, "
                   f"range {min(loads):.1f}-{max(loads):.1f}.")
    return out


def plots(rows: list[Row], out_dir: str) -> list[str]:
    files = []
    # Per instance: CBC's time against ours, with the target line.
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, form in zip(axes, ("spr", "sfr")):
        for study, mark in (("small", "o"), ("large", "s")):
            sel = [r for r in rows if r.formulation == form and r.study == study and r.pulp_solve_s_median]
            if not sel:
                continue
            ok = [r for r in sel if r.meets]
            bad = [r for r in sel if not r.meets]
            ax.scatter([r.pulp_solve_s_median * 1e3 for r in ok], [r.time_s_median * 1e3 for r in ok], s=14,
                       marker=mark, color="tab:green", alpha=0.7, label=f"{study}: meets target ({len(ok)})")
            ax.scatter([r.pulp_solve_s_median * 1e3 for r in bad], [r.time_s_median * 1e3 for r in bad], s=18,
                       marker=mark, color="tab:red", alpha=0.8, label=f"{study}: misses ({len(bad)})")
        sel = [r.pulp_solve_s_median for r in rows if r.formulation == form and r.pulp_solve_s_median]
        if sel:
            xs = sorted({min(sel), TARGET_FLOOR_S * TARGET_RATIO, max(sel)})
            ax.plot([x * 1e3 for x in xs], [max(x / TARGET_RATIO, TARGET_FLOOR_S) * 1e3 for x in xs], "k--", lw=1,
                    label="target max(CBC/10, 50 ms)")
            ax.plot([x * 1e3 for x in xs], [x * 1e3 for x in xs], color="grey", lw=0.8, label="equal")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("PuLP + CBC solve [ms] (median)")
        ax.set_ylabel("tob-schedule solve [ms] (median)")
        ax.set_title(f"{LABEL[form]}, per instance")
        ax.grid(True, alpha=0.3, which="both")
        ax.legend(fontsize=7)
    name = f"{STEM}-vs-cbc.png"
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, name), dpi=110)
    plt.close(fig)
    files.append(name)

    # Small, by flows (all models, 3-5 slots): median and max time of each solver.
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    series = [("spr", False, "S/PR"), ("sfr", False, "S/FR"), ("sur", False, "S/UR"), ("greedy", False, "greedy"),
              ("spr", True, "CBC S/PR"), ("sfr", True, "CBC S/FR")]
    for form, cbc, label in series:
        pts: dict[int, list[float]] = {}
        for r in rows:
            if r.study == "small" and r.formulation == form:
                v = r.pulp_solve_s_median if cbc else r.time_s_median
                if v is not None:
                    pts.setdefault(r.flows, []).append(v)
        if not pts:
            continue
        xs = sorted(pts)
        style = "--" if cbc else "-"
        axes[0].plot(xs, [statistics.median(pts[x]) * 1e3 for x in xs], style, marker="o", ms=3, label=label)
        axes[1].plot(xs, [max(pts[x]) * 1e3 for x in xs], style, marker="o", ms=3, label=label)
    for ax, what in zip(axes, ("median", "maximum")):
        ax.set_yscale("log")
        ax.set_xlabel("flows")
        ax.set_ylabel(f"solve time [ms] ({what} over instances)")
        ax.set_title(f"small: 24 hosts, 6 switches, 3-5 slots ({what})")
        ax.grid(True, alpha=0.3, which="both")
        ax.legend(fontsize=7)
    name = f"{STEM}-small.png"
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, name), dpi=110)
    plt.close(fig)
    files.append(name)

    # Large: time per slots.
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for form, cbc, label in series:
        pts = {}
        for r in rows:
            if r.study == "large" and r.formulation == form:
                v = r.pulp_solve_s_median if cbc else r.time_s_median
                if v is not None:
                    pts.setdefault(r.slots, []).append(v)
        if pts:
            xs = sorted(pts)
            ax.plot(xs, [statistics.median(pts[x]) * 1e3 for x in xs], "--" if cbc else "-", marker="o", ms=3,
                    label=label)
    ax.set_yscale("log")
    ax.set_xlabel("slots")
    ax.set_ylabel("solve time [ms] (median over topologies)")
    ax.set_title("large: 200 hosts, 10 switches, 256 links, 300 flows")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=7)
    name = f"{STEM}-large.png"
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, name), dpi=110)
    plt.close(fig)
    files.append(name)

    # Quality against S/UR (paper Fig. 4c).
    ref = {(r.study, r.model, r.seed, r.flows, r.slots): r.scheduled for r in rows if r.formulation == "sur"}
    fig, ax = plt.subplots(figsize=(6, 4))
    for form in ("spr", "sfr", "greedy"):
        q = sorted(r.scheduled / ref[(r.study, r.model, r.seed, r.flows, r.slots)] for r in rows
                   if r.study == "small" and r.formulation == form and ref.get((r.study, r.model, r.seed, r.flows, r.slots)))
        if q:
            ax.step(q, [(i + 1) / len(q) for i in range(len(q))], where="post", label=LABEL[form])
    ax.set_xlabel("flows scheduled / S/UR optimum (small instances)")
    ax.set_ylabel("fraction of instances")
    ax.grid(True, alpha=0.3)
    ax.legend()
    name = f"{STEM}-quality.png"
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, name), dpi=110)
    plt.close(fig)
    files.append(name)
    return files


def summary_table(rows: list[Row]) -> list[str]:
    out = ["| size | solver | instances | median | max | proven optimal | CBC median | CBC max | CBC / ours (median, min) | meet target |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for study in ("small", "large"):
        for form in ("spr", "sfr", "sur", "greedy"):
            sel = [r for r in rows if r.study == study and r.formulation == form]
            if not sel:
                continue
            proven = f"{sum(r.proven_optimal for r in sel)}/{len(sel)}" if form != "greedy" else "n/a"
            cbc = [r for r in sel if r.pulp_solve_s_median is not None]
            cells = ["", "", "", ""]
            if cbc:
                ratios = [r.ratio for r in cbc if r.ratio is not None]
                cells = [f"{_ms(statistics.median(r.pulp_solve_s_median for r in cbc))} ms",  # type: ignore[misc]
                         f"{_ms(max(r.pulp_solve_s_median for r in cbc))} ms",  # type: ignore[type-var]
                         f"{statistics.median(ratios):.1f}x, {min(ratios):.1f}x",
                         f"{sum(bool(r.meets) for r in cbc)}/{len(cbc)}"]
            out.append(f"| {study} | {LABEL[form]} | {len(sel)} | {_ms(statistics.median(r.time_s_median for r in sel))} ms "
                       f"| {_ms(max(r.time_s_max for r in sel))} ms | {proven} | " + " | ".join(cells) + " |")
    return out


def instance_table(rows: list[Row], study: str) -> list[str]:
    by: dict[tuple[str, int, int, int], dict[str, Row]] = {}
    for r in rows:
        if r.study == study:
            by.setdefault((r.model, r.seed, r.flows, r.slots), {})[r.formulation] = r
    out = ["| model | seed | flows | slots | S/PR flows | S/PR ms | CBC ms | ratio | S/FR flows | S/FR ms | CBC ms | ratio | S/UR flows | S/UR ms | greedy flows |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def cell(r: Row | None) -> list[str]:
        if r is None:
            return ["", "", "", ""]
        flows = f"{r.scheduled}" + ("" if r.proven_optimal else f" (bound {r.upper_bound})")
        ratio = "" if r.ratio is None else f"{r.ratio:.1f}x" + ("" if r.meets else " **miss**")
        cbc = "" if r.pulp_solve_s_median is None else _ms(r.pulp_solve_s_median)
        if r.pulp_scheduled is not None and r.pulp_scheduled != r.scheduled:
            cbc += f" ({r.pulp_scheduled}, {r.pulp_status})"
        return [flows, _ms(r.time_s_median), cbc, ratio]

    for key in sorted(by, key=lambda k: (list(SMALL_MODELS).index(k[0]) if k[0] in SMALL_MODELS else 9, k[1], k[2], k[3])):
        d = by[key]
        sur = d.get("sur")
        sur_cells = ["", ""] if sur is None else [
            f"{sur.scheduled}" + ("" if sur.proven_optimal else f" (bound {sur.upper_bound})"), _ms(sur.time_s_median)]
        g = d.get("greedy")
        out.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | " + " | ".join(cell(d.get("spr")) + cell(d.get("sfr"))
                                                                              + sur_cells + [str(g.scheduled) if g else ""]) + " |")
    return out


def report(rows: list[Row], files: list[str], args: argparse.Namespace, wall_s: float, load: tuple[str, str]) -> str:
    cmd = " ".join(["perf/scheduler/scalability.py"] + sys.argv[1:])
    out = [
        "# Scheduler scalability against PuLP + CBC (seed 003 §7.2 on this machine)",
        "",
        f"Generated by `{cmd}` in {wall_s:.0f} s: repeats {args.repeats}, {args.seeds} topologies per small model, "
        f"{args.seeds_large} large topologies; {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, highspy {importlib.metadata.version('highspy')} (HiGHS, 1 thread), "
        f"ortools {importlib.metadata.version('ortools')} (CP-SAT, 1 worker), "
        f"PuLP {importlib.metadata.version('pulp')} with its bundled {cbc_version()} (1 thread). "
        f"Load average before / after: {load[0]} / {load[1]}. Raw data: `{STEM}.csv`.",
        "",
        "How it is measured: per instance, tob-schedule's S/PR and S/FR and the seed's plain formulations of the",
        "same models written with PuLP and solved by CBC (pt[l,k] of §5.3; t[i,k] of §5.4) run interleaved in one",
        "process, `repeats` times each, and the medians are compared. Ours is `solve_s` (minimum-hop path",
        "enumeration, model building, solving, inside the process; the verifier runs but is not timed). CBC's",
        "is PuLP's `prob.solve()` (MPS file written, CBC started, solution read), PuLP's model building",
        "excluded. Target (issue 23): proven optimal in at most max(CBC / 10, 50 ms). Where both prove an",
        "optimum the script asserts they are equal. S/UR and greedy run on the same instances (S/UR once",
        f"more only when its first run was under {args.sur_repeat_max_s:.0f} s). The machine has 2 cores and was shared",
        "with another engineer's builds and experiments, so single timings are noisy; the medians damp that",
        "but do not remove it.",
        "",
        "## Summary",
        "",
    ] + summary_table(rows)
    sur = {(r.study, r.model, r.seed, r.flows, r.slots): r.scheduled for r in rows if r.formulation == "sur"}
    out += ["", "## Quality", ""]
    for form in ("spr", "sfr", "greedy"):
        q = [r.scheduled / sur[(r.study, r.model, r.seed, r.flows, r.slots)] for r in rows
             if r.study == "small" and r.formulation == form and sur.get((r.study, r.model, r.seed, r.flows, r.slots))]
        if q:
            full = sum(1 for x in q if x >= 1.0) / len(q)
            out.append(f"- {LABEL[form]} / S/UR on the small instances: mean {statistics.mean(q):.3f}, min {min(q):.3f}, "
                       f"equal in {100 * full:.0f}% of {len(q)}.")
    out.append("- Paper (§7.2.1, 160 scenarios on RRG, ER and BA): S/PR 99% of S/UR on average and equal in 67%, "
               "S/FR 97% and 38%.")
    out += ["", "## Spread", ""] + spread_lines(rows)
    misses = [r for r in rows if r.meets is False]
    out += ["", "## Instances that miss the target", ""]
    if misses:
        out += ["Medians with the range over the repeats in brackets.", "",
                "| size | model | seed | flows | slots | solver | ours [ms] | CBC [ms] | target | over target |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for r in sorted(misses, key=lambda r: -(r.time_s_median / (r.target_s or 1))):
            out.append(f"| {r.study} | {r.model} | {r.seed} | {r.flows} | {r.slots} | {LABEL[r.formulation]} | "
                       f"{_ms(r.time_s_median)} ({_spread(r.time_s_min, r.time_s_max)}) | "
                       f"{_ms(r.pulp_solve_s_median)} ({_spread(r.pulp_solve_s_min, r.pulp_solve_s_max)}) | "
                       f"{_ms(r.target_s)} ms | {r.time_s_median / (r.target_s or 1):.1f}x |")
    else:
        out.append("None.")
    out += ["", "## Plots", ""] + [f"![{f}]({f})" for f in files]
    for study, title in (("small", "Small instances, per instance (times in ms, medians)"),
                         ("large", "Large instances, per instance (times in ms, medians)")):
        if any(r.study == study for r in rows):
            out += ["", f"## {title}", "", "ratio = CBC / ours; **miss** = not proven within the target.", ""]
            out += instance_table(rows, study)
    out.append("")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer flows and slots (a smoke run)")
    ap.add_argument("--sizes", default="small,large", help="comma list of small, large")
    ap.add_argument("--models", default=",".join(SMALL_MODELS), help="small topology models")
    ap.add_argument("--slots-small", default="3,4,5")
    ap.add_argument("--slots-large", default="5,10,20,30,40,50")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=1, help="topologies per small model")
    ap.add_argument("--seeds-large", type=int, default=2, help="large topologies")
    ap.add_argument("--sur-repeat-max-s", type=float, default=2.0,
                    help="S/UR is repeated only when its first run took less [s]")
    ap.add_argument("--no-pulp", action="store_true", help="skip PuLP + CBC")
    ap.add_argument("--out-dir", default=OUT_DIR)
    ap.add_argument("--progress-csv", default="", help="rewrite this CSV after every instance (partial results)")
    args = ap.parse_args()
    args.sizes = [s for s in args.sizes.split(",") if s]
    args.models = [m for m in args.models.split(",") if m]
    args.slots_small = [int(s) for s in args.slots_small.split(",")]
    args.slots_large = [int(s) for s in args.slots_large.split(",")]
    assert args.repeats >= 1 and all(m in SMALL_MODELS for m in args.models)
    if native.LIB is None:
        # The Python local searches are the compiled ones' specification, 10-25x slower: timing
        # them would not measure the solver users run.
        ap.error(f"tobsched's compiled local search is not loaded: {native.LOAD_ERROR}")
    os.makedirs(args.out_dir, exist_ok=True)
    load0 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    t0 = time.perf_counter()
    rows = run(args)
    load1 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    write_csv(rows, os.path.join(args.out_dir, f"{STEM}.csv"))
    files = plots(rows, args.out_dir)
    text = report(rows, files, args, time.perf_counter() - t0, (load0, load1))
    with open(os.path.join(args.out_dir, f"{STEM}.md"), "w") as fh:
        fh.write(text)
    print("\n".join(summary_table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
