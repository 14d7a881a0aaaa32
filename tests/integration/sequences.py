"""Reads dpdk-tob output files (deliveries and events) and compares delivery sequences.

Deliveries files have one line per delivery, `node cycle sender msg_id` (the format of
`tob-sim --deliveries`); events files one line per membership event,
`at_ns cycle kind node reason members`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

Msg = tuple[int, int]  # (sender, msg_id)


def read_deliveries(path: Path) -> list[Msg]:
    out: list[Msg] = []
    if not path.exists():
        return out
    for line in path.read_text(encoding="ascii").splitlines():
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
