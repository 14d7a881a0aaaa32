"""Clock synchronisation in band on the netns cluster (issue 19; docs/operations.md "The clock:
/tob/clock").

Four daemons (scripts/cluster.sh, namespaces `tclk-*`, 100 ms cycles: 25 ms slots, the
schedule's default precision P = 1.25 ms), node 0 with `--clock-drift-ppm +100`, node 1 with
`-100`:

1. `[timing] sync = inband`, with the otfp engine (nobody is removed for a late frame), P = 10 ms and
   the rate bound at 1000 ppm (SYNC_PRECISION_NS = 10 ms and the comments there: this guest's host stalls,
   the delay_ns error): for SYNC_S seconds (60 in the suite; CLOCK_TEST_SYNC_S=120 for the issue's
   two minutes) every node stays a member and no membership change happens (a removal of a node
   whose own sends a host stall made late just before would be set aside and printed); no frame is
   early (late ones, which stalls make too, are printed), the self-check never fails, the
   corrections node 0 and node 1 applied (map_offset_ns) make up for the 200 ppm between their
   knobs to within P, the learnt rate corrections are apart by more than 100 ppm, every node's
   precision estimate (spread_ns, sampled) stays below the default P = 1.25 ms at its 95th
   percentile and no counted round's midpoint exceeds P. For
   the first 20 s a client on every node waits for each delivery's release instant: every daemon
   matches its peers' wake-ups to the instants (/tob/release), and its skew p50 is within 250 us
   of the true one (each node's first wake-up per instant on CLOCK_TAI, one kernel clock for all
   namespaces).
2. `[timing] sync = off`, the same knobs, the default P and copies: the offset between nodes 0
   and 1 grows by 200 ppm; node 1 expects a frame delay_ns after its instant and sees node 0's
   frames early once the offset exceeds P + d - delay_ns (d the real one-way delay):
       t_early = (r0 + r1) / 2 + (P + d - delay_ns) / 200e-6
   (r0, r1: the knobs' drift reference, the first fit of each node). Nothing arrives before it
   is sent (d >= 0) and the delay here is tens to hundreds of microseconds (docs/experiments/
   latency.md), so the first early frame must come within [t0 + 5.98 s, t0 + 8.75 s] (delay_ns
   55 us, d up to 500 us), with t0 = (r0 + r1) / 2. That is the first copy: the second leaves a
   copy gap G = slot / 20 = 1.25 ms later and stays in the window until the offset exceeds
   P + G + d - delay_ns, at t0 + [12.2 s, 15 s]; by then nodes 2 and 3 (no drift) see node 0
   early too (100 ppm: at r0 + [11.9 s, 17.5 s]). A node is removed once all its copies miss: the
   membership must break within that window (r0, r1 and t0 agree to within a second), give or
   take the two cycles mars takes to remove a node and the 0.1 s between polls. A removal before
   the window of a node whose own sends a host stall made late is set aside (StallWatch).
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
# [timing] delay_ns: the one-way delay /tob/clock measured on one machine (delay_error_ns with 0). A
# common error in it is not observable in band: the ensemble's time then runs off the source by 10 ppm
# per us of error at 100 ms cycles (docs/operations.md "Clock synchronisation in band"), and the
# effective delay (transmit lateness and poll gaps included) has been 55-90 us on machines of this
# kind. The rate corrections no longer see it: each node counts a window's corrections less the part
# every node's share (section 14). Before that, a CI run's ensemble rate sat at the bound of 1000 ppm
# this test had raised it to (the default 500 had been reached at 128 and 218 us of error), and
# node 0's rate could not go below node 1's. The test keeps the default bound now.
DELAY_NS = 55_000
# The synchronised phase rides out this guest's host stalls (1-13 ms, about once a second per vCPU,
# up to 20 ms seen). Under mars a frame more than P late is a fault and a node whose copies all miss
# is removed, which says nothing of the clocks: with the default P = slot / 20 = 1.25 ms, and even
# with P = 5 ms and three copies 5 ms apart, about one run in two lost a node so, and one broke
# down whole after a stall (2026-11-29). So that phase runs otfp (late frames are no fault, its
# coordinator changes only after a configured silence) with P = 10 ms (the decision margin raised
# to it; at 5 ms a CI run's stall put two nodes' midpoints at 6.1 ms and their self-checks withheld
# frames); its clock checks keep the default P where they can (the spreads stay at 0.1-0.2 ms
# between stalls). The unsynchronised phase keeps mars and the defaults, which its prediction
# needs, and sets aside removals a stall explains before its window (StallWatch).
SYNC_PRECISION_NS = 10_000_000
SYNC_ORDER = "otfp"
SYNC_S = float(os.environ.get("CLOCK_TEST_SYNC_S", "60"))
DELAY_MAX_NS = 500_000  # the largest one-way delay the prediction allows
COPY_GAP_NS = CYCLE_NS // NODES // 20  # the schedule's default copy gap: slot / 20
LOAD = BUILD / "app/dpdk-tob-load/dpdk-tob-load"
RELEASE_S = min(20.0, SYNC_S / 2)  # release clients run this long at the start of the synchronised phase
RELEASE_TOLERANCE_NS = 250_000


def env(sync: str, stall_proof: bool = False) -> dict[str, str]:
    extra = f"sync = {sync}\\ndelay_ns = {DELAY_NS}"
    if stall_proof:
        extra += (f"\\nprecision_ns = {SYNC_PRECISION_NS}"
                  f"\\ndecision_margin_ns = {SYNC_PRECISION_NS}")
    e = dict(os.environ, TOB_NET=NET, TOB_RUN_DIR=str(RUN), TOB_CYCLE_NS=str(CYCLE_NS), TOB_BUILD_DIR=str(BUILD),
             TOB_STATUS_INTERVAL="5", TOB_CONFIG_EXTRA=extra,
             TOB_NODE_ARGS_0=f"--clock-drift-ppm {DRIFT_PPM}", TOB_NODE_ARGS_1=f"--clock-drift-ppm {-DRIFT_PPM}")
    if stall_proof:
        e["TOB_ORDER"] = SYNC_ORDER
    return e


def tel(k: int, cmd: str) -> dict:
    return query(f"{NET}-node{k}", cmd)[cmd]


def stats(k: int) -> dict:
    return tel(k, "/tob/stats")


def tai_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_TAI)


MEMBERSHIP_EVENTS = ("admitted", "removed", "self-shutdown", "rejoin-started", "membership-created")


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


def node_events(since: list[int]) -> str:
    """The membership events each node logged after `since` (for a failure's detail)."""
    return "; ".join(f"node {k}: " + " | ".join(events_of(k)[since[k]:][-4:]) for k in range(NODES))


def synchronised() -> None:
    e = env("inband", stall_proof=True)
    cluster(e, "down", check=False)
    cluster(e, "up", str(NODES))
    refs = [int(tel(k, "/tob/clock")["drift_ref_ns"]) for k in (0, 1)]
    releases = release_clients()
    events0 = [len(events_of(k)) for k in range(NODES)]
    stalls = StallWatch()
    spread_samples: list[list[int]] = [[] for _ in range(NODES)]
    start = time.monotonic()
    broken = ""
    while time.monotonic() - start < SYNC_S and not broken:
        time.sleep(0.25)
        t = tai_ns()
        stalls.note_tx(t, [stats(k) for k in range(NODES)])
        for k in range(NODES):
            spread_samples[k].append(int(tel(k, "/tob/clock")["spread_ns"]))
        ms = [tel(k, "/tob/membership") for k in range(NODES)]
        whole = all(m["state"] == "member" and m["member_count"] == NODES for m in ms)
        if not stalls.explains(t, whole, before_window=True):
            broken = "; ".join(f"node {k} {m['state']} with {m['member_count']} members" for k, m in enumerate(ms)
                               if m["state"] != "member" or m["member_count"] != NODES)
            broken += f" after {time.monotonic() - start:.1f} s ({node_events(events0)})"
    time.sleep(1.0)  # a node a stall removed rejoins within a few cycles
    ms = [tel(k, "/tob/membership") for k in range(NODES)]
    if not broken and not all(m["state"] == "member" and m["member_count"] == NODES for m in ms):
        broken = f"not whole at the end: {[(m['state'], m['member_count']) for m in ms]} ({node_events(events0)})"
    check(f"sync inband, +-{DRIFT_PPM} ppm: every node a member of all {NODES} for {SYNC_S:.0f} s, but for "
          f"removals a host stall explains", not broken, broken)
    # otfp's coordinator rounds (suspicion-raised, round-started, ...) after a stall are not
    # membership changes: counted apart and printed.
    kinds = [[line.split()[2] for line in events_of(k)[events0[k]:] if len(line.split()) > 2] for k in range(NODES)]
    changes = [sum(x in MEMBERSHIP_EVENTS for x in ks) for ks in kinds]
    others = [len(ks) - c for ks, c in zip(kinds, changes)]
    if any(others):
        print(f"other events while synchronised (per node): {others}: {node_events(events0)}", flush=True)
    explained = [what for _, what in stalls.set_aside]
    if not check("no membership change while synchronised that a host stall does not explain",
                 not broken and (all(c == 0 for c in changes) or bool(explained)),
                 f"new events per node {changes}; set aside (the removed node's own sends late or missed): "
                 f"{explained or 'none'}"):
        print(f"events: {node_events(events0)}", flush=True)
    st = [stats(k) for k in range(NODES)]
    timing = {k: (st[k]["rx_early"], st[k]["rx_late"]) for k in range(NODES)}
    # A clock ahead shows as early frames at its peers (and one behind as late ones, but host stalls
    # make late frames too: they are reported, not judged; the drifting pair cannot fall apart one
    # way only).
    check("no frame early on any node", all(e == 0 for e, _ in timing.values()), f"(early, late) per node {timing}")
    clocks = [tel(k, "/tob/clock") for k in range(NODES)]
    now = tai_ns()
    withheld = [c["tx_withheld"] for c in clocks]
    out = [c["rounds_out"] for c in clocks]
    check("the self-check never failed", all(w == 0 for w in withheld) and all(o == 0 for o in out),
          f"frames withheld {withheld}, rounds out {out}")
    # The knobs moved node 0 ahead and node 1 behind by this much; the maps must have taken it out.
    built_up_ns = DRIFT_PPM * 1e-6 * ((now - refs[0]) + (now - refs[1]))
    applied_ns = clocks[1]["map_offset_ns"] - clocks[0]["map_offset_ns"]
    check(f"the corrections make up for the drift to within the precision ({SYNC_PRECISION_NS} ns)",
          abs(applied_ns - built_up_ns) < SYNC_PRECISION_NS,
          f"knobs built up {built_up_ns / 1e6:.2f} ms between nodes 0 and 1, maps corrected {applied_ns / 1e6:.2f} ms")
    rates = [float(c["rate_ppm"]) for c in clocks]
    windows = [c["rate_windows"] for c in clocks]
    commons = [c["common_step_ns"] for c in clocks]
    check("the rate corrections learnt the drift (node 1's above node 0's by more than 100 ppm), from the "
          "windows' corrections less their common part (section 14)",
          rates[1] - rates[0] > 100 and all(w > 0 for w in windows),
          f"rate_ppm {rates}, rate windows counted {windows}, left out {[c['rate_windows_unknown'] for c in clocks]}, "
          f"not exact {[c.get('rate_windows_inexact') for c in clocks]}, common part per round {commons} ns")
    spreads = [c["spread_max_ns"] for c in clocks]
    # The precision estimate of a round in which this node's own receive loop stalled includes the
    # stall (all its readings late alike): spread_max_ns shows the worst such round. The estimate
    # sampled four times a second must stay below the default P at its 95th percentile, and no
    # counted round's midpoint may exceed the P configured.
    p95 = [sorted(x)[int(0.95 * (len(x) - 1))] if x else -1 for x in spread_samples]
    offsets = [c["offset_max_ns"] for c in clocks]
    check(f"every node's precision estimate stays below P = {PRECISION_NS} ns (p95 of 4 samples a second), "
          f"every counted midpoint below {SYNC_PRECISION_NS} ns",
          all(0 <= x < PRECISION_NS for x in p95) and all(o < SYNC_PRECISION_NS for o in offsets),
          f"spread_ns p95 {p95}, spread_max_ns {spreads}, offset_max_ns {offsets}")
    check_release(releases)
    print(f"clock: after {SYNC_S:.0f} s: map_offset_ns {[c['map_offset_ns'] for c in clocks]}, rate_ppm {rates}, "
          f"spread_max_ns {spreads}, delay_error_ns {[c['delay_error_ns'] for c in clocks]}, "
          f"common_step_ns {commons}, rounds_clipped {[c['rounds_clipped'] for c in clocks]}", flush=True)
    cluster(e, "down", check=False)


class StallWatch:
    """Tells a removal a host stall explains from one the clocks cause (the unsynchronised phase).
    This guest's hypervisor takes a vCPU away for 1-13 ms about once a second; under mars a node
    whose every copy leaves more than P late is removed for sender omission, whatever the clocks
    do. Such a removal, before the window the drift predicts, is set aside when the removed node
    itself counted a send more than P late or missed (tx_late, tx_missed) within STALL_WINDOW_NS
    before it was seen, and so is the rest of that episode (the node's rejoin) until the
    membership is whole again. Any other break counts."""

    STALL_WINDOW_NS = 600_000_000  # the removal comes two cycles after the omission, seen within a poll

    def __init__(self) -> None:
        self.trouble = [-1] * NODES
        self.late_at: list[list[int]] = [[] for _ in range(NODES)]
        self.events_seen = [len(events_of(k)) for k in range(NODES)]
        self.events_at_start = list(self.events_seen)
        self.episode = False
        self.set_aside: list[tuple[int, str]] = []

    def note_tx(self, t: int, st: list[dict]) -> None:
        for k in range(NODES):
            cur = st[k]["tx_late"] + st[k]["tx_missed"]
            if 0 <= self.trouble[k] < cur:
                self.late_at[k].append(t)
            self.trouble[k] = cur

    def _new_removals(self) -> list[tuple[int, str]]:
        out = []
        for k in range(NODES):
            lines = events_of(k)
            for line in lines[self.events_seen[k]:]:
                f = line.split()
                if len(f) >= 5 and f[2] in ("removed", "self-shutdown"):
                    out.append((int(f[3]), f"{f[2]} {f[3]} {f[4]} (at node {k})"))
            self.events_seen[k] = len(lines)
        return out

    def explains(self, t: int, whole: bool, before_window: bool) -> bool:
        if whole:
            self.episode = False
            self._new_removals()
            return True
        if not before_window:
            return False
        time.sleep(0.15)  # the events file may trail the telemetry by a poll
        removals = self._new_removals()
        stalled = all(any(t - x <= self.STALL_WINDOW_NS for x in self.late_at[node]) and "omission" in what
                      for node, what in removals)
        if removals and stalled:
            self.episode = True
            self.set_aside.extend((t, what) for _, what in removals)
            return True
        return self.episode and not removals


def unsynchronised() -> None:
    e = env("off")
    cluster(e, "down", check=False)
    cluster(e, "up", str(NODES))
    refs = [int(tel(k, "/tob/clock")["drift_ref_ns"]) for k in (0, 1)]
    t0 = (refs[0] + refs[1]) / 2
    rel_rate = 2 * DRIFT_PPM * 1e-6  # nodes 0 and 1 apart
    # A frame is early once the offset exceeds P + d - delay_ns (the receiver expects it delay_ns after
    # its instant), and 0 <= d: the earliest is P - delay_ns (a run broke 0.27 s before P alone allows).
    lo = t0 + (PRECISION_NS - DELAY_NS) / rel_rate
    hi = t0 + (PRECISION_NS + DELAY_MAX_NS) / rel_rate
    # Every copy early at node 1, or node 0's frames early at nodes 2 and 3 (drifting 100 ppm apart).
    break_lo = min(t0 + (PRECISION_NS + COPY_GAP_NS - DELAY_NS) / rel_rate,
                   refs[0] + (PRECISION_NS - DELAY_NS) / (rel_rate / 2))
    break_hi = max(t0 + (PRECISION_NS + COPY_GAP_NS + DELAY_MAX_NS) / rel_rate,
                   refs[0] + (PRECISION_NS + DELAY_MAX_NS) / (rel_rate / 2)) + 2 * CYCLE_NS + 0.2e9
    first_early = None
    first_break = None
    stalls = StallWatch()
    deadline = break_hi
    while tai_ns() < deadline + 1e9 and (first_early is None or first_break is None):
        time.sleep(0.1)
        t = tai_ns()
        st = [stats(k) for k in range(NODES)]
        stalls.note_tx(t, st)
        if first_early is None and st[1]["rx_early"] > 0:
            first_early = t
        if first_break is None:
            whole = all(m["state"] == "member" and m["member_count"] == NODES
                        for m in (tel(k, "/tob/membership") for k in range(NODES)))
            if not stalls.explains(t, whole, before_window=t < break_lo):
                first_break = t

    def rel(x: float | None) -> str:
        return "never" if x is None else f"{(x - t0) / 1e9:.2f} s"
    if stalls.set_aside:
        print(f"set aside before the window (a host stall made the removed node's own sends late): "
              f"{'; '.join(f'{rel(t)}: {what}' for t, what in stalls.set_aside)}", flush=True)
    check(f"sync off, +-{DRIFT_PPM} ppm: node 1 sees node 0's frames early within the predicted "
          f"[{(lo - t0) / 1e9:.2f} s, {(hi - t0) / 1e9:.2f} s]",
          first_early is not None and lo <= first_early <= hi + 0.2e9, f"first early frame at {rel(first_early)}")
    check(f"and the membership breaks once every copy is outside, within the predicted "
          f"[{(break_lo - t0) / 1e9:.2f} s, {(break_hi - t0) / 1e9:.2f} s]",
          first_break is not None and break_lo <= first_break <= break_hi,
          f"first node out of the membership at {rel(first_break)} ({node_events(stalls.events_at_start)})")
    cluster(e, "down", check=False)


def body() -> None:
    synchronised()
    unsynchronised()


def teardown() -> None:
    cluster(env("off"), "down", check=False)


if __name__ == "__main__":
    sys.exit(run_suite("clock", RUN, body, teardown))
