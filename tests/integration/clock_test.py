"""Clock synchronisation in band on the netns cluster (issue 19; docs/operations.md "The clock:
/tob/clock").

Four daemons (scripts/cluster.sh, namespaces `tclk-*`, 100 ms cycles: 25 ms slots, the
schedule's precision P = 1.25 ms), node 0 with `--clock-drift-ppm +100`, node 1 with `-100`:

1. `[timing] sync = inband`: for SYNC_S seconds (60 in the suite; CLOCK_TEST_SYNC_S=120 for the
   issue's two minutes) every node stays a member, no membership change happens, no frame of a
   correct node is early or late, the self-check never fails, the corrections node 0 and node 1
   applied (map_offset_ns) make up for the 200 ppm between their knobs to within P, the learnt
   rate corrections are apart by more than 100 ppm, and every node's precision estimate
   (spread_max_ns) stays below P. For the first 20 s a client on every node waits for each
   delivery's release instant: every daemon matches its peers' wake-ups to the instants
   (/tob/release), and its skew p50 is within 250 us of the true one (each node's first wake-up
   per instant on CLOCK_TAI, one kernel clock for all namespaces).
2. `[timing] sync = off`, the same knobs: the offset between nodes 0 and 1 grows by 200 ppm;
   node 1 sees node 0's frames early once it exceeds P plus the one-way delay d:
       t_early = (r0 + r1) / 2 + (P + d) / 200e-6
   (r0, r1: the knobs' drift reference, the first fit of each node). Nothing arrives before it
   is sent (d >= 0) and the delay here is tens to hundreds of microseconds (docs/experiments/
   latency.md), so the first early frame must come within [t0 + 6.25 s, t0 + 8.75 s] (d up to
   500 us), with t0 = (r0 + r1) / 2. That is the first copy: the second leaves a copy gap G =
   slot / 20 = 1.25 ms later and stays in the window until the offset exceeds P + G + d, at
   t0 + [12.5 s, 15 s]; by then nodes 2 and 3 (no drift) see node 0 early too (100 ppm: at
   r0 + [12.5 s, 17.5 s]). A node is removed once all its copies miss: the membership must break
   within [12.5 s, 17.5 s] after t0 (r0, r1 and t0 agree to within a second), give or take the
   two cycles mars takes to remove a node and the 0.1 s between polls.
Ends with `N passed, M failed`.
"""
from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from tobclient import cluster, query  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import check, run_suite  # noqa: E402

BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
RUN = Path(os.environ.get("TOB_TEST_RUN_DIR", "/tmp/dpdk-tob-clock"))
NET = "tclk"
NODES = 4
CYCLE_NS = 100_000_000
PRECISION_NS = CYCLE_NS // NODES // 20  # the schedule's default precision: slot / 20
DRIFT_PPM = 100
DELAY_NS = 55_000  # [timing] delay_ns: the one-way delay /tob/clock measured here (delay_error_ns with 0)
SYNC_S = float(os.environ.get("CLOCK_TEST_SYNC_S", "60"))
DELAY_MAX_NS = 500_000  # the largest one-way delay the prediction allows
COPY_GAP_NS = CYCLE_NS // NODES // 20  # the schedule's default copy gap: slot / 20
LOAD = BUILD / "app/dpdk-tob-load/dpdk-tob-load"
RELEASE_S = min(20.0, SYNC_S / 2)  # release clients run this long at the start of the synchronised phase
RELEASE_TOLERANCE_NS = 250_000


def env(sync: str) -> dict[str, str]:
    return dict(os.environ, TOB_NET=NET, TOB_RUN_DIR=str(RUN), TOB_CYCLE_NS=str(CYCLE_NS), TOB_BUILD_DIR=str(BUILD),
                TOB_STATUS_INTERVAL="5", TOB_CONFIG_EXTRA=f"sync = {sync}\\ndelay_ns = {DELAY_NS}",
                TOB_NODE_ARGS_0=f"--clock-drift-ppm {DRIFT_PPM}", TOB_NODE_ARGS_1=f"--clock-drift-ppm {-DRIFT_PPM}")


def tel(k: int, cmd: str) -> dict:
    return query(f"{NET}-node{k}", cmd)[cmd]


def stats(k: int) -> dict:
    return tel(k, "/tob/stats")


def tai_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_TAI)


def events_of(k: int) -> list[str]:
    p = RUN / f"node{k}.events"
    return p.read_text().splitlines() if p.exists() else []


