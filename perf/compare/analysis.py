"""The comparison's analysis (perf/compare/README.md "Analysis"): the same for every system, from
the files of the client contract alone.

A run is the files of the four clients of one system, workload and trial: records (one row per
delivery: sender, seq, send_ns, recv_ns, in delivery order), a summary (sent, first and last
send instants) and events (membership or leadership changes). Nothing here knows which system
made them.
"""
from __future__ import annotations

import csv
import hashlib
import json
import math
import statistics
from array import array
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Member:
    """One client's files, read."""
    node: int
    senders: array = field(default_factory=lambda: array("l"))
    seqs: array = field(default_factory=lambda: array("q"))
    send_ns: array = field(default_factory=lambda: array("q"))
    recv_ns: array = field(default_factory=lambda: array("q"))
    summary: dict = field(default_factory=dict)
    events: list[tuple[int, str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def read_member(node: int, records: Path, summary: Path, events: Path | None) -> Member:
    """A client's files; what is missing or malformed is noted in problems, never raised."""
    m = Member(node)
    try:
        m.summary = json.loads(summary.read_text())
    except (OSError, ValueError) as e:
        m.problems.append(f"node {node}: summary {summary}: {e}")
    try:
        with open(records, encoding="ascii") as f:
            header = f.readline().strip()
            if header != "sender,seq,send_ns,recv_ns":
                m.problems.append(f"node {node}: {records}: header {header!r}")
            else:
                for line in f:
                    parts = line.split(",")
                    if len(parts) != 4:
                        m.problems.append(f"node {node}: {records}: a cut line {line.strip()!r}")
                        break
                    m.senders.append(int(parts[0]))
                    m.seqs.append(int(parts[1]))
                    m.send_ns.append(int(parts[2]))
                    m.recv_ns.append(int(parts[3]))
    except (OSError, ValueError) as e:
        m.problems.append(f"node {node}: records {records}: {e}")
    if events is not None and events.exists():
        with open(events, encoding="ascii", newline="") as f:
            for row in csv.DictReader(f):
                try:
                    m.events.append((int(row["at_ns"]), row["kind"], row["detail"]))
                except (KeyError, ValueError, TypeError):
                    m.problems.append(f"node {node}: {events}: bad row {row}")
    return m


def sequence_digest(m: Member, length: int) -> str:
    """A rolling hash of the first `length` delivered (sender, seq) pairs."""
    h = hashlib.blake2b(digest_size=16)
    buf = bytearray()
    for s, q in zip(m.senders[:length], m.seqs[:length]):
        buf += s.to_bytes(2, "little", signed=True) + q.to_bytes(8, "little", signed=True)
        if len(buf) >= 1 << 16:
            h.update(buf)
            buf.clear()
    h.update(buf)
    return h.hexdigest()


def order_identical(members: list[Member]) -> bool:
    """Every member delivered the same sequence: the shortest one is a prefix of every other (the
    clients stop at the same instant, one may have received a few more of the last deliveries)."""
    if not members:
        return False
    common = min(len(m.seqs) for m in members)
    return len({sequence_digest(m, common) for m in members}) == 1


def percentile(sorted_values: list[int], q: float) -> int:
    """Nearest-rank percentile of a sorted list (q in [0, 1])."""
    if not sorted_values:
        return 0
    k = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values) - 1e-9) - 1))
    return sorted_values[k]


def latency_us(members: list[Member]) -> dict:
    values = sorted(r - s for m in members for s, r in zip(m.send_ns, m.recv_ns))
    if not values:
        return {"p50": None, "p99": None, "p999": None, "max": None, "count": 0}
    # The CDF for the plots: every percent, and the tail finer.
    qs = [i / 100 for i in range(100)] + [0.995, 0.999, 0.9995, 0.9999, 1.0]
    return {"p50": percentile(values, 0.50) / 1e3, "p99": percentile(values, 0.99) / 1e3,
            "p999": percentile(values, 0.999) / 1e3, "max": values[-1] / 1e3, "count": len(values),
            "cdf": [[q, round(percentile(values, q) / 1e3, 1)] for q in qs]}


def send_window(members: list[Member]) -> tuple[int, int]:
    """The first and the last send instant of the run (over every sender's summary)."""
    firsts = [m.summary.get("first_send_ns") or 0 for m in members if m.summary.get("sent")]
    lasts = [m.summary.get("last_send_ns") or 0 for m in members if m.summary.get("sent")]
    if not firsts:
        return 0, 0
    return min(firsts), max(lasts)


