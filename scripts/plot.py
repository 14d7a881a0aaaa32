#!/usr/bin/python3
"""Plots dpdk-tob experiment results as PNG (matplotlib from Debian's python3-matplotlib).

    scripts/plot.py latency DIR      DIR from perf/latency_experiment.py: latency CDFs and
                                     histograms per scenario, node 0's arrival offsets
    scripts/plot.py throughput DIR   DIR from perf/throughput_sweep.py: delivered rate and
                                     latency vs offered load, per series (engine)
    scripts/plot.py csv FILE...      dpdk-tob-load --out files: one latency CDF per file
    scripts/plot.py simloss DIR      DIR from perf/sim_loss_sweep.py: latency in cycles and
                                     otfp collision/recovery rate vs loss, mars vs otfp

Writes the PNGs next to the data (or to --out DIR) and prints their paths.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def latencies_ms(path: Path) -> list[float]:
    """Submit -> received latency of dpdk-tob-load's own messages in one --out CSV."""
    out = []
    with path.open() as f:
        for r in csv.DictReader(f):
            if int(r["load_node"]) >= 0:
                out.append((int(r["received_ns"]) - int(r["submit_ns"])) / 1e6)
    return out


def cdf(ax, values: list[float], label: str) -> None:
    if not values:
        return
    v = sorted(values)
    n = len(v)
    ax.plot(v, [(i + 1) / n for i in range(n)], label=label)


def plot_latency(d: Path, out: Path) -> list[Path]:
    results = json.loads((d / "results.json").read_text())
    written = []
    fig, ax = plt.subplots(figsize=(8, 5))
    fig2, axes = plt.subplots(len(results), 1, figsize=(8, 2.2 * len(results)), sharex=True, squeeze=False)
    for i, r in enumerate(results):
        name = r["scenario"]
        values: list[float] = []
        for f in sorted(d.glob(f"{name}-node*.csv")):
            values += latencies_ms(f)
        label = f"{r['transport']}, noise {r.get('noise_percent', r['noise_mbps'])}%"
        cdf(ax, values, label)
        a = axes[i][0]
        a.hist(values, bins=100, color=f"C{i}")
        a.set_ylabel("messages")
        a.set_title(label, fontsize=9)
    ax.set_xlabel("submit to delivery at the application (ms)")
    ax.set_ylabel("fraction of deliveries")
    ax.set_title("dpdk-tob delivery latency, 4 nodes, all nodes' deliveries")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    p = out / "latency-cdf.png"
    fig.savefig(p, dpi=110, bbox_inches="tight")
    written.append(p)
    axes[-1][0].set_xlabel("submit to delivery (ms)")
    fig2.tight_layout()
    p = out / "latency-hist.png"
    fig2.savefig(p, dpi=110, bbox_inches="tight")
    written.append(p)
    # Node 0's arrival offsets: the queueing on the loaded link.
    fig3, ax3 = plt.subplots(figsize=(8, 4))
    names = [f"{r['transport']}\n{r.get('noise_percent', r['noise_mbps'])}%" for r in results]
    p50 = [r.get("node0_arrival_ns", {}).get("p50_ns", 0) / 1e3 for r in results]
    p99 = [r.get("node0_arrival_ns", {}).get("p99_ns", 0) / 1e3 for r in results]
    x = range(len(results))
    ax3.bar([i - 0.2 for i in x], p50, width=0.4, label="p50")
    ax3.bar([i + 0.2 for i in x], p99, width=0.4, label="p99")
    ax3.set_xticks(list(x), names, fontsize=8)
    ax3.set_ylabel("arrival offset at node 0 (us)")
    ax3.set_title("one-way delay + queueing on the loaded link (node 0)")
    ax3.legend()
    ax3.grid(True, axis="y", alpha=0.3)
    p = out / "arrival-node0.png"
    fig3.savefig(p, dpi=110, bbox_inches="tight")
    written.append(p)
    return written


