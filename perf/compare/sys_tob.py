"""dpdk-tob in the comparison: four daemons in cmp-n0..cmp-n3 (scripts/cluster.sh with TOB_NET=cmp,
net_af_packet on the members' veths), `dpdk-tob-load` as the client (a secondary process of its
node's daemon, the contract's files through --records and --compare-summary), the daemons' events
files as the contract's events."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import procs
import topology
from system import System

REPO = topology.REPO
sys.path.insert(0, str(REPO / "scripts"))
from tobclient import query  # noqa: E402

BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
DAEMON = BUILD / "app/dpdk-tob/dpdk-tob"
LOAD = BUILD / "app/dpdk-tob-load/dpdk-tob-load"

# The shortest cycle docs/ state as stable on this machine for each engine:
# - mars: 50 ms, TX method sleep (docs/experiments/daemon-timing.md "The smallest slot without a
#   timing failure": 12.5 ms slots ran 600 s clean);
# - otfp: 40 ms, durability sync (docs/experiments/otfp.md "netns cluster": the throughput sweep
#   ran at 40 ms with no membership change; late frames cost otfp latency, not members).
DEFAULT_CYCLE_NS = {"mars": 50_000_000, "otfp": 40_000_000}


def file_prefix(k: int) -> str:
    return f"{topology.NET}-node{k}"


def members_of(text: str) -> list[int]:
    """The members column of a daemon event: `{0,1,3}` (or a hexadecimal mask)."""
    text = text.strip()
    if text.startswith("{"):
        return [int(x) for x in text.strip("{}").split(",") if x.strip()]
    mask = int(text, 16)
    return [k for k in range(64) if mask >> k & 1]


class TobSystem(System):
    clock = "tai"

    def __init__(self, order: str, cycle_ns: int | None = None, slot_ns: int = 0, kappa: int = 0):
        if order not in DEFAULT_CYCLE_NS:
            raise ValueError(f"unknown dpdk-tob engine {order!r}")
        self.order = order
        self.name = f"dpdk-tob-{order}"
        self.cycle_ns = cycle_ns or DEFAULT_CYCLE_NS[order]
        if slot_ns and slot_ns * topology.NODES > self.cycle_ns:
            raise ValueError(f"packed slots of {slot_ns} ns: {topology.NODES} of them do not fit the cycle of {self.cycle_ns} ns")
        self.slot_ns = slot_ns
        self.kappa = kappa if order == "otfp" else 0
        self.leader_role = "coordinator" if order == "otfp" else "first sender of the cycle"
        self.run: Path | None = None

    def _env(self) -> dict[str, str]:
        assert self.run is not None
        return topology.cluster_env(self.run / "cluster", TOB_ORDER=self.order, TOB_CYCLE_NS=str(self.cycle_ns),
                                    TOB_IDLE="sleep", TOB_DURABILITY="sync", TOB_STATUS_INTERVAL="10",
                                    TOB_BUILD_DIR=str(BUILD), TOB_DAEMON_ARGS="--tx-method sleep",
                                    TOB_SLOT_NS=str(self.slot_ns) if self.slot_ns else "",
                                    TOB_CONFIG_EXTRA=f"kappa = {self.kappa}" if self.kappa else "")

    def _cluster(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        p = subprocess.run(["bash", str(REPO / "scripts/cluster.sh"), *args], env=self._env(), text=True,
                           capture_output=True, timeout=180)
        if check and p.returncode != 0:
            raise RuntimeError(f"cluster.sh {' '.join(args)}: {p.stdout}{p.stderr}")
        return p

    def prepare(self, work: Path) -> None:
        if not (DAEMON.exists() and LOAD.exists()):
            r = subprocess.run(["bash", str(REPO / "scripts/build.sh")], env=dict(os.environ, TOB_BUILD_DIR=str(BUILD)),
                               text=True, capture_output=True, timeout=3600)
            if r.returncode != 0:
                raise procs.Unavailable(f"dpdk-tob does not build: {r.stderr.strip()[-500:]}")
        r = subprocess.run(["bash", str(REPO / "scripts/setup.sh")], text=True, capture_output=True, timeout=1800)
        if r.returncode != 0:
            raise procs.Unavailable(f"scripts/setup.sh: {r.stderr.strip()[-500:]}")

    def start(self, run: Path) -> None:
        self.run = run
        self._cluster("up", str(len(self.members)))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if all(self._telemetry(k, "/tob/membership")["members"] == list(self.members) for k in self.members):
                    return
            except (RuntimeError, OSError, ValueError, KeyError, TypeError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.name}: the cluster did not form within 60 s (logs in {run}/cluster)")

    def _telemetry(self, k: int, cmd: str) -> dict:
        reply = query(file_prefix(k), cmd).get(cmd.split(",")[0])
        if reply is None:
            raise RuntimeError(f"node {k}: {cmd}: no reply yet")
        return reply

    def client_cmd(self, k: int, common: list[str]) -> list[str]:
        """The contract's options in dpdk-tob-load's words: rate 0 is --saturate, --summary is
        --compare-summary; --node and --inflight do not apply (the node is the daemon's, and
        backpressure is tob_submit's TOB_EAGAIN); events come from the daemon."""
        opts = dict(zip(common[0::2], common[1::2]))
        args = ["--cluster", "netns", "--size", opts["--size"], "--duration", opts["--duration"],
                "--drain", opts["--drain"], "--drain-max", opts["--drain-max"], "--records", opts["--records"],
                "--compare-summary", opts["--summary"],
                "--progress", "0"]
        rate = float(opts["--rate"])
        args += ["--saturate"] if rate == 0 else ["--rate", opts["--rate"]]
        if "--start-at" in opts:
            args += ["--start-at", opts["--start-at"]]
        return topology.in_ns(topology.node_ns(k), str(LOAD), "--proc-type=secondary", f"--file-prefix={file_prefix(k)}",
                              "--no-pci", "--log-level=lib.eal:error", "--", *args)

    def write_events(self, k: int, path: Path) -> None:
        """The daemon's events file (`at_ns cycle kind node reason members`) as contract rows: every
        event that names a member set becomes `members`."""
        assert self.run is not None
        src = self.run / "cluster" / f"node{k}.events"
        rows = ["at_ns,kind,detail"]
        if src.exists():
            for line in src.read_text(errors="replace").splitlines():
                parts = line.split()
                if len(parts) < 6 or parts[2] == "undelivered":
                    continue
                try:
                    rows.append(f"{int(parts[0])},members,{' '.join(map(str, members_of(parts[5])))}")
                except ValueError:
                    continue
        path.write_text("\n".join(rows) + "\n")

    def leader(self) -> int:
        # otfp: the lowest live id coordinates a fresh cluster; mars has no leader, node 0 sends
        # first in every cycle.
        return min(self.members)

    def kill(self, k: int) -> None:
        self._cluster("kill", str(k))

    def run_facts(self) -> dict:
        """cycle_ns and membership_changes (removals and self-shutdowns over all nodes, mars), with
        the timing failures the nodes counted."""
        changes = late = 0
        for k in self.members:
            try:
                s = self._telemetry(k, "/tob/stats")
            except (RuntimeError, OSError, ValueError):
                continue
            changes += int(s.get("node_removals", 0)) + int(s.get("node_self_shutdowns", 0))
            late += int(s.get("rx_early", 0)) + int(s.get("rx_late", 0)) + int(s.get("tx_missed", 0))
        return {"cycle_ns": self.cycle_ns, "membership_changes": changes, "timing_failures": late}

    def stop(self) -> None:
        if self.run is not None:
            self._cluster("down", check=False)

    def info(self) -> dict:
        return {"engine": self.order, "cycle_ns": self.cycle_ns, "slot_ns": self.slot_ns or self.cycle_ns // topology.NODES,
                "slots": "packed" if self.slot_ns else "equal", "kappa": self.kappa or "default",
                "tx_method": "sleep", "idle": "sleep",
                "durability": "sync" if self.order == "otfp" else None, "transport": "net_af_packet on veth"}
