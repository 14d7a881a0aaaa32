#!/usr/bin/env python3
"""Scalability study of tob-schedule (seed 003 §7.2) on this machine.

Small: Erdos-Renyi switch graphs, 24 hosts, 6 switches, 38 links; 20-110 flows; 3-5 slots;
       S/UR, S/PR, S/FR, greedy (and the relative quality of S/PR, S/FR, greedy against S/UR).
Large: Waxman switch graphs, 200 hosts, 10 switches, 256 links; 300 flows; 5-50 slots;
       S/PR, S/FR, greedy.
Ablation: the paper's plain S/UR model and the slot-indexed S/PR ILP without symmetry breaking,
       each with a time limit, against the decomposition used by tob-schedule.

Times are `Schedule.solve_s`: candidate paths, model building and solving (HiGHS, 1 thread),
without file I/O and without the verifier (which still runs on every schedule). Each point is
the median over --repeats runs in one process. Writes a CSV, PNG plots and a Markdown report.

Run: build/venv-sched/bin/python perf/scheduler/scalability.py [--quick]
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

import importlib.metadata

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tobsched.generate import TopologyParams, generate  # noqa: E402
from tobsched.highs_model import SolveOptions  # noqa: E402
from tobsched.network import Network, network_from_obj  # noqa: E402
from tobsched.paths import candidates  # noqa: E402
from tobsched.slot_ilp import solve_slot_ilp  # noqa: E402
from tobsched.solve import solve  # noqa: E402
from tobsched.sur import solve_sur_plain  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(REPO, "docs", "experiments")
STEM = "scheduler-scalability"


@dataclass
class Row:
    study: str
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


class Progress:
    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.t0 = time.perf_counter()

    def step(self, label: str) -> None:
        self.done += 1
        width = 30
        filled = int(width * self.done / max(1, self.total))
        elapsed = time.perf_counter() - self.t0
        bar = "#" * filled + "." * (width - filled)
        sys.stderr.write(f"\r[{bar}] {self.done}/{self.total} {elapsed:6.1f}s {label:<40}")
        sys.stderr.flush()
        if self.done == self.total:
            sys.stderr.write("\n")


def small_net(seed: int, flows: int, slots: int) -> Network:
    p = TopologyParams(model="er", hosts=24, switches=6, switch_links=14)
    return network_from_obj(generate(p, flows, slots, seed))


def large_net(seed: int, flows: int, slots: int) -> Network:
    p = TopologyParams(model="waxman", hosts=200, switches=10, links_total=256)
    return network_from_obj(generate(p, flows, slots, seed))


def measure(study: str, seed: int, net: Network, form: str, repeats: int, limit_s: float) -> Row:
    times: list[float] = []
    last = None
    for _ in range(repeats):
        s = solve(net, form, SolveOptions(time_limit_s=limit_s, threads=1))
        times.append(s.solve_s)
        if last is not None:
            assert s.scheduled == last.scheduled, "deterministic solver"
        last = s
    assert last is not None
    return Row(study, seed, len(net.flows), net.slots, len(net.links), form, last.scheduled,
               last.upper_bound, last.proven_optimal, statistics.median(times), max(times), repeats)


def run(args: argparse.Namespace) -> tuple[list[Row], list[dict[str, Any]]]:
    seeds_small = range(args.seeds)
    flows_small = [20, 50, 80, 110] if args.quick else list(range(20, 111, 10))
    slots_small = [3, 4, 5]
    seeds_large = range(args.seeds)
    slots_large = [5, 20, 50] if args.quick else [5, 10, 20, 30, 40, 50]
    forms_small = ["sur", "spr", "sfr", "greedy"]
    forms_large = ["spr", "sfr", "greedy"]
    ablation = [] if args.no_ablation else [
        ("plain S/UR", 0, 100, 5), ("plain S/UR", 1, 100, 5), ("plain S/UR", 0, 110, 3),
        ("S/PR slot ILP, no symmetry breaking", 0, 110, 3), ("S/PR slot ILP, symmetry broken", 0, 110, 3),
        ("S/PR slot ILP, no symmetry breaking", 0, 300, 20), ("S/PR slot ILP, symmetry broken", 0, 300, 20),
    ]
    total = (len(seeds_small) * len(flows_small) * len(slots_small) * len(forms_small)
             + len(seeds_large) * len(slots_large) * len(forms_large) + len(ablation))
    bar = Progress(total)
    rows: list[Row] = []
    for seed in seeds_small:
        for flows in flows_small:
            for slots in slots_small:
                net = small_net(seed, flows, slots)
                for form in forms_small:
                    rows.append(measure("small", seed, net, form, args.repeats, 60.0))
                    bar.step(f"small s{seed} {flows}f {slots}T {form}")
    for seed in seeds_large:
        for slots in slots_large:
            net = large_net(seed, 300, slots)
            for form in forms_large:
                rows.append(measure("large", seed, net, form, args.repeats, 60.0))
                bar.step(f"large s{seed} 300f {slots}T {form}")
    abl: list[dict[str, Any]] = []
    for what, seed, flows, slots in ablation:
        net = small_net(seed, flows, slots) if flows <= 110 else large_net(seed, flows, slots)
        limit = args.ablation_limit
        if what == "plain S/UR":
            got, bound, secs = solve_sur_plain(net, SolveOptions(time_limit_s=limit))
        else:
            cands = candidates(net, fixed=False)
            t0 = time.perf_counter()
            assign, res = solve_slot_ilp(len(net.flows), cands, slots, SolveOptions(time_limit_s=limit),
                                         symmetry_breaking="broken" in what)
            secs = time.perf_counter() - t0
            got = sum(a is not None for a in assign)
            bound = int(res.dual_bound + 1e-6) if res.x is not None else None
        ours = solve(net, "sur" if "S/UR" in what else "spr")
        abl.append({"what": what, "seed": seed, "flows": flows, "slots": slots, "limit_s": limit,
                    "scheduled": got, "bound": bound, "time_s": secs,
                    "ours_scheduled": ours.scheduled, "ours_time_s": ours.solve_s})
        bar.step(f"ablation {what[:22]} {flows}f {slots}T")
    return rows, abl


def write_csv(rows: list[Row], path: str) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(list(Row.__dataclass_fields__))
        for r in rows:
            w.writerow([getattr(r, k) if not isinstance(getattr(r, k), float) else f"{getattr(r, k):.6f}"
                        for k in Row.__dataclass_fields__])


LABEL = {"sur": "S/UR", "spr": "S/PR", "sfr": "S/FR", "greedy": "greedy"}


def plots(rows: list[Row], out_dir: str) -> list[str]:
    files = []
    # Small, 5 slots: time and flows scheduled vs number of flows (median over seeds).
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for form in LABEL:
        pts: dict[int, list[Row]] = {}
        for r in rows:
            if r.study == "small" and r.slots == 5 and r.formulation == form:
                pts.setdefault(r.flows, []).append(r)
        xs = sorted(pts)
        axes[0].plot(xs, [statistics.median(p.time_s_median for p in pts[x]) * 1e3 for x in xs], marker="o", label=LABEL[form])
        axes[1].plot(xs, [statistics.median(p.scheduled for p in pts[x]) for x in xs], marker="o", label=LABEL[form])
    axes[0].set_yscale("log")
    axes[0].set_xlabel("flows")
    axes[0].set_ylabel("solve time [ms] (median)")
    axes[0].set_title("24 hosts, 6 switches, 38 links, 5 slots")
    axes[1].set_xlabel("flows")
    axes[1].set_ylabel("flows scheduled (median over topologies)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend()
    name = f"{STEM}-small.png"
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, name), dpi=110)
    plt.close(fig)
    files.append(name)

    # Large: time per formulation vs slots.
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for form in ("spr", "sfr", "greedy"):
        pts = {}
        for r in rows:
            if r.study == "large" and r.formulation == form:
                pts.setdefault(r.slots, []).append(r)
        xs = sorted(pts)
        axes[0].plot(xs, [statistics.median(p.time_s_median for p in pts[x]) * 1e3 for x in xs], marker="o", label=LABEL[form])
        axes[1].plot(xs, [statistics.median(p.scheduled for p in pts[x]) for x in xs], marker="o", label=LABEL[form])
    axes[0].set_yscale("log")
    axes[0].set_xlabel("slots")
    axes[0].set_ylabel("solve time [ms] (median)")
    axes[0].set_title("200 hosts, 10 switches, 256 links, 300 flows")
    axes[1].set_xlabel("slots")
    axes[1].set_ylabel("flows scheduled (median)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend()
    name = f"{STEM}-large.png"
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, name), dpi=110)
    plt.close(fig)
    files.append(name)

    # Quality CDF against S/UR (paper Fig. 4c).
    ref = {(r.seed, r.flows, r.slots): r.scheduled for r in rows if r.study == "small" and r.formulation == "sur"}
    fig, ax = plt.subplots(figsize=(6, 4))
    for form in ("spr", "sfr", "greedy"):
        q = sorted(r.scheduled / ref[(r.seed, r.flows, r.slots)] for r in rows
                   if r.study == "small" and r.formulation == form and ref.get((r.seed, r.flows, r.slots)))
        if q:
            ax.step(q, [(i + 1) / len(q) for i in range(len(q))], where="post", label=LABEL[form])
    ax.set_xlabel("flows scheduled / S/UR optimum")
    ax.set_ylabel("fraction of scenarios")
    ax.grid(True, alpha=0.3)
    ax.legend()
    name = f"{STEM}-quality.png"
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, name), dpi=110)
    plt.close(fig)
    files.append(name)
    return files


def summary(rows: list[Row], study: str, form: str) -> dict[str, Any]:
    sel = [r for r in rows if r.study == study and r.formulation == form]
    if not sel:
        return {}
    times = [r.time_s_median for r in sel]
    return {
        "n": len(sel),
        "median_ms": statistics.median(times) * 1e3,
        "max_ms": max(r.time_s_max for r in sel) * 1e3,
        "proven": sum(r.proven_optimal for r in sel),
        "scheduled": sum(r.scheduled for r in sel),
    }


def report(rows: list[Row], abl: list[dict[str, Any]], files: list[str], args: argparse.Namespace, wall_s: float) -> str:
    out = [
        "# Scheduler scalability (seed 003 §7.2 on this machine)",
        "",
        f"Generated by `perf/scheduler/scalability.py{' --quick' if args.quick else ''}` "
        f"(repeats {args.repeats}, {args.seeds} topologies per size) in {wall_s:.0f} s on "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, highspy {importlib.metadata.version('highspy')} "
        "(HiGHS, 1 thread). Raw data: `scheduler-scalability.csv`.",
        "",
        "Times are `solve_s`: minimum-hop path enumeration, model building and solving; the verifier",
        "runs on every schedule but is not timed. Each instance is solved `repeats` times and the",
        "median is kept; tables give the median and the maximum over instances.",
        "",
        "## Summary per formulation",
        "",
        "| size | formulation | instances | median time | max time | proven optimal | flows scheduled (sum) |",
        "|---|---|---|---|---|---|---|",
    ]
    for study in ("small", "large"):
        for form in LABEL:
            s = summary(rows, study, form)
            if s:
                proven = f"{s['proven']}/{s['n']}" if form != "greedy" else "n/a"
                out.append(f"| {study} | {LABEL[form]} | {s['n']} | {s['median_ms']:.1f} ms | {s['max_ms']:.1f} ms "
                           f"| {proven} | {s['scheduled']} |")
    # Greedy quality against S/PR.
    spr = {(r.study, r.seed, r.flows, r.slots): r.scheduled for r in rows if r.formulation == "spr"}
    ratios = [r.scheduled / spr[(r.study, r.seed, r.flows, r.slots)] for r in rows
              if r.formulation == "greedy" and spr.get((r.study, r.seed, r.flows, r.slots))]
    sur = {(r.seed, r.flows, r.slots): r.scheduled for r in rows if r.study == "small" and r.formulation == "sur"}
    out += ["", "## Quality", ""]
    if ratios:
        out.append(f"- greedy / S/PR optimum: min {min(ratios):.3f}, median {statistics.median(ratios):.3f}, "
                   f"mean {statistics.mean(ratios):.3f} over {len(ratios)} instances.")
    for form in ("spr", "sfr"):
        q = [r.scheduled / sur[(r.seed, r.flows, r.slots)] for r in rows
             if r.study == "small" and r.formulation == form and sur.get((r.seed, r.flows, r.slots))]
        if q:
            full = sum(1 for x in q if x >= 1.0) / len(q)
            out.append(f"- {LABEL[form]} / S/UR optimum: mean {statistics.mean(q):.3f}, min {min(q):.3f}, "
                       f"equal to S/UR in {100 * full:.0f}% of {len(q)} scenarios (paper: S/PR 99% mean, 67% equal; "
                       "S/FR 97% mean, 38% equal).")
    out += ["", "## Small instances, 5 slots (paper Fig. 4d: ~100 flows, S/PR ~7 s, S/FR ~3 s, S/UR > 2 min on 16 cores)", "",
            "| flows | " + " | ".join(f"{LABEL[f]} time (median) | {LABEL[f]} flows" for f in LABEL) + " |",
            "|---|" + "---|---|" * len(LABEL)]
    flows_list = sorted({r.flows for r in rows if r.study == "small"})
    for fl in flows_list:
        cells = []
        for form in LABEL:
            sel = [r for r in rows if r.study == "small" and r.slots == 5 and r.flows == fl and r.formulation == form]
            if sel:
                cells.append(f"{statistics.median(r.time_s_median for r in sel) * 1e3:.1f} ms")
                cells.append(f"{statistics.median(r.scheduled for r in sel):.0f}")
            else:
                cells += ["", ""]
        out.append(f"| {fl} | " + " | ".join(cells) + " |")
    out += ["", "## Large instances, 300 flows (paper Fig. 4e: time per flow grows fast with slots for S/PR)", "",
            "| slots | " + " | ".join(f"{LABEL[f]} time (median) | {LABEL[f]} flows" for f in ("spr", "sfr", "greedy")) + " |",
            "|---|" + "---|---|" * 3]
    for sl in sorted({r.slots for r in rows if r.study == "large"}):
        cells = []
        for form in ("spr", "sfr", "greedy"):
            sel = [r for r in rows if r.study == "large" and r.slots == sl and r.formulation == form]
            cells.append(f"{statistics.median(r.time_s_median for r in sel) * 1e3:.1f} ms")
            cells.append(f"{statistics.median(r.scheduled for r in sel):.0f}")
        out.append(f"| {sl} | " + " | ".join(cells) + " |")
    if abl:
        out += ["", "## Ablation: plain models with a time limit against the decomposition", "",
                "A time equal to the limit means HiGHS stopped there (for plain S/UR possibly with the flow count "
                "already proven and only the path-length term open).", "",
                "| model | seed | flows | slots | limit | scheduled | bound | time | decomposition: scheduled | decomposition: time |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for a in abl:
            out.append(f"| {a['what']} | {a['seed']} | {a['flows']} | {a['slots']} | {a['limit_s']:.0f} s | {a['scheduled']} "
                       f"| {a['bound']} | {a['time_s']:.2f} s | {a['ours_scheduled']} | {a['ours_time_s'] * 1e3:.1f} ms |")
    out += ["", "## Plots", ""] + [f"![{f}]({f})" for f in files] + [""]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer points (a smoke run)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=3, help="topologies per size")
    ap.add_argument("--no-ablation", action="store_true")
    ap.add_argument("--ablation-limit", type=float, default=60.0, help="time limit of the plain models [s]")
    ap.add_argument("--out-dir", default=OUT_DIR)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    t0 = time.perf_counter()
    rows, abl = run(args)
    write_csv(rows, os.path.join(args.out_dir, f"{STEM}.csv"))
    files = plots(rows, args.out_dir)
    text = report(rows, abl, files, args, time.perf_counter() - t0)
    with open(os.path.join(args.out_dir, f"{STEM}.md"), "w") as fh:
        fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
