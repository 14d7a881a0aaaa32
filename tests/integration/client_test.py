#!/usr/bin/env python3
"""Integration test of include/tob.h and dpdk-tob-load on the netns cluster (issue: ring API).

Four daemons (scripts/cluster.sh) with small client rings, and six applications attached as
DPDK secondary processes through tob.h (dpdk-tob-load):
  A node 0 and B node 1 submit interleaved messages (40/s each), and every client waits for
  each delivery's release instant;
  C node 2 only receives; F node 2 detaches at 3 s and attaches again, resuming after the last
  seq it handled;
  D node 3 submits a little and stops polling for 3 s (a slow client); E node 3 only receives.
Checks: every client sees the same sequence; every message submitted is delivered exactly once;
D gets backpressure (refused submissions, lagging events) and still loses nothing, while E on
the same node is not held up; F resumes with no gap and no duplicate; the C API's error paths
(tob-api-test); the example application. Release skew across nodes is measured and reported,
not asserted. Ends with `N passed, M failed`.
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from tobclient import cluster, common_window, read_events, telemetry, wait_for  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import check, run_suite, secondary  # noqa: E402

BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
RUN = Path(os.environ.get("TOB_TEST_RUN_DIR", "/tmp/dpdk-tob-clients"))
LOAD = BUILD / "app/dpdk-tob-load/dpdk-tob-load"
NODES = 4
RING = 64
ENV = dict(os.environ, TOB_RUN_DIR=str(RUN), TOB_CYCLE_NS="100000000", TOB_BUILD_DIR=str(BUILD),
           TOB_STATUS_INTERVAL="2", TOB_CONFIG_TAIL=f"[clients]\\nmax = 4\\nring = {RING}\\nhistory = 4096")
CLUSTER = "netns"
DURATION = 8.0
DRAIN = 2.0
# Every application starts submitting, and times its knobs, at one global instant this far ahead:
# six secondaries attaching one after the other on two cores took seconds, and a client that
# attached late missed the first deliveries (a CI run: E's sequence did not start with D's) while
# one that attached early stopped before the last ones (C missed A's and B's last two; F, started
# after C, had them).
START_AHEAD_S = 6.0



def load(name: str, node: int, start_ns: int, *args: str) -> subprocess.Popen[str]:
    cmd = secondary(node, LOAD, "--cluster", CLUSTER, "--start-at", str(start_ns), "--duration", str(DURATION),
                    "--drain", str(DRAIN),
                    "--progress", "0", "--out", str(RUN / f"{name}.csv"), "--summary", str(RUN / f"{name}.json"),
                    "--label", name, *args)
    return subprocess.Popen(cmd, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


NODE_OF = {"A": 0, "B": 1, "C": 2, "F": 2, "D": 3, "E": 3}


def nodes_interrupted() -> set[int]:
    """Nodes removed from (or admitted again to) the membership after it first held all of them."""
    out: set[int] = set()
    full = "{" + ",".join(str(k) for k in range(NODES)) + "}"
    for k in range(NODES):
        formed = False
        for e in read_events(RUN / f"node{k}.events"):
            if formed and e.kind in ("removed", "admitted"):
                out.add(e.node)
            formed = formed or e.rest.strip() == full
    return out


def rows(name: str) -> list[dict[str, str]]:
    with (RUN / f"{name}.csv").open() as f:
        return list(csv.DictReader(f))


def test_api_errors() -> None:
    p = subprocess.run(secondary(0, BUILD / "tests/integration/tob-api-test", CLUSTER, "4", "1024"),
                       text=True, capture_output=True, timeout=60)
    for line in p.stdout.splitlines():
        if line.startswith(("PASS: ", "FAIL: ")):
            check("tob.h: " + line[6:].split(" -- ")[0], line.startswith("PASS"),
                  line.split(" -- ", 1)[1] if " -- " in line else "")
    if "passed" not in p.stdout:
        check("tob-api-test ran", False, (p.stdout + p.stderr)[-400:])


def test_example() -> None:
    p = subprocess.run(secondary(1, BUILD / "app/tob-example/tob-example", "--cluster", CLUSTER, "--count", "3",
                                 "--seconds", "1.5"), text=True, capture_output=True, timeout=60)
    got = [line for line in p.stdout.splitlines() if ": hello " in line]
    check("the example application submits and receives its messages", p.returncode == 0 and len(got) >= 3,
          f"rc {p.returncode}, {len(got)} of its deliveries printed" + ("" if p.returncode == 0 else p.stderr[-300:]))


def test_clients() -> None:
    start = time.clock_gettime_ns(time.CLOCK_TAI) + int(START_AHEAD_S * 1e9)  # global time: sync external
    procs = {
        "A": load("A", 0, start, "--rate", "40", "--release"),
        "B": load("B", 1, start, "--rate", "40", "--pattern", "poisson", "--release", "--size", "uniform:24:200"),
        "C": load("C", 2, start, "--release"),
        "F": load("F", 2, start, "--reattach-at", "3"),
        "D": load("D", 3, start, "--rate", "5", "--pause-poll-at", "2", "--pause-poll-for", "3"),
        "E": load("E", 3, start),
    }
    outputs = {}
    for name, p in procs.items():
        out, _ = p.communicate(timeout=DURATION + DRAIN + 60)
        outputs[name] = (p.returncode, out)
    failed = {n: o for n, (rc, o) in outputs.items() if rc != 0}
    late = [n for n, (_, o) in outputs.items() if "--start-at is" in o]
    if late:
        print(f"note: {' '.join(late)} attached after the common start instant", flush=True)
    if not check("six applications attach, run and detach cleanly", not failed,
                 "; ".join(f"{n}: {o.strip()[-300:]}" for n, o in failed.items())):
        return
    summary = {n: json.loads((RUN / f"{n}.json").read_text()) for n in procs}
    seqs = {n: [int(r["seq"]) for r in rows(n)] for n in procs}

    # One sequence for everybody (the common window of C, the steady receiver, spans the run). A
    # node that lost its membership for a while (a stall of the VM: removed, admitted again) does
    # not deliver what the others delivered meanwhile (MARS); its clients are then compared with
    # each other, and the others' with each other.
    interrupted = nodes_interrupted()
    steady = [n for n in procs if NODE_OF[n] not in interrupted]
    window, diff = common_window([[(0, s) for s in seqs[n]] for n in steady]) if len(steady) >= 3 else ([[]], "")
    for k in sorted(interrupted):
        on_k = [n for n in procs if NODE_OF[n] == k]
        _, d = common_window([[(0, s) for s in seqs[n]] for n in on_k]) if len(on_k) > 1 else ([], "")
        diff = diff or (f"node {k}: {d}" if d else "")
    note = f"; node(s) {sorted(interrupted)} left the membership for a while" if interrupted else ""
    check("every client on every node sees the same sequence",
          diff == "" and len(steady) >= 3 and len(window[0]) > 300,
          diff or f"{len(window[0])} deliveries in the common window of clients {' '.join(steady)}{note}")

    # The reference receiver: C, unless its node was interrupted (then one that was not).
    ref = next((n for n in ("C", "E", "A", "B") if NODE_OF[n] not in interrupted), "C")
    c_rows = rows(ref)
    senders = [int(r["load_node"]) for r in c_rows if int(r["load_node"]) in (0, 1)]
    switches = sum(1 for a, b in zip(senders, senders[1:]) if a != b)
    check("two clients on different nodes are interleaved in the total order", switches >= 20,
          f"{switches} changes of sender in {len(senders)} messages")

    # Exactly once: every message A, B and D submitted appears once at the reference receiver (and
    # at every client).
    # Under mars a node that shuts itself down (sender omission: its frames missed after a host
    # stall) reports each message it will not deliver as an `undelivered` event (its clients are
    # told); those may be missing, and no more (a local run: B submitted 334, 7 reported, 327 seen).
    undelivered = {k: sum(1 for e in read_events(RUN / f"node{k}.events") if e.kind == "undelivered")
                   for k in range(NODES)}
    lost = {}
    excused = {}
    for name, node in (("A", 0), ("B", 1), ("D", 3)):
        got = sorted(int(r["load_seq"]) for r in c_rows if int(r["load_node"]) == node)
        want = list(range(summary[name]["submitted"]))
        missing = len(want) - len(got)
        if got == want:
            continue
        text = f"submitted {len(want)}, delivered {len(got)}, distinct {len(set(got))}"
        if len(set(got)) == len(got) and set(got) <= set(want) and 0 < missing <= undelivered[node]:
            excused[name] = f"{text}, {undelivered[node]} reported undelivered by node {node}"
        else:
            lost[name] = text + (f", {undelivered[node]} reported undelivered" if undelivered[node] else "")
    check("every submitted message is delivered exactly once", not lost and summary["A"]["submitted"] > 250,
          str(lost) if lost else f"A {summary['A']['submitted']}, B {summary['B']['submitted']}, "
                                 f"D {summary['D']['submitted']} messages"
                                 + (f"; excused: {excused}" if excused else ""))

    d = summary["D"]
    check("a client that stops polling gets backpressure (refused submissions, lagging)",
          d["refused"] > 0 and d["lagging_events"] > 0,
          f"refused {d['refused']}, lagging events {d['lagging_events']}")
    # E polls throughout on the same node: D must have exactly what E has (its node's deliveries).
    # Either may stop a delivery or two after the other (a CI run: D 692, E 691): compare what both had.
    both = min(len(seqs["D"]), len(seqs["E"]))
    check("... and loses no delivery: after the pause it has every one", seqs["D"][:both] == seqs["E"][:both] and
          len(seqs["D"]) >= len(seqs["E"]) - 5, f"D {len(seqs['D'])} deliveries, E on the same node {len(seqs['E'])}")
    e_rows = rows("E")
    # E, on the same node, keeps receiving while D is paused (2..5 s after the start instant).
    during = [r for r in e_rows if 2.5e9 < int(r["received_ns"]) - start < 4.5e9]
    check("the other client on the slow client's node keeps receiving", len(during) > 60,
          f"{len(during)} deliveries to E while D was not polling")

    f = summary["F"]
    dup = len(seqs["F"]) - len(set(seqs["F"]))
    check("a client that detaches and attaches again resumes right after its last seq",
          f["reattaches"] == 1 and dup == 0 and seqs["F"] == seqs["C"][:len(seqs["F"])],
          f"reattaches {f['reattaches']}, {len(seqs['F'])} deliveries, duplicates {dup}")

    # Release skew across nodes (A node 0, B node 1, C node 2), reported, not asserted.
    woke: dict[int, list[int]] = {}
    for n in ("A", "B", "C"):
        for r in rows(n):
            woke.setdefault(int(r["seq"]), []).append(int(r["woke_ns"]))
    skews = sorted(max(v) - min(v) for v in woke.values() if len(v) == 3)
    if skews:
        q = lambda p: skews[min(len(skews) - 1, int(p * len(skews)))] / 1e3  # noqa: E731
        print(f"release skew across nodes 0, 1, 2 over {len(skews)} deliveries: p50 {q(0.5):.1f} us, "
              f"p99 {q(0.99):.1f} us, max {skews[-1] / 1e3:.1f} us (reported, not asserted)")
    lat = summary["C"]["latency_ns"]
    print(f"submit-to-delivery latency at node 2: p50 {lat['p50'] / 1e6:.1f} ms, p99 {lat['p99'] / 1e6:.1f} ms "
          f"(cycle 100 ms)")
    clients = telemetry(0, "/tob/clients")
    check("telemetry /tob/clients answers", "slots" in clients and clients["attaches"] >= 1, json.dumps(clients)[:200])


def main() -> int:
    def body() -> None:
        cluster(ENV, "down", check=False)
        cluster(ENV, "up", str(NODES))
        formed = wait_for(lambda: all(telemetry(k, "/tob/membership")["members"] == [0, 1, 2, 3]
                                      for k in range(NODES)), 30, "membership")
        if check("the cluster forms", formed):
            test_example()
            test_clients()
            # Last: its backpressure check fills the submit ring with 1 KB messages that the
            # cluster then takes seconds to deliver, which the clients above must not see.
            test_api_errors()

    return run_suite("clients", RUN, body, lambda: cluster(ENV, "down", check=False))

if __name__ == "__main__":
    sys.exit(main())
