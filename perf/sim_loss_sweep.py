#!/usr/bin/env python3
"""Latency in cycles and collision rate vs loss rate, `mars` vs `otfp`, on the simulator
(virtual time, so the figures are exact and repeatable: same seeds, same results).

For each engine, loss rate (per link and frame copy) and seed, runs
`tob-sim --order ENGINE --nodes N --cycles C --loss P --seed S --trace T` and reads:
  - latency in cycles of every delivery: delivery instant minus the start of the cycle in which
    the sender transmitted the message (the `cycle` of the trace's deliver lines), over the
    cycle length, pooled over seeds and nodes;
  - delivered fraction: messages delivered by at least one node over messages submitted;
  - otfp: instances decided, fast vs recovered, collisions (fast ballots without a fast quorum);
  - mars: removals and self-shutdowns (mars leaves its fault hypothesis above ~1% loss);
  - the property verdict (`result: PASS|FAIL`).
Writes OUT/sim-loss.csv and OUT/sim-loss.json; plot: /usr/bin/python3 scripts/plot.py simloss OUT.

    sim_loss_sweep.py [--losses 0,0.01,...] [--seeds 10] [--nodes 4] [--cycles 300] [--out DIR]
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
SIM = BUILD / "app/tob-sim/tob-sim"


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def run(order: str, loss: float, seed: int, args: argparse.Namespace) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".trace") as t:
        cmd = [str(SIM), "--order", order, "--nodes", str(args.nodes), "--cycles", str(args.cycles), "--loss",
               str(loss), "--seed", str(seed), "--load", str(args.load), "--trace", t.name]
        if args.cycle_ns:
            cmd += ["--cycle-ns", str(args.cycle_ns)]
        p = subprocess.run(cmd, text=True, capture_output=True, timeout=600)
        out = p.stdout
        m = re.search(r"cycles of (\d+) ns", out)
        if not m:
            raise RuntimeError(f"{' '.join(cmd)}: unexpected output:\n{out}{p.stderr}")
        cycle_ns = int(m.group(1))
        lat = []
        with open(t.name) as f:
            for line in f:
                parts = line.split()
                # `<ns> node N deliver sender S cycle C msg M`
                if len(parts) >= 9 and parts[3] == "deliver":
                    lat.append((int(parts[0]) - int(parts[7]) * cycle_ns) / cycle_ns)
    msgs = re.search(r"messages: (\d+) submitted, \d+ refused.*?, \d+ sent, (\d+) delivered", out)
    row = {"order": order, "loss": loss, "seed": seed, "cycle_ns": cycle_ns,
           "submitted": int(msgs.group(1)), "delivered": int(msgs.group(2)),
           "pass": "result: PASS" in out, "latencies": lat}
    o = re.search(r"otfp: (\d+) instance decisions \((\d+) fast, (\d+) recovered.*?\), (\d+) collisions", out)
    if o:
        row.update(decided=int(o.group(1)), fast=int(o.group(2)), recovered=int(o.group(3)),
                   collisions=int(o.group(4)))
    mb = re.search(r"membership: (\d+) admissions, (\d+) removals, (\d+) self-shutdowns", out)
    if mb:
        row.update(removals=int(mb.group(2)), self_shutdowns=int(mb.group(3)))
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--losses", default="0,0.005,0.01,0.02,0.05,0.1,0.2")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--cycles", type=int, default=300)
    ap.add_argument("--cycle-ns", type=int, default=0)
    ap.add_argument("--load", type=float, default=2)
    ap.add_argument("--orders", default="mars,otfp")
    ap.add_argument("--out", default="/tmp/dpdk-tob-sim-loss")
    args = ap.parse_args()
    if not SIM.exists():
        print(f"{SIM}: not built (scripts/build.sh)", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = []
    for order in args.orders.split(","):
        for loss in (float(x) for x in args.losses.split(",")):
            rows = [run(order, loss, s, args) for s in range(1, args.seeds + 1)]
            lat = [x for r in rows for x in r["latencies"]]
            sub = sum(r["submitted"] for r in rows)
            s = {"order": order, "loss": loss, "seeds": len(rows), "nodes": args.nodes, "cycles": args.cycles,
                 "passed": sum(r["pass"] for r in rows), "deliveries": len(lat),
                 "delivered_fraction": sum(r["delivered"] for r in rows) / sub if sub else 0.0,
                 "latency_p50_cycles": percentile(lat, 0.5), "latency_p99_cycles": percentile(lat, 0.99),
                 "latency_max_cycles": max(lat) if lat else float("nan")}
            if order == "otfp":
                decided = sum(r.get("decided", 0) for r in rows)
                s.update(decided=decided, recovered=sum(r.get("recovered", 0) for r in rows),
                         collisions=sum(r.get("collisions", 0) for r in rows),
                         collision_rate=sum(r.get("collisions", 0) for r in rows) / decided if decided else 0.0,
                         recovered_rate=sum(r.get("recovered", 0) for r in rows) / decided if decided else 0.0)
            else:
                s.update(removals=sum(r.get("removals", 0) for r in rows),
                         self_shutdowns=sum(r.get("self_shutdowns", 0) for r in rows))
            summary.append(s)
            extra = (f"collisions {s['collision_rate']:.2%} recovered {s['recovered_rate']:.2%}" if order == "otfp"
                     else f"removals {s['removals']} self-shutdowns {s['self_shutdowns']}")
            print(f"{order} loss {loss:<6g} pass {s['passed']}/{s['seeds']} delivered {s['delivered_fraction']:.1%} "
                  f"latency p50 {s['latency_p50_cycles']:.2f} p99 {s['latency_p99_cycles']:.2f} "
                  f"max {s['latency_max_cycles']:.2f} cycles, {extra}", flush=True)
    (out / "sim-loss.json").write_text(json.dumps(summary, indent=1))
    keys = list(dict.fromkeys(k for s in summary for k in s))
    with (out / "sim-loss.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(summary)
    print(f"wrote {out / 'sim-loss.csv'}; plot with: /usr/bin/python3 scripts/plot.py simloss {out}")
    return 0 if all(s["passed"] == s["seeds"] for s in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
