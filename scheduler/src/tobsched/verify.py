"""Schedule verifier, written apart from the solver on purpose: it reads the raw JSON documents and
shares no code with the formulations, so a bug in one is not silently repeated in the other.

Checks (seed 003 §4-5): each flow has at most one slot, slots are in range, paths are simple, made
of links, start at the source and end at the destination, inner nodes are switches; paths of
minimum-hop formulations (spr, sfr, greedy) are minimum-hop; no two scheduled flows use the same
directed link in the same slot.
"""

from __future__ import annotations

from collections import deque
from typing import Any

MIN_HOP_FORMULATIONS = ("spr", "sfr", "greedy")
SCHEDULE_KEYS = ("formulation", "slots", "scheduled", "proven_optimal", "solve_s", "flows")


def _hop_distances(adj: dict[str, set[str]], hosts: set[str], src: str) -> dict[str, int]:
    """Hop distance from src to every node it reaches (breadth first; hosts do not forward)."""
    dist = {src: 0}
    queue = deque([src])
    while queue:
        n = queue.popleft()
        if n != src and n in hosts:
            continue  # hosts do not forward
        for m in adj.get(n, ()):
            if m not in dist:
                dist[m] = dist[n] + 1
                queue.append(m)
    return dist


def verify_schedule(network: Any, schedule: Any) -> list[str]:
    """Returns the violations found; an empty list means the schedule is valid."""
    problems: list[str] = []
    if not isinstance(network, dict) or not isinstance(schedule, dict):
        return ["network and schedule must be JSON objects"]
    for key in SCHEDULE_KEYS:
        if key not in schedule:
            problems.append(f"schedule: missing key '{key}'")
    if problems:
        return problems

    hosts = set(network.get("hosts", []))
    switches = set(network.get("switches", []))
    adj: dict[str, set[str]] = {}
    for u, v in network.get("links", []):
        adj.setdefault(u, set()).add(v)
        adj.setdefault(v, set()).add(u)
    net_flows = network.get("flows", [])

    slots = schedule["slots"]
    if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
        return [f"schedule: slots must be an integer >= 1, got {slots!r}"]
    if not isinstance(schedule["proven_optimal"], bool):
        problems.append("schedule: proven_optimal must be true or false")
    formulation = schedule["formulation"]
    flows = schedule["flows"]
    if not isinstance(flows, list):
        return problems + ["schedule: flows must be a list"]
    if len(flows) != len(net_flows):
        return problems + [
            f"schedule has {len(flows)} flows, the network has {len(net_flows)} "
            "(one entry per flow, in input order)"
        ]

    holder: dict[tuple[int, str, str], int] = {}
    from_src: dict[str, dict[str, int]] = {}
    scheduled = 0
    for i, (entry, want) in enumerate(zip(flows, net_flows)):
        name = f"flow {i} ({want.get('src')} -> {want.get('dst')})"
        if not isinstance(entry, dict):
            problems.append(f"{name}: entry must be an object")
            continue
        if entry.get("src") != want.get("src") or entry.get("dst") != want.get("dst"):
            problems.append(f"{name}: entry names {entry.get('src')} -> {entry.get('dst')}")
            continue
        slot, path = entry.get("slot"), entry.get("path")
        if slot is None and path is None:
            continue
        if slot is None or path is None:
            problems.append(f"{name}: slot and path must both be set or both be null")
            continue
        if isinstance(slot, list):
            problems.append(f"{name}: more than one slot {slot!r}")
            continue
        if isinstance(slot, bool) or not isinstance(slot, int) or not 0 <= slot < slots:
            problems.append(f"{name}: slot {slot!r} outside 0..{slots - 1}")
            continue
        if not isinstance(path, list) or len(path) < 2 or not all(isinstance(n, str) for n in path):
            problems.append(f"{name}: path must list at least two node names")
            continue
        if path[0] != want["src"] or path[-1] != want["dst"]:
            problems.append(f"{name}: path {path} does not run from {want['src']} to {want['dst']}")
            continue
        if len(set(path)) != len(path):
            problems.append(f"{name}: path {path} is not simple (repeats a node)")
            continue
        bad_hop = next((k for k in range(len(path) - 1) if path[k + 1] not in adj.get(path[k], ())), None)
        if bad_hop is not None:
            problems.append(f"{name}: {path[bad_hop]} -> {path[bad_hop + 1]} is not a link")
            continue
        inner_hosts = [n for n in path[1:-1] if n not in switches]
        if inner_hosts:
            problems.append(f"{name}: path {path} forwards through non-switch {inner_hosts[0]}")
            continue
        if formulation in MIN_HOP_FORMULATIONS:
            if want["src"] not in from_src:
                from_src[want["src"]] = _hop_distances(adj, hosts, want["src"])
            best = from_src[want["src"]].get(want["dst"])
            if best is not None and len(path) - 1 != best:
                problems.append(
                    f"{name}: {formulation} path has {len(path) - 1} hops, the minimum is {best}"
                )
        scheduled += 1
        for k in range(len(path) - 1):
            use = (slot, path[k], path[k + 1])
            if use in holder:
                problems.append(
                    f"{name} and flow {holder[use]} both use {path[k]} -> {path[k + 1]} in slot {slot}"
                )
            else:
                holder[use] = i
    if not problems and schedule["scheduled"] != scheduled:
        problems.append(f"schedule: 'scheduled' is {schedule['scheduled']}, {scheduled} flows have a slot")
    return problems
