#!/usr/bin/python3
"""The replicated inverted pendulum (seed 004 §V-A, app/tob-pendulum) on the netns cluster with a
Byzantine node, as a reproducible experiment.

One fresh 4-node cluster (scripts/cluster.sh) with an [ic] section (f = 1, one IC instance per
cycle, the pendulum's 19 keys under ivp0/ reduced by the fault-tolerant median). Node
--liar's daemon lies in its IC round data (--ic-fault lie: a wild value for every key it sends
or relays, the same to every receiver: its frames are multicast), and the replica on that node
writes values off by --lie-bias plus noise on top. One tob-pendulum replica per node, all starting at the same global instant, each reading the
agreed state published for its activation, running the PID controller, simulating the plant and
writing the next state for the next activation.

Writes under --out: the cluster's files, each replica's CSV and output, summary.json (per replica:
periods, successful periods, reads agreeing with the own copy, failures by reason, max angle,
whether the pole fell; whether the correct replicas' angle traces are identical) and, unless
--no-plot, pendulum.png (angle over time per replica, and the largest difference between
replicas). With --docs DIR, the plot and the summary also go there as ic-pendulum.png and
ic-pendulum.json (docs/experiments/ic-pendulum.md reports them).

    sudo perf/ic_pendulum_experiment.py --out /tmp/ic-pendulum --seconds 60 --docs docs/experiments
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from tobclient import cluster, telemetry, wait_for  # noqa: E402

NODES = 4


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="run directory (created; must not hold a running cluster)")
    ap.add_argument("--seconds", type=float, default=60, help="control run length (default 60)")
    ap.add_argument("--period-ms", type=int, default=100, help="control period (default 100)")
    ap.add_argument("--cycle-ms", type=float, default=25, help="TDMA cycle; 3 cycles must fit a period (default 25)")
    ap.add_argument("--liar", type=int, default=2, help="the Byzantine node (default 2; -1: none)")
    ap.add_argument("--lie-bias", type=float, default=0.5, help="the liar replica's bias on every value (default 0.5)")
    ap.add_argument("--lie-noise", type=float, default=0.2, help="... plus uniform noise in [-A, A] (default 0.2)")
    ap.add_argument("--build", type=Path, default=Path(os.environ.get("TOB_BUILD_DIR", REPO / "build")))
    ap.add_argument("--docs", type=Path, help="also write ic-pendulum.png and ic-pendulum.json into this directory")
    ap.add_argument("--no-plot", action="store_true")
    a = ap.parse_args(argv)
    if a.period_ms < 3 * a.cycle_ms:
        ap.error(f"--period-ms {a.period_ms} is shorter than the 3 cycles an f = 1 instance needs "
                 f"({3 * a.cycle_ms} ms with --cycle-ms {a.cycle_ms})")
    if not 0 < a.seconds <= 3600:
        ap.error("--seconds must be in (0, 3600]")
    if a.liar >= NODES:
        ap.error(f"--liar must be a node id below {NODES} or -1")
    return a


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def summarize(out: Path, liar: int) -> dict:
    replicas = {}
    traces = {}
    for k in range(NODES):
        text = (out / f"pendulum{k}.out").read_text(errors="replace")
        rows = read_csv(out / f"pendulum{k}.csv") if (out / f"pendulum{k}.csv").exists() else []
        traces[k] = [(int(r["period"]), float(r["angle_rad"])) for r in rows]
        reads = [r["read"] for r in rows[1:]]
        replicas[k] = {
            "liar": k == liar,
            "periods": len(rows),
            "periods_ok": sum(1 for r in rows if r["write"] == "ok" and r["read"] in ("ok", "init")),
            "reads_failed": {reason: reads.count(reason) for reason in sorted(set(reads)) if reason != "ok"},
            "agreed_equals_own": sum(int(r["agreed_equals_own"]) for r in rows),
            "max_angle_deg": max((abs(a) for _, a in traces[k]), default=0.0) * 57.29577951308232,
            "fell": "FELL" in text,
            "output": text.strip().splitlines()[-5:],
        }
    correct = [k for k in range(NODES) if k != liar]
    base = dict(traces[correct[0]])
    max_diff = 0.0
    for k in range(NODES):
        for p, a in traces[k]:
            if p in base:
                max_diff = max(max_diff, abs(a - base[p]))
    identical = all(traces[k] == traces[correct[0]] for k in correct)
    return {"replicas": replicas, "correct_traces_identical": identical, "max_angle_difference_rad": max_diff}


def plot(out: Path, png: Path, liar: int, period_ms: int) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(9, 6), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    traces = {}
    for k in range(NODES):
        rows = read_csv(out / f"pendulum{k}.csv")
        traces[k] = [(int(r["period"]) * period_ms / 1000, float(r["angle_rad"]) * 57.29577951308232) for r in rows]
        t, a = zip(*traces[k]) if traces[k] else ((), ())
        ax.plot(t, a, label=f"replica {k}{' (liar)' if k == liar else ''}", linewidth=2.5 - 0.5 * k, alpha=0.8)
    ax.set_ylabel("pole angle (deg)")
    ax.set_title("Replicated inverted pendulum on the key-value store, one Byzantine node (f = 1)")
    ax.legend()
    ax.grid(alpha=0.3)
    base = dict(traces[0 if liar != 0 else 1])
    for k in range(NODES):
        d = [(t, abs(a - base[t])) for t, a in traces[k] if t in base]
        if d:
            ax2.plot(*zip(*d), label=f"replica {k}")
    ax2.set_ylabel("|difference| (deg)")
    ax2.set_xlabel("time (s)")
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if os.geteuid() != 0:
        print("ic_pendulum_experiment: needs root (network namespaces, hugepages)", file=sys.stderr)
        return 1
    p = subprocess.run(["ip", "netns", "list"], text=True, capture_output=True)
    if any(line.split()[0] == "tob-sw" for line in p.stdout.splitlines() if line.strip()):
        print("ic_pendulum_experiment: a netns cluster is up (namespace tob-sw); stop it first", file=sys.stderr)
        return 1
    pendulum = a.build / "app/tob-pendulum/tob-pendulum"
    if not pendulum.exists():
        print(f"ic_pendulum_experiment: {pendulum} missing: build first (scripts/build.sh)", file=sys.stderr)
        return 1
    a.out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TOB_RUN_DIR=str(a.out), TOB_BUILD_DIR=str(a.build), TOB_CYCLE_NS=str(int(a.cycle_ms * 1e6)),
               TOB_CONFIG_TAIL="[ic]\\nf = 1\\nperiod_cycles = 1\\nkeys_per_period = 32\\nclass.ivp0/ = median-f64",
               TOB_STATUS_INTERVAL="5")
    if a.liar >= 0:
        env[f"TOB_NODE_ARGS_{a.liar}"] = "--ic-fault lie"
    try:
        cluster(env, "up", str(NODES))
        if not wait_for(lambda: all(telemetry(k, "/tob/membership")["members"] == list(range(NODES))
                                    for k in range(NODES)), 30, "the cluster forming"):
            print("ic_pendulum_experiment: the cluster did not form", file=sys.stderr)
            return 1
        start = (time.clock_gettime_ns(time.CLOCK_TAI) // (a.period_ms * 1_000_000) + 30) * a.period_ms * 1_000_000
        procs = []
        for k in range(NODES):
            cmd = ["ip", "netns", "exec", f"tob-n{k}", str(pendulum), "--proc-type=secondary", f"--file-prefix=tob-node{k}",
                   "--no-pci", "--log-level=lib.eal:error", "--", "--cluster", "netns", "--period-ms", str(a.period_ms),
                   "--seconds", str(a.seconds), "--start-ns", str(start), "--csv", str(a.out / f"pendulum{k}.csv"), "--quiet"]
            if k == a.liar:
                cmd += ["--lie", str(a.lie_bias), "--lie-noise", str(a.lie_noise)]
            procs.append(subprocess.Popen(cmd, stdout=(a.out / f"pendulum{k}.out").open("w"), stderr=subprocess.STDOUT))
        print(f"ic_pendulum_experiment: {NODES} replicas, {a.seconds:g} s of {a.period_ms} ms periods, "
              f"liar node {a.liar}", flush=True)
        for pr in procs:
            pr.wait(timeout=a.seconds + 120)
        ic_stats = {k: telemetry(k, "/tob/ic") for k in range(NODES)}
    finally:
        cluster(env, "down", check=False)
    s = summarize(a.out, a.liar)
    s["config"] = {"seconds": a.seconds, "period_ms": a.period_ms, "cycle_ms": a.cycle_ms, "liar": a.liar,
                   "lie_bias": a.lie_bias, "lie_noise": a.lie_noise}
    s["ic"] = {k: {f: v[f] for f in ("ic_instances_finished", "ic_publications_ok", "ic_publications_failed",
                                      "ic_groups_ignored", "ic_messages_default", "kv_mirror_mismatches")}
               for k, v in ic_stats.items()}
    (a.out / "summary.json").write_text(json.dumps(s, indent=1) + "\n")
    for k, r in s["replicas"].items():
        print(f"replica {k}{' (liar)' if r['liar'] else ''}: {r['periods_ok']}/{r['periods']} periods ok, "
              f"agreed = own {r['agreed_equals_own']}, failed reads {r['reads_failed'] or 'none'}, "
              f"max angle {r['max_angle_deg']:.2f} deg, {'FELL' if r['fell'] else 'up'}")
    print(f"correct replicas' traces identical: {s['correct_traces_identical']}, "
          f"largest angle difference {s['max_angle_difference_rad']:.3g} rad")
    png = (a.docs or a.out) / "ic-pendulum.png"
    if not a.no_plot:
        plot(a.out, png, a.liar, a.period_ms)
        print(f"plot: {png}")
    if a.docs:
        shutil.copy(a.out / "summary.json", a.docs / "ic-pendulum.json")
    ok = s["correct_traces_identical"] and not any(r["fell"] for r in s["replicas"].values())
    return 0 if ok else 3


if __name__ == "__main__":
    sys.exit(main())
