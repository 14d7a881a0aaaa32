"""The comparison's network (perf/compare/README.md "Topology"): namespaces cmp-n0..cmp-n3 and
cmp-noise, each with a veth leg on one Linux bridge in cmp-sw, addresses 10.77.0.0/24, every
direction shaped by tbf to the same rate. The member namespaces and the bridge are made by
scripts/cluster.sh (TOB_NET=cmp), the same code that makes the dpdk-tob test cluster; this module
adds the noise namespace, the addresses and the shaping, and removes all of it.
"""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NET = "cmp"
SW = f"{NET}-sw"
BRIDGE = f"{NET}br0"
NOISE_NS = f"{NET}-noise"
NOISE_IP = "10.77.0.100"
NODES = 4
RATE = "1gbit"
RATE_MBPS = 1000
# tbf: burst large enough for 1 Gbit/s at the kernel's timer granularity, queue bounded to 10 ms.
TBF = ["tbf", "rate", RATE, "burst", "128kb", "latency", "10ms"]


# One user of the topology at a time (two benchmarks must never overlap): up() takes this lock and
# holds it until down() or the process's exit; a second user waits for it.
LOCK = Path("/run/lock/tob-compare.lock")
_lock_fd: int | None = None


def acquire() -> None:
    global _lock_fd
    if _lock_fd is not None:
        return
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
        print(f"compare: {LOCK} is held by PID {holder or '?'} (another benchmark): waiting", file=sys.stderr, flush=True)
        fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _lock_fd = fd


def release() -> None:
    global _lock_fd
    if _lock_fd is not None:
        os.close(_lock_fd)  # closing the descriptor drops the flock
        _lock_fd = None


def node_ns(k: int) -> str:
    return f"{NET}-n{k}"


def ip_of(k: int) -> str:
    return f"10.77.0.{k + 1}"


def sh(*cmd: str, check: bool = True, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(list(cmd), text=True, capture_output=True, timeout=timeout, env=env)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip() or p.stdout.strip()}")
    return p


def in_ns(ns: str, *cmd: str) -> list[str]:
    return ["ip", "netns", "exec", ns, *cmd]


def namespaces() -> list[str]:
    out = sh("ip", "netns", "list").stdout
    return [line.split()[0] for line in out.splitlines() if line.split() and line.split()[0].startswith(f"{NET}-")]


def cluster_env(run_dir: Path, **extra: str) -> dict[str, str]:
    """scripts/cluster.sh's environment for this topology (dpdk-tob daemons in cmp-nK)."""
    return dict(os.environ, TOB_NET=NET, TOB_KEEP_NET="1", TOB_RUN_DIR=str(run_dir), **extra)


def up(run_dir: Path) -> None:
    """Make the whole topology (idempotent): members and bridge, noise namespace, addresses, tbf.
    Takes the benchmark lock first (held until down())."""
    acquire()
    run_dir.mkdir(parents=True, exist_ok=True)
    sh("bash", str(REPO / "scripts/cluster.sh"), "net-up", str(NODES), timeout=120, env=cluster_env(run_dir))
    if NOISE_NS not in namespaces():
        sh("ip", "netns", "add", NOISE_NS)
    if sh("ip", "-n", NOISE_NS, "link", "show", "vethN", check=False).returncode != 0:
        sh("ip", "-n", SW, "link", "del", "portN", check=False)
        sh("ip", "link", "add", "vethN", "netns", NOISE_NS, "type", "veth", "peer", "name", "portN", "netns", SW)
    sh("ip", "-n", NOISE_NS, "link", "set", "lo", "up")
    sh("ip", "-n", NOISE_NS, "link", "set", "vethN", "up")
    sh("ip", "-n", SW, "link", "set", "portN", "master", BRIDGE)
    sh("ip", "-n", SW, "link", "set", "portN", "up")
    legs = [(node_ns(k), f"veth{k}", f"port{k}", ip_of(k)) for k in range(NODES)]
    legs.append((NOISE_NS, "vethN", "portN", NOISE_IP))
    for ns, leg, port, ip in legs:
        sh("ip", "-n", ns, "addr", "replace", f"{ip}/24", "dev", leg)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", leg, "root", *TBF)
        sh("ip", "netns", "exec", SW, "tc", "qdisc", "replace", "dev", port, "root", *TBF)
    # Every member reaches every other by its address (a quick check that the bridge forwards).
    for k in range(1, NODES):
        sh(*in_ns(node_ns(0), "ping", "-n", "-q", "-c", "1", "-W", "2", ip_of(k)), timeout=10)


def down() -> None:
    """Remove every namespace of the topology (and so every interface in them), then release the
    benchmark lock."""
    for ns in namespaces():
        sh("ip", "netns", "del", ns, check=False)
    release()
