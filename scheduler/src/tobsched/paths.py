"""Candidate paths: all minimum-hop paths of a flow (S/PR, seed 003 §5.3) and one of them chosen
deterministically, ECMP-like (S/FR, §5.4). Hosts do not forward: inner nodes are switches."""

from __future__ import annotations

import zlib
from collections import deque
from dataclasses import dataclass

from tobsched.network import Flow, Network

# Enumeration limit per flow; the paper's topologies stay far below it.
PATHS_PER_FLOW_MAX = 10_000


@dataclass(frozen=True)
class Candidate:
    flow: int
    nodes: tuple[str, ...]
    arcs: tuple[int, ...]  # indices into ArcIndex.arcs


class ArcIndex:
    """Dense integer ids for directed links."""

    def __init__(self, net: Network) -> None:
        self.arcs = net.arcs
        self.id_of = {a: i for i, a in enumerate(self.arcs)}

    def path_arcs(self, nodes: tuple[str, ...] | list[str]) -> tuple[int, ...]:
        return tuple(self.id_of[(nodes[i], nodes[i + 1])] for i in range(len(nodes) - 1))


def _distances_to(net: Network, dst: str) -> dict[str, int]:
    """Hop distance to dst over nodes that may forward (switches); hosts only as endpoints."""
    dist = {dst: 0}
    queue = deque([dst])
    while queue:
        n = queue.popleft()
        if n != dst and net.is_host(n):
            continue
        for m in net.adjacency[n]:
            if m not in dist:
                dist[m] = dist[n] + 1
                if not net.is_host(m):
                    queue.append(m)
    return dist


def min_hop_paths(net: Network, flow: Flow, dist: dict[str, int] | None = None) -> list[tuple[str, ...]]:
    """All minimum-hop paths from flow.src to flow.dst, sorted (`dist`: _distances_to(flow.dst)
    when the caller has it)."""
    if dist is None:
        dist = _distances_to(net, flow.dst)
    if flow.src not in dist:
        return []
    out: list[tuple[str, ...]] = []
    stack: list[tuple[str, tuple[str, ...]]] = [(flow.src, (flow.src,))]
    while stack:
        n, prefix = stack.pop()
        if n == flow.dst:
            out.append(prefix)
            if len(out) > PATHS_PER_FLOW_MAX:
                raise ValueError(f"more than {PATHS_PER_FLOW_MAX} minimum-hop paths for {flow}")
            continue
        d = dist[n]
        for m in net.adjacency[n]:
            if dist.get(m) == d - 1 and (m == flow.dst or not net.is_host(m)):
                stack.append((m, prefix + (m,)))
    out.sort()
    return out


def fixed_path(paths: list[tuple[str, ...]], flow: Flow) -> tuple[str, ...]:
    """One path of the sorted set, picked by a hash of the flow's ends (stable across runs)."""
    assert paths, "a validated flow always has a path"
    h = zlib.crc32(f"{flow.src}\0{flow.dst}".encode())
    return paths[h % len(paths)]


def candidates(net: Network, fixed: bool) -> list[Candidate]:
    """Candidate paths of all flows, grouped by flow in input order."""
    index = ArcIndex(net)
    cache: dict[Flow, list[tuple[str, ...]]] = {}
    dists: dict[str, dict[str, int]] = {}
    out: list[Candidate] = []
    for i, f in enumerate(net.flows):
        if f not in cache:
            if f.dst not in dists:
                dists[f.dst] = _distances_to(net, f.dst)
            cache[f] = min_hop_paths(net, f, dists[f.dst])
        paths = cache[f]
        chosen = [fixed_path(paths, f)] if fixed else paths
        for p in chosen:
            out.append(Candidate(i, p, index.path_arcs(p)))
    return out


def by_flow_and_arc(cands: list[Candidate]) -> tuple[list[list[int]], list[list[int]]]:
    """The candidates' indices grouped by flow and by directed link (each group in index order,
    the groups in order of first appearance)."""
    by_flow: dict[int, list[int]] = {}
    by_arc: dict[int, list[int]] = {}
    for ci, c in enumerate(cands):
        by_flow.setdefault(c.flow, []).append(ci)
        for a in c.arcs:
            by_arc.setdefault(a, []).append(ci)
    return list(by_flow.values()), list(by_arc.values())
