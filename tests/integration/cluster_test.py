#!/usr/bin/env python3
"""Integration test of dpdk-tob on a real local cluster (issue: the dpdk-tob daemon).

Four daemons in network namespaces on DPDK net_af_packet over veth and a Linux bridge
(scripts/cluster.sh). Checks, each reported as one case:
  - bad configurations and options fail with exit 2 and a message naming file, key and reason;
  - 4 nodes form one membership and deliver identical sequences;
  - kill -9 of a node is detected by every other node within two cycles, delivery continues;
  - the killed node restarts and is admitted again, and agrees with the others;
  - a malformed-frame injector on the bridge does not disturb the cluster, and every kind of
    bad frame is counted by the right drop counter;
  - SIGTERM stops every node cleanly (exit 0, statistics written, nothing lost in the logs);
  - 8958-byte frames on veths of MTU 9000 carry full batches in one order, a batch in two
    segments sent in one burst; at MTU 1500 every node refuses them at start, naming the
    interface and the MTU.
Ends with `N passed, M failed`. Needs root; cluster.sh and setup.sh install what is missing.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from tobclient import (  # noqa: E402
    cluster as run_cluster, common_window, order_conflicts, read_deliveries, read_events, telemetry)
from tobclient import wait_for as poll  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import check, run_suite  # noqa: E402

BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
DAEMON = BUILD / "app/dpdk-tob/dpdk-tob"
RUN = Path(os.environ.get("TOB_TEST_RUN_DIR", "/tmp/dpdk-tob-test"))
CYCLE_NS = 100_000_000
NODES = 4
ENV = dict(os.environ, TOB_RUN_DIR=str(RUN), TOB_CYCLE_NS=str(CYCLE_NS), TOB_BUILD_DIR=str(BUILD),
           TOB_DAEMON_ARGS="--gen-rate 20 --gen-size 48", TOB_STATUS_INTERVAL="2")



def cluster(*args: str, check_rc: bool = True) -> subprocess.CompletedProcess[str]:
    return run_cluster(ENV, *args, check=check_rc)


def wait_for(what: str, cond: Callable[[], bool], timeout_s: float) -> bool:
    return poll(cond, timeout_s, what)


def members(node: int) -> list[int]:
    return telemetry(node, "/tob/membership")["members"]


def deliveries(k: int) -> list[tuple[int, int]]:
    return read_deliveries(RUN / f"node{k}.deliveries")


def events(k: int):
    return read_events(RUN / f"node{k}.events")


def pid_of(k: int) -> int:
    return int((RUN / f"node{k}.pid").read_text())


# --- bad configuration and options -------------------------------------------------------------

GOOD_INI = """[cluster]
name = t
nodes = 4
multicast_mac = 01:1b:19:00:00:00
[timing]
cycle_ns = 40000000
[node.0]
mac = 02:00:00:00:00:01
[node.1]
mac = 02:00:00:00:00:02
[node.2]
mac = 02:00:00:00:00:03
[node.3]
mac = 02:00:00:00:00:04
"""


def run_daemon(ini: str | None, app_args: list[str], vdev: str = "net_null0",
               stop_after_s: float = 0) -> subprocess.CompletedProcess[str]:
    """One daemon on a virtual port; with stop_after_s, SIGTERM after that long (a clean stop)."""
    with tempfile.TemporaryDirectory() as d:
        args = [str(DAEMON), "--no-pci", "--file-prefix", "tob-badcfg", "-l", "0", "--log-level", "lib.*:error"]
        if vdev:
            args += ["--vdev", vdev]
        args.append("--")
        if ini is not None:
            path = Path(d) / "cluster.ini"
            path.write_text(ini)
            args += ["--config", str(path)]
        args += app_args
        if stop_after_s <= 0:
            return subprocess.run(args, text=True, capture_output=True, timeout=60)
        p = subprocess.Popen(args, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = p.communicate(timeout=stop_after_s)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=60)
        return subprocess.CompletedProcess(args, p.returncode, out, err)


def test_clean_stop() -> None:
    """SIGTERM: the statistics, then exit 0 (the hubs once outlived the EAL: a segfault at exit)."""
    p = run_daemon(GOOD_INI, ["--node-id", "1", "--idle", "sleep", "--status-interval", "0"], stop_after_s=3)
    ok = p.returncode == 0 and "dpdk-tob: stopped." in p.stdout and "dpdk-tob: statistics of node 1" in p.stdout
    check("a daemon stops on SIGTERM with exit 0 after printing its statistics", ok,
          f"rc {p.returncode}" + ("" if ok else f": {(p.stdout + p.stderr)[-300:]}"))


def test_bad_configuration() -> None:
    overlap = GOOD_INI  # every node gets slot 0..20 ms
    for k in range(4):
        overlap = overlap.replace(f"mac = 02:00:00:00:00:0{k + 1}\n",
                                  f"mac = 02:00:00:00:00:0{k + 1}\nslot_offset_ns = 0\nslot_length_ns = 20000000\n")
    cases = [
        ("unknown key", GOOD_INI.replace("cycle_ns", "cycle_nsec"), ["--node-id", "0"],
         ["cluster.ini", "[timing] cycle_nsec", "unknown key"]),
        ("bad MAC", GOOD_INI.replace("02:00:00:00:00:03", "02:00:00:00:00:zz"), ["--node-id", "0"],
         ["[node.2] mac", "not a unicast MAC"]),
        ("multicast node MAC", GOOD_INI.replace("02:00:00:00:00:03", "03:00:00:00:00:03"), ["--node-id", "0"],
         ["[node.2] mac"]),
        ("overlapping slots", overlap, ["--node-id", "0"], ["overlap"]),
        ("node id outside the cluster", GOOD_INI, ["--node-id", "7"], ["--node-id 7", "nodes = 4"]),
        ("missing required key", GOOD_INI.replace("nodes = 4\n", ""), ["--node-id", "0"],
         ["[cluster] nodes", "missing"]),
        ("bad --set", GOOD_INI, ["--node-id", "0", "--set", "timing.cycle_ns=12"], ["[timing] cycle_ns", "--set"]),
        ("unknown option", GOOD_INI, ["--node-id", "0", "--frobnicate"], ["unknown option '--frobnicate'"]),
        ("missing --config", None, ["--node-id", "0"], ["--config FILE is required"]),
        ("nic TX method without launch time", GOOD_INI, ["--node-id", "0", "--tx-method", "nic"],
         ["--tx-method nic", "SEND_ON_TIMESTAMP"]),
        ("no DPDK port", GOOD_INI, ["--node-id", "0"], ["port 0 does not exist"]),
    ]
    for name, ini, args, expect in cases:
        p = run_daemon(ini, args, vdev="" if name == "no DPDK port" else "net_null0")
        err = p.stderr
        ok = p.returncode == 2 and all(e in err for e in (expect or [])) and "statistics" not in p.stdout
        check(f"bad configuration is refused before sending: {name}", ok,
              "" if ok else f"rc {p.returncode}, stderr: {err.strip()[-300:]}")


# --- the running cluster -------------------------------------------------------------------------

def stall_excuse(seqs: list, since_ns: int, killed: int | None = None, stats: list[dict] | None = None,
                 until_ns: int | None = None) -> tuple[bool, str]:
    """Under mars a frame late or missed is a fault (seed 000): the node is removed and misses what
    is delivered until it is admitted again. This guest's hypervisor takes a vCPU away for 1-13 ms
    about once a second (more on some days), so a removal can happen in any phase. A difference
    between the sequences is excused when every node removed since `since_ns` counted timing
    failures of its own (frames late or missed, sent or received) and no two nodes order their
    common messages differently; returns (excused, why), why saying what refused it otherwise, so
    that a failed check in a CI log says why. `stats`: the nodes'
    /tob/stats taken before the cluster went down (else asked now); `until_ns`: when it began to go
    down (the nodes stopped one by one are removals of no fault of theirs)."""
    removed = sorted({e.node for k in range(NODES) for e in events(k)
                      if e.kind in ("removed", "self-shutdown") and since_ns < e.at_ns
                      and (until_ns is None or e.at_ns <= until_ns) and e.node != killed})
    if not removed:
        return False, "not excused: no removal or self-shutdown in the nodes' event logs"
    failures = {}
    for k in removed:
        try:
            s = stats[k] if stats is not None else telemetry(k, "/tob/stats")
        except RuntimeError as e:
            return False, f"not excused: removed {removed}, /tob/stats of node {k} unanswered ({e})"
        failures[k] = s["tx_missed"] + s["tx_late"] + s["rx_late"] + s["rx_early"]
    conflicts = order_conflicts(seqs)
    if not all(failures.values()) or conflicts:
        return False, (f"not excused: removed {removed}, their own timing failures {failures}, "
                       f"order conflicts {conflicts}")
    return True, f"nodes {removed} were removed after timing failures of their own {failures} (host stalls), one order"


def test_cluster() -> None:
    cluster("down", check_rc=False)
    t_up = time.clock_gettime_ns(time.CLOCK_TAI)
    cluster("up", str(NODES))
    formed = wait_for("membership {0,1,2,3} on every node",
                      lambda: all(members(k) == [0, 1, 2, 3] for k in range(NODES)), 30)
    check("4 nodes form one membership", formed)
    if not formed:
        return
    time.sleep(6)
    seqs = [deliveries(k) for k in range(NODES)]
    _, diff = common_window(seqs)
    n = min(len(s) for s in seqs)
    excused, why = stall_excuse(seqs, t_up) if diff else (False, "")
    check("4 nodes deliver identical sequences", (diff == "" or excused) and n >= 200,
          f"{n} deliveries on the shortest; {diff} {why}" if diff or n < 200
          else f"{n}+ deliveries each")
    stats = [telemetry(k, "/tob/stats") for k in range(NODES)]
    bad_timing = {k: (s["rx_early"], s["rx_late"], s["tx_missed"]) for k, s in enumerate(stats)}
    # Timing failures depend on the machine (a stall of this shared VM makes a frame late); they
    # are reported, not asserted. What must hold is that the membership stays whole but for the
    # nodes such a failure removed (stall_excuse).
    removals = [s["node_removals"] for s in stats]
    excused, why = stall_excuse(seqs, t_up) if any(removals) else (False, "")
    check("the membership stays whole while the cluster runs undisturbed, but for removals after timing failures",
          all(r == 0 for r in removals) or excused,
          f"removals per node {removals}; timing failures (early, late, missed) per node, reported: {bad_timing}"
          + (f"; {why}" if any(removals) else ""))

    # kill -9 of node 3: detected within two cycles by every other node.
    victim = NODES - 1
    pid = pid_of(victim)
    t_kill = time.clock_gettime_ns(time.CLOCK_TAI)
    os.kill(pid, signal.SIGKILL)
    kill_cycle = t_kill // CYCLE_NS
    detected = wait_for("removal of the killed node", lambda: all(
        any(e.kind == "removed" and e.node == victim and e.at_ns > t_kill for e in events(k))
        for k in range(victim)), 10)
    cluster("kill", str(victim))
    if detected:
        lat = [min(e.cycle for e in events(k) if e.kind == "removed" and e.node == victim and e.at_ns > t_kill)
               - kill_cycle for k in range(victim)]
        check("kill -9 is detected by every other node within two cycles", max(lat) <= 2,
              f"detection after {lat} cycles (kill in cycle {kill_cycle})")
    else:
        check("kill -9 is detected by every other node within two cycles", False, "no removal event")
    before = [len(deliveries(k)) for k in range(victim)]
    time.sleep(3)
    after = [len(deliveries(k)) for k in range(victim)]
    seqs = [deliveries(k) for k in range(victim)]
    _, diff = common_window(seqs)
    excused, why = stall_excuse(seqs, t_up, killed=victim) if diff else (False, "")
    check("delivery continues on the 3 survivors, in the same order",
          all(a - b >= 60 for a, b in zip(after, before)) and (diff == "" or excused),
          f"deliveries in 3 s: {[a - b for a, b in zip(after, before)]}; {diff} {why}")

    # Restart: the node rejoins and agrees with the others from then on.
    first_life = len(deliveries(victim))  # the restarted node appends to the same file
    t_restart = time.clock_gettime_ns(time.CLOCK_TAI)
    cluster("start", str(victim))
    rejoined = wait_for("node 3 admitted again", lambda: all(
        any(e.kind == "admitted" and e.node == victim and e.at_ns > t_restart for e in events(k))
        for k in range(NODES)), 20)
    check("the restarted node is admitted again by every node", rejoined)
    time.sleep(4)
    seqs = [deliveries(k) for k in range(NODES)]
    restarted = deliveries(victim)[first_life:]
    window = [s for s in seqs[:victim]] + [restarted]
    _, diff = common_window(window)
    excused, why = stall_excuse(window, t_restart) if diff else (False, "")
    check("the restarted node delivers the same sequence as the others", rejoined and len(restarted) > 50
          and (diff == "" or excused),
          f"{len(restarted)} deliveries since restart; {diff} {why}")

    test_injector()

    # Clean stop: SIGTERM, exit 0, files flushed, statistics written.
    pids = {k: pid_of(k) for k in range(NODES)}
    cluster("down")
    logs = [(RUN / f"node{k}.log").read_text(errors="replace") for k in range(NODES)]
    clean = all("dpdk-tob: stopped." in log and "statistics of node" in log for log in logs)
    stats_ok = all((RUN / f"node{k}.stats.json").exists() for k in range(NODES))
    lost = [json.loads((RUN / f"node{k}.stats.json").read_text())["control_log_ring_full"]
            if (RUN / f"node{k}.stats.json").exists() else -1 for k in range(NODES)]
    check("SIGTERM stops every node cleanly with its statistics", clean and stats_ok and lost == [0] * NODES,
          f"pids {list(pids.values())}, log records lost {lost}")
    all_files = "".join((RUN / f"node{k}.deliveries").read_text() for k in range(NODES))
    combined = RUN / "all.deliveries"
    combined.write_text(all_files)
    p = subprocess.run([sys.executable, str(REPO / "tests/sim/check_deliveries.py"), str(combined)],
                       text=True, capture_output=True)
    check("independent check of every delivery (integrity, FIFO, total order)", p.returncode == 0,
          p.stdout.strip())


def test_injector() -> None:
    inj_ns = "tob-inj"
    subprocess.run(["ip", "netns", "del", inj_ns], capture_output=True)
    cmds = [["ip", "netns", "add", inj_ns],
            ["ip", "link", "add", "inj0", "netns", inj_ns, "type", "veth", "peer", "name", "portinj", "netns", "tob-sw"],
            ["ip", "-n", inj_ns, "link", "set", "inj0", "up"],
            ["ip", "-n", "tob-sw", "link", "set", "portinj", "master", "tobbr0"],
            ["ip", "-n", "tob-sw", "link", "set", "portinj", "up"]]
    for c in cmds:
        subprocess.run(c, check=True, capture_output=True)
    before = [telemetry(k, "/tob/stats") for k in range(NODES)]
    t0 = time.clock_gettime_ns(time.CLOCK_TAI)
    p = subprocess.run(["ip", "netns", "exec", inj_ns, sys.executable, str(REPO / "tests/integration/inject_frames.py"),
                        "--iface", "inj0", "--cluster-id", "7", "--nodes", str(NODES), "--count-per-kind", "50",
                        "--rate", "1000", "--json", str(RUN / "inject.json")],
                       text=True, capture_output=True, timeout=120)
    if not check("the malformed-frame injector runs", p.returncode == 0, (p.stdout + p.stderr).strip()[-400:]):
        return
    time.sleep(2 * CYCLE_NS / 1e9)
    t1 = time.clock_gettime_ns(time.CLOCK_TAI)
    after = [telemetry(k, "/tob/stats") for k in range(NODES)]
    summary = json.loads((RUN / "inject.json").read_text())
    changes = [e for k in range(NODES) for e in events(k) if t0 <= e.at_ns <= t1 and e.kind in
               ("removed", "self-shutdown", "admitted")]
    grew = [after[k]["node_msgs_delivered"] - before[k]["node_msgs_delivered"] for k in range(NODES)]
    check("malformed frames do not disturb the cluster", not changes and min(grew) > 0,
          f"membership changes {[(e.kind, e.node) for e in changes]}, deliveries during injection {grew}")
    # Exact for counters only the injector can raise; at least for those that background traffic
    # (the bridge's own IPv6 chatter) or the injector's stale frames from each node's own id share.
    at_least = {"rx_late", "rx_own_frames", "rx_other_ethertype"}
    wrong = []
    for k in range(NODES):
        for counter, want in summary["expected_per_node"][str(k)].items():
            got = after[k][counter] - before[k][counter]
            if got < want or (got != want and counter not in at_least):
                wrong.append(f"node {k} {counter} +{got}, expected {want}")
    kinds = [kind for kind, info in summary["kinds"].items() if info["sent"] > 0]
    check("every kind of bad frame is counted by its drop counter on every node", not wrong,
          "; ".join(wrong[:6]) if wrong else f"{summary['total_sent']} frames of {len(kinds)} kinds")
    subprocess.run(["ip", "netns", "del", inj_ns], capture_output=True)


# --- jumbo frames (docs/operations.md "Jumbo frames") ------------------------------------------

JUMBO_FRAME = 8958


def test_jumbo() -> None:
    """8958-byte frames on af_packet over veths of MTU 9000; refused with the reason at MTU 1500."""
    cluster("down", check_rc=False)
    # The jumbo profile on veths left at 1500: every node must refuse to start, naming the MTU,
    # and `up` fails with the node and that reason.
    bad = dict(ENV, TOB_PROFILE="af_packet_jumbo", TOB_FRAME_BYTES=str(JUMBO_FRAME), TOB_MTU="1500")
    up = run_cluster(bad, "up", str(NODES), check=False)
    check("cluster.sh up fails when a daemon exits at start, naming the node and its reason",
          up.returncode != 0 and "is not ready: its daemon" in up.stderr and "kernel MTU of veth" in up.stderr,
          f"exit {up.returncode}: {up.stderr.strip()[-400:]}")
    pids = [p for p in (pid_of(k) for k in range(NODES)) if p]

    def gone(p: int) -> bool:
        try:
            os.kill(p, 0)
            return False
        except ProcessLookupError:
            return True
    exited = wait_for("every daemon to refuse the frame size", lambda: all(gone(p) for p in pids), 30)
    logs = [(RUN / f"node{k}.log").read_text(errors="replace") for k in range(NODES)]
    said = all(f"kernel MTU of veth{k} is 1500, below [limits] frame_bytes {JUMBO_FRAME}" in logs[k] for k in range(NODES))
    check("frames above the veths' MTU are refused at start with the interface and the MTU to set",
          exited and said, "" if exited and said else f"exited {exited}; node 0 log: {logs[0].strip()[-300:]}")
    cluster("down", check_rc=False)
    for k in range(NODES):
        (RUN / f"node{k}.log").unlink(missing_ok=True)

    # MTU 9000: full 8958-byte frames (a generator well above one frame's 105 messages per slot),
    # and with rate_mbps mars's batch of up to 256 messages in two segments, sent in one burst.
    # Deliveries files in the binary format here (docs/operations.md "Deliveries file"): the
    # checks below read them through tobclient like the text ones.
    good = dict(ENV, TOB_MTU="9000", TOB_FRAME_BYTES=str(JUMBO_FRAME), TOB_BATCH_MSGS="256", TOB_DELIVERIES_FORMAT="bin",
                TOB_CONFIG_EXTRA="rate_mbps = 1000", TOB_DAEMON_ARGS="--gen-rate 2000 --gen-size 64")
    t_up = time.clock_gettime_ns(time.CLOCK_TAI)
    run_cluster(good, "up", str(NODES), check=True)
    formed = wait_for("membership {0,1,2,3} with jumbo frames",
                      lambda: all(members(k) == [0, 1, 2, 3] for k in range(NODES)), 30)
    check("4 nodes with 8958-byte frames form one membership", formed)
    if not formed:
        return
    time.sleep(5)
    stats = [telemetry(k, "/tob/stats") for k in range(NODES)]
    t_down = time.clock_gettime_ns(time.CLOCK_TAI)
    run_cluster(good, "down", check=True)
    seqs = [deliveries(k) for k in range(NODES)]
    _, diff = common_window(seqs)
    n = min(len(s) for s in seqs)
    per_frame = [s["tx_bytes"] / max(1, s["tx_frames"]) for s in stats]
    binary = all((RUN / f"node{k}.deliveries").read_bytes()[:8] == b"TOBDLV\0\1" for k in range(NODES))
    # 8000 messages a second in all on two cores: a host stall removes a node now and then (a CI
    # run's node 3, sender omission, a cycle after the membership formed), excused as elsewhere;
    # the removals of the nodes stopped one by one at the end are not counted (another CI run's
    # nodes 0 and 1, after node 2's removal for its own 4 missed sends).
    excused, why = stall_excuse(seqs, t_up, stats=stats, until_ns=t_down) if diff else (False, "")
    check("jumbo frames carry more than a 1500-byte frame can, and every node delivers the same sequence (binary files)",
          binary and (diff == "" or excused) and n >= 2000 and min(per_frame) > 1500,
          f"{n} deliveries on the shortest, {[round(b) for b in per_frame]} bytes per frame sent; {diff} {why}")
    per_burst = [s["tx_frames"] / max(1, s["tx_bursts"]) for s in stats]
    check("a slot's segments leave in bursts: fewer tx_burst calls than frames on every node",
          all(s["tx_bursts"] < s["tx_frames"] for s in stats), f"frames per burst {[round(b, 2) for b in per_burst]}")


def main() -> int:
    if not DAEMON.exists():
        print(f"integration: {DAEMON} not built")
        print("0 passed, 1 failed")
        return 1

    def body() -> None:
        p = subprocess.run([sys.executable, str(REPO / "tests/integration/inject_frames.py"), "--self-test"],
                           text=True, capture_output=True, timeout=120)
        check("the injector's frame encoder matches the C++ golden frames (--self-test)", p.returncode == 0,
              (p.stdout + p.stderr).strip().splitlines()[-1] if (p.stdout + p.stderr).strip() else "")
        test_bad_configuration()
        test_clean_stop()
        test_cluster()
        test_jumbo()

    def teardown() -> None:
        cluster("down", check_rc=False)
        subprocess.run(["ip", "netns", "del", "tob-inj"], capture_output=True)

    return run_suite("integration", RUN, body, teardown)

if __name__ == "__main__":
    sys.exit(main())
