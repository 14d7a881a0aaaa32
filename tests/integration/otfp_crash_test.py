#!/usr/bin/env python3
"""Integration test of `--order otfp` on the netns cluster: two crashes in quick succession.

Four daemons (OtfpCluster of otfp_test.py: acceptor logs with durability sync, the built-in
generator), every node dropping 10% of the cluster frames it receives (`--drop-rx 0.1`). kill -9
of the coordinator (node 0, the lowest id) and, about 1.5 cycles later, of node 1, the next in
line: before anyone finished an activation without node 0. With 2 of 4 up there is no quorum
(3). Node 1 is restarted, then node 0. Checks, each reported as one case:
  - before the crashes the 4 nodes deliver identical sequences despite the loss;
  - with 2 of 4 up nothing is decided or delivered;
  - once 3 of 4 are up (node 1 back) the two nodes that never crashed deliver again, in one order,
    and skip no instance: the ones in flight at the crashes are recovered (node_gaps stays 0; a
    stall used to be rescued only by the catch-up skip 126 cycles later);
  - each restarted node delivers, from its restart on, the same sequence as the correct nodes over
    the window they share, up to the last delivery (caught up);
  - exactly-once: every message the correct nodes' generators submitted is delivered once by each
    correct node; both delivered the same sequence, up to the same last message, skipping nothing;
  - SIGTERM stops every node with exit status 0 (this process adopts the daemons as their
    subreaper to see it);
  - the independent checker (tests/sim/check_deliveries.py) agrees on every node's file.
Assertions are on outcomes only (the shared VM stalls for up to 13 ms about once a second); the
waits are generous. Ends with `N passed, M failed`. Needs root.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import check, run_suite  # noqa: E402
from otfp_test import GEN_COUNT, NODES, OtfpCluster, stats  # noqa: E402
from tobclient import common_window, order_conflicts, telemetry, wait_for  # noqa: E402

RUN = Path(os.environ.get("TOB_TEST_RUN_DIR", "/tmp/dpdk-tob-otfp-crash-test"))
LOSS = 0.1
CLUSTER = OtfpCluster(RUN, LOSS)
ALL = list(range(NODES))
COORD, SECOND = 0, 1  # the coordinator and the node that would take over from it
CRASHED = [COORD, SECOND]
CORRECT = [k for k in ALL if k not in CRASHED]
KILL_GAP_S = 0.15  # 1.5 cycles of 100 ms: a node is declared gone after 2 silent cycles
# A restarted node's generator: done well before the correct nodes' (GEN_COUNT, 35 s), so that
# the cluster falls quiet and the ends of the sequences can be compared.
RESTART_GEN_COUNT = 300
pids: dict[int, int] = {}  # the daemons running now, adopted by this process


def adopt_daemons() -> None:
    """Makes this process the subreaper of its descendants (PR_SET_CHILD_SUBREAPER): the daemons
    scripts/cluster.sh starts in the background are handed to it when the script's shell exits,
    so that their exit status can be collected with waitpid."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:  # 36: PR_SET_CHILD_SUBREAPER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def reap(k: int, timeout_s: float) -> int | None:
    """The exit status of node k's adopted daemon (-N: killed by signal N); None if it still runs.
    Once reaped, its PID file goes (as `cluster.sh stop` does): the PID may be reused."""
    end = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pids[k], os.WNOHANG)
        if done == pids[k]:
            del pids[k]
            (RUN / f"node{k}.pid").unlink(missing_ok=True)
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > end:
            return None
        time.sleep(0.05)


def stop_all() -> dict[int, int | None]:
    """SIGTERM to every running daemon at once; their exit statuses (SIGKILL after 15 s)."""
    for pid in pids.values():
        os.kill(pid, signal.SIGTERM)
    codes = {k: reap(k, 15) for k in list(pids)}
    for k in list(pids):
        os.kill(pids[k], signal.SIGKILL)
        reap(k, 10)
    return codes


