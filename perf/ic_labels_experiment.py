#!/usr/bin/python3
"""The largest label count the key-value store publishes at 100% success, per label period, on this
machine's netns cluster (seed 004 §V-B; the seed reports up to ~2000 labels at P_min = 100 ms on
four Raspberry Pi 4).

For each label period T (default 100, 10 and 1 ms) a binary search over the label count L runs
trials. A trial is one fresh cluster (scripts/cluster.sh, N nodes) with an [ic] section sized for
L labels, and one `tob-labels --labels L --period-ms T` per node (app/tob-labels): every tick of
T ms each node writes all L labels for the earliest publishing instant and reads them back there.
A trial passes when every node reports every tick successful (success_rate 1.0, no error, the
planned number of ticks run).

Mapping of the label period to the schedule (docs/examples-ic.md):
  - one IC instance per tick carries all L labels: the IC period P x cycle = T exactly, so the
    cycle is T / P (TOB_CYCLE_NS) and `[ic] period_cycles = P`;
  - default P = 1: the cycle is T. The slot (cycle / N) is as long as it can be for T, and the
    f + 1 rounds of consecutive instances overlap (one round of each per slot), so a tick's batch
    is accepted every T; a write made at a tick start is published (f + 2) T later (R rounds after
    the end of its period). `--period-cycles 2,4` measures shorter latencies ((1 + R / P) T) paid
    for with P times shorter slots;
  - `[ic] keys_per_period = L`, key_bytes = the longest key (`lb/<L-1>`), value_bytes = 16 (the
    largest label), store_keys = L, reduction majority (correct nodes write identical bytes).
    These bounds fix the round data per slot whatever is written, so a trial measures the
    configuration for L: the daemon refuses one whose round data needs more than 2048 frames per
    slot (roughly L > 16000 with N = 4 and 1500-byte frames), and such a trial counts as failed.

Search: start at --start-labels, double after each pass until a failure (or --max-labels), then
bisect until the gap is at most --resolution of the passing count (at least 1 label). Trials
whose cluster does not form are retried once; if the cluster never forms for a period (e.g. a
1 ms cycle on a VM that stalls for milliseconds), the period is reported as such rather than as
"0 labels". Everything is bounded: per-trial timeouts, --max-trials per period and --budget-s for
the whole run (results so far are kept and printed).

Output under --out: trials.csv (one row per trial), results.json (per period: the largest passing
L, the smallest failing L, the trials) and per-trial directories with cluster.ini, daemon logs and
each node's tob-labels CSV and JSON summary. Needs root (network namespaces, hugepages) and refuses
to run while another netns cluster is up.

    sudo perf/ic_labels_experiment.py --out /tmp/ic-labels [--periods-ms 100,10,1] [--seconds 15]
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from tobclient import cluster, telemetry, wait_for  # noqa: E402

KEY_PREFIX = "lb/"
LABEL_VALUE_BYTES = 16  # the largest label of the benchmark the seed keeps (label_set.h)
CLUSTER_NAME = "netns"  # scripts/cluster.sh
NS_PER_MS = 1_000_000

# The seed's figures (Tables I and II, N = 4 Raspberry Pi 4, workloads mixing periods >= P_min):
# the largest label count with 100.00% read success on all four nodes, and the largest tried.
SEED_FIGURES = {
    100: "1712 labels at 100% on all nodes (up to 1986 at >= 99.94%), P_min = 100 ms, Table II",
    50: "689 labels at 100% on all nodes (905 at 44.82-99.56%), P_min = 50 ms, Table I",
    10: "not supported: IvPSim success fell from 20 ms and reached 0 at 10 ms (§V-A)",
    1: "not supported (§V-A, §V-B: periods below P_min pruned)",
}


@dataclass
class TrialResult:
    period_ms: int
    period_cycles: int
    cycle_ns: int
    labels: int
    outcome: str  # pass | fail | refused (daemon refused the [ic] configuration) | no_cluster | timeout
    success_rate_min: float = 0.0
    periods_run_min: int = 0
    periods_planned: int = 0
    write_refusals: dict[str, int] = field(default_factory=dict)
    read_failures: dict[str, int] = field(default_factory=dict)
    latency_p50_ms: float = float("nan")
    latency_max_ms: float = float("nan")
    note: str = ""
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"


@dataclass
class SearchResult:
    period_ms: int
    period_cycles: int
    best: int = 0  # largest label count that passed
    first_fail: Optional[int] = None  # smallest label count that failed
    status: str = "searching"  # done | budget | max_trials | max_labels | no_cluster | interrupted
    trials: list[TrialResult] = field(default_factory=list)


def key_bytes_for(labels: int) -> int:
    """Bytes of the longest key tob-labels writes for `labels` labels: prefix + decimal id."""
    return len(KEY_PREFIX) + len(str(max(labels - 1, 0)))


def ic_section(labels: int, nodes: int, period_cycles: int) -> str:
    """The [ic] section for L labels per tick (docs/configuration.md, [ic])."""
    f = (nodes - 1) // 3
    return "\n".join([
        "[ic]",
        f"f = {f}",
        f"period_cycles = {period_cycles}",
        f"keys_per_period = {labels}",
        f"key_bytes = {key_bytes_for(labels)}",
        f"value_bytes = {LABEL_VALUE_BYTES}",
        f"store_keys = {max(labels, 16)}",
        "versions_per_key = 4",
        "reduction = majority",
    ])


def cycle_ns_for(period_ms: int, period_cycles: int) -> int:
    """One IC period per label tick: period_cycles cycles of T / P."""
    total = period_ms * NS_PER_MS
    if total % period_cycles != 0:
        raise ValueError(f"{period_ms} ms is not a whole number of ns cycles with period_cycles = {period_cycles}")
    return total // period_cycles


def search(run_trial: Callable[[int], TrialResult], result: SearchResult, start: int, max_labels: int,
           resolution: float, max_trials: int, out_of_time: Callable[[], bool],
           on_trial: Callable[[], None] = lambda: None) -> SearchResult:
    """Largest L with run_trial(L).passed: doubling from `start`, then bisection. A trial whose
    cluster did not form (or whose clients timed out) is run once more; a period where no trial
    ever formed a cluster ends as `no_cluster`. on_trial runs after every trial (to save results)."""
    lo, hi = 0, None  # lo passed (0: none yet), hi failed
    formed_once = False
    candidate = max(1, min(start, max_labels))
    while True:
        if hi is not None and hi - lo <= max(1, math.ceil(lo * resolution)):
            result.status = "done"
            break
        if len(result.trials) >= max_trials:
            result.status = "max_trials"
            break
        if out_of_time():
            result.status = "budget"
            break
        r = run_trial(candidate)
        result.trials.append(r)
        on_trial()
        if r.outcome in ("no_cluster", "timeout") and len(result.trials) < max_trials and not out_of_time():
            r = run_trial(candidate)  # once more: a transient start-up failure is not a verdict
            result.trials.append(r)
            on_trial()
        if r.outcome == "interrupted":
            result.status = "interrupted"
            break
        formed_once = formed_once or r.outcome not in ("no_cluster",)
        if r.passed:
            lo = candidate
            if hi is None:
                if candidate >= max_labels:
                    result.status = "max_labels"
                    break
                candidate = min(candidate * 2, max_labels)
                continue
        else:
            hi = candidate
        if lo == 0 and hi == 1:
            result.status = "done" if formed_once else "no_cluster"
            break
        candidate = (lo + hi) // 2 if lo > 0 else max(1, hi // 2)
    result.best, result.first_fail = lo, hi
    if result.status == "done" and not formed_once:
        result.status = "no_cluster"
    return result


# --- the cluster side -------------------------------------------------------------------------

class Interrupted(Exception):
    pass


def other_cluster_running() -> str:
    """A description of a netns cluster that seems to be up (ours would collide with it), or ""."""
    p = subprocess.run(["ip", "netns", "list"], text=True, capture_output=True)
    names = [line.split()[0] for line in p.stdout.splitlines() if line.strip()]
    ours = [n for n in names if n == "tob-sw" or (n.startswith("tob-n") and n[5:].isdigit())]
    if ours:
        return "network namespaces " + ", ".join(sorted(ours))
    return ""


def tai_now_ns() -> int:
    # The daemons' global time with `clock = tai` (cluster.sh): CLOCK_TAI, fitted to the TSC.
    return time.clock_gettime_ns(time.CLOCK_TAI)


def daemons_alive(run_dir: Path, nodes: int) -> list[bool]:
    alive = []
    for k in range(nodes):
        try:
            pid = int((run_dir / f"node{k}.pid").read_text().strip())
            os.kill(pid, 0)
            alive.append(True)
        except (OSError, ValueError):
            alive.append(False)
    return alive


def log_tail(path: Path, lines: int = 3) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class ClusterTrials:
    """Runs one trial: cluster up with the [ic] section, tob-labels on every node, cluster down."""

    def __init__(self, args: argparse.Namespace, build: Path, out: Path):
        self.args = args
        self.build = build
        self.out = out
        self.labels_bin = build / "app/tob-labels/tob-labels"
        self.stop = False

    def env(self, run_dir: Path, period_ms: int, period_cycles: int, labels: int) -> dict[str, str]:
        return dict(os.environ, TOB_RUN_DIR=str(run_dir), TOB_BUILD_DIR=str(self.build),
                    TOB_CYCLE_NS=str(cycle_ns_for(period_ms, period_cycles)),
                    TOB_CONFIG_TAIL=ic_section(labels, self.args.nodes, period_cycles).replace("\n", "\\n"),
                    TOB_STATUS_INTERVAL="5",
                    # The trial waits for the membership itself and tells a refused configuration
                    # (a daemon that exits at start) from a cluster that does not form.
                    TOB_UP_WAIT="0")

    def client_cmd(self, k: int, period_ms: int, labels: int, start_ns: int, trial_dir: Path) -> list[str]:
        cpus = os.cpu_count() or 1
        return ["ip", "netns", "exec", f"tob-n{k}", str(self.labels_bin), "--proc-type=secondary",
                f"--file-prefix=tob-node{k}", "--no-pci", f"--lcores=0@(0-{cpus - 1})", "--log-level=lib.eal:error",
                "--", "--cluster", CLUSTER_NAME, "--labels", str(labels), "--period-ms", str(period_ms),
                "--seconds", str(self.args.seconds), "--start-ns", str(start_ns), "--keys", KEY_PREFIX,
                "--read-delay-us", str(self.args.read_delay_us), "--quiet",
                "--csv", str(trial_dir / f"node{k}.csv"), "--summary", str(trial_dir / f"node{k}.json")]

    def run(self, period_ms: int, period_cycles: int, labels: int) -> TrialResult:
        if self.stop:
            return TrialResult(period_ms, period_cycles, 0, labels, "interrupted")
        t0 = time.monotonic()
        cycle_ns = cycle_ns_for(period_ms, period_cycles)
        trial_dir = self.out / f"T{period_ms}ms-P{period_cycles}-L{labels}-{int(time.time())}"
        trial_dir.mkdir(parents=True, exist_ok=True)
        env = self.env(trial_dir / "run", period_ms, period_cycles, labels)
        r = TrialResult(period_ms, period_cycles, cycle_ns, labels, "fail")
        print(f"  T = {period_ms} ms, P = {period_cycles}, L = {labels}: ", end="", flush=True)
        clients: list[subprocess.Popen[str]] = []
        try:
            up = cluster(env, "up", str(self.args.nodes), check=False)
            (trial_dir / "cluster-up.log").write_text(up.stdout + up.stderr)
            if up.returncode != 0:
                r.outcome, r.note = "no_cluster", f"cluster.sh up failed: {(up.stdout + up.stderr).strip()[-300:]}"
                return r
            members = list(range(self.args.nodes))
            formed = wait_for(lambda: all(telemetry(k, "/tob/membership")["members"] == members
                                          for k in range(self.args.nodes)), self.args.form_timeout_s)
            if not formed:
                alive = daemons_alive(trial_dir / "run", self.args.nodes)
                if not all(alive):
                    # A daemon that exits at start refused the configuration (e.g. the round data
                    # of L labels needs more than 2048 frames per slot): L is too large.
                    dead = [k for k, a in enumerate(alive) if not a]
                    r.outcome = "refused"
                    r.note = f"node {dead[0]} exited: {log_tail(trial_dir / 'run' / f'node{dead[0]}.log')}"
                else:
                    r.outcome = "no_cluster"
                    r.note = f"no full membership within {self.args.form_timeout_s} s"
                return r
            # Every node starts the same tick: a common start a few seconds ahead, on a tick.
            start_ns = (tai_now_ns() + int(self.args.lead_s * 1e9)) // (period_ms * NS_PER_MS) * (period_ms * NS_PER_MS)
            for k in range(self.args.nodes):
                log = (trial_dir / f"node{k}.out").open("w")
                clients.append(subprocess.Popen(self.client_cmd(k, period_ms, labels, start_ns, trial_dir), text=True,
                                                stdout=log, stderr=subprocess.STDOUT))
            deadline = time.monotonic() + self.args.lead_s + self.args.seconds + self.args.drain_s
            while any(c.poll() is None for c in clients) and time.monotonic() < deadline and not self.stop:
                time.sleep(0.2)
            if any(c.poll() is None for c in clients):
                for c in clients:
                    if c.poll() is None:
                        c.send_signal(signal.SIGINT)  # tob-labels writes its summary on SIGINT
                time.sleep(2)
                r.outcome = "interrupted" if self.stop else "timeout"
                r.note = "clients did not finish in time"
            self.collect(r, trial_dir)
            return r
        finally:
            for c in clients:
                if c.poll() is None:
                    c.kill()
                c.wait()
            down = cluster(env, "down", check=False)
            (trial_dir / "cluster-down.log").write_text(down.stdout + down.stderr)
            r.seconds = time.monotonic() - t0
            print(f"{r.outcome} ({r.seconds:.0f} s){': ' + r.note if r.note else ''}", flush=True)

    def collect(self, r: TrialResult, trial_dir: Path) -> None:
        summaries = []
        for k in range(self.args.nodes):
            path = trial_dir / f"node{k}.json"
            try:
                summaries.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                if r.outcome == "fail":
                    r.note = f"node {k}: no summary ({log_tail(trial_dir / f'node{k}.out')})"
                return
        r.periods_planned = min(s["periods_planned"] for s in summaries)
        r.periods_run_min = min(s["periods_run"] for s in summaries)
        r.success_rate_min = min(s["success_rate"] for s in summaries)
        for s in summaries:
            for key, into in (("write_refusals", r.write_refusals), ("read_failures", r.read_failures)):
                for reason, n in s[key].items():
                    into[reason] = into.get(reason, 0) + n
        lat = [s["latency_write_to_publish_ns"] for s in summaries if s.get("latency_write_to_publish_ns")]
        if lat:
            r.latency_p50_ms = max(x["p50"] for x in lat) / 1e6
            r.latency_max_ms = max(x["max"] for x in lat) / 1e6
        errors = [s["error"] for s in summaries if s.get("error")]
        complete = r.periods_run_min >= r.periods_planned and not any(s["interrupted"] for s in summaries)
        if r.outcome == "fail":
            if errors:
                r.note = f"client error: {errors[0]}"
            elif not complete:
                r.note = f"{r.periods_run_min} of {r.periods_planned} periods run"
            elif r.success_rate_min >= 1.0:
                r.outcome = "pass"


def write_outputs(out: Path, searches: list[SearchResult]) -> None:
    rows = [asdict(t) for s in searches for t in s.trials]
    with (out / "trials.csv").open("w", newline="") as f:
        cols = ["period_ms", "period_cycles", "cycle_ns", "labels", "outcome", "success_rate_min", "periods_run_min",
                "periods_planned", "latency_p50_ms", "latency_max_ms", "write_refusals", "read_failures", "note",
                "seconds"]
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for row in rows:
            w.writerow({c: json.dumps(row[c]) if isinstance(row[c], dict) else row[c] for c in cols})
    (out / "results.json").write_text(json.dumps([{
        "period_ms": s.period_ms, "period_cycles": s.period_cycles,
        "cycle_ns": cycle_ns_for(s.period_ms, s.period_cycles), "largest_labels_at_100pc": s.best,
        "smallest_failing_labels": s.first_fail, "status": s.status, "seed": SEED_FIGURES.get(s.period_ms, ""),
        "trials": [asdict(t) for t in s.trials]} for s in searches], indent=1))


def print_table(searches: list[SearchResult]) -> None:
    print()
    print(f"{'period':>8} {'cycle':>10} {'P':>3} {'largest L at 100%':>18} {'first failing L':>16} {'trials':>7}  status")
    for s in searches:
        cycle = cycle_ns_for(s.period_ms, s.period_cycles) / 1e6
        fail = "-" if s.first_fail is None else str(s.first_fail)
        best = str(s.best) if s.status != "no_cluster" else "-"
        print(f"{s.period_ms:>6} ms {cycle:>7.3f} ms {s.period_cycles:>3} {best:>18} {fail:>16} {len(s.trials):>7}  "
              f"{s.status}")
    print()
    print("seed 004 (N = 4 Raspberry Pi 4, label mixes with periods >= P_min):")
    for period, text in SEED_FIGURES.items():
        print(f"  {period:>4} ms: {text}")


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for trials.csv, results.json and the trial directories")
    ap.add_argument("--periods-ms", default="100,10,1", help="label periods to search (default 100,10,1)")
    ap.add_argument("--period-cycles", default="1", help="IC period in cycles, one per label period or one for all "
                    "(cycle = period / P; default 1)")
    ap.add_argument("--nodes", type=int, default=4, help="cluster size (default 4; f = (N - 1) / 3)")
    ap.add_argument("--seconds", type=float, default=15, help="tob-labels run per trial (default 15)")
    ap.add_argument("--start-labels", type=int, default=64)
    ap.add_argument("--max-labels", type=int, default=8192)
    ap.add_argument("--resolution", type=float, default=0.05,
                    help="stop bisecting when the gap is at most this fraction of the passing count (default 0.05)")
    ap.add_argument("--max-trials", type=int, default=16, help="per period (default 16)")
    ap.add_argument("--budget-s", type=float, default=3600, help="for the whole run (default 3600)")
    ap.add_argument("--form-timeout-s", type=float, default=45, help="wait for a full membership (default 45)")
    ap.add_argument("--lead-s", type=float, default=3, help="from launching tob-labels to its first tick (default 3)")
    ap.add_argument("--drain-s", type=float, default=15, help="tob-labels time beyond its run (default 15)")
    ap.add_argument("--read-delay-us", type=int, default=0, help="tob-labels --read-delay-us (default 0)")
    ap.add_argument("--build-dir", default=os.environ.get("TOB_BUILD_DIR", str(REPO / "build")))
    ap.add_argument("--dry-run", action="store_true", help="print the plan and the first trial's configuration")
    args = ap.parse_args(argv)
    try:
        args.periods = [int(x) for x in args.periods_ms.split(",") if x]
        cycles = [int(x) for x in args.period_cycles.split(",") if x]
    except ValueError:
        ap.error("--periods-ms and --period-cycles take comma-separated integers")
    if not args.periods or any(p < 1 for p in args.periods):
        ap.error("--periods-ms: periods of at least 1 ms")
    if len(cycles) == 1:
        cycles *= len(args.periods)
    if len(cycles) != len(args.periods) or any(c < 1 for c in cycles):
        ap.error("--period-cycles: one value, or one per period, each >= 1")
    args.cycles = cycles
    for period, p in zip(args.periods, cycles):
        try:
            if cycle_ns_for(period, p) < 1000:
                ap.error(f"{period} ms / {p} cycles is below the 1 us cycle the daemon accepts")
        except ValueError as e:
            ap.error(str(e))
    if args.nodes < 4 or args.nodes > 16:
        ap.error("--nodes: 4..16 (interactive consistency needs N > 3f with f >= 1; cluster.sh runs up to 16)")
    if not 1 <= args.start_labels <= args.max_labels <= 65535:
        ap.error("need 1 <= --start-labels <= --max-labels <= 65535 ([ic] keys_per_period)")
    if args.seconds <= 0 or args.budget_s <= 0 or args.max_trials < 1 or args.resolution < 0:
        ap.error("--seconds, --budget-s and --max-trials must be positive, --resolution >= 0")
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    build = Path(args.build_dir)
    out = Path(args.out)
    if args.dry_run:
        print(f"build {build}, out {out}, {args.nodes} nodes, {args.seconds} s per trial, budget {args.budget_s} s")
        for period, p in zip(args.periods, args.cycles):
            print(f"T = {period} ms: cycle {cycle_ns_for(period, p)} ns, [ic] period_cycles {p}; "
                  f"first trial L = {args.start_labels}:")
            print("  " + ic_section(args.start_labels, args.nodes, p).replace("\n", "\n  "))
        t = ClusterTrials(args, build, out)
        print("client command (node 0): " + " ".join(t.client_cmd(0, args.periods[0], args.start_labels, 0, out)))
        return 0
    if os.geteuid() != 0:
        print("ic_labels_experiment: needs root (network namespaces, hugepages)", file=sys.stderr)
        return 2
    for binary in (build / "app/dpdk-tob/dpdk-tob", build / "app/tob-labels/tob-labels"):
        if not os.access(binary, os.X_OK):
            print(f"ic_labels_experiment: {binary} is not built (--build-dir)", file=sys.stderr)
            return 2
    running = other_cluster_running()
    if running:
        print(f"ic_labels_experiment: a netns cluster seems to be up ({running}); stop it first "
              "(scripts/cluster.sh down) so the trials do not collide with it", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    trials = ClusterTrials(args, build, out)

    def on_signal(signum: int, frame: object) -> None:
        trials.stop = True  # the running trial ends (its cluster goes down), then the search stops

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    deadline = time.monotonic() + args.budget_s
    # A trial can take up to this long: do not start one that would overrun the budget by much.
    trial_s = args.form_timeout_s + args.lead_s + args.seconds + args.drain_s + 30
    searches: list[SearchResult] = []
    for period, p in zip(args.periods, args.cycles):
        print(f"label period {period} ms: cycle {cycle_ns_for(period, p) / 1e6:g} ms, [ic] period_cycles {p}")
        s = SearchResult(period, p)
        searches.append(s)
        search(lambda labels: trials.run(period, p, labels), s, args.start_labels, args.max_labels, args.resolution,
               args.max_trials, lambda: time.monotonic() + trial_s > deadline, lambda: write_outputs(out, searches))
        write_outputs(out, searches)
        if trials.stop:
            break
    print_table(searches)
    print(f"\ntrials: {out / 'trials.csv'}; results: {out / 'results.json'}")
    return 130 if trials.stop else 0


if __name__ == "__main__":
    sys.exit(main())