def plot_throughput(d: Path, out: Path) -> list[Path]:
    """Delivered vs offered load, and latency vs offered load (sorted by offered: above the knee
    the delivered rate is flat and a latency-vs-delivered curve would fold over itself)."""
    rows = json.loads((d / "sweep.json").read_text())
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5))
    top = 0.0
    # A series per (engine, message size); rows of sweeps before --sizes are 64 B.
    sizes = {r.get("size", 64) for r in rows}
    for series, size in sorted({(r["series"], r.get("size", 64)) for r in rows}):
        pts = sorted((r["offered_total"], r["throughput_msgs_s"], r["p50_ms"], r["p99_ms"]) for r in rows
                     if r["series"] == series and r.get("size", 64) == size)
        if len(sizes) > 1:
            series = f"{series} {size} B"
        top = max(top, max(p[0] for p in pts))
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=series)
        bx.plot([p[0] for p in pts], [p[2] for p in pts], marker="o", label=f"{series} p50")
        bx.plot([p[0] for p in pts], [p[3] for p in pts], marker="x", linestyle="--", label=f"{series} p99")
    ax.plot([0, top], [0, top], color="grey", linewidth=0.8, linestyle=":", label="delivered = offered")
    ax.set_xlabel("offered messages per second (cluster total)")
    ax.set_ylabel("delivered messages per second")
    bx.set_xlabel("offered messages per second (cluster total)")
    bx.set_ylabel("latency submit -> delivery (ms)")
    bx.set_yscale("log")
    for a in (ax, bx):
        a.grid(True, alpha=0.3)
        a.legend(fontsize=8)
    fig.suptitle("dpdk-tob throughput and latency vs offered load")
    p = out / "throughput-latency.png"
    fig.savefig(p, dpi=110, bbox_inches="tight")
    return [p]


def plot_simloss(d: Path, out: Path) -> list[Path]:
    rows = json.loads((d / "sim-loss.json").read_text())
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5))
    for order in sorted({r["order"] for r in rows}):
        pts = sorted((r["loss"] * 100, r["latency_p50_cycles"], r["latency_p99_cycles"], r["delivered_fraction"])
                     for r in rows if r["order"] == order)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{order} p50")
        ax.plot([p[0] for p in pts], [p[2] for p in pts], marker="x", linestyle="--", label=f"{order} p99")
        bx.plot([p[0] for p in pts], [100 * p[3] for p in pts], marker="s", linestyle=":",
                label=f"{order} messages delivered")
    otfp = sorted((r["loss"] * 100, 100 * r["collision_rate"], 100 * r["recovered_rate"]) for r in rows
                  if r["order"] == "otfp")
    if otfp:
        bx.plot([p[0] for p in otfp], [p[1] for p in otfp], marker="o", label="otfp collisions per instance")
        bx.plot([p[0] for p in otfp], [p[2] for p in otfp], marker="x", label="otfp instances recovered")
    ax.set_xlabel("loss per link and frame copy (%)")
    ax.set_ylabel("latency (cycles, from the start of the transmit cycle)")
    bx.set_xlabel("loss per link and frame copy (%)")
    bx.set_ylabel("%")
    for a in (ax, bx):
        a.grid(True, alpha=0.3)
        a.legend(fontsize=8)
    n = rows[0]
    fig.suptitle(f"simulator, {n['nodes']} nodes, {n['cycles']} cycles x {n['seeds']} seeds per point")
    p = out / "sim-loss.png"
    fig.savefig(p, dpi=110, bbox_inches="tight")
    return [p]


def plot_csv(files: list[Path], out: Path) -> list[Path]:
    fig, ax = plt.subplots(figsize=(8, 5))
    for f in files:
        cdf(ax, latencies_ms(f), f.stem)
    ax.set_xlabel("latency (ms)")
    ax.set_ylabel("fraction")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    p = out / "latency-cdf.png"
    fig.savefig(p, dpi=110, bbox_inches="tight")
    return [p]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["latency", "throughput", "csv", "simloss"])
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    try:
        if a.kind == "csv":
            written = plot_csv(a.paths, a.out or a.paths[0].parent)
        else:
            d = a.paths[0]
            plot = {"latency": plot_latency, "throughput": plot_throughput, "simloss": plot_simloss}[a.kind]
            written = plot(d, a.out or d)
    except (OSError, KeyError, ValueError) as e:
        print(f"plot: {e}", file=sys.stderr)
        return 1
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
