"""Python helpers for scripts and tests that drive a dpdk-tob cluster (scripts/cluster.sh).

- query(prefix, cmd) / telemetry(node, cmd): DPDK telemetry of a running daemon;
- cluster(env, *args): scripts/cluster.sh with an environment;
- wait_for(cond, timeout_s): poll a condition, tolerating a daemon that is still starting;
- read_deliveries / read_events / common_window: the daemon's output files.
Deliveries files have one line per delivery, `node cycle sender msg_id` (the format of
`tob-sim --deliveries`); events files one line per membership event,
`at_ns cycle kind node reason members`.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

REPO = Path(__file__).resolve().parents[1]
NET = os.environ.get("TOB_NET", "tob")  # scripts/cluster.sh TOB_NET: a second cluster beside the first
FILE_PREFIX = f"{NET}-node"  # scripts/cluster.sh: --file-prefix tob-node<K>
NETNS_PREFIX = f"{NET}-n"    # scripts/cluster.sh: node K's namespace tob-n<K>

Msg = tuple[int, int]  # (sender, msg_id)


def query(prefix: str, command: str, run_dir: str = "/var/run/dpdk") -> dict:
    """One telemetry command over the daemon's SOCK_SEQPACKET socket (as dpdk-telemetry.py)."""
    path = os.path.join(run_dir, prefix, "dpdk_telemetry.v2")
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(5)
        s.connect(path)
        hello = json.loads(s.recv(16384).decode())
        s.send(command.encode())
        reply = s.recv(int(hello.get("max_output_len", 16384))).decode()
    return json.loads(reply)


def telemetry(node: int, command: str) -> dict:
    """The reply of cluster node `node`; RuntimeError while it is not answering yet."""
    try:
        reply = query(f"{FILE_PREFIX}{node}", command)[command.split(",")[0]]
    except (OSError, ValueError) as e:
        raise RuntimeError(f"node {node}: {command}: {e}") from e
    if reply is None:  # the daemon has not registered its commands yet
        raise RuntimeError(f"node {node}: {command}: no reply yet")
    return reply


