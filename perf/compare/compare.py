#!/usr/bin/env python3
"""dpdk-tob side by side with corosync CPG and etcd on one 4-namespace topology (perf/compare/README.md;
results and what they say: docs/experiments/compare.md).

    compare.py --out DIR [--systems dpdk-tob-mars,dpdk-tob-otfp,cpg-udpu,cpg-knet,etcd]
               [--workloads paced,noise,saturate64,saturate1k,failover] [--tob-cycle-ns NS] [--quick]

Every system runs every workload in turn, on the same topology, with the same clients' contract
and the same analysis. Writes DIR/compare.json (figures per system and workload), DIR/compare.md
(the tables) and DIR/*.png (latency CDFs, throughput bars, fail-over gaps); the clients' files and
the systems' logs stay under DIR/runs/. Exit status 0 when every run completed with identical
orders and nothing lost, 1 otherwise, 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import analysis  # noqa: E402
import procs  # noqa: E402
import topology  # noqa: E402
from system import System  # noqa: E402

REPO = topology.REPO
ALL_SYSTEMS = ["dpdk-tob-mars", "dpdk-tob-otfp", "cpg-udpu", "cpg-knet", "etcd"]
ALL_WORKLOADS = ["paced", "noise", "saturate64", "saturate1k", "failover"]
NOISE_SHARE = 0.85  # iperf3 UDP at 85% of the link towards node 0
# The lowest token at which corosync kept its membership through a 60 s paced run on this machine,
# on both transports (perf/compare/sys_cpg.py; 36 ms is the least corosync accepts, and at 36 a
# kill on udpu made one extra brief membership change).
CPG_LOW_TOKEN_MS = 50


@dataclass(frozen=True)
class Workload:
    name: str
    rate: float          # messages per second per sender; 0: as fast as the system accepts
    size: int            # bytes per message
    duration_s: float
    drain_s: float       # the clients stop after this long without a delivery ...
    drain_max_s: float   # ... or this long after the last send
    noise: bool = False
    trials: int = 1
    kill_at_s: float | None = None  # failover: a member is killed this long after the start


WORKLOADS = {
    "paced": Workload("paced", 1000, 64, 60, 3, 300),
    "noise": Workload("noise", 1000, 64, 60, 3, 300, noise=True),
    "saturate64": Workload("saturate64", 0, 64, 20, 3, 300),
    "saturate1k": Workload("saturate1k", 0, 1024, 20, 3, 300),
    "failover": Workload("failover", 1000, 64, 12, 3, 300, trials=10, kill_at_s=5),
}


def quick(w: Workload) -> Workload:
    """--quick: the same workload, short (a smoke test of the harness, not a measurement)."""
    return replace(w, rate=min(w.rate, 250) if w.rate > 0 else 0, duration_s=5 if w.kill_at_s is None else 6,
                   drain_s=2, drain_max_s=30, trials=1,
                   kill_at_s=None if w.kill_at_s is None else 3)


def now_ns(clock: str) -> int:
    return time.clock_gettime_ns(time.CLOCK_TAI) if clock == "tai" else time.time_ns()


def make_system(name: str, args: argparse.Namespace) -> System:
    if name.startswith("dpdk-tob-"):
        from sys_tob import TobSystem
        order = name.removeprefix("dpdk-tob-")
        return TobSystem(order, args.tob_cycle_ns or None, args.tob_slot_ns, args.tob_kappa)
    if name.startswith("cpg-"):
        from sys_cpg import make_cpg_system
        return make_cpg_system(name)
    if name == "etcd":
        from sys_etcd import EtcdSystem
        return EtcdSystem()
    raise ValueError(f"unknown system {name!r} (known: {', '.join(ALL_SYSTEMS)}, cpg-udpu-tokenMS, cpg-knet-tokenMS)")


# --- One run: start, load, (kill), stop, analyse --------------------------------------------------

def start_noise(run: Path, w: Workload) -> list:
    server = procs.start(topology.in_ns(topology.node_ns(0), "iperf3", "-s", "-1", "-p", "5299"), run / "iperf3-server.log")
    time.sleep(0.5)
    mbps = int(topology.RATE_MBPS * NOISE_SHARE)
    client = procs.start(topology.in_ns(topology.NOISE_NS, "iperf3", "-c", topology.ip_of(0), "-p", "5299", "-u",
                                        "-b", f"{mbps}M", "-l", "1400", "-t", str(int(w.duration_s + 4)), "-J",
                                        "--logfile", str(run / "iperf3.json")), run / "iperf3-client.log")
    return [client, server]


def noise_achieved_mbps(run: Path) -> float | None:
    try:
        j = json.loads((run / "iperf3.json").read_text())
        return round(j["end"]["sum"]["bits_per_second"] / 1e6, 1)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def client_files(run: Path, k: int) -> dict[str, Path]:
    return {"records": run / f"node{k}.records.csv", "summary": run / f"node{k}.summary.json",
            "events": run / f"node{k}.events.csv", "log": run / f"node{k}.client.log"}


def pick_victim(system: System, trial: int) -> int:
    """Even trials kill the leader (coordinator, leader or ring representative); odd ones the
    other members in turn."""
    lead = system.leader()
    if trial % 2 == 0:
        return lead
    others = [m for m in system.members if m != lead]
    return others[(trial // 2) % len(others)]


def one_run(system: System, w: Workload, run: Path, trial: int, lead_s: float) -> dict:
    shutil.rmtree(run, ignore_errors=True)  # a trial's files are its own, not appended to an earlier invocation's
    run.mkdir(parents=True)
    system.start(run)
    clients: dict[int, object] = {}
    noise: list = []
    killed = kill_ns = None
    try:
        start_at = now_ns(system.clock) + int(lead_s * 1e9)
        for k in range(topology.NODES):
            f = client_files(run, k)
            common = ["--node", str(k), "--rate", f"{w.rate:g}", "--size", str(w.size), "--start-at", str(start_at),
                      "--duration", f"{w.duration_s:g}", "--drain", f"{w.drain_s:g}", "--drain-max", f"{w.drain_max_s:g}",
                      "--records", str(f["records"]),
                      "--summary", str(f["summary"]), "--events", str(f["events"])]
            clients[k] = procs.start(system.client_cmd(k, common), f["log"])
        if w.noise:
            noise = start_noise(run, w)
        deadline = time.monotonic() + lead_s + w.duration_s + w.drain_max_s + 60
        if w.kill_at_s is not None:
            time.sleep(max(0.0, (start_at - now_ns(system.clock)) / 1e9 + w.kill_at_s))
            killed = pick_victim(system, trial)
            kill_ns = now_ns(system.clock)
            system.kill(killed)
            procs.stop([clients[killed]], grace_s=5)
        for k, p in clients.items():
            try:
                p.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"    node {k}'s client overran its schedule: stopped", flush=True)
        facts = system.run_facts()
    finally:
        procs.stop(list(clients.values()), grace_s=5)
        procs.stop(noise, grace_s=5)
        system.stop()
    members = []
    for k in range(topology.NODES):
        f = client_files(run, k)
        system.write_events(k, f["events"])
        members.append(analysis.read_member(k, f["records"], f["summary"], f["events"]))
    result = analysis.analyse(members, killed, kill_ns)
    result.update(facts)
    if killed is not None:
        result["killed"] = killed
        result["kill_ns"] = kill_ns  # on the system's clock: the trial's files can be analysed again
        result["killed_role"] = system.leader_role if trial % 2 == 0 else "member"
    if w.noise:
        result["noise_mbps"] = noise_achieved_mbps(run)
        if result["noise_mbps"] is None:
            result["problems"].append(f"no noise: iperf3 reported nothing (see {run}/iperf3-client.log)")
    return result


# --- Aggregation over trials -----------------------------------------------------------------------

def aggregate(trials: list[dict], w: Workload) -> dict:
    """One workload's figures over its trials: medians with the range, lists for fail-over."""
    def med(key: str) -> float | None:
        vals = [t[key] for t in trials if t.get(key) is not None]
        return round(statistics.median(vals), 3) if vals else None

    lat = {}
    for q in ("p50", "p99", "p999", "max"):
        vals = [t["latency_us"][q] for t in trials if t["latency_us"].get(q) is not None]
        lat[q] = round(statistics.median(vals), 1) if vals else None
    out = {
        "msgs_per_s": med("msgs_per_s"),
        "msgs_per_s_range": [min(t["msgs_per_s"] for t in trials), max(t["msgs_per_s"] for t in trials)],
        "latency_us": lat,
        "order_identical": all(t["order_identical"] for t in trials),
        "lost": sum(t["lost"] for t in trials),
        "duplicates": sum(t["duplicates"] for t in trials),
        "order_conflicts": sum(t.get("order_conflicts", 0) for t in trials),
        "workload": asdict(w),
        "trials": trials,
    }
    for key in ("cycle_ns", "membership_changes", "timing_failures", "noise_mbps"):
        vals = [t[key] for t in trials if t.get(key) is not None]
        if vals:
            out[key] = vals[0] if key == "cycle_ns" else (sum(vals) if key != "noise_mbps" else med(key))
    if w.kill_at_s is not None:
        out["detection_ms"] = [None if t.get("detection_ms") is None else round(t["detection_ms"], 1) for t in trials]
        out["gap_ms"] = [None if t.get("gap_ms") is None else round(t["gap_ms"], 1) for t in trials]
        out["killed"] = [t.get("killed") for t in trials]
    return out