def start(k: int) -> None:
    """Restarts node k, whose generator then submits RESTART_GEN_COUNT messages."""
    CLUSTER("start", str(k), env=dict(CLUSTER.env, **{f"TOB_NODE_ARGS_{k}": f"--gen-count {RESTART_GEN_COUNT}"}))
    pids[k] = CLUSTER.pid_of(k)


def cut_torn_line(k: int) -> bool:
    """A daemon killed while stdio wrote a batch of deliveries may leave a line cut short; the
    restarted daemon appends after it. Cut it off (True if there was one)."""
    path = RUN / f"node{k}.deliveries"
    data = path.read_bytes() if path.exists() else b""
    whole = data[: data.rfind(b"\n") + 1]
    if whole == data:
        return False
    path.write_bytes(whole)
    return True


def hears_all(k: int) -> bool:
    return telemetry(k, "/tob/membership")["members"] == ALL


def counts(nodes: list[int]) -> list[int]:
    return [len(CLUSTER.deliveries(k)) for k in nodes]


def decided(nodes: list[int]) -> list[int]:
    return [stats(k)["node_instances_decided"] for k in nodes]


def test_double_crash() -> None:
    CLUSTER("down", check_rc=False)
    adopt_daemons()
    CLUSTER("up", str(NODES))
    pids.update({k: CLUSTER.pid_of(k) for k in ALL})
    heard = wait_for(lambda: all(hears_all(k) for k in ALL), 30, "every node hearing all 4")
    warm = heard and wait_for(lambda: min(counts(ALL)) >= 100, 30, "100 deliveries on every node")
    _, diff = common_window([CLUSTER.deliveries(k) for k in ALL])
    if not check("4 otfp nodes hear each other and deliver identical sequences with 10% loss on every receiver",
                 warm and diff == "", diff or f"heard {heard}, deliveries {counts(ALL)}"):
        return

    # kill -9 of the coordinator, then of the node that would take over, before it activates.
    t0 = time.monotonic()
    os.kill(pids[COORD], signal.SIGKILL)
    time.sleep(KILL_GAP_S)
    os.kill(pids[SECOND], signal.SIGKILL)
    gap_ms = (time.monotonic() - t0) * 1e3
    killed = {k: reap(k, 10) for k in CRASHED}
    torn = [k for k in CRASHED if cut_torn_line(k)]
    first_life = dict(zip(CRASHED, counts(CRASHED)))

    # 2 of 4: what was decided before the crashes reaches both survivors (decisions heard late,
    # batches retransmitted) within a few cycles; after that nothing may be decided.
    time.sleep(2)
    decided_before, delivered_before = decided(CORRECT), counts(CORRECT)
    time.sleep(2.5)
    decided_after, delivered_after = decided(CORRECT), counts(CORRECT)
    check("with 2 of 4 nodes up nothing is decided or delivered (quorum 3)",
          decided_after == decided_before and delivered_after == delivered_before,
          f"nodes {CRASHED} killed {gap_ms:.0f} ms apart (status {list(killed.values())}"
          f"{', torn delivery line cut on ' + str(torn) if torn else ''}); nodes {CORRECT}: instances decided "
          f"{decided_before} -> {decided_after}, deliveries {delivered_before} -> {delivered_after} in 2.5 s")

    # 3 of 4: progress again.
    start(SECOND)
    resumed = wait_for(lambda: min(a - b for a, b in zip(counts(CORRECT), delivered_after)) >= 100, 30,
                       "the correct nodes delivering again")
    _, diff = common_window([CLUSTER.deliveries(k) for k in CORRECT])
    # The instances in flight at the crashes are decided, not skipped: skipping is only for a node
    # further behind than its peers keep (kCatchUpCycles), which rescued a stalled cluster once.
    gaps = [stats(k)["node_gaps"] for k in CORRECT]
    check(f"node {SECOND} back (3 of 4 up): nodes {CORRECT}, never crashed, deliver again in one order, skipping no instance",
          resumed and diff == "" and gaps == [0] * len(CORRECT),
          diff or f"deliveries {delivered_after} -> {counts(CORRECT)}, instances decided {decided(CORRECT)}, "
          f"instances skipped {gaps}")

    start(COORD)
    wait_for(lambda: all(hears_all(k) for k in ALL), 30, "every node hearing all 4 again")
    wait_for(lambda: all(n - first_life[k] >= 100 for k, n in zip(CRASHED, counts(CRASHED))), 30,
             "the restarted nodes delivering")

    # Quiet: the generators are done and every node delivered everything (the same last message).
    submitted, wrong = CLUSTER.delivered_once(CORRECT, GEN_COUNT)
    wait_for(lambda: all(stats(k)["control_generated"] >= RESTART_GEN_COUNT
                         and stats(k)["node_msgs_submitted"] >= RESTART_GEN_COUNT for k in CRASHED), 30,
             "the restarted nodes' generators done")
    wait_for(lambda: len({tuple(CLUSTER.deliveries(k)[-1:]) for k in ALL}) == 1, 20,
             "every node ending on the same delivery")
    telem = {k: stats(k) for k in ALL}
    time.sleep(1)
    codes = stop_all()
    final = {k: CLUSTER.deliveries(k) for k in ALL}  # complete now: the daemons flushed their files
    since_restart = {k: final[k][first_life[k]:] for k in CRASHED}

    for k in CRASHED:
        seq = since_restart[k]
        slices, diff = common_window([final[j] for j in CORRECT] + [seq])
        at_end = bool(seq) and all(s[-1] == seq[-1] for s in [final[j] for j in CORRECT])
        conflict = order_conflicts([final[j] for j in CORRECT] + [final[k]])
        check(f"restarted node {k} delivers from its restart on the correct nodes' sequence, up to their last delivery",
              len(seq) >= 100 and diff == "" and at_end and not conflict,
              diff or conflict or f"{len(seq)} deliveries since restart, {len(slices[-1]) if slices else 0} in the "
              f"common window, last {seq[-1:]} vs {[final[j][-1:] for j in CORRECT]}")

    conflict = order_conflicts([final[k] for k in CORRECT])
    check("exactly-once: every message of the correct nodes' generators delivered once by each correct node",
          not wrong and not conflict and all(v >= GEN_COUNT for v in submitted.values()),
          "; ".join(wrong[:4]) or conflict or f"submitted {submitted}")

    slices, diff = common_window([final[k] for k in CORRECT])
    ends = [s[-1:] for s in slices] == [final[k][-1:] for k in CORRECT]
    check("the correct nodes delivered the same sequence, up to the same last message, skipping no instance",
          diff == "" and ends and all(telem[k]["node_gaps"] == 0 for k in CORRECT),
          diff or "; ".join(f"node {k}: {len(final[k])} deliveries, {len(s)} in the common window, last {final[k][-1:]}"
                            for k, s in zip(CORRECT, slices))
          + "; " + ", ".join(f"node {k}: activations {t['node_activations']} tempo holds {t['node_tempo_holds']} "
                             f"gaps {t['node_gaps']} retx served {t['node_retransmit_served']}"
                             for k, t in telem.items()))

    check("SIGTERM stops every node with exit status 0", all(c == 0 for c in codes.values()),
          ", ".join(f"node {k}: {c}" for k, c in codes.items()))
    p = CLUSTER.independent_check(ALL)
    check("independent check of every node's deliveries, both lives of the restarted ones (integrity, total order)",
          p.returncode == 0, (p.stdout + p.stderr).strip()[-300:])


def teardown() -> None:
    try:
        stop_all()
    finally:
        CLUSTER("down", check_rc=False)


def main() -> int:
    return run_suite("otfp crash integration", RUN, test_double_crash, teardown)


if __name__ == "__main__":
    sys.exit(main())
