"""ptp4l as the external clock source, read through its management socket (issue 19;
docs/operations.md "An external source: ptp4l").

Three daemons (scripts/cluster.sh, namespaces `tptp-*`, `[timing] sync = external`,
`ptp4l_socket = /var/run/tptp-ptp4l-{node}`) and, started by scripts/ptp.sh, ptp4l with software
time stamps in free-running mode (it measures, never adjusts a clock: the namespaces share the
host's) on node 0's veth (the master, priority1 100) and node 1's (slave only); node 2 has none.
1. Node 1's /tob/clock reports ptp4l's offset from its master with one step removed, the same
   figures `pmc` reads from that ptp4l (one of a few tries reads the same update), an offset
   under 1 ms and a path delay under 1 ms (both nodes read one kernel clock).
2. Node 0 reports its ptp4l as the master (no steps removed, offset 0); node 2 the error of a
   missing socket; the in-band estimate is there beside it on every node.
3. Nothing moved the shared clock: CLOCK_REALTIME - CLOCK_MONOTONIC changed by under 1 ms over the
   run (ptp4l in free-running mode), and the membership stayed whole with the PTP frames on the
   same veths (counted as other EtherTypes).
Ends with `N passed, M failed`.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from tobclient import cluster, query, wait_for  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import check, run_suite  # noqa: E402

BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
RUN = Path(os.environ.get("TOB_TEST_RUN_DIR", "/tmp/dpdk-tob-ptp"))
NET = "tptp"
NODES = 3
UDS = "/var/run/tptp-ptp4l-{node}"
ENV = dict(os.environ, TOB_NET=NET, TOB_RUN_DIR=str(RUN), TOB_CYCLE_NS="100000000", TOB_BUILD_DIR=str(BUILD),
           TOB_STATUS_INTERVAL="5", TOB_CONFIG_EXTRA=f"sync = external\\nptp4l_socket = {UDS}")
PTP_DIR = RUN / "ptp"


def uds(k: int) -> str:
    return UDS.replace("{node}", str(k))


def tel(k: int, cmd: str) -> dict:
    return query(f"{NET}-node{k}", cmd)[cmd]


def ptp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(REPO / "scripts/ptp.sh"), *args], text=True, capture_output=True, timeout=60)


def pmc_current(k: int) -> dict[str, float]:
    p = subprocess.run(["pmc", "-u", "-b", "0", "-s", uds(k), "GET CURRENT_DATA_SET"], text=True, capture_output=True,
                       timeout=10)
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"(stepsRemoved|offsetFromMaster|meanPathDelay)\s+(-?[\d.]+)",
                                                                 p.stdout)}


def realtime_minus_monotonic() -> int:
    return time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def body() -> None:
    cluster(ENV, "down", check=False)
    cluster(ENV, "up", str(NODES))
    before = realtime_minus_monotonic()
    for k, extra in ((0, ["--priority1", "100"]), (1, ["--slave-only"])):
        p = ptp("start", f"veth{k}", "--netns", f"{NET}-n{k}", "--free-running", "--uds", uds(k), "--dir", str(PTP_DIR),
                *extra)
        if not check(f"scripts/ptp.sh starts ptp4l on node {k}'s veth, free-running", p.returncode == 0,
                     (p.stdout + p.stderr).strip()):
            return
    cfg = (PTP_DIR / "veth1.cfg").read_text()
    check("its configuration never lets ptp4l adjust a clock", "free_running 1" in cfg and "time_stamping software" in cfg)
    # One step removed once it chose its master, a path delay once it measured (both dataset fields
    # stay 0 until then).
    synced = wait_for(lambda: tel(1, "/tob/clock").get("external_steps_removed") == 1 and
                      tel(1, "/tob/clock").get("external_path_delay_ns", 0) != 0, 40, "node 1's ptp4l to measure")
    c1 = tel(1, "/tob/clock")
    check("node 1 reports ptp4l's offset from its master, one step removed", synced,
          f"{ {k: v for k, v in c1.items() if k.startswith('external') or k == 'ptp4l_socket'} }")
    same = None
    for _ in range(8):
        a = tel(1, "/tob/clock")
        m = pmc_current(1)
        b = tel(1, "/tob/clock")
        if m.get("meanPathDelay", 0) != 0 and m["offsetFromMaster"] in (a.get("external_offset_ns"), b.get("external_offset_ns")):
            same = (a, m, b)
            break
        time.sleep(0.13)
    check("the daemon reads what pmc reads from the same ptp4l",
          same is not None and same[1]["meanPathDelay"] in (same[0]["external_path_delay_ns"], same[2]["external_path_delay_ns"]),
          f"daemon {a.get('external_offset_ns')}/{b.get('external_offset_ns')} ns, pmc {m}")
    off, delay = c1.get("external_offset_ns", 10**9), c1.get("external_path_delay_ns", 10**9)
    check("one kernel clock: an offset and a path delay under 1 ms", abs(off) < 1_000_000 and 0 < delay < 1_000_000,
          f"offset {off} ns, delay {delay} ns")
    c0, c2 = tel(0, "/tob/clock"), tel(2, "/tob/clock")
    check("node 0's ptp4l is the master: no steps removed, offset 0",
          c0.get("external_steps_removed") == 0 and c0.get("external_offset_ns") == 0,
          f"{ {k: v for k, v in c0.items() if k.startswith('external')} }")
    check("node 2 has no ptp4l and says so", "No such file" in c2.get("external_error", ""), c2.get("external_error", "none"))
    check("the in-band estimate beside it on every node",
          all(tel(k, "/tob/clock").get("readings", 0) > 0 and tel(k, "/tob/clock")["applied"] == 0 for k in range(NODES)))
    m = tel(1, "/tob/membership")
    st = tel(1, "/tob/stats")
    check("the membership stayed whole beside the PTP frames", m["member_count"] == NODES and st["rx_other_ethertype"] > 0,
          f"members {m['members']}, other EtherTypes {st['rx_other_ethertype']}")
    moved = realtime_minus_monotonic() - before
    check("nothing moved the shared clock (CLOCK_REALTIME - CLOCK_MONOTONIC within 1 ms)", abs(moved) < 1_000_000,
          f"{moved} ns")


def teardown() -> None:
    for k in (0, 1):
        ptp("stop", f"veth{k}", "--dir", str(PTP_DIR))
    cluster(ENV, "down", check=False)


if __name__ == "__main__":
    sys.exit(run_suite("ptp", RUN, body, teardown))