def healthy(r: dict) -> bool:
    return bool(r.get("order_identical")) and r.get("lost", 1) == 0 and not any(t.get("problems") for t in r["trials"])


# --- Reports ---------------------------------------------------------------------------------------

def fmt(v: float | None, digits: int = 0) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def markdown(doc: dict) -> str:
    lines = [f"# perf/compare, {doc['meta']['date']}", "",
             f"Machine: {doc['meta']['machine']}. Topology: 4 namespaces on a bridge, every link tbf "
             f"{topology.RATE} (perf/compare/README.md). Commit {doc['meta']['commit']}.", ""]
    for wname in doc["meta"]["workloads"]:
        rows = [(s, d["workloads"][wname]) for s, d in doc["systems"].items() if wname in d.get("workloads", {})]
        if not rows:
            continue
        w = rows[0][1]["workload"]
        what = "as fast as accepted" if w["rate"] == 0 else f"{w['rate']:g}/s per sender"
        lines += [f"## {wname}: 4 senders, {what}, {w['size']} B, {w['duration_s']:g} s"
                  + (", UDP noise towards node 0" if w["noise"] else "")
                  + (f", {w['trials']} kills" if w["kill_at_s"] is not None else ""), ""]
        head = "| system | msgs/s | latency p50 / p99 / p99.9 / max (ms) | order identical | lost |"
        sep = "|---|---|---|---|---|"
        if w["kill_at_s"] is not None:
            head += " detection median / max (ms) | longest gap median / max (ms) |"
            sep += "---|---|"
        lines += [head, sep]
        for s, r in rows:
            lat = r["latency_us"]
            cells = [s, fmt(r["msgs_per_s"]),
                     " / ".join(fmt(None if lat[q] is None else lat[q] / 1e3, 2) for q in ("p50", "p99", "p999", "max")),
                     "yes" if r["order_identical"] else "**no**", str(r["lost"])]
            if w["kill_at_s"] is not None:
                for key in ("detection_ms", "gap_ms"):
                    vals = [v for v in r[key] if v is not None]
                    missing = len(r[key]) - len(vals)
                    cell = f"{fmt(statistics.median(vals), 1)} / {fmt(max(vals), 1)}" if vals else "-"
                    cells.append(cell + (f" ({missing} not seen)" if missing else ""))
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        for s, r in rows:
            notes = []
            if r.get("cycle_ns"):
                notes.append(f"cycle {r['cycle_ns'] / 1e6:g} ms, {r.get('membership_changes', 0)} membership changes, "
                             f"{r.get('timing_failures', 0)} timing failures")
            if r.get("noise_mbps") is not None:
                notes.append(f"noise achieved {r['noise_mbps']:g} Mbit/s")
            problems = sorted({p for t in r["trials"] for p in t.get("problems", [])})
            if problems:
                notes.append("problems: " + "; ".join(problems[:3]) + (" ..." if len(problems) > 3 else ""))
            if notes:
                lines.append(f"- {s}: " + "; ".join(notes))
        lines.append("")
    if doc.get("unavailable"):
        lines += ["## Not run", ""] + [f"- {s}: {why}" for s, why in doc["unavailable"].items()] + [""]
    return "\n".join(lines)


