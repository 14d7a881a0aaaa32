#!/usr/bin/env python3
"""Timing experiments of the dpdk-tob daemon on the netns cluster (af_packet over veth).

  daemon_timing.py tx-error [--seconds S] [--cycle-ns C] [--load none|stress] [--out DIR]
      TX error (TSC at rte_eth_tx_burst minus the slot instant) of node 0 for the methods spin,
      sleep and hybrid side by side in one run: node 0 rotates through them per own turn
      (--tx-method spin,sleep,hybrid) with the poll idle policy, alone on the last CPU; the other
      three nodes run idle on CPU 0 (no messages, --idle sleep). --node0 sleep-rt runs node 0
      with --idle sleep --rt-priority 20 instead. --load stress adds `stress-ng --cpu 2`.
      Also reports the one-way arrival offset seen by the other nodes. Then, in the same run, the
      bare TSC deadline loop (perf/tsc_deadline.cc: sleep to 100 us before each deadline, spin
      on the TSC) on node 0's CPU with node 0's period and policy, for --bare-seconds, and the
      ratio of node 0's spin p99 to the loop's (issue 17: within 1.5x); --bare-seconds 0 skips it.

  daemon_timing.py slot-search --method M [--slots-us L1,L2,...] [--seconds S] [--out DIR]
      The seed 000 experiment of Fig. 7.2 on this machine: a 4-node cluster (all nodes
      --idle sleep --rt-priority 10, the only way four daemons share two cores) runs for S
      seconds at each slot length, longest first; a run fails at its first timing failure (a
      frame outside its reception window, a missed slot, or any membership change). Prints
      the smallest slot length that ran the whole time.

Results go to DIR (default docs/experiments) as CSV and to stdout as a table.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from tobclient import cluster, telemetry, wait_for  # noqa: E402

NODES = 4


def wait_members(timeout_s: float) -> bool:
    return wait_for(lambda: all(telemetry(k, "/tob/membership")["members"] == list(range(NODES))
                                for k in range(NODES)), timeout_s)


def base_env(run: Path, cycle_ns: int) -> dict[str, str]:
    return dict(os.environ, TOB_RUN_DIR=str(run), TOB_CYCLE_NS=str(cycle_ns), TOB_STATUS_INTERVAL="10")


def failures(stats: dict) -> int:
    return stats["rx_early"] + stats["rx_late"] + stats["tx_missed"] + stats["node_removals"] + \
        stats["node_self_shutdowns"]


def progress(text: str) -> None:
    print(f"\r{text:<100}", end="", flush=True)


def bare_loop(cpu: int, args: argparse.Namespace) -> dict:
    """perf/tsc_deadline.cc on node 0's CPU with node 0's period (one turn per cycle) and policy."""
    build = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
    cmd = [str(build / "perf/tsc-deadline"), "--cpu", str(cpu), "--seconds", str(args.bare_seconds),
           "--period-ns", str(args.cycle_ns),
           # node 0 polls (spins between instants) or sleeps to --tx-lead-us (100) before them
           "--lead-ns", str(args.cycle_ns) if args.node0 == "poll" else "100000"]
    if args.node0 == "sleep-rt":
        cmd += ["--rt", "20"]
    progress(f"bare TSC deadline loop on CPU {cpu}: {args.bare_seconds} s")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.bare_seconds + 60)
    print()
    if p.returncode != 0:
        raise SystemExit(f"tsc-deadline failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


def tx_error(args: argparse.Namespace) -> int:
    methods = args.methods.split(",")
    if not methods or any(m not in ("spin", "sleep", "hybrid") for m in methods) or len(set(methods)) != len(methods):
        raise SystemExit(f"--methods {args.methods!r}: a comma-separated list of spin, sleep, hybrid, each once")
    run = Path("/tmp/dpdk-tob-perf")
    env = base_env(run, args.cycle_ns)
    # Node 0 polls alone on the last CPU; the three idle nodes share CPU 0 (docs/architecture.md
    # "Facts of this machine": a spinning sender must not share its core with the others).
    last_cpu = os.cpu_count() - 1 if os.cpu_count() else 1
    policy = "--idle poll --rt-priority 0" if args.node0 == "poll" else "--idle sleep --rt-priority 20"
    env["TOB_NODE_ARGS_0"] = f"{policy} --tx-method {args.methods}"
    env["TOB_LCORES_0"] = f"0@{last_cpu}"
    env["TOB_LCORES"] = "0@0"
    # The other nodes' whole processes on the other CPUs: DPDK puts a process's control threads
    # (tob-io, telemetry) on the CPUs its own lcores leave free, which for them is node 0's, where
    # their I/O threads woke some 1,450 times a second and preempted node 0's spin (the TX error's
    # tail, traced 2026-11-25: docs/experiments/daemon-timing.md).
    others = ",".join(str(c) for c in range(last_cpu)) or "0"
    for k in range(1, NODES):
        env[f"TOB_CPUS_{k}"] = others
    cluster(env, "down")
    stress = None
    try:
        cluster(env, "up", str(NODES))
        if not wait_members(60):
            print("the cluster did not form")
            return 1
        if args.load == "stress":
            stress = subprocess.Popen(["stress-ng", "--cpu", "2", "--timeout", f"{args.seconds + 30}s", "--quiet"])
        t0 = time.monotonic()
        while time.monotonic() - t0 < args.seconds:
            progress(f"tx-error ({args.load}): {time.monotonic() - t0:5.0f} / {args.seconds} s")
            time.sleep(5)
        print()
        rows = []
        for method in args.methods.split(","):
            h = telemetry(0, f"/tob/histogram,tx_error_{method}")
            rows.append({"load": args.load, "node0": args.node0, "method": method, **h})
        arrivals = [telemetry(k, "/tob/histogram,rx_arrival_offset") for k in range(1, NODES)]
        s0 = telemetry(0, "/tob/stats")
        cluster(env, "down")
        bare = bare_loop(last_cpu, args) if args.bare_seconds > 0 else None
    finally:
        if stress is not None:
            stress.terminate()
            stress.wait()
        cluster(env, "down")
    print(f"TX error of node 0 ({args.node0}), {args.seconds} s, cycle {args.cycle_ns / 1e6:g} ms, "
          f"load {args.load} (us):")
    print(f"{'method':<8} {'frames':>7} {'p50':>8} {'p99':>8} {'p99.9':>8} {'max':>9}")
    for r in rows:
        print(f"{r['method']:<8} {r['count']:>7} {r['p50_ns'] / 1e3:8.2f} {r['p99_ns'] / 1e3:8.2f}"
              f" {r['p999_ns'] / 1e3:8.2f} {r['max_ns'] / 1e3:9.2f}")
    print(f"node 0: tx late (beyond precision) {s0['tx_late']}, missed {s0['tx_missed']}, largest gap between "
          f"two TSC reads in a spin {s0.get('tx_spin_gap_max_ns', 0) / 1e3:.1f} us")
    if bare is not None:
        rows.append({"load": args.load, "node0": args.node0, "method": "bare-loop", "count": bare["count"],
                     "p50_ns": bare["p50_ns"], "p99_ns": bare["p99_ns"], "p999_ns": bare["p999_ns"],
                     "max_ns": bare["max_ns"]})
        print(f"{'bare':<8} {bare['count']:>7} {bare['p50_ns'] / 1e3:8.2f} {bare['p99_ns'] / 1e3:8.2f}"
              f" {bare['p999_ns'] / 1e3:8.2f} {bare['max_ns'] / 1e3:9.2f}   (perf/tsc_deadline.cc on CPU {last_cpu}, "
              f"largest gap in a spin {bare['gap_max_ns'] / 1e3:.1f} us, {bare['gaps_over_1us']} gaps over 1 us)")
        spin = next((r for r in rows if r["method"] == "spin"), None)
        if spin is not None and bare["p99_ns"] > 0:
            print(f"spin p99 / bare loop p99: {spin['p99_ns'] / bare['p99_ns']:.2f} x (issue 17's target: at most 1.5 x)")
    for k, a in enumerate(arrivals, 1):
        print(f"arrival offset at node {k} (one-way + polling, all senders): p50 {a['p50_ns'] / 1e3:.1f} "
              f"p99 {a['p99_ns'] / 1e3:.1f} p99.9 {a['p999_ns'] / 1e3:.1f} max {a['max_ns'] / 1e3:.1f} us")
    out = Path(args.out) / "daemon-tx-error.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    new = not out.exists()
    with out.open("a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["date", "load", "node0", "method", "cycle_ns", "seconds", "frames", "p50_ns", "p99_ns",
                        "p999_ns", "max_ns"])
        for r in rows:
            w.writerow([time.strftime("%Y-%m-%d"), r["load"], r["node0"], r["method"], args.cycle_ns, args.seconds,
                        r["count"],
                        r["p50_ns"], r["p99_ns"], r["p999_ns"], r["max_ns"]])
    print(f"appended to {out}")
    return 0


def slot_search(args: argparse.Namespace) -> int:
    run = Path("/tmp/dpdk-tob-perf")
    slots = [int(x) for x in args.slots_us.split(",")]
    results = []
    for slot_us in sorted(slots, reverse=True):
        cycle_ns = slot_us * 1000 * NODES
        env = base_env(run, cycle_ns)
        env["TOB_DAEMON_ARGS"] = f"--tx-method {args.method} --gen-rate 20"
        cluster(env, "down")
        cluster(env, "up", str(NODES))
        formed = wait_members(60)
        t0 = time.monotonic()
        failed_at = None
        last: list[dict] = []
        try:
            # Counted from the moment all four are members: forming the first membership has its
            # own (expected) not-admitted shutdowns.
            base = [failures(telemetry(k, "/tob/stats")) for k in range(NODES)] if formed else []
            while formed and time.monotonic() - t0 < args.seconds:
                time.sleep(2)
                last = [telemetry(k, "/tob/stats") for k in range(NODES)]
                new = sum(failures(s) - b for s, b in zip(last, base))
                progress(f"{args.method} slot {slot_us} us: {time.monotonic() - t0:5.0f} / {args.seconds} s, "
                         f"failures {new}")
                if new > 0:
                    failed_at = time.monotonic() - t0
                    break
        finally:
            cluster(env, "down")
        print()
        detail = {k: {x: s[x] for x in ("rx_early", "rx_late", "tx_missed", "tx_late", "node_removals",
                                         "node_self_shutdowns")} for k, s in enumerate(last)}
        row = {"method": args.method, "slot_us": slot_us, "formed": formed, "seconds": args.seconds,
               "failed_after_s": None if failed_at is None else round(failed_at, 1),
               "tx_error_p999_us": max((s[f"tx_error_{args.method}_p999_ns"] for s in last), default=0) / 1e3,
               "tx_error_max_us": max((s[f"tx_error_{args.method}_max_ns"] for s in last), default=0) / 1e3,
               "detail": json.dumps(detail)}
        results.append(row)
        ok = formed and failed_at is None
        print(f"  slot {slot_us} us: {'ran ' + str(args.seconds) + ' s without a timing failure' if ok else 'FAILED after ' + str(row['failed_after_s']) + ' s' if formed else 'did not form'}")
        if not ok and args.stop_at_first_failure:
            break
    out = Path(args.out) / "daemon-slot-search.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    new = not out.exists()
    with out.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["date", *results[0].keys()])
        if new:
            w.writeheader()
        for r in results:
            w.writerow({"date": time.strftime("%Y-%m-%d"), **r})
    good = [r["slot_us"] for r in results if r["formed"] and r["failed_after_s"] is None]
    print(f"smallest slot without a timing failure for {args.method}: {min(good) if good else 'none'} us "
          f"({args.seconds} s runs); appended to {out}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tx-error")
    t.add_argument("--seconds", type=int, default=120)
    t.add_argument("--cycle-ns", type=int, default=20_000_000)
    t.add_argument("--load", choices=["none", "stress"], default="none")
    t.add_argument("--methods", default="spin,sleep,hybrid",
                   help="node 0's TX methods, one per turn in rotation (spin alone: no timer of its own on its CPU)")
    t.add_argument("--bare-seconds", type=int, default=30,
                   help="the bare TSC deadline loop's run after the cluster's (0: skip it)")
    t.add_argument("--node0", choices=["poll", "sleep-rt"], default="poll",
                   help="node 0's loop: poll (SCHED_OTHER, alone on its CPU) or sleep-rt (--idle sleep, SCHED_FIFO 20)")
    t.add_argument("--out", default=str(REPO / "docs/experiments"))
    s = sub.add_parser("slot-search")
    s.add_argument("--method", choices=["spin", "sleep", "hybrid"], required=True)
    s.add_argument("--slots-us", default="25000,10000,5000,2000,1000,500")
    s.add_argument("--seconds", type=int, default=600)
    s.add_argument("--stop-at-first-failure", action="store_true")
    s.add_argument("--out", default=str(REPO / "docs/experiments"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (network namespaces)")
        return 2
    return tx_error(args) if args.cmd == "tx-error" else slot_search(args)


if __name__ == "__main__":
    sys.exit(main())
