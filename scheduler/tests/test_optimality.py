"""All formulations agree with a brute-force optimum on tiny instances (seed 003 §5)."""

from __future__ import annotations

import itertools
from typing import Any

import networkx as nx
import pytest
from conftest import paper_figure2

from tobsched.generate import MODELS, TopologyParams, generate
from tobsched.highs_model import SolveOptions
from tobsched.network import Flow, network_from_obj
from tobsched.paths import fixed_path, min_hop_paths
from tobsched.solve import solve
from tobsched.verify import verify_schedule

Path = tuple[str, ...]


def _simple_paths(obj: dict[str, Any], src: str, dst: str) -> list[Path]:
    """All simple paths whose inner nodes are switches (independent of the solver's code)."""
    g = nx.Graph()
    g.add_edges_from(tuple(link) for link in obj["links"])
    other_hosts = [h for h in obj["hosts"] if h not in (src, dst)]
    g.remove_nodes_from(other_hosts)
    return [tuple(p) for p in nx.all_simple_paths(g, src, dst)]


def _brute_force(options: list[list[Path]], slots: int) -> int:
    """Maximum number of flows with one (slot, path) each and no shared directed link per slot."""
    arcs = [[{(p[i], p[i + 1]) for i in range(len(p) - 1)} for p in opts] for opts in options]
    best = 0
    used: list[set[tuple[str, str]]] = [set() for _ in range(slots)]

    def rec(i: int, count: int) -> None:
        nonlocal best
        if count + (len(options) - i) <= best:
            return
        if i == len(options):
            best = count
            return
        for k in range(slots):
            for a in arcs[i]:
                if used[k].isdisjoint(a):
                    used[k] |= a
                    rec(i + 1, count + 1)
                    used[k] -= a
        rec(i + 1, count)

    rec(0, 0)
    return best


def _tiny(seed: int) -> dict[str, Any]:
    model = MODELS[seed % len(MODELS)]
    params = TopologyParams(model=model, hosts=5, switches=4, switch_links=4, degree=2, ba_m=1)
    return generate(params, flows=5 + seed % 2, slots=1 + seed % 3, seed=seed)


@pytest.mark.parametrize("seed", range(24))
def test_formulations_match_brute_force_optimum(seed: int) -> None:
    obj = _tiny(seed)
    net = network_from_obj(obj)
    ur = [_simple_paths(obj, f.src, f.dst) for f in net.flows]
    pr = [[p for p in opts if len(p) == min(map(len, opts))] for opts in ur]
    fr = [[fixed_path(min_hop_paths(net, f), f)] for f in net.flows]
    want = {
        "sur": _brute_force(ur, net.slots),
        "spr": _brute_force(pr, net.slots),
        "sfr": _brute_force(fr, net.slots),
    }
    assert want["sur"] >= want["spr"] >= want["sfr"]
    for form, optimum in want.items():
        s = solve(net, form, SolveOptions(time_limit_s=30))
        assert s.scheduled == optimum, (form, obj)
        assert s.proven_optimal
        assert verify_schedule(obj, s.to_obj(net)) == []
    g = solve(net, "greedy")
    assert g.scheduled <= want["spr"]
    assert not g.proven_optimal


def test_unconstrained_routing_uses_a_detour_that_pathsets_cannot() -> None:
    obj = {
        "hosts": ["a1", "a2", "b1", "b2"],
        "switches": ["s1", "s2", "s3"],
        "links": [["s1", "s2"], ["s1", "s3"], ["s3", "s2"], ["a1", "s1"], ["a2", "s1"], ["b1", "s2"], ["b2", "s2"]],
        "flows": [{"src": "a1", "dst": "b1"}, {"src": "a2", "dst": "b2"}],
        "slots": 1,
    }
    net = network_from_obj(obj)
    assert solve(net, "spr").scheduled == 1
    sur = solve(net, "sur")
    assert sur.scheduled == 2 and sur.proven_optimal
    paths = sorted(len(a[1]) for a in sur.assignments if a is not None)
    assert paths == [4, 5]  # one flow on the direct link, one on the detour