def plots(out: Path) -> None:
    """The plots need matplotlib: Debian's python3-matplotlib (scripts/setup.sh), /usr/bin/python3."""
    py = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    r = subprocess.run([py, str(HERE / "plots.py"), str(out)], text=True, capture_output=True, timeout=300)
    print(r.stdout.strip() or r.stderr.strip()[-300:])


# --- Main ------------------------------------------------------------------------------------------

def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for compare.json, compare.md, plots and runs/")
    ap.add_argument("--systems", default=",".join(ALL_SYSTEMS))
    ap.add_argument("--workloads", default=None, help=f"default: all ({','.join(ALL_WORKLOADS)}); with --quick: paced")
    ap.add_argument("--tob-cycle-ns", type=int, default=0,
                    help="dpdk-tob's cycle (default: the shortest cycle docs/ state as stable for each engine)")
    ap.add_argument("--cpg-low-token-ms", type=int, default=CPG_LOW_TOKEN_MS,
                    help="cpg-udpu and cpg-knet also run at this token (the lowest stable one here, "
                         f"docs/experiments/compare.md; default {CPG_LOW_TOKEN_MS}; 0: only corosync's defaults)")
    ap.add_argument("--tob-slot-ns", type=int, default=0,
                    help="dpdk-tob: packed slots of this length (docs/configuration.md \"Packed slots\"; 0: N equal slots)")
    ap.add_argument("--tob-kappa", type=int, default=0, help="dpdk-tob-otfp: [timing] kappa (0: the daemon's default)")
    ap.add_argument("--quick", action="store_true", help="one short workload per system (a smoke test, < 3 min)")
    a = ap.parse_args(argv)
    a.systems = [s for s in a.systems.split(",") if s]
    if a.cpg_low_token_ms < 0:
        ap.error("--cpg-low-token-ms must be positive (or 0)")
    if a.cpg_low_token_ms and not a.quick:  # each corosync transport at its defaults and at the low token
        a.systems = [x for s in a.systems
                     for x in ([s, f"{s}-token{a.cpg_low_token_ms}"] if s in ("cpg-udpu", "cpg-knet") else [s])]
    a.workloads = [w for w in (a.workloads or ("paced" if a.quick else ",".join(ALL_WORKLOADS))).split(",") if w]
    for w in a.workloads:
        if w not in WORKLOADS:
            ap.error(f"unknown workload {w!r} (known: {', '.join(ALL_WORKLOADS)})")
    if a.tob_cycle_ns and not 1_000_000 <= a.tob_cycle_ns <= 10_000_000_000:
        ap.error("--tob-cycle-ns must be between 1 ms and 10 s")
    if a.tob_slot_ns < 0 or a.tob_kappa < 0 or a.tob_kappa > 16:
        ap.error("--tob-slot-ns must be positive (or 0) and --tob-kappa 0..16")
    return a


