#!/usr/bin/env python3
"""Integration test of interactive consistency and the key-value store on the netns cluster
(issue: RT-EIGByz and the time-aware key-value store).

Four daemons (scripts/cluster.sh) with an [ic] section (f = 1), each writing a set of keys every
IC period with its built-in writer (--ic-gen-keys: majority keys with equal values, median and
midpoint keys with node-specific values) and appending every publication to a --published file.
Node 2 is Byzantine through the test knob. Checks, each reported as one case:
  - bad [ic] configurations and IC options without [ic] fail with exit 2 and a clear message;
  - with node 2 lying (a wild value for every key it sends or relays; multicast: the same to every receiver) the three correct
    nodes publish identical values in every period (tests/sim/check_published.py, the checker of
    tob-sim --ic --published), and the median and midpoint values come from correct nodes only;
  - applications on the three correct nodes (app/tob-labels, include/tob.h tob_kv_write and
    tob_kv_read through the shared mirror) get every label published and read back, every tick;
    the key-value calls' error paths answer their distinct codes (tob-api-test);
  - node 2 restarted omitting its round data, then garbling it, then killed -9 (a crash): the
    correct nodes still publish identical values, missing round data counted as default values;
  - telemetry /tob/ic (fault mode, instances, publications, no mirror mismatch, no duplicate
    chunks) and a clean SIGTERM stop with the statistics.
Ends with `N passed, M failed`. Needs root.
"""
from __future__ import annotations

import csv
import functools
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster_test import GOOD_INI, run_daemon  # noqa: E402
from harness import check, run_suite, secondary  # noqa: E402
from tobclient import cluster as run_cluster, telemetry, wait_for  # noqa: E402

BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
LABELS = BUILD / "app/tob-labels/tob-labels"
API_TEST = BUILD / "tests/integration/tob-api-test"
RUN = Path(os.environ.get("TOB_TEST_RUN_DIR", "/tmp/dpdk-tob-ic-test"))
CHECKER = REPO / "tests/sim/check_published.py"
CYCLE_NS = 100_000_000
NODES = 4
FAULTY = 2
CORRECT = [k for k in range(NODES) if k != FAULTY]
GEN_KEYS = 12  # over the classes m. (median-f64), p. (midpoint-i64) and the default (majority)
IC = "[ic]\\nf = 1\\nperiod_cycles = 1\\nkeys_per_period = 128\\nclass.m. = median-f64\\nclass.p. = midpoint-i64"
ENV = dict(os.environ, TOB_RUN_DIR=str(RUN), TOB_CYCLE_NS=str(CYCLE_NS), TOB_BUILD_DIR=str(BUILD),
           TOB_STATUS_INTERVAL="2", TOB_CONFIG_TAIL=IC, TOB_DAEMON_ARGS=f"--ic-gen-keys {GEN_KEYS}",
           **{f"TOB_NODE_ARGS_{k}": f"--published {RUN}/published{k}.txt" for k in range(NODES)})
ENV[f"TOB_NODE_ARGS_{FAULTY}"] += " --ic-fault lie"


def cluster(*args: str, check_rc: bool = True) -> subprocess.CompletedProcess[str]:
    return run_cluster(ENV, *args, check=check_rc)


def ic(k: int) -> dict:
    return telemetry(k, "/tob/ic")


Published = dict[int, list[tuple[str, str]]]  # instance -> [(key, value)] in the file's order


def published(k: int) -> Published:
    out: Published = defaultdict(list)
    path = RUN / f"published{k}.txt"
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        parts = line.split()
        if len(parts) == 4:
            out[int(parts[0])].append((parts[2], parts[3]))
    return out


def beyond_hypothesis() -> set[int]:
    """Instances in which a correct node's round data was taken as ⊥ at a correct node (the
    daemon's `# defaulted I: senders` lines, docs/protocol-ic.md "Agreement and the fault
    hypothesis"): late after a stall of this VM, that node was a second fault on top of node 2's,
    and with f = 1 agreement is not promised there."""
    out: set[int] = set()
    for k in CORRECT:
        path = RUN / f"published{k}.txt"
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            if line.startswith("# defaulted "):
                instance, senders = line[len("# defaulted "):].split(":", 1)
                if set(map(int, senders.split())) & set(CORRECT):
                    out.add(int(instance))
    return out


