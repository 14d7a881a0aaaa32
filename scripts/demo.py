#!/usr/bin/env python3
"""The dpdk-tob demo (run through scripts/demo.sh, which installs and builds first).

A 4-node cluster in network namespaces on DPDK net_af_packet: form the membership, feed
messages to different nodes, show every node delivering them in the same order, crash a node
with kill -9 and watch the others remove it within two cycles, restart it, then print the
timing statistics and stop everything cleanly.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from tobclient import cluster as run_cluster, common_window, read_deliveries, read_events, telemetry, wait_for  # noqa: E402

RUN = Path(os.environ.get("TOB_RUN_DIR", "/tmp/dpdk-tob-demo"))
CYCLE_NS = int(os.environ.get("TOB_CYCLE_NS", "100000000"))
NODES = 4
TTY = sys.stdout.isatty()
ENV = dict(os.environ, TOB_RUN_DIR=str(RUN), TOB_CYCLE_NS=str(CYCLE_NS),
           TOB_DAEMON_ARGS=os.environ.get("TOB_DAEMON_ARGS", "--gen-rate 5 --gen-size 32"),
           TOB_STATUS_INTERVAL="2")


def bold(s: str) -> str:
    return f"\033[1m{s}\033[0m" if TTY else s


def dim(s: str) -> str:
    return f"\033[2m{s}\033[0m" if TTY else s


def step(title: str) -> None:
    print()
    print(bold(f"== {title}"))


def cluster(*args: str) -> str:
    try:
        return run_cluster(ENV, *args).stdout
    except RuntimeError as e:
        sys.exit(f"demo: {e}")


def us(ns: float) -> str:
    return f"{ns / 1000:9.1f}"


def main() -> int:
    cycle_ms = CYCLE_NS / 1e6
    print(bold("dpdk-tob demo: time-triggered total order broadcast on a real local cluster"))
    print("4 nodes, each a dpdk-tob process in its own network namespace, on DPDK net_af_packet over a")
    print(f"veth leg of a Linux bridge. TDMA cycle {cycle_ms:.0f} ms: 4 slots of {cycle_ms / 4:.0f} ms, "
          f"every frame sent twice.")
    print(dim("(generous timing: four daemons share this machine's two cores with the idle `sleep` policy;"))
    print(dim(" docs/operations.md explains the settings for dedicated cores)"))

    step("1. starting the cluster (scripts/cluster.sh up 4)")
    cluster("down")
    for line in cluster("up", str(NODES)).splitlines():
        print("  " + line)
    ok = wait_for(lambda: all(telemetry(k, "/tob/membership")["members"] == [0, 1, 2, 3] for k in range(NODES)), 30)
    if not ok:
        print("demo: the membership did not form within 30 s; logs are in", RUN)
        return 1
    for k in range(NODES):
        m = telemetry(k, "/tob/membership")
        print(f"  node {k}: {m['state']}, members {m['members']}, cycle {m['cycle']}")
    print(dim(f"  each node also submits 5 generated messages per second (\"n<node> #<count> ...\")"))

    step("2. feeding messages to different nodes at once (telemetry /tob/submit)")
    lines = [(0, "alice: shall we meet at noon?"), (2, "bob: noon works"), (1, "carol: make it 12:30"),
             (3, "dave: 12:30 it is"), (2, "bob: booking a table"), (0, "alice: thanks!")]
    for k, text in lines:
        telemetry(k, "/tob/submit," + text)
        print(f"  to node {k}: {text}")
    time.sleep(4 * CYCLE_NS / 1e9)
    # Deliveries read "cycle C from N msg M client 1: text".
    orders = [[(d.split(" from ")[1].split()[0], d.split(": ", 1)[1]) for d in telemetry(k, "/tob/deliveries,1")]
              for k in range(NODES)]
    print("  delivered on node 0:")
    for i, (sender, text) in enumerate(orders[0], 1):
        print(f"    {i}. {text:<34} {dim('(sent in node ' + sender + chr(39) + 's slot)')}")
    for k in range(1, NODES):
        print(f"  node {k}: " + ("the same messages in the same order" if orders[k] == orders[0]
                                 else f"DIFFERENT: {[t for _, t in orders[k]]}"))
    same = all(o == orders[0] for o in orders) and len(orders[0]) == len(lines)
    print(bold(f"  {'identical order on all 4 nodes' if same else 'ORDER DIFFERS'}") +
          " (the slots decide the order, not the submission:")
    print("  a node's messages leave in its own slot, and slots follow each other 0, 1, 2, 3)")

    step("3. crashing node 2 with kill -9")
    pid = int((RUN / "node2.pid").read_text())
    t_kill = time.clock_gettime_ns(time.CLOCK_TAI)
    os.kill(pid, signal.SIGKILL)
    cluster("kill", "2")
    seen = wait_for(lambda: all(any(e.kind == "removed" and e.node == 2 and e.at_ns > t_kill
                                    for e in read_events(RUN / f"node{k}.events")) for k in (0, 1, 3)), 10)
    for k in (0, 1, 3):
        for e in read_events(RUN / f"node{k}.events"):
            if e.kind == "removed" and e.node == 2 and e.at_ns > t_kill:
                print(f"  node {k}: removed node 2 ({e.reason}) at cycle {e.cycle}, "
                      f"{e.cycle - t_kill // CYCLE_NS} cycle(s) after the kill, "
                      f"{(e.at_ns - t_kill) / 1e6:.0f} ms")
                break
    if not seen:
        print("  not every node removed node 2 within 10 s")
    before = [len(read_deliveries(RUN / f"node{k}.deliveries")) for k in (0, 1, 3)]
    time.sleep(1.5)
    after = [len(read_deliveries(RUN / f"node{k}.deliveries")) for k in (0, 1, 3)]
    print(f"  the three survivors keep delivering: +{min(a - b for a, b in zip(after, before))} messages in 1.5 s")

    step("4. restarting node 2: it listens a cycle, announces itself and is admitted")
    t_start = time.clock_gettime_ns(time.CLOCK_TAI)
    cluster("start", "2")
    wait_for(lambda: all(any(e.kind == "admitted" and e.node == 2 and e.at_ns > t_start
                             for e in read_events(RUN / f"node{k}.events")) for k in range(NODES)), 20)
    for k in range(NODES):
        m = telemetry(k, "/tob/membership")
        print(f"  node {k}: {m['state']}, members {m['members']}")
    time.sleep(2)

    step("5. timing and delivery statistics (DPDK telemetry /tob/stats)")
    print(dim("  TX error: TSC at rte_eth_tx_burst minus the slot instant; RX offset: receive instant minus the"))
    print(dim("  sender's slot instant (one-way delay + polling); latency: submit to delivery. Microseconds."))
    print(f"  {'node':>4} {'frames tx':>9} {'tx err p50':>10} {'p99':>9} {'max':>9} {'rx off p50':>10} {'p99':>9}"
          f" {'latency p50':>11} {'p99':>9} {'delivered':>9} {'timing failures':>15}")
    for k in range(NODES):
        s = telemetry(k, "/tob/stats")
        failures = s["rx_early"] + s["rx_late"] + s["tx_missed"]
        print(f"  {k:>4} {s['tx_frames']:>9} {us(s['tx_error_spin_p50_ns']):>10} {us(s['tx_error_spin_p99_ns'])}"
              f" {us(s['tx_error_spin_max_ns'])} {us(s['rx_arrival_offset_p50_ns']):>10}"
              f" {us(s['rx_arrival_offset_p99_ns'])} {us(s['control_delivery_latency_p50_ns']):>11}"
              f" {us(s['control_delivery_latency_p99_ns'])} {s['node_msgs_delivered']:>9} {failures:>15}")
    print(dim("  latency is about 1.5 cycles by design: a message waits for its node's slot, then is delivered"))
    print(dim("  at that node's next membership point, one cycle later (seed 000, MARS)."))

    step("6. stopping cleanly (SIGTERM: each node goes silent, flushes its files, prints statistics)")
    cluster("down")
    for k in range(NODES):
        log = (RUN / f"node{k}.log").read_text(errors="replace").splitlines()
        last = [x for x in log if x.startswith("dpdk-tob: stopped.")]
        print(f"  node {k}: " + (last[-1][len("dpdk-tob: stopped. "):][:110] + "..." if last else "no stop line?"))

    step("7. independent check of every node's deliveries file")
    files = [RUN / f"node{k}.deliveries" for k in range(NODES)]
    combined = RUN / "all.deliveries"
    combined.write_text("".join(f.read_text() for f in files))
    p = subprocess.run([sys.executable, str(REPO / "tests/sim/check_deliveries.py"), str(combined)],
                       text=True, capture_output=True)
    print("  " + p.stdout.strip())
    seqs = [read_deliveries(f) for f in files]
    survivors = [seqs[k] for k in (0, 1, 3)]
    window, diff = common_window(survivors)
    print(f"  nodes 0, 1, 3 (never crashed): {len(window[0]) if window else 0} messages in the common window, "
          f"{'identical sequences' if not diff else diff}")
    print(dim(f"  files: {RUN}/node*.{{log,deliveries,events,stats.json}}"))
    return 0 if p.returncode == 0 and same and not diff else 1


if __name__ == "__main__":
    sys.exit(main())
