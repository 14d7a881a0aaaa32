"""Exports of a verified schedule.

- The `dpdk-tob` INI schedule section (rte_cfgfile syntax, `;` comments): `[timing]` with
  `cycle_ns` and one `[node.K]` per TOB node with `slot_offset_ns` and `slot_length_ns`. Node K
  is the source host of flow K: a TOB cluster is given as one flow per node (its broadcast slot).
- `tc qdisc replace ... taprio` commands per source host in the style of seed 000 Listing 6.1:
  two traffic classes, priority 5 -> class 1, one `sched-entry` per slot (gate 02 opens class 1 in
  the host's slots, 01 lets best effort through otherwise), `base-time`, `clockid CLOCK_TAI`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tobsched.errors import InputError

TT_PRIORITY = 5  # seed 000 §6: priority 5 carries the time-triggered traffic
GATE_BEST_EFFORT = "01"
GATE_TIME_TRIGGERED = "02"


@dataclass
class Timing:
    slot_ns: int
    cycle_ns: int
    base_time_ns: int = 0

    @staticmethod
    def make(slots: int, slot_ns: int, cycle_ns: int | None, base_time_ns: int = 0) -> "Timing":
        if slot_ns <= 0:
            raise InputError(f"--slot-ns must be > 0, got {slot_ns}")
        cycle = slots * slot_ns if cycle_ns is None else cycle_ns
        if cycle < slots * slot_ns:
            raise InputError(f"--cycle-ns {cycle} is shorter than {slots} slots of {slot_ns} ns")
        if base_time_ns < 0:
            raise InputError(f"--base-time-ns must be >= 0, got {base_time_ns}")
        return Timing(slot_ns, cycle, base_time_ns)


def _flows(schedule: dict[str, Any]) -> list[dict[str, Any]]:
    flows = schedule.get("flows")
    assert isinstance(flows, list), "schedule was verified before export"
    return flows


def ini_section(schedule: dict[str, Any], timing: Timing, network_name: str, schedule_name: str) -> str:
    flows = _flows(schedule)
    seen: dict[str, int] = {}
    # The one-flow-per-host rule first: it does not depend on which flows the solver scheduled.
    for k, f in enumerate(flows):
        if f["src"] in seen:
            raise InputError(
                f"flow {k} ({f['src']} -> {f['dst']}): host '{f['src']}' already is node "
                f"{seen[f['src']]}; a TOB cluster has one flow per node"
            )
        seen[f["src"]] = k
    for k, f in enumerate(flows):
        if f["slot"] is None:
            raise InputError(f"flow {k} ({f['src']} -> {f['dst']}) has no slot; every TOB node needs one")
    lines = [
        "; dpdk-tob schedule section written by tob-schedule export",
        f"; network: {network_name}",
        f"; schedule: {schedule_name} (formulation {schedule['formulation']}, {schedule['slots']} slots,"
        f" {schedule['scheduled']} flows, proven optimal: {str(schedule['proven_optimal']).lower()})",
        f"; node K is the source host of flow K; slot length {timing.slot_ns} ns",
    ]
    for k, f in enumerate(flows):
        lines.append(f";   node.{k} = {f['src']} -> {f['dst']}, slot {f['slot']}, path {' '.join(f['path'])}")
    lines += ["", "[timing]", f"cycle_ns = {timing.cycle_ns}"]
    for k, f in enumerate(flows):
        lines += [
            "",
            f"[node.{k}]",
            f"slot_offset_ns = {f['slot'] * timing.slot_ns}",
            f"slot_length_ns = {timing.slot_ns}",
        ]
    return "\n".join(lines) + "\n"


def taprio_commands(schedule: dict[str, Any], timing: Timing, dev: str, schedule_name: str) -> str:
    flows = _flows(schedule)
    slots = int(schedule["slots"])
    by_host: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for i, f in enumerate(flows):
        if f["slot"] is not None:
            by_host.setdefault(f["src"], []).append((i, f))
    prio_map = " ".join("1" if p == TT_PRIORITY else "0" for p in range(16))
    out = [
        "#!/bin/sh",
        f"# taprio schedules from {schedule_name}: run each block on its host (seed 000 Listing 6.1).",
        f"# cycle {timing.cycle_ns} ns = {slots} slots of {timing.slot_ns} ns"
        + (f" + {timing.cycle_ns - slots * timing.slot_ns} ns best effort" if timing.cycle_ns > slots * timing.slot_ns else ""),
        f"# priority {TT_PRIORITY} -> traffic class 1 (time-triggered), all others -> class 0.",
    ]
    for host in sorted(by_host, key=lambda h: by_host[h][0][0]):
        mine = {f["slot"] for _, f in by_host[host]}
        out.append("")
        for i, f in by_host[host]:
            out.append(f"# host {host}: flow {i} {f['src']} -> {f['dst']} in slot {f['slot']}")
        cmd = [
            f"tc qdisc replace dev {dev} parent root handle 100 taprio",
            "num_tc 2",
            f"map {prio_map}",
            "queues 1@0 1@1",
            f"base-time {timing.base_time_ns}",
        ]
        for k in range(slots):
            gate = GATE_TIME_TRIGGERED if k in mine else GATE_BEST_EFFORT
            cmd.append(f"sched-entry S {gate} {timing.slot_ns}")
        rest = timing.cycle_ns - slots * timing.slot_ns
        if rest > 0:
            cmd.append(f"sched-entry S {GATE_BEST_EFFORT} {rest}")
        cmd.append("clockid CLOCK_TAI")
        out.append(" \\\n        ".join(cmd))
    return "\n".join(out) + "\n"