def compare_correct(first_instance: int = 0) -> tuple[int, str]:
    """Instances all correct nodes published (from first_instance, the last one left out: a node
    may not have written all of it yet), within the fault hypothesis (beyond_hypothesis), checked
    by the independent checker. (count, problem). At most a tenth of the instances, and 3, may be
    beyond the hypothesis: more is a problem of its own."""
    per = {k: published(k) for k in CORRECT}
    common = sorted(set.intersection(*(set(i for i in p if i >= first_instance) for p in per.values())))[:-1]
    beyond = beyond_hypothesis().intersection(common)
    if len(beyond) > max(3, len(common) // 10):
        return 0, f"{len(beyond)} of {len(common)} instances had a correct node's round data defaulted: {sorted(beyond)[:8]}"
    common = [i for i in common if i not in beyond]
    if not common:
        return 0, "no instance published by every correct node"
    combined = RUN / "combined.published"
    with combined.open("w") as f:
        f.write("# correct nodes: " + " ".join(map(str, CORRECT)) + "\n")
        for k in CORRECT:
            for i in common:
                for key, value in per[k][i]:
                    f.write(f"{i} {k} {key} {value}\n")
    p = subprocess.run([sys.executable, str(CHECKER), str(combined)], text=True, capture_output=True)
    return len(common), "" if p.returncode == 0 else (p.stdout + p.stderr).strip()[-400:]


def values_from_correct_nodes(first_instance: int) -> str:
    """The built-in writer's numeric values carry the writer's node id (control_role.cc,
    generate_ic): f64 keys end in 0.001 x node, i64 keys in node (x 1 of 100). A median or a
    fault-tolerant midpoint over N = 4 with f = 1 lies between correct nodes' values."""
    ids = set(CORRECT)
    beyond = beyond_hypothesis()
    for i, kvs in published(CORRECT[0]).items():
        if i < first_instance or i in beyond:
            continue
        for key, value in kvs:
            if value == "-":
                return f"instance {i}: {key} has no value"
            if key.startswith("m."):
                frac = round((float(value) - math.floor(float(value))) * 1000)
                if not min(ids) <= frac <= max(ids):
                    return f"instance {i}: {key} = {value}: not between the correct nodes' values"
            elif key.startswith("p."):
                if not min(ids) <= int(value) % 100 <= max(ids):
                    return f"instance {i}: {key} = {value}: not between the correct nodes' values"
    return ""


def test_bad_configuration() -> None:
    cases = [
        (GOOD_INI + "[ic]\nf = 2\n", [], "needs more than 6 nodes (N > 3f)"),
        (GOOD_INI + "[ic]\nreduction = mean\n", [], "'mean': expected majority"),
        (GOOD_INI + "[ic]\nfanout = 3\n", [], "[ic] fanout: unknown key"),
        (GOOD_INI + "[ic]\nclass.x = average\n", [], "[ic] class.x"),
        (GOOD_INI + "[ic]\nkeys_per_period = 0\n", [], "keys_per_period"),
        (GOOD_INI, ["--ic-fault", "lie"], "no [ic] section"),
        (GOOD_INI, ["--published", "/tmp/p.txt"], "no [ic] section"),
        (GOOD_INI + "[ic]\nkeys_per_period = 4\n", ["--ic-gen-keys", "5"], "above [ic] keys_per_period = 4"),
        (GOOD_INI + "[ic]\n", ["--ic-fault", "liar"], "expected lie, omit, garble or none"),
    ]
    bad = []
    for ini, extra, expect in cases:
        p = run_daemon(ini, ["--node-id", "0", *extra])
        if p.returncode != 2 or expect not in p.stderr:
            bad.append(f"{expect!r}: rc {p.returncode}, {p.stderr.strip()[-200:]!r}")
    check(f"{len(cases)} bad [ic] configurations and options exit 2 with a clear message", not bad, "; ".join(bad))


def test_clean_stop() -> None:
    """A daemon with [ic] and an application's shared memory stops on SIGTERM with exit 0 (it once
    freed its client rings after the EAL had: a segfault at every stop)."""
    p = run_daemon(GOOD_INI + "[ic]\nf = 1\n", ["--node-id", "0", "--idle", "sleep", "--ic-gen-keys", "4"],
                   stop_after_s=4)
    ok = p.returncode == 0 and "dpdk-tob: stopped." in p.stdout and "ic_instances_finished" in p.stdout
    check("a daemon with [ic] stops on SIGTERM with exit 0 and prints its IC statistics", ok,
          f"rc {p.returncode}" + ("" if ok else f": {(p.stdout + p.stderr)[-300:]}"))
    line = next((x for x in p.stdout.splitlines() if " full frames per slot need " in x), "")
    check("it states the slot's airtime at the link speed, and a slot that holds it draws no warning",
          line != "" and "cannot carry" not in p.stdout + p.stderr, line or p.stdout[-300:])
    # 4000 keys need 834 IC frames per slot: 1.03 ms at net_null's 10 Gbit/s, more than a 1 ms slot.
    p = run_daemon(GOOD_INI + "[ic]\nf = 1\nkeys_per_period = 4000\n",
                   ["--node-id", "0", "--idle", "sleep", "--set", "timing.cycle_ns=4000000"], stop_after_s=3)
    warned = [x for x in (p.stdout + p.stderr).splitlines() if "cannot carry" in x]
    check("a slot too short for its round data at the link speed is warned about at start",
          p.returncode == 0 and len(warned) == 1, warned[0] if warned else f"rc {p.returncode}: {(p.stdout + p.stderr)[-300:]}")


def run_labels(nodes: list[int], labels: int, seconds: int) -> list[tuple[int, int, str]]:
    """tob-labels on each node, every one starting at the same global instant. (node, rc, summary)."""
    start = (time.clock_gettime_ns(time.CLOCK_TAI) // CYCLE_NS + 40) * CYCLE_NS  # 4 s ahead
    procs = []
    for k in nodes:
        cmd = ["ip", "netns", "exec", f"tob-n{k}", str(LABELS), "--proc-type=secondary", f"--file-prefix=tob-node{k}",
               "--no-pci", "--log-level=lib.eal:error", "--", "--cluster", "netns", "--labels", str(labels),
               "--period-ms", str(CYCLE_NS // 1_000_000), "--seconds", str(seconds), "--start-ns", str(start),
               "--keys", "lb/", "--csv", str(RUN / f"labels{k}.csv"), "--summary", str(RUN / f"labels{k}.json"),
               "--quiet"]
        procs.append((k, subprocess.Popen(cmd, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
    out = []
    for k, p in procs:
        try:
            text, _ = p.communicate(timeout=seconds + 60)
        except subprocess.TimeoutExpired:
            p.kill()
            text, _ = p.communicate()
        summary = [line for line in text.splitlines() if "successful" in line or "failed" in line or "error" in line]
        out.append((k, p.returncode, " / ".join(summary)[-300:] or text.strip()[-300:]))
    return out


@functools.cache
def ic_timing() -> tuple[int, int, int]:
    """(epoch_ns, rounds, period_cycles) of the cluster's IC instances."""
    info, icfg = telemetry(CORRECT[0], "/tob/info"), ic(CORRECT[0])
    return int(info["epoch_ns"]), int(icfg["rounds"]), int(icfg["period_cycles"])


def tick_instance(t_pub_ns: int) -> int:
    """The IC instance that publishes at t_pub (core::IcNode::finish_ns: epoch + ((i + 1) P + R) cycles)."""
    epoch, rounds, period = ic_timing()
    return ((t_pub_ns - epoch) // CYCLE_NS - rounds) // period - 1


# What a stall of a correct node does to the ticks around it: its writes miss the instance
# (deadline) or reach its daemon after the instance's batch left, so that the others find too few
# copies (reduction: no quorum, the same at every correct node), its daemon publishes after the
# reader gave up (again), or a peer's read finds nothing yet (not_found, newer). A wrong value is
# never excused, and agreement on every instance is checked apart (compare_correct).
LATE_REASONS = {"deadline", "again", "not_found", "newer", "reduction"}
# How far from an instance beyond the hypothesis a failed tick may be, and how many one such
# instance excuses per node: a fresh-clone CI had one instance beyond and three failed ticks per
# node, that instance's and the two after it (not_found, not_found, reduction on nodes 0 and 1;
# again, reduction, reduction on node 3: the stalled node's writes came late twice more).
NEAR_INSTANCES = 2
TICKS_PER_INSTANCE = 3


def labels_failures(beyond: set[int]) -> tuple[list, list]:
    """tob-labels' failed ticks on the correct nodes (their CSVs): (not excused, excused), each
    (node, tick, instance, first failure). A failed tick is excused when an instance within
    NEAR_INSTANCES of its own is beyond the fault hypothesis (a correct node late: the stall that
    made it late upsets the ticks around it), its failure is one of lateness (LATE_REASONS), and
    no beyond-hypothesis instance excuses more than TICKS_PER_INSTANCE ticks on a node. Two CI
    runs had one instance beyond: two failed ticks per node in one, three in the other."""
    unexcused, excused = [], []
    for k in CORRECT:
        path = RUN / f"labels{k}.csv"
        if not path.exists():
            unexcused.append((k, "no CSV", -1, ""))
            continue
        used: dict[int, int] = defaultdict(int)
        with path.open() as f:
            for row in csv.DictReader(f):
                if row["ok"] == "1":
                    continue
                i = tick_instance(int(row["t_pub_ns"]))
                near = [b for b in sorted(beyond, key=lambda b: abs(b - i))
                        if abs(b - i) <= NEAR_INSTANCES and used[b] < TICKS_PER_INSTANCE]
                entry = (k, int(row["period"]), i, row["first_failure"])
                if near and row["first_failure"] in LATE_REASONS:
                    used[near[0]] += 1
                    excused.append(entry)
                else:
                    unexcused.append(entry)
    return unexcused, excused


def test_cluster() -> None:
    cluster("down", check_rc=False)
    for k in range(NODES):
        (RUN / f"published{k}.txt").unlink(missing_ok=True)
    cluster("up", str(NODES))
    heard = wait_for(lambda: all(telemetry(k, "/tob/membership")["members"] == list(range(NODES)) for k in range(NODES)),
                     30, "every node hearing all 4")
    check("4 nodes with [ic] hear each other", heard)
    if not heard:
        return
    modes = [ic(k).get("test_fault") for k in range(NODES)]
    check("telemetry /tob/ic reports node 2 as the liar", modes == ["none", "none", "lie", "none"], f"modes {modes}")

    # The liar's lies: every correct node publishes the same values, and only correct values.
    wait_for(lambda: all(ic(k)["ic_publications_ok"] >= 60 * GEN_KEYS for k in CORRECT), 40, "60 periods published")
    count, problem = compare_correct()
    check("one liar: the 3 correct nodes publish identical values in every period", count >= 50 and not problem,
          problem or f"{count} periods of {GEN_KEYS} keys compared")
    wrong = values_from_correct_nodes(0)
    check("median and midpoint values come from correct nodes, never from the liar", not wrong, wrong)
    defaults = [ic(k)["ic_groups_ignored"] for k in CORRECT]

    # Applications through include/tob.h: tob_kv_write for the earliest instant, tob_kv_read there.
    # A tick may fail (exit 3) only next to an instance beyond the fault hypothesis (labels_excused).
    got = run_labels(CORRECT, 50, 6)
    unexcused, excused = labels_failures(beyond_hypothesis())
    labels_ok = all(rc in (0, 3) for _, rc, _ in got) and not unexcused
    check("applications on the correct nodes write and read back 50 labels every tick (tob_kv_write/read)",
          labels_ok, "; ".join(f"node {k}: rc {rc}: {s}" for k, rc, s in got) +
          (f"; failed ticks not excused: {unexcused}" if unexcused else "") +
          (f"; excused (node, tick, instance, first failure): {excused}" if excused else ""))

    # The key-value calls' error paths through include/tob.h, on a cluster with [ic].
    # ([clients] max 8 and [limits] payload_bytes 1024: the defaults; key_bytes 32, value_bytes 16.)
    p = subprocess.run(secondary(0, API_TEST, "netns", "8", "1024", "32", "16", "m.", "gen2"), text=True,
                       capture_output=True, timeout=120)
    for line in p.stdout.splitlines():
        if line.startswith(("PASS: ", "FAIL: ")):
            check("tob.h with [ic]: " + line[6:].split(" -- ")[0], line.startswith("PASS"),
                  line.split(" -- ", 1)[1] if " -- " in line else "")
    if not p.stdout.rstrip().endswith(" 0 failed"):
        check("tob-api-test with [ic] ran to the end", False, (p.stdout + p.stderr)[-600:])

    # Omission: node 2 restarted sending no IC round data at all.
    cluster("stop", str(FAULTY))
    ENV[f"TOB_NODE_ARGS_{FAULTY}"] = f"--published {RUN}/published{FAULTY}-omit.txt --ic-fault omit"
    cluster("start", str(FAULTY))
    back = wait_for(lambda: telemetry(FAULTY, "/tob/membership")["members"] == list(range(NODES)), 30, "node 2 back")
    mark = max(published(CORRECT[0]), default=0) + 1
    default_before = [ic(k)["ic_messages_default"] for k in CORRECT]
    time.sleep(6)
    count, problem = compare_correct(mark)
    default_after = [ic(k)["ic_messages_default"] for k in CORRECT]
    grew = all(a > b for a, b in zip(default_after, default_before))
    check("one omitter: the correct nodes publish identical values, its round data counted as default",
          back and ic(FAULTY).get("test_fault") == "omit" and count >= 30 and not problem and grew,
          problem or f"{count} periods compared; default messages {default_before} -> {default_after}")

    # Garbled round data: node 2 restarted sending malformed entries (bad lengths, noise).
    cluster("stop", str(FAULTY))
    ENV[f"TOB_NODE_ARGS_{FAULTY}"] = f"--published {RUN}/published{FAULTY}-garble.txt --ic-fault garble"
    cluster("start", str(FAULTY))
    back = wait_for(lambda: telemetry(FAULTY, "/tob/membership")["members"] == list(range(NODES)), 30, "node 2 back")
    mark = max(published(CORRECT[0]), default=0) + 1
    time.sleep(5)
    count, problem = compare_correct(mark)
    wrong = values_from_correct_nodes(mark)
    check("one node garbling its round data: the correct nodes publish identical, correct values",
          back and ic(FAULTY).get("test_fault") == "garble" and count >= 25 and not problem and not wrong,
          problem or wrong or f"{count} periods compared")

    # A crash: kill -9 of node 2; the three correct nodes go on.
    os.kill(int((RUN / f"node{FAULTY}.pid").read_text()), signal.SIGKILL)
    cluster("kill", str(FAULTY))
    time.sleep(1)
    mark = max(published(CORRECT[0]), default=0) + 1
    time.sleep(5)
    count, problem = compare_correct(mark)
    wrong = values_from_correct_nodes(mark)
    check("node 2 crashed: the correct nodes keep publishing identical, correct values",
          count >= 30 and not problem and not wrong, problem or wrong or f"{count} periods compared")

    st = {k: ic(k) for k in CORRECT}
    bad = [f"node {k}: mismatches {s['kv_mirror_mismatches']} duplicate chunks {s['ic_chunks_duplicate']}"
           for k, s in st.items() if s["kv_mirror_mismatches"] != 0 or s["ic_chunks_duplicate"] != 0]
    # A reduction can fail (no value rather than a wrong one) when a correct node's round data is
    # late on top of node 2's fault: two faults with f = 1, a stall of this VM. Within the fault
    # hypothesis it fails on every correct node alike: the --published files, where failures
    # are `-`, agree on every instance outside beyond_hypothesis() (checked above and below);
    # beyond it the counters may differ.
    failed = {k: s["ic_publications_failed"] for k, s in st.items()}
    if len(set(failed.values())) != 1 and not beyond_hypothesis():
        bad.append(f"failed reductions differ between correct nodes: {failed}")
    check("telemetry: no mirror mismatch, no duplicate chunk; failed reductions alike on the correct nodes", not bad,
          "; ".join(bad) or "; ".join(f"node {k}: {s['ic_instances_finished']} instances, "
                                      f"{s['ic_publications_ok']} publications, {s['ic_publications_failed']} failed, "
                                      f"{s['ic_messages_default']} round messages defaulted, groups ignored "
                                      f"{defaults[CORRECT.index(k)]}" for k, s in st.items()))

    cluster("down")
    logs = [(RUN / f"node{k}.log").read_text(errors="replace") for k in CORRECT]
    stats_ok = all("dpdk-tob: stopped." in log and "ic_publications_ok" in log for log in logs)
    count, problem = compare_correct()
    check("SIGTERM stops the correct nodes cleanly; their whole --published files agree",
          stats_ok and not problem and count >= 100, problem or f"{count} periods in the files")


def main() -> int:
    def body() -> None:
        test_bad_configuration()
        test_clean_stop()
        test_cluster()

    return run_suite("ic integration", RUN, body, lambda: cluster("down", check_rc=False))

if __name__ == "__main__":
    sys.exit(main())
