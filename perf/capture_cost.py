#!/usr/bin/env python3
"""What capturing a node with dpdk-dumpcap costs its lcores (docs/operations.md "Capturing and
reading frames").

    perf/capture_cost.py [--seconds S] [--cycle-ns C] [--gen-rate R] [--gen-size B]

A 3-node netns cluster (scripts/cluster.sh, namespaces capm-*), every node submitting R messages
of B bytes per second. Node 1's CPU time (utime + stime of its process, all its lcores and
threads) is measured over three windows of S seconds: before any capture (rte_pdump_init done,
no callbacks), while dpdk-dumpcap captures its port, and after the capture ended (callbacks
removed again); with frames and bytes through its port (/tob/stats) and what dpdk-dumpcap
reports captured and dropped. Prints one table; nothing is asserted.

    TOB_BUILD_DIR=/tmp/base/build perf/capture_cost.py --no-capture

measures three windows without any capture, e.g. with a daemon built from before packet capture
was initialised (no rte_pdump_init), for the idle comparison.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from tobclient import cluster, query  # noqa: E402

NET = "capm"
NODE = 1
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def port_counts() -> tuple[int, int]:
    s = query(f"{NET}-node{NODE}", "/tob/stats")["/tob/stats"]
    return int(s["rx_frames"]) + int(s["tx_frames"]), int(s["rx_bytes"]) + int(s["tx_bytes"])


def window(pid: int, seconds: float) -> dict[str, float]:
    c0, (f0, b0), t0 = cpu_s(pid), port_counts(), time.monotonic()
    time.sleep(seconds)
    c1, (f1, b1), t1 = cpu_s(pid), port_counts(), time.monotonic()
    dt = t1 - t0
    return {"cpu_ms_per_s": 1000 * (c1 - c0) / dt, "frames_per_s": (f1 - f0) / dt, "bytes_per_s": (b1 - b0) / dt}


def print_rows(a: argparse.Namespace, rows: list[tuple[str, dict[str, float]]]) -> None:
    print(f"node {NODE}, cycle {a.cycle_ns / 1e6:g} ms, 3 nodes x {a.gen_rate} msgs/s of {a.gen_size} B, "
          f"windows of {a.seconds:g} s")
    print(f"{'window':<26} {'CPU ms/s':>9} {'frames/s':>9} {'kB/s':>8}")
    for name, r in rows:
        print(f"{name:<26} {r['cpu_ms_per_s']:>9.1f} {r['frames_per_s']:>9.0f} {r['bytes_per_s'] / 1e3:>8.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--cycle-ns", type=int, default=20_000_000)
    ap.add_argument("--gen-rate", type=int, default=1000)
    ap.add_argument("--gen-size", type=int, default=64)
    ap.add_argument("--no-capture", action="store_true", help="three windows, no capture")
    a = ap.parse_args()
    run = Path(tempfile.mkdtemp(prefix="tob-capture-cost-"))
    env = dict(os.environ, TOB_NET=NET, TOB_RUN_DIR=str(run), TOB_CYCLE_NS=str(a.cycle_ns),
               TOB_DAEMON_ARGS=f"--gen-rate {a.gen_rate} --gen-size {a.gen_size}", TOB_STATUS_INTERVAL="0")
    cluster(env, "down", check=False)
    try:
        cluster(env, "up", "3")
        pid = int((run / f"node{NODE}.pid").read_text())
        time.sleep(2)  # past the joins
        rows = [("before any capture", window(pid, a.seconds))]
        if a.no_capture:
            rows += [("no capture (2)", window(pid, a.seconds)), ("no capture (3)", window(pid, a.seconds))]
            print_rows(a, rows)
            return 0
        pcap = run / "node1.pcapng"
        dumpcap = subprocess.Popen(["dpdk-dumpcap", f"--file-prefix={NET}-node{NODE}", "-i", "net_af_packet0",
                                    "-w", str(pcap), "-a", f"duration:{a.seconds + 4:g}", "-s", "2048"],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(2)  # dumpcap's EAL start and the enable request
        rows.append(("dpdk-dumpcap capturing", window(pid, a.seconds)))
        out, _ = dumpcap.communicate(timeout=60)
        captured = next((line for line in out.splitlines() if line.startswith("Packets received/dropped")), out[-200:])
        rows.append(("after the capture", window(pid, a.seconds)))
        print_rows(a, rows)
        print(f"dpdk-dumpcap: {captured.strip()}; file {pcap.stat().st_size / 1e6:.1f} MB")
    finally:
        cluster(env, "down", check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