def cluster(env: Mapping[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(["bash", str(REPO / "scripts/cluster.sh"), *args], env=dict(env), text=True,
                       capture_output=True, timeout=120)
    if check and p.returncode != 0:
        raise RuntimeError(f"cluster.sh {' '.join(args)} failed:\n{p.stdout}{p.stderr}")
    return p


def wait_for(cond: Callable[[], bool], timeout_s: float, what: str = "") -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            if cond():
                return True
        except (RuntimeError, OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    if what:
        print(f"  timed out after {timeout_s} s waiting for {what}", flush=True)
    return False


DELIVERIES_MAGIC = b"TOBDLV\0\1"  # --deliveries-format bin (lib/dataplane/observe/deliveries_file.h)
DELIVERIES_HEADER_BYTES = 16
DELIVERY_RECORD_BYTES = 32


def deliveries_digest(path: Path, n: int | None = None) -> tuple[int, str]:
    """(deliveries in the file, a digest of the (sender, msg_id) sequence of its first n), read in
    a stream: millions of deliveries compare without a list of them in memory."""
    import hashlib
    h = hashlib.blake2b(digest_size=16)
    count = 0
    with open(path, "rb") as f:
        head = f.read(len(DELIVERIES_MAGIC))
        if head == DELIVERIES_MAGIC:
            f.read(DELIVERIES_HEADER_BYTES - len(DELIVERIES_MAGIC))
            while n is None or count < n:
                chunk = f.read(DELIVERY_RECORD_BYTES * 65536)
                chunk = chunk[: len(chunk) - len(chunk) % DELIVERY_RECORD_BYTES]
                if not chunk:
                    break
                for _cycle, msg_id, _at, sender, _client, _len, _z in struct.iter_unpack("<qQqHHHH", chunk):
                    if n is not None and count >= n:
                        break
                    h.update(struct.pack("<HQ", sender, msg_id))
                    count += 1
        else:
            f.seek(0)
            for line in f:
                if n is not None and count >= n:
                    break
                if not line.endswith(b"\n"):
                    break  # a line still being written
                _node, _cycle, sender, msg_id = line.split()
                h.update(struct.pack("<HQ", int(sender), int(msg_id)))
                count += 1
    return count, h.hexdigest()


def read_deliveries(path: Path) -> list[Msg]:
    """(sender, msg_id) of every delivery in a deliveries file, text or bin format."""
    out: list[Msg] = []
    if not path.exists():
        return out
    data = path.read_bytes()
    if data[:len(DELIVERIES_MAGIC)] == DELIVERIES_MAGIC:
        # Whole records only: a running daemon may be in the middle of one.
        body = data[DELIVERIES_HEADER_BYTES:]
        body = body[: len(body) - len(body) % DELIVERY_RECORD_BYTES]
        return [(sender, msg_id) for _cycle, msg_id, _at, sender, _client, _len, _z
                in struct.iter_unpack("<qQqHHHH", body)]
    text = data.decode("ascii")
    # Whole lines only: a running daemon's I/O thread may be in the middle of one (stdio writes a
    # long batch in pieces), and a cut line can still look like `node cycle sender msg_id`.
    for line in text[: text.rfind("\n") + 1].splitlines():
        parts = line.split()
        if len(parts) != 4:
            raise ValueError(f"{path}: bad line {line!r}")
        out.append((int(parts[2]), int(parts[3])))
    return out


@dataclass
class Event:
    at_ns: int
    cycle: int
    kind: str
    node: int
    reason: str
    rest: str


def read_events(path: Path) -> list[Event]:
    out: list[Event] = []
    if not path.exists():
        return out
    for line in path.read_text(encoding="ascii").splitlines():
        p = line.split(maxsplit=5)
        if len(p) < 5:
            raise ValueError(f"{path}: bad line {line!r}")
        out.append(Event(int(p[0]), int(p[1]), p[2], int(p[3]), p[4], p[5] if len(p) > 5 else ""))
    return out


def common_window(seqs: list[list[Msg]]) -> tuple[list[list[Msg]], str]:
    """The part of every sequence between the first and the last message all of them delivered.

    Returns the slices and "" when they are identical, else a description of the first
    difference. Uniform agreement and total order mean the slices must be equal: a node that
    skipped a message in the middle, or delivered two in another order, shows up here.
    """
    if any(not s for s in seqs):
        return [], "a node delivered nothing"
    common = set(seqs[0])
    for s in seqs[1:]:
        common &= set(s)
    if not common:
        return [], "no message was delivered by every node"
    slices = []
    for s in seqs:
        idx = [i for i, m in enumerate(s) if m in common]
        slices.append(s[idx[0] : idx[-1] + 1])
    for k, s in enumerate(slices[1:], 1):
        if s != slices[0]:
            for i, (a, b) in enumerate(zip(slices[0], s)):
                if a != b:
                    return slices, f"sequence {k} differs from sequence 0 at position {i}: {b} vs {a}"
            return slices, f"sequence {k} has {len(s)} messages in the common window, sequence 0 has {len(slices[0])}"
    return slices, ""


def order_conflicts(seqs: list[list[Msg]]) -> str:
    """Total order and integrity without assuming every node delivered everything (a node that
    left the membership for a while misses what was delivered meanwhile): no node delivers a
    message twice, and any two nodes deliver their common messages in the same relative order.
    Returns "" or a description of the first conflict."""
    for k, s in enumerate(seqs):
        if len(set(s)) != len(s):
            return f"sequence {k} delivers a message twice"
    for a in range(len(seqs)):
        pos = {m: i for i, m in enumerate(seqs[a])}
        for b in range(a + 1, len(seqs)):
            common = [pos[m] for m in seqs[b] if m in pos]
            for x, y in zip(common, common[1:]):
                if x >= y:
                    return f"sequences {a} and {b} deliver common messages in different orders"
    return ""
