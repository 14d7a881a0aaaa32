#!/usr/bin/env python3
"""Precision of in-band clock synchronisation against drift, cycle length and jitter (issue 19).

Runs `tob-sim` (mars, clock sync on) over a grid of drift bounds, cycle lengths and network
jitters, several seeds each, and prints a Markdown table: the derived precision bound, the worst
spread of the correct nodes' global clocks and the worst release skew over all seeds, and whether
every property held. The report is docs/experiments/clock.md.

    python3 perf/clock_sweep.py --tob-sim build/app/tob-sim/tob-sim [--seeds 20] [--cycles 500]
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass

TOTALS = re.compile(
    r"clock totals: (\d+) runs, precision bound (\d+) ns, worst spread (\d+) ns, "
    r"worst release skew (\d+) ns, (\d+) frames withheld, (\d+) self-shutdowns"
)


@dataclass
class Row:
    nodes: int
    cycle_ns: int
    drift_ppm: float
    jitter_ns: int
    byzantine: int
    bound_ns: int
    spread_ns: int
    skew_ns: int
    withheld: int
    passed: bool


def run(tob_sim: str, nodes: int, cycle_ns: int, drift: float, jitter: int, byzantine: int, seeds: int,
        cycles: int, sync: bool = True) -> Row:
    cmd = [tob_sim, "--nodes", str(nodes), "--cycles", str(cycles), "--cycle-ns", str(cycle_ns),
           "--drift-ppm", str(drift), "--jitter-ns", str(jitter), "--clock-offset-ns", "2000",
           "--stagger-ns", str(2 * cycle_ns), "--byzantine-clocks", str(byzantine),
           "--clock-sync", "on" if sync else "off", "--seeds", str(seeds), "--quiet"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    m = TOTALS.search(out.stdout)
    if m is None:
        sys.exit(f"clock_sweep: no totals from {' '.join(cmd)}:\n{out.stdout}\n{out.stderr}")
    return Row(nodes, cycle_ns, drift, jitter, byzantine, int(m.group(2)), int(m.group(3)), int(m.group(4)),
               int(m.group(5)), out.returncode == 0)


def us(ns: int) -> str:
    return f"{ns / 1000:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tob-sim", default="build/app/tob-sim/tob-sim")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--cycles", type=int, default=500)
    args = ap.parse_args()

    rows: list[Row] = []
    # Drift against cycle length, at the simulator's default jitter (10 us) with one Byzantine clock.
    for cycle_ns in (1_000_000, 4_000_000, 16_000_000):
        for drift in (0.0, 50.0, 200.0):
            rows.append(run(args.tob_sim, 4, cycle_ns, drift, 10_000, 1, args.seeds, args.cycles))
    # The reading error: jitter at 200 ppm and 1 ms cycles, and seven nodes with two Byzantine clocks.
    for jitter in (0, 2_000):
        rows.append(run(args.tob_sim, 4, 1_000_000, 200.0, jitter, 1, args.seeds, args.cycles))
    rows.append(run(args.tob_sim, 7, 1_750_000, 200.0, 10_000, 2, args.seeds, args.cycles))

    print(f"{args.seeds} seeds x {args.cycles} cycles each; offsets up to 2 us, starts staggered over two cycles, "
          "drift wandering by P/100 ppm a cycle; all figures in us")
    print()
    print("| nodes | cycle (ms) | drift (ppm) | jitter (us) | Byzantine | bound | worst spread | worst release skew | frames withheld | result |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r.nodes} | {r.cycle_ns / 1e6:g} | {r.drift_ppm:g} | {us(r.jitter_ns)} | {r.byzantine} | {us(r.bound_ns)} | "
              f"{us(r.spread_ns)} | {us(r.skew_ns)} | {r.withheld} | {'PASS' if r.passed else 'FAIL'} |")


if __name__ == "__main__":
    main()