def release_clients() -> list[subprocess.Popen]:
    """One dpdk-tob-load per node that submits and waits for every delivery's release instant."""
    procs = []
    for k in range(NODES):
        path = RUN / f"release{k}.csv"
        path.unlink(missing_ok=True)
        procs.append(subprocess.Popen(
            ["ip", "netns", "exec", f"{NET}-n{k}", str(LOAD), "--proc-type=secondary", f"--file-prefix={NET}-node{k}",
             "--no-pci", "--log-level=lib.eal:error", "--", "--cluster", "netns", "--duration", str(RELEASE_S),
             "--drain", "1", "--progress", "0", "--rate", "10", "--pattern", "poisson", "--seed", str(k + 1),
             "--release", "--out", str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
    return procs


def instant_skews() -> list[int]:
    """Per release instant that all nodes' clients waited for: the spread of each node's first wake-up
    (CLOCK_TAI, one kernel clock for every namespace): the true skew the daemons estimate."""
    first: dict[int, dict[int, int]] = {}
    for k in range(NODES):
        path = RUN / f"release{k}.csv"
        if not path.exists():
            continue
        with path.open() as f:
            for r in csv.DictReader(f):
                per = first.setdefault(int(r["release_ns"]), {})
                per[k] = min(per.get(k, int(r["woke_tai_ns"])), int(r["woke_tai_ns"]))
    return sorted(max(v.values()) - min(v.values()) for v in first.values() if len(v) == NODES)


def check_release(procs: list[subprocess.Popen]) -> None:
    """The daemons' own estimate of the release skew (/tob/release) against the true one."""
    rcs = [p.wait(timeout=RELEASE_S + 60) for p in procs]
    if not check("four release clients run and detach cleanly", all(rc == 0 for rc in rcs), f"exit codes {rcs}"):
        return
    true = instant_skews()
    rel = [tel(k, "/tob/release") for k in range(NODES)]
    matched = [r["instants_matched"] for r in rel]
    check("every daemon matches its peers' wake-ups to the release instants (/tob/release)",
          len(true) >= 20 and all(r["estimating"] == 1 for r in rel) and all(m >= len(true) // 2 for m in matched)
          and all(r["peer_samples_malformed"] == 0 for r in rel),
          f"instants on all nodes (clients) {len(true)}, matched per daemon {matched}")
    if not true:
        return
    true_p50 = true[len(true) // 2]
    est = [r["skew_p50_ns"] for r in rel]
    # The estimate places each peer by its clock readings: to within their error (100-150 us on
    # af_packet, docs/experiments/clock.md), never a plausible figure for an implausible skew.
    check(f"each daemon's skew p50 is within {RELEASE_TOLERANCE_NS // 1000} us of the true one",
          all(abs(x - true_p50) <= RELEASE_TOLERANCE_NS for x in est)
          and all(r["skew_p50_ns"] <= r["skew_p99_ns"] <= r["skew_max_ns"] * 1.04 for r in rel),
          f"true per instant: p50 {true_p50} ns, max {true[-1]} ns; daemons p50 {est}, "
          f"p99 {[r['skew_p99_ns'] for r in rel]}, max {[r['skew_max_ns'] for r in rel]}")
    print(f"release skew over {len(true)} instants: true p50 {true_p50 / 1e3:.1f} us, p99 "
          f"{true[min(len(true) - 1, int(len(true) * 0.99))] / 1e3:.1f} us, max {true[-1] / 1e3:.1f} us; daemons' "
          f"estimates p50 {[round(x / 1e3, 1) for x in est]} us, max {[round(r['skew_max_ns'] / 1e3, 1) for r in rel]} us",
          flush=True)


def synchronised() -> None:
    e = env("inband")
    cluster(e, "down", check=False)
    cluster(e, "up", str(NODES))
    refs = [int(tel(k, "/tob/clock")["drift_ref_ns"]) for k in (0, 1)]
    releases = release_clients()
    events0 = [len(events_of(k)) for k in range(NODES)]
    start = time.monotonic()
    broken = ""
    while time.monotonic() - start < SYNC_S and not broken:
        time.sleep(1.0)
        for k in range(NODES):
            m = tel(k, "/tob/membership")
            if m["state"] != "member" or m["member_count"] != NODES:
                broken = f"node {k} {m['state']} with {m['member_count']} members after {time.monotonic() - start:.1f} s"
    check(f"sync inband, +-{DRIFT_PPM} ppm: every node a member of all {NODES} for {SYNC_S:.0f} s", not broken, broken)
    changes = [len(events_of(k)) - events0[k] for k in range(NODES)]
    check("no membership change while synchronised", all(c == 0 for c in changes), f"new events per node {changes}")
    st = [stats(k) for k in range(NODES)]
    timing = {k: (st[k]["rx_early"], st[k]["rx_late"]) for k in range(NODES)}
    check("no frame early or late on any node", all(e == 0 and l == 0 for e, l in timing.values()),
          f"(early, late) per node {timing}")
    clocks = [tel(k, "/tob/clock") for k in range(NODES)]
    now = tai_ns()
    withheld = [c["tx_withheld"] for c in clocks]
    out = [c["rounds_out"] for c in clocks]
    check("the self-check never failed", all(w == 0 for w in withheld) and all(o == 0 for o in out),
          f"frames withheld {withheld}, rounds out {out}")
    # The knobs moved node 0 ahead and node 1 behind by this much; the maps must have taken it out.
    built_up_ns = DRIFT_PPM * 1e-6 * ((now - refs[0]) + (now - refs[1]))
    applied_ns = clocks[1]["map_offset_ns"] - clocks[0]["map_offset_ns"]
    check(f"the corrections make up for the drift to within the precision ({PRECISION_NS} ns)",
          abs(applied_ns - built_up_ns) < PRECISION_NS,
          f"knobs built up {built_up_ns / 1e6:.2f} ms between nodes 0 and 1, maps corrected {applied_ns / 1e6:.2f} ms")
    rates = [float(c["rate_ppm"]) for c in clocks]
    check("the rate corrections learnt the drift (node 1's above node 0's by more than 100 ppm)",
          rates[1] - rates[0] > 100, f"rate_ppm {rates}")
    spreads = [c["spread_max_ns"] for c in clocks]
    check(f"every node's precision estimate stays below P = {PRECISION_NS} ns", all(s < PRECISION_NS for s in spreads),
          f"spread_max_ns {spreads}, offset_max_ns {[c['offset_max_ns'] for c in clocks]}")
    check_release(releases)
    print(f"clock: after {SYNC_S:.0f} s: map_offset_ns {[c['map_offset_ns'] for c in clocks]}, rate_ppm {rates}, "
          f"spread_max_ns {spreads}, delay_error_ns {[c['delay_error_ns'] for c in clocks]}", flush=True)
    cluster(e, "down", check=False)


def unsynchronised() -> None:
    e = env("off")
    cluster(e, "down", check=False)
    cluster(e, "up", str(NODES))
    refs = [int(tel(k, "/tob/clock")["drift_ref_ns"]) for k in (0, 1)]
    t0 = (refs[0] + refs[1]) / 2
    rel_rate = 2 * DRIFT_PPM * 1e-6  # nodes 0 and 1 apart
    lo = t0 + PRECISION_NS / rel_rate
    hi = t0 + (PRECISION_NS + DELAY_MAX_NS) / rel_rate
    # Every copy early at node 1, or node 0's frames early at nodes 2 and 3 (drifting 100 ppm apart).
    break_lo = min(t0 + (PRECISION_NS + COPY_GAP_NS) / rel_rate, refs[0] + PRECISION_NS / (rel_rate / 2))
    break_hi = max(t0 + (PRECISION_NS + COPY_GAP_NS + DELAY_MAX_NS) / rel_rate,
                   refs[0] + (PRECISION_NS + DELAY_MAX_NS) / (rel_rate / 2)) + 2 * CYCLE_NS + 0.2e9
    first_early = None
    first_break = None
    deadline = break_hi
    while tai_ns() < deadline + 1e9 and (first_early is None or first_break is None):
        time.sleep(0.1)
        t = tai_ns()
        if first_early is None and stats(1)["rx_early"] > 0:
            first_early = t
        if first_break is None:
            for k in range(NODES):
                m = tel(k, "/tob/membership")
                if m["state"] != "member" or m["member_count"] != NODES:
                    first_break = t
                    break
    def rel(x: float | None) -> str:
        return "never" if x is None else f"{(x - t0) / 1e9:.2f} s"
    check(f"sync off, +-{DRIFT_PPM} ppm: node 1 sees node 0's frames early within the predicted "
          f"[{(lo - t0) / 1e9:.2f} s, {(hi - t0) / 1e9:.2f} s]",
          first_early is not None and lo <= first_early <= hi + 0.2e9, f"first early frame at {rel(first_early)}")
    check(f"and the membership breaks once every copy is outside, within the predicted "
          f"[{(break_lo - t0) / 1e9:.2f} s, {(break_hi - t0) / 1e9:.2f} s]",
          first_break is not None and break_lo <= first_break <= break_hi,
          f"first node out of the membership at {rel(first_break)}")
    cluster(e, "down", check=False)


def body() -> None:
    synchronised()
    unsynchronised()


def teardown() -> None:
    cluster(env("off"), "down", check=False)


if __name__ == "__main__":
    sys.exit(run_suite("clock", RUN, body, teardown))
