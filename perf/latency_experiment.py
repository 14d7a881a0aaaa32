#!/usr/bin/env python3
"""The seed 000 latency experiment (ch. 7) on this machine: delivery latency of dpdk-tob with no
noise, 85% noise and saturating noise on the links, for the `tdma` transport on a bridge that
prioritises the cluster's PCP (the TSN case) and the `best-effort` transport on a plain one.

Emulation (a veth has no line rate of its own; this kernel offers tbf, htb, pfifo and the u32
classifier, not prio, taprio, flower or tc actions):
  - every bridge port towards a node (tob-sw/portK) is shaped to 400 Mbit/s with a queue bounded
    to 10 ms (`tbf rate 400mbit burst 64kb latency 10ms`); 400, not 1000: one af_packet noise
    sender tops out near 600 Mbit/s here, and saturating the link must be possible;
  - noise: `dpdk-tob-load --noise` in namespace tob-noise sends best-effort frames (EtherType
    0x88B6) unicast to node 0 through the bridge, so node 0's link carries the cluster's frames
    and the noise, as in seed 000 where the noise shared the switch egress towards a receiver;
  - scheduled case (`tdma`): node 0's port has an HTB instead whose filter puts the cluster's
    EtherType (0x88B5) in a class served first; the noise waits in a bounded FIFO behind it. This
    is strict priority, as a TSN bridge gives the cluster's PCP (classified by EtherType here,
    since the kernel lacks the flower classifier), not a taprio time gate with exclusive windows;
  - best-effort case: node 0's port keeps the single FIFO of the tbf.
Load: dpdk-tob-load on every node (64-byte messages at --rate per node, Poisson), latency
submit -> delivery at every node. Results (CSV, JSON) go to --out; scripts/plot.py draws them;
the report is docs/experiments/latency.md.
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
from tobclient import cluster, common_window, order_conflicts, telemetry, wait_for  # noqa: E402

BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
LOAD = BUILD / "app/dpdk-tob-load/dpdk-tob-load"
NODES = 4
SW = "tob-sw"
# The emulated line rate. One af_packet noise sender reaches about 600 Mbit/s of 1500-byte frames
# on this machine, so the links run at 400 Mbit/s: 85% and saturating noise are then reachable.
LINK = "400mbit"
LINK_MBPS = 400
QUEUE_FRAMES = 333  # 10 ms of 1500-byte frames at 400 Mbit/s
NOISE_NS = "tob-noise"


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(list(cmd), text=True, capture_output=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return p


def shape(prioritised: bool) -> None:
    """LINK with a queue bounded to 10 ms on every port towards a node. On the loaded port
    (port0) in the scheduled case: HTB with the cluster's EtherType in a class of its own that is
    served first (strict priority), the rest in a bounded FIFO behind it."""
    def tc(*a: str) -> None:
        sh("ip", "netns", "exec", SW, "tc", *a)

    for k in range(NODES):
        port = f"port{k}"
        sh("ip", "netns", "exec", SW, "tc", "qdisc", "del", "dev", port, "root", check=False)
        if prioritised and k == 0:
            tc("qdisc", "add", "dev", port, "root", "handle", "1:", "htb", "default", "20", "r2q", "1000")
            tc("class", "add", "dev", port, "parent", "1:", "classid", "1:1", "htb", "rate", LINK, "ceil", LINK,
               "burst", "64kb")
            tc("class", "add", "dev", port, "parent", "1:1", "classid", "1:10", "htb", "rate", "300mbit", "ceil",
               LINK, "prio", "0")
            tc("class", "add", "dev", port, "parent", "1:1", "classid", "1:20", "htb", "rate", "100mbit", "ceil",
               LINK, "prio", "1")
            tc("qdisc", "add", "dev", port, "parent", "1:10", "handle", "10:", "pfifo", "limit", "1000")
            tc("qdisc", "add", "dev", port, "parent", "1:20", "handle", "20:", "pfifo", "limit", str(QUEUE_FRAMES))
            tc("filter", "add", "dev", port, "parent", "1:", "protocol", "0x88b5", "prio", "1", "u32", "match", "u32",
               "0", "0", "classid", "1:10")
        else:
            tc("qdisc", "add", "dev", port, "root", "handle", "1:", "tbf", "rate", LINK, "burst", "64kb",
               "latency", "10ms")


def noise_port_up() -> None:
    sh("ip", "netns", "del", NOISE_NS, check=False)
    sh("ip", "netns", "add", NOISE_NS)
    sh("ip", "link", "add", "noise0", "netns", NOISE_NS, "type", "veth", "peer", "name", "portnoise", "netns", SW)
    sh("ip", "-n", NOISE_NS, "link", "set", "noise0", "up")
    sh("ip", "-n", SW, "link", "set", "portnoise", "master", "tobbr0")
    sh("ip", "-n", SW, "link", "set", "portnoise", "up")


def start_noise(mbps: float, seconds: float, log: Path) -> subprocess.Popen[str] | None:
    if mbps <= 0:
        return None
    vdev = "net_af_packet0,iface=noise0,framecnt=4096,blocksz=65536,framesz=2048,qdisc_bypass=1"
    cmd = ["ip", "netns", "exec", NOISE_NS, str(LOAD), "--no-pci", "--file-prefix", "tob-noise", "-l", "0",
           "--vdev", vdev, "--log-level", "lib.eal:error", "--", "--noise", "--noise-mbps", str(mbps),
           "--noise-dst", "02:00:00:00:00:01", "--duration", str(seconds)]
    return subprocess.Popen(cmd, text=True, stdout=log.open("w"), stderr=subprocess.STDOUT)


def run_scenario(args: argparse.Namespace, transport: str, noise_mbps: float, out: Path) -> dict:
    name = f"{transport}-noise{int(noise_mbps)}"
    env = dict(os.environ, TOB_RUN_DIR=str(out / f"{name}-run"), TOB_CYCLE_NS=str(args.cycle_ns),
               TOB_BUILD_DIR=str(BUILD),
               TOB_DAEMON_ARGS=f"--transport {transport}", TOB_STATUS_INTERVAL="5")
    cluster(env, "down", check=False)
    cluster(env, "up", str(NODES))
    result = {"scenario": name, "transport": transport, "noise_mbps": noise_mbps, "cycle_ns": args.cycle_ns}
    loads = []
    noise = None
    try:
        if not wait_for(lambda: all(telemetry(k, "/tob/membership")["members"] == list(range(NODES))
                                    for k in range(NODES)), 60):
            result["error"] = "the cluster did not form"
            return result
        shape(prioritised=transport == "tdma")
        noise_port_up()
        noise = start_noise(noise_mbps, args.seconds + 6, out / f"{name}-noise.log")
        time.sleep(2)  # the noise settles, queues fill
        before = [telemetry(k, "/tob/stats") for k in range(NODES)]
        for k in range(NODES):
            base = ["ip", "netns", "exec", f"tob-n{k}", str(LOAD), "--proc-type=secondary",
                    f"--file-prefix=tob-node{k}", "--no-pci", "--log-level=lib.eal:error", "--",
                    "--cluster", "netns", "--duration", str(args.seconds), "--drain", "2", "--progress", "0",
                    "--label", name]
            # Latency: submit -> the instant the application got the delivery (it does not wait).
            loads.append(subprocess.Popen(base + ["--rate", str(args.rate), "--pattern", "poisson", "--size", "64",
                                                  "--seed", str(k + 1), "--out", str(out / f"{name}-node{k}.csv"),
                                                  "--summary", str(out / f"{name}-node{k}.json")],
                                          text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
            # Release: a second client on each node wakes at every delivery's release instant.
            loads.append(subprocess.Popen(base + ["--release", "--out", str(out / f"{name}-release{k}.csv"),
                                                  "--summary", str(out / f"{name}-release{k}.json")],
                                          text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        t0 = time.monotonic()
        while any(p.poll() is None for p in loads):
            print(f"\r  {name}: {time.monotonic() - t0:5.0f} s", end="", flush=True)
            time.sleep(1)
        print()
        for k, p in enumerate(loads):
            if p.returncode != 0:
                result.setdefault("load_errors", []).append(f"client {k}: {p.stdout.read()[-300:] if p.stdout else ''}")
        after = [telemetry(k, "/tob/stats") for k in range(NODES)]
        # Evidence of the contention: what node 0's port sent and dropped.
        q = sh("ip", "netns", "exec", SW, "tc", "-s", "qdisc", "show", "dev", "port0").stdout
        sent = [line for line in q.splitlines() if line.strip().startswith("Sent")]
        result["port0_qdisc"] = " | ".join(s.strip() for s in sent[:3])
        result["timing_failures"] = sum(a["rx_early"] + a["rx_late"] + a["tx_missed"] - b["rx_early"] - b["rx_late"]
                                        - b["tx_missed"] for a, b in zip(after, before))
        result["membership_changes"] = sum(a["node_removals"] + a["node_self_shutdowns"] - b["node_removals"]
                                           - b["node_self_shutdowns"] for a, b in zip(after, before))
        result["rx_arrival_p99_ns"] = max(a["rx_arrival_offset_p99_ns"] for a in after)
        # The queueing on the loaded link: arrival offsets at node 0 (cumulative since start).
        h0 = telemetry(0, "/tob/histogram,rx_arrival_offset")
        result["node0_arrival_ns"] = {k: h0[k] for k in ("count", "p50_ns", "p99_ns", "p999_ns", "max_ns")}
    finally:
        for p in loads:
            if p.poll() is None:
                p.kill()
        if noise is not None:
            noise.terminate()
            noise.wait(timeout=20)
        sh("ip", "netns", "del", NOISE_NS, check=False)
        cluster(env, "down", check=False)
    nl = (out / f"{name}-noise.log").read_text() if (out / f"{name}-noise.log").exists() else ""
    achieved = [line for line in nl.splitlines() if "achieved" in line]
    result["noise_achieved"] = achieved[-1].split(": ", 1)[1] if achieved else ("none" if noise_mbps <= 0 else nl[-200:])
    summaries = [json.loads((out / f"{name}-node{k}.json").read_text()) for k in range(NODES)
                 if (out / f"{name}-node{k}.json").exists()]
    result["summaries"] = summaries
    seqs = []
    for k in range(NODES):
        path = out / f"{name}-node{k}.csv"
        if path.exists():
            seqs.append([(0, int(line.split(",", 1)[0])) for line in path.read_text().splitlines()[1:]])
    # Identical sequences when the membership never changed; otherwise a node that was out for a
    # while lacks what was delivered meanwhile, and only order and integrity can be compared.
    window, diff = common_window(seqs) if len(seqs) == NODES else ([], "missing results")
    conflict = order_conflicts(seqs) if len(seqs) == NODES else "missing results"
    result["order_agreement"] = (f"identical ({len(window[0])} deliveries in the common window)" if not diff
                                 else f"same order, gaps where nodes were out ({diff})" if not conflict
                                 else f"CONFLICT: {conflict}")
    woke: dict[int, list[int]] = {}
    for k in range(NODES):
        path = out / f"{name}-release{k}.csv"
        if path.exists():
            for line in path.read_text().splitlines()[1:]:
                f = line.split(",")
                woke.setdefault(int(f[0]), []).append(int(f[11]))
    skews = sorted(max(v) - min(v) for v in woke.values() if len(v) == NODES)
    if skews:
        result["release_skew_ns"] = {"count": len(skews), "p50": skews[len(skews) // 2],
                                     "p99": skews[min(len(skews) - 1, int(len(skews) * 0.99))], "max": skews[-1]}
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--rate", type=float, default=100, help="messages per second per node")
    ap.add_argument("--cycle-ns", type=int, default=40_000_000)
    ap.add_argument("--noise", default="0,85,200", help="noise in percent of the 400 Mbit/s link (offered)")
    ap.add_argument("--transports", default="tdma,best-effort")
    ap.add_argument("--out", default="/tmp/dpdk-tob-latency")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root")
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for transport in args.transports.split(","):
        for pct in (float(x) for x in args.noise.split(",")):
            r = run_scenario(args, transport, pct * LINK_MBPS / 100, out)
            r["noise_percent"] = pct
            results.append(r)
            lat = [s["latency_ns"] for s in r.get("summaries", [])]
            p50 = max((x["p50"] for x in lat), default=0) / 1e6
            p99 = max((x["p99"] for x in lat), default=0) / 1e6
            print(f"  {r['scenario']}: latency p50 {p50:.2f} ms p99 {p99:.2f} ms (worst node), timing failures "
                  f"{r.get('timing_failures')}, membership changes {r.get('membership_changes')}, noise "
                  f"{r.get('noise_achieved')}, order {r.get('order_agreement')}")
            (out / "results.json").write_text(json.dumps(results, indent=1))
    print(f"results in {out}/results.json; plot with: /usr/bin/python3 scripts/plot.py latency {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
