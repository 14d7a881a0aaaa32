"""etcd as the comparison's Raft system (perf/compare/README.md "Systems"): Debian's etcd 3.4 as
three members in cmp-n0 .. cmp-n2, every timing at etcd's defaults, and etcd_bench (Go,
go.etcd.io/etcd/client/v3) as the client on all four nodes. A message is a put, a delivery its
event on a watch of the prefix, the total order etcd's revisions (etcd_bench/main.go).

A member fsyncs its write-ahead log before it counts entries as persisted (an entry commits once a
quorum has them fsynced), on the guest's virtual disk here: that cost is part of what etcd is (run_facts() reports the fsyncs' count and mean per
member). etcd 3.4 has no --unsafe-no-fsync; a data dir on tmpfs, where fsync returns at once, is
how to see what the fsyncs cost (not the reported system).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import procs
import topology
from system import System

HERE = Path(__file__).resolve().parent
BENCH_SRC = HERE / "etcd_bench"
ETCD = "/usr/bin/etcd"
ETCDCTL = "/usr/bin/etcdctl"
# Module and build caches that outlive a run: a second run neither downloads nor compiles again.
GO_CACHE = Path("/var/cache/tob-compare/go")
CLIENT_PORT = 2379
PEER_PORT = 2380
# etcd's defaults, left as they are (etcd --help): the leader's heartbeat and a follower's
# election timeout (randomised by raft between 1x and 2x).
HEARTBEAT_MS = 100
ELECTION_MS = 1000
START_TIMEOUT_S = 60.0
# Prints the page at argv[1] (run inside a namespace: the host has no route to the topology).
FETCH = "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=3).read().decode())"
# Where the driver's own etcdctl calls run: the client-only node, which reaches every member
# whichever of them is down.
QUERY_NODE = 3


def client_url(k: int) -> str:
    return f"http://{topology.ip_of(k)}:{CLIENT_PORT}"


def peer_url(k: int) -> str:
    return f"http://{topology.ip_of(k)}:{PEER_PORT}"


def endpoint(k: int) -> str:
    return f"{topology.ip_of(k)}:{CLIENT_PORT}"


class EtcdSystem(System):
    name = "etcd"
    clock = "realtime"
    members = (0, 1, 2)
    leader_role = "leader"

    def __init__(self) -> None:
        self.work: Path | None = None
        self.run_dir: Path | None = None
        self.procs: dict[int, subprocess.Popen] = {}
        self.data_dirs: list[Path] = []
        self.version = ""
        self.client_version = ""

    # -- prepare ---------------------------------------------------------------------------------

    def prepare(self, work: Path) -> None:
        procs.ensure_packages(["etcd-server", "etcd-client"])
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        out = subprocess.run([ETCD, "--version"], text=True, capture_output=True, timeout=30)
        m = re.search(r"etcd Version: (\S+)", out.stdout)
        self.version = m.group(1) if m else out.stdout.strip()[:80]
        m = re.search(r"go\.etcd\.io/etcd/client/v3 (\S+)", (BENCH_SRC / "go.mod").read_text())
        self.client_version = m.group(1) if m else "?"
        self._build(work / "etcd_bench")

    def _build(self, binary: Path) -> None:
        """go build of etcd_bench, only when a source is newer than the binary."""
        sources = [p for p in BENCH_SRC.iterdir() if p.suffix == ".go" or p.name in ("go.mod", "go.sum")]
        if binary.exists() and binary.stat().st_mtime >= max(p.stat().st_mtime for p in sources):
            return
        go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
        if go is None:
            raise procs.Unavailable("etcd: Go is not installed (the etcd client etcd_bench is built with it)")
        env = dict(os.environ, GOFLAGS="-mod=mod -buildvcs=false", GOTOOLCHAIN="local",
                   GOCACHE=str(GO_CACHE / "build"), GOMODCACHE=str(GO_CACHE / "mod"))
        tmp = binary.with_name(binary.name + ".tmp")
        r = subprocess.run([go, "build", "-o", str(tmp), "."], cwd=BENCH_SRC, env=env, text=True,
                           capture_output=True, timeout=900)
        if r.returncode != 0:
            raise procs.Unavailable(f"etcd: go build of {BENCH_SRC} failed: {r.stderr.strip()[-800:]}")
        tmp.replace(binary)

    # -- start and stop --------------------------------------------------------------------------

    def start(self, run: Path) -> None:
        if self.procs:
            raise RuntimeError("etcd: already started")
        self.run_dir = run
        token = f"tob-compare-{secrets.token_hex(6)}"
        cluster = ",".join(f"m{k}={peer_url(k)}" for k in self.members)
        # Debian's etcd reads ETCD_* variables as options: only the command line counts here.
        env = {k: v for k, v in os.environ.items() if not k.startswith("ETCD")}
        for k in self.members:
            data = run / "etcd" / f"m{k}"
            shutil.rmtree(data, ignore_errors=True)
            data.mkdir(parents=True)
            self.data_dirs.append(data)
            cmd = [*topology.in_ns(topology.node_ns(k), ETCD),
                   "--name", f"m{k}", "--data-dir", str(data),
                   "--listen-client-urls", client_url(k), "--advertise-client-urls", client_url(k),
                   "--listen-peer-urls", peer_url(k), "--initial-advertise-peer-urls", peer_url(k),
                   "--initial-cluster", cluster, "--initial-cluster-state", "new",
                   "--initial-cluster-token", token]
            self.procs[k] = procs.start(cmd, run / f"etcd-m{k}.log", env=env)
        try:
            self._wait_formed()
        except BaseException:
            self.stop()
            raise

    def _wait_formed(self) -> None:
        """Every member healthy (a quorum read through it succeeds) and a leader named."""
        deadline = time.monotonic() + START_TIMEOUT_S
        why = "not started"
        while time.monotonic() < deadline:
            dead = [k for k, p in self.procs.items() if p.poll() is not None]
            if dead:
                raise RuntimeError(f"etcd: member(s) {dead} exited at start (see {self.run_dir}/etcd-m*.log)")
            r = self._etcdctl("endpoint", "health", endpoints=self.members)
            if r.returncode == 0:
                try:
                    self.leader()
                    return
                except RuntimeError as e:
                    why = str(e)
            else:
                why = (r.stderr.strip() or r.stdout.strip())[-300:]
            time.sleep(0.2)
        raise RuntimeError(f"etcd: the cluster did not form within {START_TIMEOUT_S:.0f} s: {why}")

    def stop(self) -> None:
        procs.stop(list(self.procs.values()))
        self.procs = {}
        for data in self.data_dirs:
            shutil.rmtree(data, ignore_errors=True)
            if data.parent.exists() and not any(data.parent.iterdir()):
                data.parent.rmdir()
        self.data_dirs = []

    def kill(self, k: int) -> None:
        procs.kill9(self.procs[k])

    # -- the client and the questions ------------------------------------------------------------

    def client_cmd(self, k: int, common: list[str]) -> list[str]:
        assert self.work is not None, "prepare() first"
        order = [k, *(j for j in self.members if j != k)] if k in self.members else list(self.members)
        return [*topology.in_ns(topology.node_ns(k), str(self.work / "etcd_bench")), *common,
                "--endpoints", ",".join(endpoint(j) for j in order)]

    def leader(self) -> int:
        """The leader as the live members name it (the first that answers with one)."""
        live = [k for k in self.members if k in self.procs and self.procs[k].poll() is None]
        ids: dict[int, int] = {}
        r = self._etcdctl("member", "list", endpoints=live)
        if r.returncode == 0:
            for m in json.loads(r.stdout).get("members", []):
                if re.fullmatch(r"m\d+", m.get("name", "")):
                    ids[int(m["ID"])] = int(m["name"][1:])
        for k in live:
            r = self._etcdctl("endpoint", "status", endpoints=[k])
            if r.returncode != 0:
                continue
            for status in json.loads(r.stdout):
                lead = int(status.get("Status", {}).get("leader") or 0)
                if lead in ids:
                    return ids[lead]
        raise RuntimeError("etcd: no live member names a leader")

    def _etcdctl(self, *args: str, endpoints: list[int] | tuple[int, ...]) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ETCDCTL")}
        env["ETCDCTL_API"] = "3"
        cmd = topology.in_ns(topology.node_ns(QUERY_NODE), ETCDCTL,
                             "--endpoints", ",".join(endpoint(k) for k in endpoints),
                             "--dial-timeout", "1s", "--command-timeout", "2s", "-w", "json", *args)
        try:
            return subprocess.run(cmd, text=True, capture_output=True, timeout=10, env=env)
        except subprocess.TimeoutExpired as e:
            return subprocess.CompletedProcess(cmd, 124, "", f"timed out: {e}")

    # -- facts -----------------------------------------------------------------------------------

    def run_facts(self) -> dict:
        """The WAL fsyncs and backend commits of every live member since it started (etcd's own
        histograms on /metrics): what the durability of each entry costs on this disk."""
        facts: dict[str, dict] = {}
        for k, p in self.procs.items():
            if p.poll() is not None:
                continue
            r = subprocess.run(topology.in_ns(topology.node_ns(QUERY_NODE), sys.executable, "-c", FETCH,
                                              f"{client_url(k)}/metrics"),
                               text=True, capture_output=True, timeout=10)
            if r.returncode != 0:
                continue
            fsyncs, fsync_ms = metric_mean(r.stdout, "etcd_disk_wal_fsync_duration_seconds")
            commits, commit_ms = metric_mean(r.stdout, "etcd_disk_backend_commit_duration_seconds")
            facts[f"m{k}"] = {"wal_fsyncs": fsyncs, "wal_fsync_mean_ms": fsync_ms,
                              "backend_commits": commits, "backend_commit_mean_ms": commit_ms}
        return {"etcd_disk": facts}

    def info(self) -> dict:
        return {
            "version": self.version,
            "members": len(self.members),
            "heartbeat_ms": HEARTBEAT_MS,
            "election_timeout_ms": ELECTION_MS,
            "timing": "etcd's defaults: heartbeat 100 ms, election timeout 1000 ms (raft randomises it "
                      "to 1-2x), pre-vote off, snapshot every 100000 entries",
            "client": f"etcd_bench with go.etcd.io/etcd/client/v3 {self.client_version} (gRPC "
                      "round-robin over its endpoints; a put attempt times out after 2 s and is tried "
                      "again, at most 6 attempts)",
            "durability": "a member fsyncs its WAL before it counts entries persisted; an entry commits "
                          "once a quorum has it fsynced (etcd 3.4 cannot turn that off)",
        }


def metric_mean(text: str, name: str) -> tuple[int, float | None]:
    """Count and mean (ms) of a Prometheus histogram in /metrics text."""
    total = count = 0.0
    for line in text.splitlines():
        if line.startswith(f"{name}_sum "):
            total = float(line.split()[1])
        elif line.startswith(f"{name}_count "):
            count = float(line.split()[1])
    return int(count), (round(total / count * 1e3, 3) if count else None)

