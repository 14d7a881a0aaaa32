#!/usr/bin/env python3
"""Throughput vs latency of dpdk-tob on the netns cluster: every node runs dpdk-tob-load at the
same offered rate (messages of each --sizes, Poisson); each step measures the delivered rate
(messages per second delivered at node 0, i.e. the cluster's total order, and the same in MB/s),
the slot frames each node sent per second, and the submit-to-delivery latency at every node. Above the knee the nodes' queues fill: submissions meet backpressure
(refused, retried) and latency grows with the queue, never with losses.

    throughput_sweep.py [--rates 25,100,...] [--sizes 64,1024] [--seconds S] [--cycle-ns C]
                        [--orders mars,otfp] [--series NAME] [--frame-bytes B] [--batch-msgs M]
                        [--rate-mbps R]

One line per step (others read it):
    ENGINE: offered X/s -> delivered Y/s, latency p50 A ms p99 B ms max C ms, refused N, size S B, M MB/s, F frames/s per node

and after each engine's steps, from the nodes' deliveries files (binary, --deliveries-format bin,
unless TOB_DELIVERIES_FORMAT says text), whether every node delivered the same sequence and
every message the load clients had accepted:
    order: identical at every node over N deliveries (per node [...]); submitted S: nothing lost
The exit status is non-zero when the order differs or a message is missing.

With --orders mars,otfp the engines are swept one after the other in the same invocation (same
rates, same machine state), each on a freshly started cluster; a series is named after its
engine unless --series is given.

Appends to OUT/sweep.json (plot: /usr/bin/python3 scripts/plot.py throughput OUT).
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
from tobclient import FILE_PREFIX, NETNS_PREFIX, cluster, deliveries_digest, telemetry, wait_for  # noqa: E402

BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
LOAD = BUILD / "app/dpdk-tob-load/dpdk-tob-load"
NODES = 4


def frames_tx() -> list[int]:
    return [telemetry(k, "/tob/stats")["node_frames_tx"] for k in range(NODES)]


def step(rate: float, size: int, args: argparse.Namespace, out: Path) -> dict:
    name = f"{args.series_name}-{rate:g}" + ("" if size == 64 else f"-{size}B")
    frames_before, t0 = frames_tx(), time.monotonic()
    procs = []
    for k in range(NODES):
        cmd = ["ip", "netns", "exec", f"{NETNS_PREFIX}{k}", str(LOAD), "--proc-type=secondary", f"--file-prefix={FILE_PREFIX}{k}",
               "--no-pci", "--log-level=lib.eal:error", "--", "--cluster", "netns", "--rate", str(rate),
               "--pattern", "poisson", "--size", str(size), "--seed", str(k + 1), "--duration", str(args.seconds),
               "--drain", "3", "--progress", "0", "--summary", str(out / f"{name}-node{k}.json")]
        procs.append(subprocess.Popen(cmd, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    for p in procs:
        p.communicate(timeout=args.seconds + 120)
    # Slot frames (every copy) per second over the whole step (start, sending, drain), per node.
    frames = [a - b for a, b in zip(frames_tx(), frames_before)]
    seconds = time.monotonic() - t0
    s = [json.loads((out / f"{name}-node{k}.json").read_text()) for k in range(NODES)]
    return {"series": args.series_name, "size": size, "offered_per_node": rate, "offered_total": rate * NODES,
            "submitted": sum(x["submitted"] for x in s), "refused": sum(x["refused"] for x in s),
            "throughput_msgs_s": s[0]["throughput_msgs_s"],
            "throughput_mb_s": s[0]["throughput_msgs_s"] * size / 1e6,
            "frames_per_s_per_node": sum(frames) / NODES / seconds,
            "p50_ms": max(x["latency_ns"]["p50"] for x in s) / 1e6,
            "p99_ms": max(x["latency_ns"]["p99"] for x in s) / 1e6,
            "max_ms": max(x["latency_ns"]["max"] for x in s) / 1e6,
            "errors": [x["error"] for x in s if x["error"] != 0]}


def sweep(env: dict, args: argparse.Namespace, out: Path, rows: list, sweep_path: Path) -> int:
    first = len(rows)
    cluster(env, "down", check=False)
    cluster(env, "up", str(NODES))
    try:
        if not wait_for(lambda: all(telemetry(k, "/tob/membership")["members"] == list(range(NODES))
                                    for k in range(NODES)), 60):
            print("the cluster did not form")
            return 1
        for size in args.size_list:
            for rate in (float(x) for x in args.rates.split(",")):
                r = step(rate, size, args, out)
                rows.append(r)
                sweep_path.write_text(json.dumps(rows, indent=1))
                print(f"{args.series_name}: offered {r['offered_total']:.0f}/s -> delivered {r['throughput_msgs_s']:.0f}/s, "
                      f"latency p50 {r['p50_ms']:.1f} ms p99 {r['p99_ms']:.1f} ms max {r['max_ms']:.1f} ms, "
                      f"refused {r['refused']}, size {size} B, {r['throughput_mb_s']:.2f} MB/s, "
                      f"{r['frames_per_s_per_node']:.0f} frames/s per node", flush=True)
        stats = [telemetry(k, "/tob/stats") for k in range(NODES)]
        print("timing failures during the sweep:", sum(s["rx_early"] + s["rx_late"] + s["tx_missed"] for s in stats),
              "membership changes:", sum(s["node_removals"] + s["node_self_shutdowns"] for s in stats))
    finally:
        cluster(env, "down", check=False)
    return check_order(out / "run", sum(r["submitted"] for r in rows[first:]))


def check_order(run: Path, submitted: int) -> int:
    """Every node's deliveries file (the cluster is down: complete) holds the same sequence, and
    every message the load clients had accepted (their `submitted`) is in it."""
    files = [run / f"node{k}.deliveries" for k in range(NODES)]
    counts = [deliveries_digest(f)[0] for f in files]
    n = min(counts)
    digests = {deliveries_digest(f, n)[1] for f in files}
    same = len(digests) == 1
    lost = submitted - n
    print(f"order: {'identical' if same else 'DIFFERENT'} at every node over {n} deliveries "
          f"(per node {counts}); submitted {submitted}: {'nothing lost' if lost <= 0 else f'{lost} NOT DELIVERED'}",
          flush=True)
    return 0 if same and lost <= 0 else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="25,100,200,300,400,600,1000")
    ap.add_argument("--sizes", default="64", help="message sizes in bytes, swept in turn (e.g. 64,1024)")
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--cycle-ns", type=int, default=40_000_000)
    ap.add_argument("--orders", default="mars", help="engines to sweep, in turn (mars, otfp)")
    ap.add_argument("--series", default="", help="series name (default: the engine)")
    ap.add_argument("--daemon-args", default="")
    ap.add_argument("--frame-bytes", type=int, default=0,
                    help="[limits] frame_bytes; above 1500 the veths get MTU 9000 and the af_packet_jumbo profile "
                         "(docs/operations.md \"Jumbo frames\"); 0: the default 1500")
    ap.add_argument("--batch-msgs", type=int, default=0, help="[limits] batch_msgs (0: the default 64)")
    ap.add_argument("--rate-mbps", type=int, default=0,
                    help="[timing] rate_mbps: slots carry as many frames as their airtime allows (mars: its batch in "
                         "segments; docs/configuration.md \"The slot budget\"); 0: one frame per copy")
    ap.add_argument("--out", default="/tmp/dpdk-tob-throughput")
    args = ap.parse_args()
    try:
        args.size_list = [int(x) for x in args.sizes.split(",")]
    except ValueError:
        ap.error(f"--sizes: not a list of integers: {args.sizes!r}")
    if args.frame_bytes and not 64 <= args.frame_bytes <= 9000:
        ap.error("--frame-bytes: 64..9000")
    if args.batch_msgs and not 1 <= args.batch_msgs <= 16384:
        ap.error("--batch-msgs: 1..16384 ([limits] batch_msgs)")
    if not 0 <= args.rate_mbps <= 400_000:
        ap.error("--rate-mbps: 0..400000")
    if any(not 24 <= x <= 1024 for x in args.size_list):
        ap.error("--sizes: every size must be within 24..1024 bytes (dpdk-tob-load's message and the payload limit)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sweep_path = out / "sweep.json"
    rows = json.loads(sweep_path.read_text()) if sweep_path.exists() else []
    for order in args.orders.split(","):
        if order not in ("mars", "otfp"):
            print(f"--orders: unknown engine {order!r} (mars, otfp)", file=sys.stderr)
            return 2
        args.series_name = args.series or order
        env = dict(os.environ, TOB_RUN_DIR=str(out / "run"), TOB_CYCLE_NS=str(args.cycle_ns), TOB_BUILD_DIR=str(BUILD),
                   TOB_DAEMON_ARGS=args.daemon_args, TOB_STATUS_INTERVAL="10", TOB_ORDER=order,
                   TOB_DELIVERIES_FORMAT=os.environ.get("TOB_DELIVERIES_FORMAT", "bin"))
        if args.frame_bytes:
            env.update(TOB_FRAME_BYTES=str(args.frame_bytes), TOB_MTU="9000" if args.frame_bytes > 1500 else "1500")
        if args.batch_msgs:
            env["TOB_BATCH_MSGS"] = str(args.batch_msgs)
        if args.rate_mbps:
            extra = os.environ.get("TOB_CONFIG_EXTRA", "")
            env["TOB_CONFIG_EXTRA"] = (extra + "\\n" if extra else "") + f"rate_mbps = {args.rate_mbps}"
        if sweep(env, args, out, rows, sweep_path) != 0:
            return 1
    print(f"appended to {sweep_path}; plot with: /usr/bin/python3 scripts/plot.py throughput {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