def git_commit() -> str:
    r = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], text=True, capture_output=True)
    return r.stdout.strip() or "unknown"


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    if os.geteuid() != 0:
        print("compare: must run as root (network namespaces, packages, hugepages)", file=sys.stderr)
        return 2
    try:
        systems = [make_system(s, a) for s in a.systems]
    except (ValueError, ImportError) as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    work = out / "work"
    work.mkdir(exist_ok=True)
    doc = {"meta": {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": f"{platform.node()}, {os.cpu_count()} CPUs, "
                    f"{platform.release()}", "commit": git_commit(), "quick": a.quick, "workloads": a.workloads,
                    "argv": argv},
           "systems": {}, "unavailable": {}}
    try:  # the topology's own tools: ping checks the bridge, iperf3 makes the noise
        procs.ensure_packages(["iputils-ping", "iperf3", "iproute2"])
    except procs.Unavailable as e:
        print(f"compare: {e}", file=sys.stderr)
        return 1
    ok = True
    ready: list[System] = []
    for s in systems:
        print(f"compare: preparing {s.name}", flush=True)
        try:
            s.prepare(work)
            ready.append(s)
            doc["systems"][s.name] = {"info": s.info(), "workloads": {}}
        except (procs.Unavailable, RuntimeError, OSError, subprocess.SubprocessError) as e:
            print(f"compare: {s.name} unavailable: {e}", flush=True)
            doc["unavailable"][s.name] = str(e)
            ok = False
    lead_s = 3.0 if a.quick else 4.0
    topology.up(out / "runs")
    try:
        for wname in a.workloads:
            w = quick(WORKLOADS[wname]) if a.quick else WORKLOADS[wname]
            for s in ready:
                trials = []
                for t in range(w.trials):
                    run = out / "runs" / s.name / wname / f"trial{t}"
                    print(f"compare: {s.name} {wname} trial {t + 1}/{w.trials}", flush=True)
                    try:
                        r = one_run(s, w, run, t, lead_s)
                    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                        print(f"compare:   failed: {e}", flush=True)
                        r = {"error": str(e), "msgs_per_s": 0.0, "latency_us": {}, "order_identical": False, "lost": 0,
                             "duplicates": 0, "problems": [str(e)]}
                    trials.append(r)
                    lat = r.get("latency_us", {})
                    print(f"compare:   {r['msgs_per_s']:.0f} msgs/s, latency p50 {fmt((lat.get('p50') or 0) / 1e3, 2)} "
                          f"p99 {fmt((lat.get('p99') or 0) / 1e3, 2)} ms, order identical {r['order_identical']}, "
                          f"lost {r['lost']}" + (f", gap {r['gap_ms']:.1f} ms, detection {fmt(r.get('detection_ms'), 1)} ms"
                                                 if r.get("gap_ms") is not None else ""), flush=True)
                agg = aggregate(trials, w)
                doc["systems"][s.name]["workloads"][wname] = agg
                ok = ok and healthy(agg)
                (out / "compare.json").write_text(json.dumps(doc, indent=1))
    finally:
        topology.down()
    (out / "compare.json").write_text(json.dumps(doc, indent=1))
    (out / "compare.md").write_text(markdown(doc))
    print(markdown(doc))
    plots(out)
    print(f"compare: wrote {out / 'compare.json'} and {out / 'compare.md'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
