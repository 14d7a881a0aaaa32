#!/usr/bin/env python3
"""Does a saturating client ever hold a SCHED_FIFO daemon lcore? (docs/architecture.md "Dataplane",
shared rings and the lcores' priority.)

The netns cluster (scripts/cluster.sh, mars, 50 ms cycle, lcores at SCHED_FIFO 10) with node 0's
lcore pinned to CPU 0 and --clients dpdk-tob-load on node 0, also pinned to CPU 0, submitting as fast as
they can for --seconds: it meets backpressure all the time. A client preempted by the daemon inside
a multi-producer put into a pool the daemon also puts into leaves the daemon spinning on CPU 0
until the kernel's RT throttling lets the client finish (about 1 s); the daemon then misses its
turns (a scheduling-delay self-shutdown) and the client sees its heartbeat go stale
(TOB_ENODAEMON). Prints one line:

    priority inversion: node 0 turn lateness max X ms, scheduling-delay shutdowns N, client errors [E...] (...)

--build-dir runs another build (e.g. one from before the fix) for a before/after comparison.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from tobclient import cluster, read_events, telemetry, wait_for  # noqa: E402

NODES = 4


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30, help="how long the client saturates (1..600)")
    ap.add_argument("--build-dir", default=os.environ.get("TOB_BUILD_DIR", str(REPO / "build")))
    ap.add_argument("--clients", type=int, default=4, help="saturating clients on node 0, all on CPU 0 (1..8)")
    ap.add_argument("--out", default="/tmp/dpdk-tob-inversion")
    args = ap.parse_args()
    if not 1 <= args.seconds <= 600:
        ap.error("--seconds: 1..600")
    if not 1 <= args.clients <= 8:
        ap.error("--clients: 1..8")
    build = Path(args.build_dir)
    load = build / "app/dpdk-tob-load/dpdk-tob-load"
    if not load.exists():
        print(f"priority_inversion: {load} not built", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TOB_RUN_DIR=str(out / "run"), TOB_CYCLE_NS="50000000", TOB_BUILD_DIR=str(build),
               TOB_RT_PRIORITY="10", TOB_LCORES_0="0@0", TOB_STATUS_INTERVAL="10", TOB_ORDER="mars")
    cluster(env, "down", check=False)
    cluster(env, "up", str(NODES))
    try:
        if not wait_for(lambda: all(telemetry(k, "/tob/membership")["members"] == list(range(NODES))
                                    for k in range(NODES)), 60):
            print("priority_inversion: the cluster did not form", file=sys.stderr)
            return 1
        summaries = [out / f"client{i}.json" for i in range(args.clients)]
        for f in summaries:
            f.unlink(missing_ok=True)
        t0 = time.clock_gettime_ns(time.CLOCK_TAI)
        procs = []
        for i, f in enumerate(summaries):
            cmd = ["ip", "netns", "exec", "tob-n0", str(load), "--proc-type=secondary", "--file-prefix=tob-node0",
                   "--no-pci", "--lcores=0@0", "--log-level=lib.eal:error", "--", "--cluster", "netns", "--saturate",
                   "--size", "64", "--seed", str(i + 1), "--duration", str(args.seconds), "--drain", "2",
                   "--progress", "0", "--summary", str(f)]
            procs.append(subprocess.Popen(cmd, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        outputs = [p.communicate(timeout=args.seconds + 120)[0] for p in procs]
        stats = telemetry(0, "/tob/stats")
    finally:
        cluster(env, "down", check=False)
    clients = [json.loads(f.read_text()) if f.exists() else {} for f in summaries]
    errors = [c.get("error", "?") if c else (o.strip().splitlines() or ["no summary"])[-1]
              for c, o in zip(clients, outputs)]
    submitted = sum(c.get("submitted", 0) for c in clients)
    refused = sum(c.get("refused", 0) for c in clients)
    shutdowns = sum(1 for e in read_events(out / "run" / "node0.events")
                    if e.kind == "self-shutdown" and e.at_ns > t0 and "scheduling" in e.reason)
    lateness_ms = stats.get("control_turn_lateness_max_ns", 0) / 1e6
    print(f"priority inversion: node 0 turn lateness max {lateness_ms:.2f} ms, scheduling-delay shutdowns {shutdowns}, "
          f"client errors {errors} ({submitted} submitted, {refused} refused by {args.clients} clients; build {build})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