def msgs_per_s(members: list[Member], first_ns: int, last_ns: int, warm_ns: int = 1_000_000_000) -> float:
    """Deliveries per second at a member in the steady part of the run (1 s after the first send
    to the last send), the median over the members."""
    lo = first_ns + warm_ns
    if last_ns - lo <= 0:
        lo = first_ns
    span = (last_ns - lo) / 1e9
    if span <= 0:
        return 0.0
    rates = [sum(1 for r in m.recv_ns if lo <= r <= last_ns) / span for m in members]
    return statistics.median(rates) if rates else 0.0


def lost_messages(survivors: list[Member], senders: list[Member]) -> int:
    """Messages a surviving sender had sent (the system accepted them) that some surviving member
    never delivered (the clients drain until their system goes quiet: a backlog is delivered, not
    counted here)."""
    lost: set[tuple[int, int]] = set()
    for snd in senders:
        sent = int(snd.summary.get("sent") or 0)
        for m in survivors:
            got = {q for s, q in zip(m.senders, m.seqs) if s == snd.node}
            lost.update((snd.node, q) for q in range(sent) if q not in got)
    return len(lost)


def order_conflicts(members: list[Member]) -> int:
    """Pairs of members that deliver two common messages in opposite orders (total order broken,
    gaps allowed: a member that left the membership for a while misses what was delivered
    meanwhile, which order_identical counts and this does not)."""
    conflicts = 0
    for i, a in enumerate(members):
        pos = {msg: k for k, msg in enumerate(zip(a.senders, a.seqs))}
        for b in members[i + 1:]:
            common = [pos[msg] for msg in zip(b.senders, b.seqs) if msg in pos]
            conflicts += any(x >= y for x, y in zip(common, common[1:]))
    return conflicts


def duplicates(members: list[Member]) -> int:
    return sum(len(m.seqs) - len(set(zip(m.senders, m.seqs))) for m in members)


def longest_gap_ms(members: list[Member], from_ns: int, to_ns: int) -> float | None:
    """The longest time between two deliveries at a member within [from_ns, to_ns], or from its
    last delivery there to to_ns (a member that delivers nothing more), the largest over the
    members."""
    worst = 0
    for m in members:
        times = [r for r in m.recv_ns if from_ns <= r <= to_ns]
        for a, b in zip(times, times[1:]):
            worst = max(worst, b - a)
        if times:
            worst = max(worst, to_ns - times[-1])
    return worst / 1e6 if members else None


def detection_ms(survivors: list[Member], victim: int, kill_ns: int) -> float | None:
    """The kill to the last survivor's first event that shows the victim gone (a member list
    without it) or a leader other than the victim; None if some survivor never showed it."""
    latest = None
    for m in survivors:
        seen = None
        for at, kind, detail in m.events:
            if at < kill_ns:
                continue
            words = detail.split()
            if kind == "members" and str(victim) not in words:
                seen = at
                break
            if kind == "leader" and words and words[0] != str(victim):
                seen = at
                break
        if seen is None:
            return None
        latest = seen if latest is None else max(latest, seen)
    return None if latest is None else (latest - kill_ns) / 1e6


def analyse(members: list[Member], killed: int | None = None, kill_ns: int | None = None) -> dict:
    """The figures of one run. members: every client's files; killed: the node whose member was
    killed (its client's files are left out of the checks)."""
    survivors = [m for m in members if m.node != killed]
    first_ns, last_ns = send_window(members)
    out = {
        "msgs_per_s": round(msgs_per_s(survivors, first_ns, last_ns), 1),
        "latency_us": latency_us(survivors),
        "order_identical": order_identical(survivors),
        "order_conflicts": order_conflicts(survivors),
        "lost": lost_messages(survivors, survivors),
        "duplicates": duplicates(survivors),
        "sent": sum(int(m.summary.get("sent") or 0) for m in members),
        "delivered_per_member": {str(m.node): len(m.seqs) for m in members},
        "retries": sum(int(m.summary.get("retries") or 0) for m in members),
        "send_errors": sum(int(m.summary.get("send_errors") or 0) for m in members),
        "client_errors": {str(m.node): m.summary.get("error") for m in members if m.summary.get("error")},
        "problems": [p for m in members for p in m.problems],
    }
    if killed is not None and kill_ns is not None:
        # Up to the survivors' last delivery, past the end of sending: a system that stops
        # delivering at the kill and resumes only after its senders stopped has a gap that ends
        # when it resumes (capping at the last send cut corosync's default-token gap to the rest
        # of the sending time).
        end = max((max(m.recv_ns) for m in survivors if len(m.recv_ns)), default=kill_ns)
        out["detection_ms"] = detection_ms(survivors, killed, kill_ns)
        out["gap_ms"] = longest_gap_ms(survivors, kill_ns - 1_000_000_000, end)
    return out
