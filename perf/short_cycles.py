#!/usr/bin/env python3
"""Short cycles on the netns cluster (issue 17, docs/experiments/daemon-timing.md "1 ms cycles").

Four dpdk-tob nodes (scripts/cluster.sh, `--idle sleep`), one dpdk-tob-load per node submitting
--rate messages per second of 64 bytes from one common instant (--start-at, so that every client
is attached before the first message), for --seconds; then per node: deliveries, latency
percentiles, whether the four nodes delivered one sequence (same count and digest of the
deliveries files), membership events during the load, and the counters that say how the
acceptor log kept up. With --kill K the node K is killed (SIGKILL) --kill-at seconds into the load:
the survivors' longest gap between two deliveries in the 100 ms after the kill, the longest
before it, and when each survivor suspected it (detection in ms and cycles). With --stall-ms MS,
--stall-at seconds into the load every node stalls at once for MS milliseconds: `--stall disk`
(otfp, durability sync) freezes (fsfreeze) the acceptor logs' own ext4 file system (a loop
device), so that no log syncs, as when the host's disk stalls; `--stall daemons` stops every
daemon (SIGSTOP, SIGCONT), as when the host takes every vCPU. Reported: the longest gap between
deliveries from the stall to 500 ms after it, the rounds started and activated, instances skipped.

    perf/short_cycles.py --order otfp --cycle-ns 1000000 --kappa 1 --seconds 600 --out DIR
    perf/short_cycles.py --order otfp --cycle-ns 1000000 --kappa 1 --seconds 16 --kill 0 --kill-at 8
    perf/short_cycles.py --order otfp --cycle-ns 1000000 --kappa 1 --slot-ns 100000 --pattern poisson --seconds 600
    perf/short_cycles.py --order otfp --cycle-ns 1000000 --kappa 1 --slot-ns 100000 --seconds 12 --stall disk --stall-ms 65

Writes DIR/result.json and prints a table. Needs root, a build (build/) and scripts/setup.sh's
hugepages; the cluster uses namespaces `st-*` and is always torn down.
"""
import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
import tobclient  # noqa: E402  (deliveries_digest)

NET = "st"
# The events that change a membership (mars); otfp's suspicions, rounds and skipped instances do not.
MEMBERSHIP_EVENTS = ("membership-created", "admitted", "removed", "self-shutdown", "rejoin-started")
NODES = 4


def tai_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_TAI)


def cluster(env: dict, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(REPO / "scripts/cluster.sh"), *args], env=env, check=check,
                          capture_output=True, text=True)


def flat(d, prefix=""):
    out = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(flat(v, f"{prefix}{k}."))
    else:
        out[prefix[:-1]] = d
    return out


def mount_log_fs(out: Path, mnt: Path) -> None:
    """A 4 GiB sparse ext4 image on a loop device, mounted at `mnt`: a file system of the acceptor
    logs alone, which fsfreeze can stop without stopping the deliveries files and the clients."""
    img = out / "logfs.img"
    subprocess.run(["truncate", "-s", "4G", str(img)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], check=True)
    mnt.mkdir()
    subprocess.run(["mount", "-o", "loop", str(img), str(mnt)], check=True)


