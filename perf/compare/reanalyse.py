#!/usr/bin/env python3
"""Analyses the fail-over trials of an earlier compare.py invocation again from the files it kept
(DIR/runs/SYSTEM/failover/trialN), with the current analysis.py: after a fix of the analysis, the
figures of a run that took an hour need not be taken again.

    reanalyse.py DIR [--update]

Prints, per system, the detection and longest-gap medians with their range, and writes
DIR/failover-reanalysed.json. With --update it also puts the new figures into DIR/compare.json
(each fail-over trial and the workload's lists; the old file is kept as compare.json.orig), so
that `plots.py DIR` draws them. The kill instant is the trial's `kill_ns` when compare.json has
it. Invocations before it was recorded keep their detection figures (taken with the exact
instant) and get the gap again with the kill placed at the clients' first send + the workload's
kill_at_s (the harness kills up to some 50 ms after that, once it has asked the system for its
leader; the gap is searched from 1 s before the kill, so this does not move it).
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import analysis  # noqa: E402
import topology  # noqa: E402
from compare import client_files  # noqa: E402


def trial_figures(run: Path, trial: dict, kill_at_s: float) -> dict:
    files = [client_files(run, k) for k in range(topology.NODES)]
    members = [analysis.read_member(k, f["records"], f["summary"], f["events"]) for k, f in enumerate(files)]
    kill_ns = trial.get("kill_ns")
    exact = kill_ns is not None
    if not exact:
        firsts = [int(m.summary.get("first_send_ns") or 0) for m in members if m.summary.get("first_send_ns")]
        kill_ns = min(firsts) + int(kill_at_s * 1e9)
    r = analysis.analyse(members, trial["killed"], kill_ns)
    return {"killed": trial["killed"], "detection_ms": r["detection_ms"] if exact else trial.get("detection_ms"),
            "gap_ms": r["gap_ms"]}


def main() -> int:
    args = sys.argv[1:]
    update = "--update" in args
    args = [a for a in args if a != "--update"]
    if len(args) != 1 or not (Path(args[0]) / "compare.json").exists():
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(args[0])
    doc = json.loads((out / "compare.json").read_text())
    result: dict[str, dict] = {}
    for name, system in doc["systems"].items():
        w = system["workloads"].get("failover")
        if w is None:
            continue
        trials = [trial_figures(out / "runs" / name / "failover" / f"trial{t}", tr, w["workload"]["kill_at_s"])
                  for t, tr in enumerate(w["trials"])]
        row = {"trials": trials}
        for key in ("detection_ms", "gap_ms"):
            vals = [t[key] for t in trials if t[key] is not None]
            row[key] = {"median": round(statistics.median(vals), 1), "min": round(min(vals), 1),
                        "max": round(max(vals), 1)} if vals else None
        result[name] = row
        if update:
            for tr, new in zip(w["trials"], trials):
                tr["detection_ms"], tr["gap_ms"] = new["detection_ms"], new["gap_ms"]
            for key in ("detection_ms", "gap_ms"):
                w[key] = [None if t[key] is None else round(t[key], 1) for t in trials]
        fmt = lambda v: "-" if v is None else f"{v['median']:,.1f} ({v['min']:,.1f}-{v['max']:,.1f})"  # noqa: E731
        print(f"{name:18} detection {fmt(row['detection_ms'])} ms, longest gap {fmt(row['gap_ms'])} ms")
    (out / "failover-reanalysed.json").write_text(json.dumps(result, indent=1))
    if update:
        orig = out / "compare.json.orig"
        if not orig.exists():
            (out / "compare.json").replace(orig)
        (out / "compare.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
