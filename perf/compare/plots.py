#!/usr/bin/python3
"""The comparison's plots from DIR/compare.json (perf/compare/compare.py calls it; Debian's
python3-matplotlib):

- latency-cdf-WORKLOAD.png: send-to-delivery latency CDF per system (paced, noise, failover),
  log scale, the tail magnified by plotting 1 - CDF;
- throughput.png: messages per second per system for every workload (saturation bars first);
- failover.png: detection time and longest delivery gap per trial, per system.

    plots.py DIR
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def latency_cdfs(doc: dict, out: Path) -> list[str]:
    made = []
    for wname in doc["meta"]["workloads"]:
        curves = []
        for s, d in doc["systems"].items():
            r = d["workloads"].get(wname)
            if not r or not r["trials"]:
                continue
            cdf = r["trials"][0].get("latency_us", {}).get("cdf")
            if cdf:
                curves.append((s, cdf))
        if not curves:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for s, cdf in curves:
            xs = [max(v, 1.0) / 1e3 for _, v in cdf]
            ys = [max(1 - q, 1e-5) for q, _ in cdf]
            ax.step(xs, ys, where="post", label=s)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("send to delivery at every member (ms)")
        ax.set_ylabel("fraction of deliveries slower (1 - CDF)")
        ax.set_title(f"latency, workload {wname} (first trial)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        name = f"latency-cdf-{wname}.png"
        fig.savefig(out / name, dpi=120)
        plt.close(fig)
        made.append(name)
    return made


def throughput(doc: dict, out: Path) -> list[str]:
    systems = list(doc["systems"])
    workloads = [w for w in doc["meta"]["workloads"] if any(w in d["workloads"] for d in doc["systems"].values())]
    if not systems or not workloads:
        return []
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(workloads) * len(systems) / 2), 4.2))
    width = 0.8 / len(systems)
    for i, s in enumerate(systems):
        vals, errs = [], [[], []]
        for w in workloads:
            r = doc["systems"][s]["workloads"].get(w)
            v = (r or {}).get("msgs_per_s") or 0
            lo, hi = (r or {}).get("msgs_per_s_range", [v, v])
            vals.append(v)
            errs[0].append(max(0, v - lo))
            errs[1].append(max(0, hi - v))
        xs = [k + i * width for k in range(len(workloads))]
        ax.bar(xs, vals, width, yerr=errs, label=s, capsize=2)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(workloads))])
    ax.set_xticklabels(workloads)
    ax.set_yscale("log")
    ax.set_ylabel("ordered messages per second at a member")
    ax.set_title("throughput (median over trials, range as error bar)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=120)
    plt.close(fig)
    return ["throughput.png"]


def failover(doc: dict, out: Path) -> list[str]:
    rows = [(s, d["workloads"]["failover"]) for s, d in doc["systems"].items() if "failover" in d["workloads"]]
    if not rows:
        return []
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, key, label in ((axes[0], "detection_ms", "detection (ms)"), (axes[1], "gap_ms", "longest delivery gap (ms)")):
        for i, (s, r) in enumerate(rows):
            vals = [v for v in r.get(key, []) if v is not None]
            ax.scatter([i] * len(vals), vals, alpha=0.7)
            if vals:
                ax.hlines(sorted(vals)[len(vals) // 2], i - 0.3, i + 0.3, colors="black")
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([s for s, _ in rows], rotation=20, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.grid(True, axis="y", which="both", alpha=0.3)
    fig.suptitle("kill -9 of a member: one point per trial, the bar is the median")
    fig.tight_layout()
    fig.savefig(out / "failover.png", dpi=120)
    plt.close(fig)
    return ["failover.png"]


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    out = Path(sys.argv[1])
    doc = json.loads((out / "compare.json").read_text())
    made = latency_cdfs(doc, out) + throughput(doc, out) + failover(doc, out)
    print(f"plots: {', '.join(made) if made else 'none'} in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
