"""Seeded random inputs in the network JSON format: a switch topology from one of the models of
seed 003 §7.2 (Erdos-Renyi, random regular, Barabasi-Albert, Waxman), hosts attached to switches,
and flows between random distinct hosts."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import networkx as nx

from tobsched.errors import InputError

MODELS = ("er", "rrg", "ba", "waxman")
ATTEMPTS_MAX = 20


@dataclass
class TopologyParams:
    model: str = "er"
    hosts: int = 24
    switches: int = 6
    switch_links: int | None = None  # er: number of switch-switch links (default 2 x switches)
    degree: int = 3  # rrg
    ba_m: int = 2  # ba
    waxman_alpha: float = 0.4  # waxman: link probability scale (networkx's beta)
    waxman_beta: float = 0.4  # waxman: distance scale (networkx's alpha)
    links_total: int | None = None  # add host links (multi-homed hosts) until this many links


def _switch_graph(p: TopologyParams, seed: int) -> nx.Graph:
    s = p.switches
    if p.model == "er":
        m = p.switch_links if p.switch_links is not None else min(2 * s, s * (s - 1) // 2)
        if not 0 <= m <= s * (s - 1) // 2:
            raise InputError(f"--switch-links {m}: must be between 0 and {s * (s - 1) // 2}")
        return nx.gnm_random_graph(s, m, seed=seed)
    if p.model == "rrg":
        if p.degree >= s or (p.degree * s) % 2:
            raise InputError(f"--degree {p.degree}: needs degree < switches and degree x switches even")
        return nx.random_regular_graph(p.degree, s, seed=seed)
    if p.model == "ba":
        if not 1 <= p.ba_m < s:
            raise InputError(f"--ba-m {p.ba_m}: must be between 1 and switches - 1")
        return nx.barabasi_albert_graph(s, p.ba_m, seed=seed)
    if p.model == "waxman":
        # networkx names the probability scale beta and the distance scale alpha (swapped
        # with respect to Waxman's paper); we keep Waxman's names on the command line.
        return nx.waxman_graph(s, beta=p.waxman_alpha, alpha=p.waxman_beta, seed=seed)
    raise InputError(f"unknown model '{p.model}' (one of {', '.join(MODELS)})")


def generate(p: TopologyParams, flows: int, slots: int, seed: int) -> dict[str, Any]:
    if p.hosts < 2:
        raise InputError("--hosts must be at least 2")
    if p.switches < 1:
        raise InputError("--switches must be at least 1")
    if slots < 1:
        raise InputError("--slots must be at least 1")
    if flows < 0:
        raise InputError("--flows must be >= 0")
    rng = random.Random(seed)
    g = _switch_graph(p, seed)
    for attempt in range(1, ATTEMPTS_MAX):
        if nx.is_connected(g):
            break
        g = _switch_graph(p, seed * ATTEMPTS_MAX + attempt)
    # Sparse models (small Waxman graphs) may stay disconnected: join each component to the
    # first by one link between random members, so every host pair has a path.
    comps = [sorted(c) for c in nx.connected_components(g)]
    comps.sort()
    for comp in comps[1:]:
        g.add_edge(rng.choice(comps[0]), rng.choice(comp))
    switches = [f"s{i}" for i in range(p.switches)]
    hosts = [f"h{i}" for i in range(p.hosts)]
    links = [[switches[u], switches[v]] for u, v in sorted(g.edges())]
    home: dict[str, set[str]] = {}
    for h in hosts:
        s = rng.choice(switches)
        home[h] = {s}
        links.append([h, s])
    if p.links_total is not None:
        room = p.hosts * p.switches + len(g.edges())
        if not len(links) <= p.links_total <= room:
            raise InputError(f"--links {p.links_total}: must be between {len(links)} and {room}")
        while len(links) < p.links_total:
            h = rng.choice(hosts)
            free = [s for s in switches if s not in home[h]]
            if free:
                s = rng.choice(free)
                home[h].add(s)
                links.append([h, s])
    flow_list = []
    for _ in range(flows):
        src, dst = rng.sample(hosts, 2)
        flow_list.append({"src": src, "dst": dst})
    return {"hosts": hosts, "switches": switches, "links": links, "flows": flow_list, "slots": slots}