def stall_every_node(a, out: Path, logfs: Path) -> tuple[int, int]:
    """Stalls every node at once for --stall-ms; returns when it began and ended (CLOCK_TAI)."""
    if a.stall == "disk":
        begin = tai_ns()
        subprocess.run(["fsfreeze", "-f", str(logfs)], check=True)
        try:
            time.sleep(a.stall_ms / 1000)
        finally:
            subprocess.run(["fsfreeze", "-u", str(logfs)], check=True)
        return begin, tai_ns()
    pids = [int((out / f"node{k}.pid").read_text()) for k in range(NODES)]
    begin = tai_ns()
    try:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(a.stall_ms / 1000)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    return begin, tai_ns()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--order", default="otfp", choices=["otfp", "mars"])
    ap.add_argument("--cycle-ns", type=int, default=1_000_000)
    ap.add_argument("--kappa", type=int, default=1, help="otfp: [timing] kappa (default 1)")
    ap.add_argument("--durability", default="sync", choices=["sync", "none"])
    ap.add_argument("--slot-ns", type=int, default=0,
                    help="packed slots of this length at the start of the cycle (0: N equal slots; "
                         "docs/configuration.md \"Packed slots\")")
    ap.add_argument("--rate", type=int, default=1000, help="messages per second per node (default 1000)")
    ap.add_argument("--pattern", default="constant", choices=["constant", "poisson"],
                    help="submission pattern of each client (constant: every 1/rate s, in phase at the "
                         "four clients; poisson: exponential gaps, a seed per client)")
    ap.add_argument("--seconds", type=float, default=20, help="seconds of load (default 20)")
    ap.add_argument("--kill", type=int, default=None, help="kill -9 this node during the load")
    ap.add_argument("--kill-at", type=float, default=8, help="seconds into the load (default 8)")
    ap.add_argument("--stall", default="disk", choices=["disk", "daemons"],
                    help="what stalls: the acceptor logs' file system (otfp, sync) or every daemon (SIGSTOP)")
    ap.add_argument("--stall-ms", type=float, default=0, help="every node stalls this long at once (0: no stall)")
    ap.add_argument("--stall-at", type=float, default=6, help="seconds into the load (default 6)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/short-cycles"))
    a = ap.parse_args()
    if a.seconds <= 0 or a.seconds > 3600 or a.rate < 1 or a.rate > 100_000:
        ap.error("--seconds must be in (0, 3600] and --rate in [1, 100000]")
    if a.slot_ns < 0 or a.slot_ns * NODES > a.cycle_ns:
        ap.error(f"--slot-ns must be 0 or at most --cycle-ns / {NODES}")
    if a.kill is not None and not (0 <= a.kill < NODES and 0 < a.kill_at < a.seconds):
        ap.error(f"--kill must be 0..{NODES - 1} and --kill-at inside the load")
    if a.stall_ms and not (0 < a.stall_ms <= 10_000 and 0 < a.stall_at < a.seconds):
        ap.error("--stall-ms must be at most 10000 and --stall-at inside the load")
    if a.stall_ms and a.stall == "disk" and not (a.order == "otfp" and a.durability == "sync"):
        ap.error("--stall disk needs --order otfp and --durability sync (the acceptor logs)")
    disk_stall = a.stall_ms > 0 and a.stall == "disk"
    out = a.out.resolve()
    subprocess.run(["umount", str(out / "logfs")], capture_output=True)  # left mounted by a run that was stopped
    subprocess.run(["rm", "-rf", str(out)], check=True)
    out.mkdir(parents=True)
    env = dict(os.environ, TOB_NET=NET, TOB_RUN_DIR=str(out), TOB_ORDER=a.order, TOB_CYCLE_NS=str(a.cycle_ns),
               TOB_DELIVERIES_FORMAT="bin", TOB_DURABILITY=a.durability,
               TOB_CONFIG_EXTRA=f"kappa = {a.kappa}" if a.order == "otfp" else "",
               TOB_SLOT_NS=str(a.slot_ns) if a.slot_ns else "")
    load = REPO / "build/app/dpdk-tob-load/dpdk-tob-load"
    logfs = out / "logfs"
    if disk_stall:
        mount_log_fs(out, logfs)
        env["TOB_LOG_DIR"] = str(logfs)
    try:
        up = cluster(env, "up", str(NODES), check=False)
        if up.returncode != 0:
            print(f"cluster did not come up: {up.stderr[-500:]}", file=sys.stderr)
            return 1
        start = tai_ns() + 3_000_000_000
        clients = []
        for k in range(NODES):
            cmd = ["ip", "netns", "exec", f"{NET}-n{k}", str(load), "--proc-type=secondary", f"--file-prefix={NET}-node{k}",
                   "--no-pci", "--log-level=lib.eal:error", "--", "--cluster", "netns", "--rate", str(a.rate),
                   "--start-at", str(start), "--duration", f"{a.seconds:g}", "--pattern", a.pattern, "--seed", str(k + 1), "--drain", "3", "--progress", "0",
                   "--out", str(out / f"c{k}.csv"), "--summary", str(out / f"c{k}.json"), "--label", f"c{k}"]
            clients.append(subprocess.Popen(cmd, stdout=open(out / f"c{k}.log", "w"), stderr=subprocess.STDOUT))
        kill_ns = None
        if a.kill is not None:
            pid = int((out / f"node{a.kill}.pid").read_text())
            until = start + int(a.kill_at * 1e9)
            while tai_ns() < until:
                time.sleep(0.001)
            kill_ns = tai_ns()
            os.kill(pid, signal.SIGKILL)
            cluster(env, "kill", str(a.kill), check=False)  # the script's bookkeeping
        stall_ns = None
        if a.stall_ms:
            until = start + int(a.stall_at * 1e9)
            while tai_ns() < until:
                time.sleep(0.001)
            stall_ns, stall_end_ns = stall_every_node(a, out, logfs)
        for c in clients:
            c.wait(timeout=a.seconds + 120)
        for k in range(NODES):
            if k != a.kill:
                r = cluster(env, "telemetry", str(k), "/tob/stats", check=False)
                (out / f"stats{k}.json").write_text(r.stdout)
    finally:
        cluster(env, "down", check=False)
        if disk_stall:
            subprocess.run(["fsfreeze", "-u", str(logfs)], capture_output=True)  # in case we stopped inside
            subprocess.run(["umount", str(logfs)], check=False)

    survivors = [k for k in range(NODES) if k != a.kill]
    result = {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()}, "nodes": {}}
    digests = {k: tobclient.deliveries_digest(out / f"node{k}.deliveries") for k in survivors}
    load_end = start + int(a.seconds * 1e9)
    for k in survivors:
        s = json.loads((out / f"c{k}.json").read_text())
        lat = s.get("latency_ns", {})
        st = flat(json.loads((out / f"stats{k}.json").read_text() or "{}"))
        pick = lambda name: next((v for key, v in st.items() if key.endswith(name)), None)  # noqa: E731
        events = [ln.split() for ln in (out / f"node{k}.events").read_text().splitlines() if ln.strip()]
        during = [e for e in events if start <= int(e[0]) <= load_end and e[2] in MEMBERSHIP_EVENTS]
        node = {"submitted": s.get("submitted"), "delivered": s.get("delivered"),
                "latency_ms": {p: round(lat.get(p, 0) / 1e6, 3) for p in ("p50", "p99", "p999", "max")},
                "deliveries_file": {"count": digests[k][0], "digest": digests[k][1]},
                "membership_events_during_load": len(during),
                "suspicions_during_load": sum(1 for e in events if start <= int(e[0]) <= load_end and e[2] == "suspicion-raised"),
                "log_sync_p50_ms": (pick("log_sync_p50_ns") or 0) / 1e6, "log_sync_p99_ms": (pick("log_sync_p99_ns") or 0) / 1e6,
                "tx_log_late": pick("tx_log_late"), "tx_missed": pick("tx_missed"),
                "votes_not_durable": pick("node_votes_not_durable"), "votes_settled": pick("node_votes_settled"),
                "collisions": pick("node_collisions"), "rounds_started": pick("node_activations"),
                "instances_skipped": pick("node_gaps"), "instances_recovered": pick("node_instances_recovered")}
        if stall_ns is not None:
            t = sorted(int(r["received_ns"]) for r in csv.DictReader(open(out / f"c{k}.csv")))
            gaps = [(b - x, x) for x, b in zip(t, t[1:])]
            node["stall_ms"] = round((stall_end_ns - stall_ns) / 1e6, 2)
            node["rounds_after_stall"] = [{"kind": e[2], "ms": round((int(e[0]) - stall_ns) / 1e6, 1), "instance": int(e[1])}
                                          for e in events if e[2].startswith("round-") and int(e[0]) >= stall_ns - 1_000_000]
            node["gap_after_stall_ms"] = round(max((g for g, at in gaps if stall_ns - 1_000_000 <= at < stall_end_ns + 500_000_000),
                                                   default=0) / 1e6, 3)
            node["gap_before_stall_ms"] = round(max((g for g, at in gaps if start + 500_000_000 < at < stall_ns - 1_000_000),
                                                    default=0) / 1e6, 3)
        if kill_ns is not None:
            t = sorted(int(r["received_ns"]) for r in csv.DictReader(open(out / f"c{k}.csv")))
            t = [x for x in t if start + 500_000_000 < x < load_end - 500_000_000]
            gaps = [(b - x, x) for x, b in zip(t, t[1:])]
            after = [g for g, at in gaps if kill_ns - 1_000_000 <= at < kill_ns + 100_000_000]
            before = [g for g, at in gaps if at < kill_ns - 1_000_000]
            node["gap_after_kill_ms"] = round(max(after, default=0) / 1e6, 3)
            node["gap_before_kill_ms"] = round(max(before, default=0) / 1e6, 3)
            det = [int(e[0]) for e in events if e[2] == "suspicion-raised" and e[3] == str(a.kill) and int(e[0]) >= kill_ns - 1e9]
            if det:
                node["detection_ms"] = round((det[0] - kill_ns) / 1e6, 2)
                node["detection_cycles"] = round((det[0] - kill_ns) / a.cycle_ns, 1)
        result["nodes"][k] = node
    # One sequence: the same deliveries, in the same order, up to where the node that stopped
    # first stopped (a node may deliver a few more before its daemon is read at the end).
    common = min(c for c, _ in digests.values())
    result["common_prefix"] = common
    result["one_sequence"] = len({tobclient.deliveries_digest(out / f"node{k}.deliveries", common)[1] for k in survivors}) == 1
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    for k, n in result["nodes"].items():
        l = n["latency_ms"]
        line = (f"node {k}: submitted {n['submitted']} delivered {n['delivered']} (file {n['deliveries_file']['count']}); "
                f"p50 {l['p50']} p99 {l['p99']} p99.9 {l['p999']} max {l['max']} ms; events {n['membership_events_during_load']}, "
                f"suspicions {n['suspicions_during_load']}; fsync p50 {n['log_sync_p50_ms']:.2f} p99 {n['log_sync_p99_ms']:.2f} ms; "
                f"tx_log_late {n['tx_log_late']} tx_missed {n['tx_missed']}")
        if "gap_after_kill_ms" in n:
            line += (f"; longest gap after the kill {n['gap_after_kill_ms']} ms (before {n['gap_before_kill_ms']} ms), "
                     f"detection {n.get('detection_ms')} ms = {n.get('detection_cycles')} cycles")
        if "gap_after_stall_ms" in n:
            line += (f"; {a.stall} stalled {n['stall_ms']} ms: longest gap after it {n['gap_after_stall_ms']} ms "
                     f"(before {n['gap_before_stall_ms']} ms), rounds started {n['rounds_started']}, "
                     f"instances skipped {n['instances_skipped']}")
        print(line)
    print(f"one sequence at every node (the first {result['common_prefix']} deliveries of each): {result['one_sequence']}; "
          f"{out / 'result.json'}")
    return 0 if result["one_sequence"] else 1


if __name__ == "__main__":
    sys.exit(main())
