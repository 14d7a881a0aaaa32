#!/usr/bin/env python3
"""Integration test of `--order otfp` on the netns cluster (issue: On-Time Fast Paxos).

Four daemons (scripts/cluster.sh, TOB_ORDER=otfp, acceptor logs with durability sync), every
node dropping 5% of the cluster frames it receives (`--drop-rx 0.05`, the loss test knob), each
generating a fixed number of messages. Checks, each reported as one case:
  - otfp without a [storage] path is refused (exit 2, names the key);
  - the 4 nodes hear each other and deliver identical sequences despite the loss; lost frames are
    recovered by retransmission (counters);
  - kill -9 of the coordinator (node 0): the survivors keep deciding and delivering, in one order;
  - the killed node's acceptor log gets a damaged tail appended (a torn write); on restart the
    node cuts it off, replays the rest, catches up and delivers the same sequence as the others;
  - exactly-once: every message of the nodes that stayed correct is delivered exactly once by
    every one of them; no node delivers anything twice; the independent checker agrees;
  - telemetry: instances decided (fast and recovered), collisions, retransmissions, window,
    log fsync latency; SIGTERM stops every node cleanly;
  - slots of several frames ([timing] rate_mbps, docs/protocol-otfp.md "A slot in several
    frames"): batches of about ten segments per copy under the same loss, delivered exactly once
    in one order, missing segments served again.
Ends with `N passed, M failed`. Needs root.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster_test import GOOD_INI, run_daemon  # noqa: E402
from harness import check, run_suite  # noqa: E402
from tobclient import Msg, cluster as run_cluster, common_window, order_conflicts, read_deliveries, telemetry  # noqa: E402
from tobclient import wait_for  # noqa: E402

BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
DAEMON = BUILD / "app/dpdk-tob/dpdk-tob"
RUN = Path(os.environ.get("TOB_TEST_RUN_DIR", "/tmp/dpdk-tob-otfp-test"))
CYCLE_NS = 100_000_000
NODES = 4
GEN_RATE = 20
GEN_COUNT = 700  # 35 s of load per node: the whole scenario runs while they generate
LOSS = 0.05


def stats(k: int) -> dict:
    return telemetry(k, "/tob/stats")


class OtfpCluster:
    """The netns cluster with `--order otfp` (scripts/cluster.sh), shared by the otfp tests: acceptor
    logs with durability sync, every node dropping `loss` of the cluster frames it receives and
    generating `gen_count` messages at GEN_RATE; the nodes' files under `run`."""

    def __init__(self, run: Path, loss: float, gen_count: int = GEN_COUNT) -> None:
        self.run = run
        self.env = dict(os.environ, TOB_RUN_DIR=str(run), TOB_CYCLE_NS=str(CYCLE_NS), TOB_BUILD_DIR=str(BUILD),
                        TOB_ORDER="otfp", TOB_DURABILITY="sync", TOB_STATUS_INTERVAL="2",
                        TOB_DAEMON_ARGS=f"--gen-rate {GEN_RATE} --gen-size 48 --gen-count {gen_count} --drop-rx {loss}")

    def __call__(self, *args: str, check_rc: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """scripts/cluster.sh ARGS (with this cluster's environment, or `env`)."""
        return run_cluster(env or self.env, *args, check=check_rc)

    def deliveries(self, k: int) -> list[Msg]:
        return read_deliveries(self.run / f"node{k}.deliveries")

    def pid_of(self, k: int) -> int:
        return int((self.run / f"node{k}.pid").read_text())

    def delivered_once(self, correct: list[int], count: int) -> tuple[dict[int, int], list[str]]:
        """Exactly-once for the generators of `correct` (nodes that never crashed): waits until each
        generated its `count` messages and every one of them delivered all the others submitted.
        Returns the submitted counts and each (node, sender) pair whose delivered count differs."""
        # node_msgs_submitted is published with the status line, control_generated at once: wait
        # for both, or the count read may be one status interval old.
        wait_for(lambda: all(stats(k)["control_generated"] >= count and stats(k)["node_msgs_submitted"] >= count
                             for k in correct), 60, "generators done")
        submitted = {k: stats(k)["node_msgs_submitted"] for k in correct}

        def complete() -> bool:
            return all(sum(1 for s, _ in self.deliveries(j) if s == k) >= submitted[k] for j in correct for k in correct)

        wait_for(complete, 20, "every message of the correct nodes delivered")
        time.sleep(1)
        wrong = []
        for j in correct:
            per = Counter(s for s, _ in set(self.deliveries(j)))
            for k in correct:
                if per[k] != submitted[k]:
                    wrong.append(f"node {j} delivered {per[k]} of node {k}'s {submitted[k]}")
        return submitted, wrong

    def independent_check(self, nodes: list[int]) -> subprocess.CompletedProcess[str]:
        """tests/sim/check_deliveries.py (integrity, total order; not FIFO) on these nodes' files."""
        combined = self.run / "all.deliveries"
        combined.write_text("".join((self.run / f"node{k}.deliveries").read_text() for k in nodes))
        return subprocess.run([sys.executable, str(REPO / "tests/sim/check_deliveries.py"), "--no-fifo", str(combined)],
                              text=True, capture_output=True)


CLUSTER = OtfpCluster(RUN, LOSS)
cluster, deliveries, pid_of = CLUSTER, CLUSTER.deliveries, CLUSTER.pid_of


def crc32c(data: bytes) -> int:
    """CRC32C (Castagnoli), as the acceptor log's records carry it."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def test_missing_storage() -> None:
    ini = GOOD_INI.replace("nodes = 4\n", "nodes = 4\norder = otfp\n")
    p = run_daemon(ini, ["--node-id", "0"])
    ok = p.returncode == 2 and "[storage] path" in p.stderr and "missing" in p.stderr
    check("otfp without an acceptor log path is refused", ok, "" if ok else f"rc {p.returncode}: {p.stderr[-300:]}")
    ini += "[storage]\npath = /nonexistent-dir/acceptor.log\n"
    p = run_daemon(ini, ["--node-id", "0"])
    ok = p.returncode == 2 and "/nonexistent-dir/acceptor.log" in p.stderr
    check("an acceptor log that cannot be created is refused", ok,
          "" if ok else f"rc {p.returncode}: {p.stderr[-300:]}")
    # A log written before the log had a format record (format 1: a promise record first, with
    # the old ballot numbering): refused with what to do, not replayed with the wrong ballots.
    with tempfile.TemporaryDirectory() as d:
        old = Path(d) / "acceptor-0.log"
        body = (0x100).to_bytes(4, "big")
        head = bytes([1]) + len(body).to_bytes(2, "big") + body
        old.write_bytes(head + crc32c(head).to_bytes(4, "big"))
        ini_old = GOOD_INI.replace("nodes = 4\n", "nodes = 4\norder = otfp\n") + f"[storage]\npath = {old}\n"
        p = run_daemon(ini_old, ["--node-id", "0"])
        ok = p.returncode == 2 and "older dpdk-tob" in p.stderr and "remove their acceptor logs" in p.stderr
        check("an acceptor log of an older format is refused with what to do", ok,
              "" if ok else f"rc {p.returncode}: {p.stderr[-300:]}")


def growing(nodes: list[int], seconds: float) -> list[int]:
    before = [len(deliveries(k)) for k in nodes]
    time.sleep(seconds)
    return [len(deliveries(k)) - b for k, b in zip(nodes, before)]


def test_cluster() -> None:
    cluster("down", check_rc=False)
    cluster("up", str(NODES))
    heard = wait_for(lambda: all(telemetry(k, "/tob/membership")["members"] == list(range(NODES)) for k in range(NODES)),
                     30, "every node hearing all 4")
    check("4 otfp nodes hear each other", heard)
    if not heard:
        return
    info = telemetry(0, "/tob/info")
    check("telemetry reports the otfp engine", info.get("order") == "otfp", f"order {info.get('order')!r}")
    time.sleep(6)
    seqs = [deliveries(k) for k in range(NODES)]
    _, diff = common_window(seqs)
    n = min(len(s) for s in seqs)
    check("4 nodes deliver identical sequences with 5% loss on every receiver", diff == "" and n >= 200,
          diff or f"{n}+ deliveries each")
    # A batch is requested again only when both copies of a frame were lost (0.25% of frames at
    # 5%): a few seconds may pass without one; wait up to 10 s more for the first (the load runs 35 s).
    wait_for(lambda: sum(stats(k)["node_retransmit_served"] for k in range(NODES)) > 0, 10, "a retransmission")
    st = [stats(k) for k in range(NODES)]
    dropped = [s["rx_dropped_by_knob"] for s in st]
    requested = sum(s["node_retransmit_requests"] for s in st)
    served = sum(s["node_retransmit_served"] for s in st)
    check("lost frames are dropped by the knob and recovered by retransmission",
          min(dropped) > 0 and requested > 0 and served > 0,
          f"dropped per node {dropped}, batches requested {requested}, served {served}")

    # kill -9 of the coordinator (lowest id): the others activate a new one and keep deciding.
    coord = 0
    survivors = [k for k in range(NODES) if k != coord]
    decided_before = [stats(k)["node_instances_decided"] for k in survivors]
    os.kill(pid_of(coord), signal.SIGKILL)
    cluster("kill", str(coord))
    time.sleep(1)
    grew = growing(survivors, 4)
    decided_after = [stats(k)["node_instances_decided"] for k in survivors]
    activations = [stats(k)["node_activations"] for k in survivors]
    _, diff = common_window([deliveries(k) for k in survivors])
    check("kill -9 of the coordinator: the survivors keep delivering in one order",
          min(grew) >= 60 and diff == "" and activations[0] > 0,
          f"deliveries in 4 s {grew}, instances decided {decided_before} -> {decided_after}, "
          f"activations {activations}{'; ' + diff if diff else ''}")

    # A torn write at the end of the killed node's log: cut off on restart, the rest replayed.
    log_path = RUN / f"acceptor-{coord}.log"
    size = log_path.stat().st_size
    with open(log_path, "ab") as f:
        f.write(bytes([2, 0x01, 0x00]) + b"torn record")  # a vote record header, body cut short
    first_life = len(deliveries(coord))
    cluster("start", str(coord))
    started = wait_for(lambda: telemetry(coord, "/tob/membership")["members"] == list(range(NODES)), 30,
                       "the restarted node hearing everyone")
    log_text = (RUN / f"node{coord}.log").read_text(errors="replace")
    replays = [line for line in log_text.splitlines() if "acceptor log" in line and "replayed" in line]
    replay_line = replays[-1] if replays else ""  # the log has both lives: the restart's is last
    check("the restarted node replays its log and cuts off the damaged tail",
          started and f"replayed {size} bytes" in replay_line and "damaged tail of 14 bytes" in replay_line
          and log_path.stat().st_size >= size,
          replay_line or "no replay line in the node's log")
    caught_up = wait_for(lambda: len(deliveries(coord)) - first_life > 100, 30, "the restarted node delivering")
    time.sleep(3)
    restarted = deliveries(coord)[first_life:]
    _, diff = common_window([deliveries(k) for k in survivors] + [restarted])
    check("the restarted node catches up and delivers the same sequence as the others",
          caught_up and diff == "", f"{len(restarted)} deliveries since restart{'; ' + diff if diff else ''}")

    # Exactly-once: the generators stop after GEN_COUNT; wait until every survivor delivered
    # everything the correct nodes submitted.
    submitted, wrong = CLUSTER.delivered_once(survivors, GEN_COUNT)
    seqs = [deliveries(k) for k in survivors] + [restarted]
    conflict = order_conflicts(seqs)
    check("exactly-once: every message of the correct nodes delivered once by each of them",
          not wrong and not conflict and all(v >= GEN_COUNT for v in submitted.values()),
          "; ".join(wrong[:4]) or conflict or f"submitted {submitted}")

    st = {k: stats(k) for k in range(NODES)}
    fields = ["node_instances_decided", "node_instances_fast", "node_instances_recovered", "node_collisions",
              "node_retransmit_requests", "node_retransmit_served", "node_window_now", "node_window_max",
              "log_syncs", "log_sync_p99_ns"]
    missing = [f for f in fields if f not in st[1]]
    sync = telemetry(1, "/tob/histogram,log_sync")
    consistent = all(s["node_instances_decided"] >= s["node_instances_fast"] + s["node_instances_recovered"] > 0
                     and s["log_syncs"] > 0 for s in st.values())
    check("telemetry: instances, fast vs recovered, collisions, retransmissions, window, log fsync latency",
          not missing and consistent and sync.get("count", 0) > 0,
          f"missing {missing}" if missing else
          "; ".join(f"node {k}: decided {s['node_instances_decided']} fast {s['node_instances_fast']} "
                    f"recovered {s['node_instances_recovered']} collisions {s['node_collisions']} "
                    f"window max {s['node_window_max']} fsync p99 {s['log_sync_p99_ns'] / 1000:.0f} us"
                    for k, s in st.items()))

    cluster("down")
    logs = [(RUN / f"node{k}.log").read_text(errors="replace") for k in range(NODES)]
    check("SIGTERM stops every otfp node cleanly", all("dpdk-tob: stopped." in log for log in logs))
    p = CLUSTER.independent_check(survivors)
    check("independent check of the survivors' deliveries (integrity, total order)", p.returncode == 0,
          p.stdout.strip()[-300:])


SEGMENTS_RUN = RUN.parent / (RUN.name + "-segments")
SEGMENTS_GEN_COUNT = 20_000  # 2000/s per node for 10 s: about 200 messages (13 KB) per node and cycle


def test_segments() -> None:
    """otfp with rate_mbps: each slot's batch spans several 1500-byte frames per copy."""
    seg = OtfpCluster(SEGMENTS_RUN, LOSS, SEGMENTS_GEN_COUNT)
    # The generators start with the daemons, and a node delivers from its own start on: the
    # coordinator must not activate before the slowest node is up (on a loaded machine one took
    # 0.4 s longer to start). A stall budget of 0.6 s makes it listen that long first (1.5 x:
    # the heard timeout, docs/configuration.md "The stall budget").
    seg.env.update(TOB_CONFIG_EXTRA="rate_mbps = 1000\nstall_budget_ns = 600000000", TOB_BATCH_MSGS="512",
                   TOB_DAEMON_ARGS=f"--gen-rate 2000 --gen-size 48 --gen-count {SEGMENTS_GEN_COUNT} --drop-rx {LOSS}")
    seg("down", check_rc=False)
    seg("up", str(NODES))
    try:
        heard = wait_for(lambda: all(telemetry(k, "/tob/membership")["members"] == list(range(NODES)) for k in range(NODES)),
                         30, "every node hearing all 4")
        check("4 otfp nodes with slots of several frames hear each other", heard)
        if not heard:
            return
        log0 = (SEGMENTS_RUN / "node0.log").read_text(errors="replace")
        said = "otfp sends its batch in up to" in log0
        submitted, wrong = seg.delivered_once(list(range(NODES)), SEGMENTS_GEN_COUNT)
        seqs = [seg.deliveries(k) for k in range(NODES)]
        _, diff = common_window(seqs)
        check("batches of several segments: every message delivered exactly once by every node, in one order",
              said and not wrong and diff == "" and min(submitted.values()) >= SEGMENTS_GEN_COUNT,
              "; ".join(wrong[:3]) or diff or ("" if said else "no slot budget line in node0.log"))
        st = [stats(k) for k in range(NODES)]
        cycles = max(1, st[0]["node_instances_decided"])
        frames_per_turn = [s["tx_frames"] / cycles for s in st]
        served = sum(s["node_retransmit_served"] for s in st)
        check("slots carried several frames per copy, and lost segments were served again",
              min(frames_per_turn) > 4 and served > 0,
              f"frames sent per instance decided {[round(f, 1) for f in frames_per_turn]}, segments served {served}")
    finally:
        seg("down", check_rc=False)


def main() -> int:
    def body() -> None:
        test_missing_storage()
        test_cluster()
        test_segments()

    return run_suite("otfp integration", RUN, body, lambda: cluster("down", check_rc=False))

if __name__ == "__main__":
    sys.exit(main())
