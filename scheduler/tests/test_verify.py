"""The verifier rejects crafted bad schedules and accepts good ones (seed 003 §4-5)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import paper_figure2

from tobsched.network import network_from_obj
from tobsched.solve import solve
from tobsched.verify import verify_schedule


def _good(form: str = "spr") -> tuple[dict[str, Any], dict[str, Any]]:
    obj = paper_figure2(5)
    net = network_from_obj(obj)
    return obj, solve(net, form).to_obj(net)


def test_solver_output_passes() -> None:
    for form in ("sur", "spr", "sfr", "greedy"):
        obj, sched = _good(form)
        assert verify_schedule(obj, sched) == []


def _broken(mutate: Any) -> list[str]:
    obj, sched = _good()
    sched = copy.deepcopy(sched)
    mutate(sched)
    return verify_schedule(obj, sched)


def test_two_flows_on_the_same_directed_link_in_one_slot_are_rejected() -> None:
    def same_slot(s: dict[str, Any]) -> None:
        s["flows"][1]["slot"] = s["flows"][0]["slot"]

    problems = _broken(same_slot)
    assert any("both use S1 -> S2" in p for p in problems)


def test_slot_out_of_range_is_rejected() -> None:
    problems = _broken(lambda s: s["flows"][0].__setitem__("slot", 5))
    assert any("outside 0..4" in p for p in problems)


def test_two_slots_for_one_flow_are_rejected() -> None:
    problems = _broken(lambda s: s["flows"][0].__setitem__("slot", [0, 1]))
    assert any("more than one slot" in p for p in problems)


def test_path_over_a_missing_link_is_rejected() -> None:
    problems = _broken(lambda s: s["flows"][0].__setitem__("path", ["A1", "S2", "B1"]))
    assert any("A1 -> S2 is not a link" in p for p in problems)


def test_path_that_repeats_a_node_is_rejected() -> None:
    problems = _broken(lambda s: s["flows"][0].__setitem__("path", ["A1", "S1", "S2", "S1", "S2", "B1"]))
    assert any("not simple" in p for p in problems)


def test_path_with_wrong_ends_is_rejected() -> None:
    problems = _broken(lambda s: s["flows"][0].__setitem__("path", ["A2", "S1", "S2", "B1"]))
    assert any("does not run from A1 to B1" in p for p in problems)


def test_slot_without_path_is_rejected() -> None:
    problems = _broken(lambda s: s["flows"][0].__setitem__("path", None))
    assert any("both be set or both be null" in p for p in problems)


def test_wrong_scheduled_count_is_rejected() -> None:
    problems = _broken(lambda s: s.__setitem__("scheduled", 4))
    assert any("'scheduled' is 4" in p for p in problems)


def test_missing_flow_entry_is_rejected() -> None:
    problems = _broken(lambda s: s["flows"].pop())
    assert any("one entry per flow" in p for p in problems)


def test_missing_key_is_rejected() -> None:
    problems = _broken(lambda s: s.pop("proven_optimal"))
    assert problems == ["schedule: missing key 'proven_optimal'"]


def _detour_network() -> dict[str, Any]:
    return {
        "hosts": ["a", "b", "c"],
        "switches": ["s1", "s2", "s3"],
        "links": [["a", "s1"], ["s1", "s2"], ["s2", "b"], ["s1", "s3"], ["s3", "s2"], ["c", "s3"]],
        "flows": [{"src": "a", "dst": "b"}],
        "slots": 1,
    }


@pytest.mark.parametrize("form,ok", [("sur", True), ("spr", False), ("sfr", False), ("greedy", False)])
def test_minimum_hop_formulations_must_use_minimum_hop_paths(form: str, ok: bool) -> None:
    sched = {"formulation": form, "slots": 1, "scheduled": 1, "proven_optimal": False, "solve_s": 0.0,
             "flows": [{"src": "a", "dst": "b", "slot": 0, "path": ["a", "s1", "s3", "s2", "b"]}]}
    problems = verify_schedule(_detour_network(), sched)
    assert (problems == []) == ok
    if not ok:
        assert "4 hops, the minimum is 3" in problems[0]


def test_forwarding_through_a_host_is_rejected() -> None:
    net = _detour_network()
    net["links"] += [["a", "c"]]
    net["flows"] = [{"src": "a", "dst": "b"}]
    sched = {"formulation": "sur", "slots": 1, "scheduled": 1, "proven_optimal": False, "solve_s": 0.0,
             "flows": [{"src": "a", "dst": "b", "slot": 0, "path": ["a", "c", "s3", "s2", "b"]}]}
    assert any("forwards through non-switch c" in p for p in verify_schedule(net, sched))


def test_unscheduled_flows_are_fine() -> None:
    def drop(s: dict[str, Any]) -> None:
        s["flows"][0]["slot"] = None
        s["flows"][0]["path"] = None
        s["scheduled"] -= 1

    assert _broken(drop) == []
