#!/usr/bin/env python3
"""Smoke test of perf/compare (perf/compare/README.md): `compare.py --quick` runs every system
(dpdk-tob mars and otfp, corosync CPG udpu and knet, etcd) through the short paced workload on the
4-namespace topology, and its outputs carry what the issue's readers check from outside:
compare.json with msgs_per_s, latency_us p50/p99/p999/max, order_identical and lost per system,
dpdk-tob's cycle_ns and membership_changes; compare.md with a row per system; the plots. Bad
arguments exit 2 before anything starts; nothing is left behind (namespaces, processes).

Wall-clock figures are not asserted (they are reported by compare.py), only that every run
delivered the same order everywhere and lost nothing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COMPARE = REPO / "perf/compare/compare.py"
SYSTEMS = ["dpdk-tob-mars", "dpdk-tob-otfp", "cpg-udpu", "cpg-knet", "etcd"]
TIMEOUT_S = 840  # the suite's timeout is 900 s; a fresh machine installs packages and modules first

failures: list[str] = []
checks = 0


def check(ok: bool, what: str) -> None:
    global checks
    checks += 1
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], text=True, capture_output=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def bad_arguments() -> None:
    for args, what in ((["--systems", "nosuch"], "an unknown system"),
                       (["--workloads", "paced,nosuch"], "an unknown workload"),
                       ([], "no --out")):
        r = subprocess.run([sys.executable, str(COMPARE), *args] + ([] if not args else ["--out", "/nonexistent/x"]),
                           text=True, capture_output=True, timeout=60)
        check(r.returncode == 2 and r.stderr.strip() != "" and "Traceback" not in r.stderr,
              f"{what} is refused with exit 2 and a message (exit {r.returncode}: {r.stderr.strip()[-160:]})")


def quick_run(out: Path) -> None:
    before = namespaces()
    env = dict(os.environ)
    env.setdefault("TOB_BUILD_DIR", str(REPO / "build"))
    r = subprocess.run([sys.executable, str(COMPARE), "--out", str(out), "--quick"], env=env,
                       text=True, capture_output=True, timeout=TIMEOUT_S)
    sys.stdout.write(r.stdout[-4000:])
    sys.stderr.write(r.stderr[-4000:])
    doc_path = out / "compare.json"
    doc = json.loads(doc_path.read_text()) if doc_path.exists() else {}
    excused = {name for name in SYSTEMS if stall_excused(name, doc)}
    check(r.returncode == 0 or (r.returncode == 1 and excused),
          f"compare.py --quick exits 0 (exit {r.returncode})"
          + (f"; 1 excused: {sorted(excused)} lost nodes to host stalls" if excused and r.returncode == 1 else ""))
    check(doc_path.exists(), "compare.json is written")
    if not doc_path.exists():
        return
    check(doc.get("meta", {}).get("quick") is True, "compare.json says it was a quick run")
    check(not doc.get("unavailable"), f"no system is unavailable ({doc.get('unavailable')})")
    md = (out / "compare.md").read_text() if (out / "compare.md").exists() else ""
    for name in SYSTEMS:
        w = doc.get("systems", {}).get(name, {}).get("workloads", {}).get("paced")
        check(w is not None, f"{name}: the paced workload has a result")
        if w is None:
            continue
        lat = w.get("latency_us", {})
        check(isinstance(w.get("msgs_per_s"), (int, float)) and w["msgs_per_s"] > 0,
              f"{name}: msgs_per_s > 0 ({w.get('msgs_per_s')})")
        check(all(isinstance(lat.get(k), (int, float)) for k in ("p50", "p99", "p999", "max"))
              and 0 < lat["p50"] <= lat["p99"] <= lat["p999"] <= lat["max"],
              f"{name}: latency_us p50 <= p99 <= p999 <= max ({lat})")
        trial = (w.get("trials") or [{}])[0]
        members = trial.get("delivered_per_member", {})
        if name in excused:
            # mars and a host stall (see stall_excused): nodes were removed and missed messages;
            # what must still hold is total order over what each delivered, without duplicates.
            check(w.get("order_conflicts") == 0 and w.get("duplicates") == 0 and len(members) == 4,
                  f"{name}: no two nodes deliver common messages in different orders, no duplicate "
                  f"(excused: {w.get('membership_changes')} membership changes after {w.get('timing_failures')} "
                  f"timing failures of this VM; lost {w.get('lost')}, delivered {members} of {trial.get('sent')})")
            continue
        check(w.get("order_identical") is True, f"{name}: every node delivered the same order")
        check(w.get("lost") == 0, f"{name}: nothing lost ({w.get('lost')})")
        check(len(members) == 4 and len(set(members.values())) == 1 and trial.get("sent", 0) > 0
              and all(v == trial["sent"] for v in members.values()),
              f"{name}: every node delivered every message sent ({trial.get('sent')} sent, {members})")
        if name.startswith("dpdk-tob"):
            check(isinstance(w.get("cycle_ns"), int) and w["cycle_ns"] > 0,
                  f"{name}: cycle_ns reported ({w.get('cycle_ns')})")
            check(isinstance(w.get("membership_changes"), int),
                  f"{name}: membership_changes reported ({w.get('membership_changes')})")
        check(f"| {name} |" in md, f"{name}: a row in compare.md")
    for plot in ("latency-cdf-paced.png", "throughput.png"):
        p = out / plot
        check(p.exists() and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{plot} is a PNG")
    left = namespaces() - before
    check(not any(n.startswith("cmp-") for n in left), f"no namespace of the topology is left ({sorted(left)})")
    r = subprocess.run(["pgrep", "-x", "-d", " ", "corosync|etcd|cpg_bench|etcd_bench|dpdk-tob|dpdk-tob-load"],
                       text=True, capture_output=True)
    check(r.stdout.strip() == "", f"no process of the comparison is left ({r.stdout.strip()})")


def stall_excused(name: str, doc: dict) -> bool:
    """Under mars a frame late or missed is a fault (docs/protocol-mars.md): a host stall of this
    VM (1-13 ms, about once a second) makes a node's frames late, the others remove it and it
    rejoins, missing what was delivered meanwhile. That is excused for dpdk-tob-mars alone, when
    its run counted membership changes and timing failures, had no other problem, and kept the
    total order (order_conflicts, duplicates: checked by the caller)."""
    w = doc.get("systems", {}).get(name, {}).get("workloads", {}).get("paced") or {}
    trials = w.get("trials") or []
    return (name == "dpdk-tob-mars" and (w.get("membership_changes") or 0) > 0
            and (w.get("timing_failures") or 0) > 0 and bool(trials)
            and not any(t.get("problems") or t.get("error") for t in trials))


def main() -> int:
    bad_arguments()
    with tempfile.TemporaryDirectory(prefix="tob-compare-quick-") as tmp:
        quick_run(Path(tmp))
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
