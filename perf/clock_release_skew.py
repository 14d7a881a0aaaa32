#!/usr/bin/env python3
"""Cross-node wake-up skew of timed release on the netns cluster (issue 19; docs/experiments/clock.md).

Four daemons (scripts/cluster.sh, TOB_NET=crs), `[timing] sync` as given, node 0 drifting
+DRIFT ppm and node 1 -DRIFT ppm (`--clock-drift-ppm`). On every node one dpdk-tob-load client
submits (Poisson, --rate per node) and a second one waits for every delivery's release instant
(`tob_wait_release`) and notes CLOCK_TAI when it woke (`woke_tai_ns`). All namespaces share one
kernel clock, so the spread of those instants across the four nodes is the true wake-up skew,
whatever the nodes' global times are: the in-band precision plus each wake-up's own error.

    sudo python3 perf/clock_release_skew.py --sync inband --drift-ppm 100 --seconds 30

Prints one JSON object: the skew's p50, p99 and max (ns) per message and per release instant
(each node's first wake-up for it), each daemon's own estimate of the latter
(/tob/release: the wake-ups its peers report, placed on its clock) and /tob/clock at the end.
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
from tobclient import cluster, query  # noqa: E402

BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
LOAD = BUILD / "app/dpdk-tob-load/dpdk-tob-load"
NET = "crs"
NODES = 4


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sync", default="inband", choices=["inband", "external", "both", "off"])
    ap.add_argument("--drift-ppm", type=float, default=100)
    ap.add_argument("--delay-ns", type=int, default=55_000)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--rate", type=float, default=20, help="messages per second per node")
    ap.add_argument("--out", type=Path, default=Path("/tmp/dpdk-tob-release-skew"))
    ap.add_argument("--timing", action="append", default=[], metavar="KEY=VALUE",
                    help="another [timing] line, e.g. precision_ns=50000 (repeatable)")
    a = ap.parse_args()
    if any("=" not in x or "\\" in x or "\n" in x for x in a.timing):
        ap.error("--timing takes KEY=VALUE, one [timing] line")
    if a.seconds <= 0 or a.seconds > 3600 or a.rate <= 0 or a.rate > 10_000:
        ap.error("--seconds within (0, 3600], --rate within (0, 10000]")
    a.out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TOB_NET=NET, TOB_RUN_DIR=str(a.out / "run"), TOB_BUILD_DIR=str(BUILD),
               TOB_STATUS_INTERVAL="5", TOB_CONFIG_EXTRA=f"sync = {a.sync}\\ndelay_ns = {a.delay_ns}" + "".join(f"\\n{x}" for x in a.timing),
               TOB_NODE_ARGS_0=f"--clock-drift-ppm {a.drift_ppm}", TOB_NODE_ARGS_1=f"--clock-drift-ppm {-a.drift_ppm}")
    cluster(env, "down", check=False)
    procs: list[subprocess.Popen] = []
    try:
        cluster(env, "up", str(NODES))
        for k in range(NODES):
            base = ["ip", "netns", "exec", f"{NET}-n{k}", str(LOAD), "--proc-type=secondary", f"--file-prefix={NET}-node{k}",
                    "--no-pci", "--log-level=lib.eal:error", "--", "--cluster", "netns", "--duration", str(a.seconds),
                    "--drain", "2", "--progress", "0"]
            procs.append(subprocess.Popen(base + ["--rate", str(a.rate), "--pattern", "poisson", "--size", "64",
                                                  "--seed", str(k + 1)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
            procs.append(subprocess.Popen(base + ["--release", "--out", str(a.out / f"release{k}.csv")],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + a.seconds + 60
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(1)
        clocks = [query(f"{NET}-node{k}", "/tob/clock")["/tob/clock"] for k in range(NODES)]
        releases = [query(f"{NET}-node{k}", "/tob/release")["/tob/release"] for k in range(NODES)]
        members = [query(f"{NET}-node{k}", "/tob/membership")["/tob/membership"]["member_count"] for k in range(NODES)]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        cluster(env, "down", check=False)
    woke: dict[int, list[int]] = {}
    # Per release instant (many messages share one): each node's first wake-up for it, the figure
    # the daemons estimate (a client's later waits for the same instant return at once).
    first: dict[int, dict[int, int]] = {}
    for k in range(NODES):
        path = a.out / f"release{k}.csv"
        if not path.exists():
            continue
        lines = path.read_text().splitlines()
        head = lines[0].split(",")
        seq_i, tai_i, rel_i = head.index("seq"), head.index("woke_tai_ns"), head.index("release_ns")
        for line in lines[1:]:
            f = line.split(",")
            woke.setdefault(int(f[seq_i]), []).append(int(f[tai_i]))
            per_node = first.setdefault(int(f[rel_i]), {})
            per_node[k] = min(per_node.get(k, int(f[tai_i])), int(f[tai_i]))
    skews = sorted(max(v) - min(v) for v in woke.values() if len(v) == NODES)
    result = {"sync": a.sync, "drift_ppm": a.drift_ppm, "seconds": a.seconds, "members_at_end": members,
              "releases_on_all_nodes": len(skews)}
    if skews:
        result["skew_ns"] = {"p50": skews[len(skews) // 2], "p99": skews[min(len(skews) - 1, int(len(skews) * 0.99))],
                             "max": skews[-1]}
    inst = sorted(max(v.values()) - min(v.values()) for v in first.values() if len(v) == NODES)
    result["instants_on_all_nodes"] = len(inst)
    if inst:
        result["instant_skew_ns"] = {"p50": inst[len(inst) // 2], "p99": inst[min(len(inst) - 1, int(len(inst) * 0.99))],
                                     "max": inst[-1]}
    # Each daemon's own estimate of the same skew (/tob/release), beside the true one above.
    result["daemon_estimate"] = [{k: r.get(k) for k in ("skew_count", "skew_p50_ns", "skew_p99_ns", "skew_max_ns",
                                                      "own_late_p50_ns", "own_late_p99_ns", "own_late_max_ns",
                                                      "instants_matched", "instants_alone", "instants_early",
                                                      "samples_stale", "client_wakeups_lost", "peer_samples", "own_sent", "own_no_room")}
                                 for r in releases]
    result["clock"] = [{k: c.get(k) for k in ("offset_ns", "map_offset_ns", "rate_ppm", "spread_max_ns", "delay_error_ns",
                                              "common_step_ns", "rate_windows")}
                       for c in clocks]
    print(json.dumps(result, indent=1))
    return 0 if skews else 1


if __name__ == "__main__":
    sys.exit(main())