@pytest.mark.parametrize("slots,expected", [(1, 1), (3, 3), (5, 5), (7, 5)])
def test_paper_benchmark_topology_gives_each_bottleneck_flow_its_own_slot(slots: int, expected: int) -> None:
    net = network_from_obj(paper_figure2(slots))
    for form in ("sur", "spr", "sfr", "greedy"):
        s = solve(net, form)
        assert s.scheduled == expected, form
        used = [a[0] for a in s.assignments if a is not None]
        assert len(set(used)) == len(used)  # all cross S1 -> S2: distinct slots


def test_opposite_directions_of_a_link_share_a_slot() -> None:
    obj = {"hosts": ["a", "b"], "switches": ["s"], "links": [["a", "s"], ["s", "b"]],
           "flows": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "a"}], "slots": 1}
    s = solve(network_from_obj(obj), "spr")
    assert s.scheduled == 2  # full duplex


def test_each_flow_gets_at_most_one_slot_even_with_spare_slots() -> None:
    net = network_from_obj(paper_figure2(10))
    for form in ("sur", "spr", "sfr", "greedy"):
        s = solve(net, form)
        assert s.scheduled == 5 and len(s.assignments) == 5


def test_pathsets_never_schedule_fewer_than_fixed_paths_on_random_networks() -> None:
    for seed in range(6):
        obj = generate(TopologyParams(model="er", hosts=12, switches=5, switch_links=7), 30, 3, seed)
        net = network_from_obj(obj)
        spr, sfr, sur = (solve(net, f) for f in ("spr", "sfr", "sur"))
        assert sur.scheduled >= spr.scheduled >= sfr.scheduled
        assert spr.proven_optimal and sfr.proven_optimal


def test_greedy_alone_is_valid_on_a_large_input() -> None:
    obj = generate(TopologyParams(model="waxman", hosts=200, switches=10), 300, 5, 3)
    net = network_from_obj(obj)
    s = solve(net, "greedy")
    assert s.scheduled > 0
    assert verify_schedule(obj, s.to_obj(net)) == []


def test_brute_force_helper_counts_a_known_case() -> None:
    p = ("a", "s", "b")
    assert _brute_force([[p], [p], [p]], 2) == 2
    assert list(itertools.islice(iter(_simple_paths(paper_figure2(1), "A1", "B1")), 2)) == [("A1", "S1", "S2", "B1")]


def test_flow_list_may_be_empty() -> None:
    obj = paper_figure2(2)
    obj["flows"] = []
    for form in ("sur", "spr", "sfr", "greedy"):
        s = solve(network_from_obj(obj), form)
        assert s.scheduled == 0


def test_fixed_path_choice_is_deterministic() -> None:
    obj = generate(TopologyParams(model="rrg", hosts=10, switches=6, degree=3), 10, 2, 5)
    net = network_from_obj(obj)
    f = Flow(net.flows[0].src, net.flows[0].dst)
    assert fixed_path(min_hop_paths(net, f), f) == fixed_path(min_hop_paths(net, f), f)
    a = solve(net, "sfr").to_obj(net)["flows"]
    b = solve(net, "sfr").to_obj(net)["flows"]
    assert a == b


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("symmetry_breaking", [False, True])
def test_slot_indexed_models_alone_reach_the_optimum(seed: int, symmetry_breaking: bool) -> None:
    """The fallbacks (slot-indexed S/UR and S/PR ILPs) are exact on their own, cold started."""
    from tobsched.paths import ArcIndex, candidates
    from tobsched.slot_ilp import solve_slot_ilp
    from tobsched.sur import _flow_arcs, _slot_model

    obj = _tiny(seed)
    net = network_from_obj(obj)
    ur = [_simple_paths(obj, f.src, f.dst) for f in net.flows]
    pr = [[p for p in opts if len(p) == min(map(len, opts))] for opts in ur]
    index = ArcIndex(net)
    routes, bound = _slot_model(net, index, _flow_arcs(net, index), SolveOptions(30.0), [None] * len(net.flows),
                                None, symmetry_breaking=symmetry_breaking)
    assert sum(r is not None for r in routes) == bound == _brute_force(ur, net.slots)
    cands = candidates(net, fixed=False)
    got, res = solve_slot_ilp(len(net.flows), cands, net.slots, SolveOptions(30.0),
                              symmetry_breaking=symmetry_breaking)
    assert sum(a is not None for a in got) == _brute_force(pr, net.slots) and res.optimal
