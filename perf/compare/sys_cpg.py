"""corosync CPG in the comparison (perf/compare/README.md "Systems"): Debian 12's corosync 3.1 as
one member in each of cmp-n0 .. cmp-n3, transport udpu or knet, and cpg_bench (C, libcpg) as the
client on all four nodes. A message is a cpg_mcast_joined with CPG_TYPE_AGREED, the total order
totem's token ring.

Names: `cpg-udpu` and `cpg-knet` run corosync's default token (3000 ms, plus 650 ms of
token_coefficient per node beyond two: 4300 ms in effect with 4 nodes); `cpg-udpu-token200`
(`cpg-knet-tokenT`) runs a token of T ms in effect (token_coefficient 0).

Settings, and why:
- no quorum section (no quorum provider): CPG's membership and delivery never consult quorum, so
  votequorum would change nothing here but add its own messages at every membership change (with
  4 votes, 3 survivors would keep quorum anyway);
- crypto_cipher and crypto_hash none on both transports (udpu has no crypto in corosync 3; knet
  then sends in the clear too, the same work per frame as udpu);
- every other setting at corosync's default, its SCHED_RR 99 scheduling included (dpdk-tob's
  daemons run at SCHED_FIFO too), except what a short token needs (token_settings()): below
  126 ms a smaller token_retransmits_before_loss_const (corosync wants a token retransmit of at
  least 30 ms), below 42 ms a consensus of 50 ms (not below join), and on knet below 1000 ms
  knet's ping interval and timeout held at 250 and 500 ms (KNET_PING_TIMEOUT_MIN_MS). The shortest
  token corosync accepts is then 36 ms.

cpg_bench keeps at most 256 of its own messages undelivered when it saturates (--inflight, the
contract's window): CPG's flow control bounds totem's send queue but not the deliveries corosync
queues for a client that reads slower than the ring (cpg_bench.c says more).

Four corosyncs on one host need their own state: each has its own state_dir (system.state_dir)
and its own /run (a tmpfs in a mount namespace of its own, for /run/corosync.pid, which corosync
locks). libqb's IPC uses abstract unix sockets, which belong to the network namespace: a client
or a corosync-cmapctl run in cmp-nK reaches node K's corosync.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import procs
import topology
from system import System

HERE = Path(__file__).resolve().parent
BENCH_SRC = HERE / "cpg_bench.c"
PACKAGES = ["corosync", "libcpg-dev", "gcc", "libc6-dev"]
CFLAGS = ["-O2", "-Wall", "-Wextra", "-Werror", "-std=gnu11"]
CLUSTER_NAME = "tob-compare"
GROUP = "tob-compare"
TRANSPORTS = ("udpu", "knet")
START_TIMEOUT_S = 60.0
QUERY_TIMEOUT_S = 5.0
# corosync.conf(5): token 3000 ms, and token_coefficient 650 ms for each node beyond two.
DEFAULT_TOKEN_MS = 3000
TOKEN_COEFFICIENT_MS = 650
# corosync.conf(5) "token_retransmit": token / (token_retransmits_before_loss_const + 0.2) must
# be at least 30 ms (three ticks of HZ 100). Below 126 ms the constant (default 4) has to shrink.
RETRANSMITS_BEFORE_LOSS_DEFAULT = 4
TOKEN_RETRANSMIT_MIN_MS = 30
# consensus (default 1.2 x token) may not be shorter than join (default 50 ms): below a token of
# 42 ms consensus is raised to join. The smallest token corosync then accepts is 36 ms.
CONSENSUS_PER_TOKEN = 1.2
JOIN_MS = 50
# knet's heartbeat thread checks its links every 200 ms (libknet's KNET_THREADS_TIMER_RES), but
# corosync derives knet's ping timeout from the token (token / knet_pong_count, i.e. token / 2):
# below a token of 1000 ms the timeout nears that period and knet declares every link dead about
# 8 s after it came up (once its pong timeout backoff has decayed), whatever the network does.
# Below that token the pings keep their timings at token 1000 ms; the membership still follows the
# token, since totem's token loss, not knet's link state, is what removes a member.
KNET_PING_INTERVAL_MIN_MS = 250
KNET_PING_TIMEOUT_MIN_MS = 500
# The totem log line of every ring formed: "A new membership (1.8) was formed. Members ...".
NEW_MEMBERSHIP = re.compile(r"A new membership \((\w+)\.(\w+)\) was formed")
# The wrapper that gives corosync its own /run (and so its own /run/corosync.pid lock).
PRIVATE_RUN = 'mount -t tmpfs -o size=1m,mode=0755 tmpfs /run && exec corosync -f -c "$1"'


def make_cpg_system(name: str) -> "CorosyncCpg":
    """cpg-udpu, cpg-knet, cpg-udpu-tokenT, cpg-knet-tokenT (T in ms); a suffix -norr runs corosync
    at SCHED_OTHER, nice 0, instead of its default SCHED_RR 99."""
    m = re.fullmatch(r"cpg-(udpu|knet)(?:-token(\d+))?(-norr)?", name)
    if m is None:
        raise ValueError(f"unknown corosync system {name!r} (cpg-udpu, cpg-knet, cpg-udpu-tokenMS, cpg-knet-tokenMS, "
                         "each optionally with -norr)")
    return CorosyncCpg(m.group(1), int(m.group(2)) if m.group(2) else None, sched_rr=m.group(3) is None)


def retransmits_before_loss(token_ms: int) -> int:
    """The largest token_retransmits_before_loss_const (at most corosync's default) that keeps the
    token retransmit timeout at corosync's minimum or above."""
    const = RETRANSMITS_BEFORE_LOSS_DEFAULT
    while const > 1 and token_ms / (const + 0.2) < TOKEN_RETRANSMIT_MIN_MS:
        const -= 1
    return const


def token_settings(transport: str, token_ms: int | None) -> dict[str, int]:
    """The totem settings that differ from corosync's defaults for a token of token_ms in effect
    (None: the default token), with what a short token needs besides."""
    if token_ms is None:
        return {}
    out = {"token": token_ms, "token_coefficient": 0}
    const = retransmits_before_loss(token_ms)
    if const != RETRANSMITS_BEFORE_LOSS_DEFAULT:
        out["token_retransmits_before_loss_const"] = const
    if token_ms * CONSENSUS_PER_TOKEN < JOIN_MS:
        out["consensus"] = JOIN_MS
    if transport == "knet" and token_ms // 2 < KNET_PING_TIMEOUT_MIN_MS:
        out["knet_ping_interval"] = KNET_PING_INTERVAL_MIN_MS
        out["knet_ping_timeout"] = KNET_PING_TIMEOUT_MIN_MS
    return out


def totem_section(transport: str, token_ms: int | None) -> str:
    lines = ["version: 2", f"cluster_name: {CLUSTER_NAME}", f"transport: {transport}", "ip_version: ipv4",
             "crypto_cipher: none", "crypto_hash: none"]
    link = []  # knet's per-link settings live in the interface section of link 0
    for key, value in token_settings(transport, token_ms).items():
        (link if key.startswith("knet_") else lines).append(f"{key}: {value}")
    if link:
        lines += ["interface {", "    linknumber: 0", *(f"    {x}" for x in link), "}"]
    return "totem {\n" + "".join(f"    {x}\n" for x in lines) + "}\n"


def corosync_conf(k: int, transport: str, token_ms: int | None, log: Path, state_dir: Path,
                  sched_rr: bool = True) -> str:
    """Node k's corosync.conf: node k is nodeid k + 1 at topology.ip_of(k)."""
    nodes = "".join(f"    node {{\n        name: n{j}\n        nodeid: {j + 1}\n"
                    f"        ring0_addr: {topology.ip_of(j)}\n    }}\n" for j in range(topology.NODES))
    return (totem_section(transport, token_ms)
            + "nodelist {\n" + nodes + "}\n"
            + f"logging {{\n    to_logfile: yes\n    logfile: {log}\n    to_stderr: no\n    to_syslog: no\n"
              f"    timestamp: hires\n}}\n"
            + f"system {{\n    state_dir: {state_dir}\n"
            + ("" if sched_rr else "    sched_rr: no\n    priority: 0\n") + "}\n")


class CorosyncCpg(System):
    clock = "realtime"
    leader_role = "ring representative"

    def __init__(self, transport: str, token_ms: int | None = None, sched_rr: bool = True) -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"unknown corosync transport {transport!r} (known: {', '.join(TRANSPORTS)})")
        if token_ms is not None and token_ms <= 0:
            raise ValueError("the token must be a positive number of milliseconds")
        self.transport = transport
        self.token_ms = token_ms
        self.sched_rr = sched_rr
        self.name = f"cpg-{transport}" + (f"-token{token_ms}" if token_ms is not None else "") \
            + ("" if sched_rr else "-norr")
        self.bench: Path | None = None
        self.version = ""
        self.run_dir: Path | None = None
        self.state_root: Path | None = None
        self.procs: dict[int, subprocess.Popen] = {}
        self.killed: set[int] = set()
        self.log_offsets: dict[int, int] = {}  # each log's size once the group had formed
        self.runtime: dict[str, int] = {}       # totem's timeouts as corosync reports them

    # -- prepare ---------------------------------------------------------------------------------

    def prepare(self, work: Path) -> None:
        procs.ensure_packages(PACKAGES)
        out = subprocess.run(["corosync", "-v"], text=True, capture_output=True, timeout=30)
        m = re.search(r"version '([^']+)'", out.stdout)
        if m is None:
            raise procs.Unavailable(f"corosync -v: {out.stdout.strip() or out.stderr.strip()}")
        self.version = m.group(1)
        work.mkdir(parents=True, exist_ok=True)
        self.bench = work / "cpg_bench"
        if not self.bench.exists() or self.bench.stat().st_mtime < BENCH_SRC.stat().st_mtime:
            self._build(self.bench)

    def _build(self, binary: Path) -> None:
        tmp = binary.with_name(binary.name + ".tmp")
        r = subprocess.run(["cc", *CFLAGS, "-o", str(tmp), str(BENCH_SRC), "-lcpg"], text=True,
                           capture_output=True, timeout=300)
        if r.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise procs.Unavailable(f"cpg_bench.c does not compile: {r.stderr.strip()[-500:]}")
        tmp.replace(binary)

    # -- start -----------------------------------------------------------------------------------

    def start(self, run: Path) -> None:
        if self.procs:
            raise RuntimeError(f"{self.name}: start() while running (stop() first)")
        self.run_dir = run
        self.killed = set()
        self.log_offsets = {}
        self.state_root = Path(tempfile.mkdtemp(prefix="tob-compare-cpg-"))
        run.mkdir(parents=True, exist_ok=True)
        for k in self.members:
            conf = run / f"corosync-n{k}.conf"
            state = self.state_root / f"n{k}"
            state.mkdir()
            self._log(k).unlink(missing_ok=True)
            conf.write_text(corosync_conf(k, self.transport, self.token_ms, self._log(k), state, self.sched_rr))
            cmd = topology.in_ns(topology.node_ns(k), "unshare", "--mount", "sh", "-c", PRIVATE_RUN,
                                 f"corosync-n{k}", str(conf))
            self.procs[k] = procs.start(cmd, run / f"corosync-n{k}.out")
        try:
            self._await_group()
        except RuntimeError:
            self.stop()  # compare.py stops a system only once it has started
            raise
        self.log_offsets = {k: self._log(k).stat().st_size if self._log(k).exists() else 0 for k in self.members}
        self.runtime = self._read_timeouts()

    def _log(self, k: int) -> Path:
        assert self.run_dir is not None
        return self.run_dir / f"corosync-n{k}.log"

    def _await_group(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for k, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{self.name}: node {k}'s corosync exited with {p.returncode}: "
                                       f"{self._tail(k)}")
            if all(self._joined(k) == set(self.members) for k in self.members):
                return
            time.sleep(0.2)
        raise RuntimeError(f"{self.name}: the group did not form within {START_TIMEOUT_S:.0f} s "
                           f"(logs in {self.run_dir})")

    def _tail(self, k: int) -> str:
        lines = []
        for path in (self._log(k), self._log(k).with_suffix(".out")):
            if path.exists():
                lines += path.read_text(errors="replace").strip().splitlines()[-3:]
        return " | ".join(lines) or "no log"

    # -- queries inside a node's namespace -------------------------------------------------------

    def _cmap(self, k: int, *args: str) -> str:
        r = subprocess.run(topology.in_ns(topology.node_ns(k), "corosync-cmapctl", *args), text=True,
                           capture_output=True, timeout=QUERY_TIMEOUT_S)
        if r.returncode != 0:
            raise RuntimeError(f"node {k}: corosync-cmapctl {' '.join(args)}: {r.stderr.strip() or r.stdout.strip()}")
        return r.stdout

    def _joined(self, k: int) -> set[int]:
        """The nodes node k's corosync has in its ring now (node number = nodeid - 1)."""
        try:
            out = self._cmap(k, "-b", "runtime.members")
        except (RuntimeError, subprocess.SubprocessError):
            return set()
        joined = re.finditer(r"^runtime\.members\.(\d+)\.status \(str\) = joined$", out, re.M)
        return {int(m.group(1)) - 1 for m in joined}

    def _read_timeouts(self) -> dict[str, int]:
        out = {}
        for key in ("token", "consensus", "token_retransmit", "join"):
            try:
                text = self._cmap(min(self.alive()), "-g", f"runtime.config.totem.{key}")
                out[f"{key}_ms"] = int(text.rsplit("=", 1)[1])
            except (RuntimeError, subprocess.SubprocessError, ValueError, IndexError):
                pass
        return out

    def alive(self) -> list[int]:
        return [k for k, p in self.procs.items() if k not in self.killed and p.poll() is None]

    # -- the System interface --------------------------------------------------------------------

    def client_cmd(self, k: int, common: list[str]) -> list[str]:
        assert self.bench is not None, "prepare() first"
        return topology.in_ns(topology.node_ns(k), str(self.bench), *common, "--group", GROUP)

    def leader(self) -> int:
        """The ring representative: the member with the lowest node id, which forms the ring (totem's
        memb_lowest_in_config; the ring id the clients log in their `leader` events names it too)."""
        for k in self.alive():
            joined = self._joined(k)
            if joined:
                return min(joined)
        raise RuntimeError(f"{self.name}: no live corosync to ask for the ring representative")

    def kill(self, k: int) -> None:
        p = self.procs[k]
        procs.kill9(p)
        self.killed.add(k)
        self._remove_shm(p.pid)

    def run_facts(self) -> dict:
        """membership_changes: the rings formed after the group had formed (the most any node
        logged); token_ms (and consensus, ...): the timeouts corosync used."""
        changes = 0
        for k in self.members:
            if self._log(k).exists():
                with open(self._log(k), "rb") as f:
                    f.seek(self.log_offsets.get(k, 0))
                    text = f.read().decode(errors="replace")
                changes = max(changes, len(NEW_MEMBERSHIP.findall(text)))
        return {"membership_changes": changes, **self.runtime}

    def stop(self) -> None:
        started = list(self.procs.values())
        procs.stop(started, grace_s=10)
        for p in started:
            self._remove_shm(p.pid)
        self.procs = {}
        if self.state_root is not None:
            shutil.rmtree(self.state_root, ignore_errors=True)
            self.state_root = None

    @staticmethod
    def _remove_shm(pid: int) -> None:
        """What a corosync killed by SIGKILL leaves in /dev/shm: its blackbox (qb-corosync-<pid>-*)
        and its clients' IPC rings (directories qb-<pid>-<client pid>-*). Its PID names them."""
        for path in [*Path("/dev/shm").glob(f"qb-corosync-{pid}-*"), *Path("/dev/shm").glob(f"qb-{pid}-*")]:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)

    def info(self) -> dict:
        token = self.token_ms if self.token_ms is not None else \
            DEFAULT_TOKEN_MS + (len(self.members) - 2) * TOKEN_COEFFICIENT_MS
        return {"corosync": self.version, "transport": self.transport, "token_ms": token,
                "totem_settings": token_settings(self.transport, self.token_ms) or "defaults",
                **({"runtime": self.runtime} if self.runtime else {}),
                "guarantee": "CPG_TYPE_AGREED", "quorum": "none", "crypto": "none",
                "scheduling": "SCHED_RR 99 (corosync's default)" if self.sched_rr else "SCHED_OTHER, nice 0",
                "client_inflight": 256, "group": GROUP}
