#!/usr/bin/env python3
"""Soak of the otfp engine in the simulator: many seeds of a random fault mix (docs/simulator.md
"otfp mixes", docs/experiments/otfp.md "Soak").

Runs `tob-sim --mix MIX --seed S --seeds CHUNK --quiet` over consecutive chunks of seeds in JOBS
processes at once, prints progress, and sums what the runs went through (crashes, stalls, torn
log tails, decisions, activations, gaps, worst latency). Every failing seed is printed with its
replay command as soon as its chunk ends. Writes one JSON with the totals and the failures.
Exit status 0 only when every seed passed.

    otfp_soak.py [--mix hard|liveness|chaos] [--seeds 1000000] [--first 1] [--chunk 5000]
                 [--jobs 2] [--out FILE.json]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
SIM = BUILD / "app/tob-sim/tob-sim"

TOTALS = re.compile(
    r"totals: (\d+) runs, (\d+) crashes, (\d+) stalls, (\d+) torn log tails, (\d+) decisions \((\d+) recovered\), "
    r"(\d+) collisions, (\d+) activations, (\d+) gaps, (\d+) messages delivered, worst latency ([\d.]+) cycles \(seed (\d+)\)")
FAIL = re.compile(r"^seed (\d+): FAIL (.*)$")


@dataclass
class Totals:
    runs: int = 0
    crashes: int = 0
    stalls: int = 0
    torn_log_tails: int = 0
    decisions: int = 0
    recovered: int = 0
    collisions: int = 0
    activations: int = 0
    gaps: int = 0
    messages_delivered: int = 0
    worst_latency_cycles: float = 0.0
    worst_latency_seed: int = 0
    failures: list[dict[str, object]] = field(default_factory=list)

    def add(self, out: str) -> None:
        m = TOTALS.search(out)
        if m is None:
            raise RuntimeError("tob-sim printed no totals line:\n" + out[-2000:])
        v = [int(x) for x in m.groups()[:10]]
        self.runs += v[0]
        self.crashes += v[1]
        self.stalls += v[2]
        self.torn_log_tails += v[3]
        self.decisions += v[4]
        self.recovered += v[5]
        self.collisions += v[6]
        self.activations += v[7]
        self.gaps += v[8]
        self.messages_delivered += v[9]
        if float(m.group(11)) > self.worst_latency_cycles:
            self.worst_latency_cycles = float(m.group(11))
            self.worst_latency_seed = int(m.group(12))


def run_chunk(mix: str, first: int, count: int) -> tuple[int, int, str, int]:
    p = subprocess.run([str(SIM), "--mix", mix, "--seed", str(first), "--seeds", str(count), "--quiet"],
                       capture_output=True, text=True, check=False)
    return first, count, p.stdout, p.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mix", default="hard", choices=["hard", "liveness", "chaos"])
    ap.add_argument("--seeds", type=int, default=1_000_000)
    ap.add_argument("--first", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=5000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    if a.seeds < 1 or a.chunk < 1 or a.jobs < 1:
        ap.error("--seeds, --chunk and --jobs must be at least 1")
    if not SIM.exists():
        ap.error(f"{SIM} not found: build first (bash scripts/build.sh) or set TOB_BUILD_DIR")
    chunks = [(s, min(a.chunk, a.first + a.seeds - s)) for s in range(a.first, a.first + a.seeds, a.chunk)]
    totals = Totals()
    t0 = time.monotonic()
    print(f"otfp soak: mix {a.mix}, seeds {a.first}..{a.first + a.seeds - 1}, {len(chunks)} chunks, {a.jobs} jobs",
          flush=True)
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = [pool.submit(run_chunk, a.mix, s, n) for s, n in chunks]
        for f in as_completed(futures):
            first, count, out, rc = f.result()
            totals.add(out)
            for line in out.splitlines():
                m = FAIL.match(line)
                if m:
                    failure = {"seed": int(m.group(1)), "violation": m.group(2),
                               "replay": f"tob-sim --mix {a.mix} --seed {m.group(1)}"}
                    totals.failures.append(failure)
                    print(f"FAIL seed {failure['seed']}: {failure['violation']}\n  replay: {failure['replay']}", flush=True)
            if rc not in (0, 1):
                raise RuntimeError(f"tob-sim exited {rc} on seeds {first}..{first + count - 1}")
            done = totals.runs
            rate = done / max(time.monotonic() - t0, 1e-9)
            left = (a.seeds - done) / rate if rate > 0 else 0
            print(f"  {done}/{a.seeds} seeds, {len(totals.failures)} failed, {rate:.0f} seeds/s, "
                  f"about {left / 60:.0f} min left", flush=True)
    secs = time.monotonic() - t0
    result = {"mix": a.mix, "first_seed": a.first, "seeds": a.seeds, "seconds": round(secs, 1),
              "passed": a.seeds - len(totals.failures), **asdict(totals)}
    if a.out is not None:
        a.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"otfp soak: {a.seeds} seeds of mix {a.mix} in {secs / 60:.1f} min: {len(totals.failures)} failed; "
          f"{totals.crashes} crashes, {totals.stalls} stalls, {totals.torn_log_tails} torn log tails, "
          f"{totals.decisions} decisions ({totals.recovered} recovered), {totals.activations} activations, "
          f"{totals.gaps} gaps, {totals.messages_delivered} messages delivered")
    print(f"result: {'PASS' if not totals.failures else 'FAIL'}")
    return 0 if not totals.failures else 1


if __name__ == "__main__":
    sys.exit(main())
