"""Exports round-trip: the INI section and taprio commands say what the schedule says."""

from __future__ import annotations

import configparser
import json
import re
from pathlib import Path
from typing import Any

from conftest import paper_figure2, write_json

from tobsched.cli import main
from tobsched.network import network_from_obj
from tobsched.solve import solve

SLOT_NS = 125_000


def _solved(tmp_path: Path, obj: dict[str, Any], form: str = "spr") -> tuple[Path, Path, dict[str, Any]]:
    net_file = write_json(tmp_path / "net.json", obj)
    sched_file = tmp_path / "sched.json"
    assert main(["solve", "--network", str(net_file), "--formulation", form, "--out", str(sched_file)]) == 0
    return net_file, sched_file, json.loads(sched_file.read_text())


def test_ini_section_round_trips(tmp_path: Path) -> None:
    net_file, sched_file, sched = _solved(tmp_path, paper_figure2(5))
    ini = tmp_path / "tob.ini"
    rc = main(["export", "--network", str(net_file), "--schedule", str(sched_file),
               "--slot-ns", str(SLOT_NS), "--cycle-ns", "1000000", "--ini", str(ini)])
    assert rc == 0
    text = ini.read_text()
    assert text.startswith("; dpdk-tob schedule section")
    assert str(sched_file) in text and str(net_file) in text
    cfg = configparser.ConfigParser(comment_prefixes=(";",))
    cfg.read_string(text)
    assert cfg.sections() == ["timing"] + [f"node.{k}" for k in range(5)]
    assert dict(cfg["timing"]) == {"cycle_ns": "1000000"}
    for k, f in enumerate(sched["flows"]):
        assert dict(cfg[f"node.{k}"]) == {
            "slot_offset_ns": str(f["slot"] * SLOT_NS),
            "slot_length_ns": str(SLOT_NS),
        }


def _parse_taprio(text: str) -> dict[str, list[tuple[str, int]]]:
    """host -> [(gate, duration_ns)] from the generated script."""
    out: dict[str, list[tuple[str, int]]] = {}
    host = ""
    for block in text.split("\n\n"):
        m = re.search(r"# host (\S+):", block)
        if not m:
            continue
        host = m.group(1)
        assert "num_tc 2" in block and "clockid CLOCK_TAI" in block and "base-time 0" in block
        assert "map 0 0 0 0 0 1 0 0 0 0 0 0 0 0 0 0" in block
        out[host] = [(g, int(d)) for g, d in re.findall(r"sched-entry S (\d\d) (\d+)", block)]
    return out


def test_taprio_opens_the_time_triggered_class_only_in_each_hosts_slot(tmp_path: Path) -> None:
    net_file, sched_file, sched = _solved(tmp_path, paper_figure2(5))
    tc = tmp_path / "taprio.sh"
    rc = main(["export", "--network", str(net_file), "--schedule", str(sched_file),
               "--slot-ns", str(SLOT_NS), "--cycle-ns", "700000", "--taprio", str(tc)])
    assert rc == 0
    entries = _parse_taprio(tc.read_text())
    assert set(entries) == {f["src"] for f in sched["flows"]}
    for f in sched["flows"]:
        e = entries[f["src"]]
        assert sum(d for _, d in e) == 700_000  # the cycle
        assert len(e) == 5 + 1  # one entry per slot, then the best-effort rest
        assert [k for k, (g, _) in enumerate(e) if g == "02"] == [f["slot"]]


def test_export_refuses_a_node_without_slot_and_writes_nothing(tmp_path: Path, capsys: Any) -> None:
    net_file, sched_file, _ = _solved(tmp_path, paper_figure2(2))  # 5 flows, 2 slots: 3 unscheduled
    ini, tc = tmp_path / "tob.ini", tmp_path / "tc.sh"
    rc = main(["export", "--network", str(net_file), "--schedule", str(sched_file),
               "--slot-ns", "1000", "--ini", str(ini), "--taprio", str(tc)])
    assert rc == 2
    assert "has no slot; every TOB node needs one" in capsys.readouterr().err
    assert not ini.exists() and not tc.exists()


def test_export_refuses_two_flows_from_one_node(tmp_path: Path, capsys: Any) -> None:
    obj = paper_figure2(5)
    obj["flows"].append({"src": "A1", "dst": "B2"})
    net_file, sched_file, _ = _solved(tmp_path, obj)
    rc = main(["export", "--network", str(net_file), "--schedule", str(sched_file),
               "--slot-ns", "1000", "--ini", str(tmp_path / "x.ini")])
    assert rc == 2
    assert "host 'A1' already is node 0" in capsys.readouterr().err


def test_export_refuses_an_invalid_schedule(tmp_path: Path, capsys: Any) -> None:
    net_file, sched_file, sched = _solved(tmp_path, paper_figure2(5))
    sched["flows"][1]["slot"] = sched["flows"][0]["slot"]
    write_json(sched_file, sched)
    rc = main(["export", "--network", str(net_file), "--schedule", str(sched_file),
               "--slot-ns", "1000", "--ini", str(tmp_path / "x.ini")])
    assert rc == 2
    assert "not a valid schedule" in capsys.readouterr().err


def test_cycle_shorter_than_the_slots_is_refused(tmp_path: Path, capsys: Any) -> None:
    net_file, sched_file, _ = _solved(tmp_path, paper_figure2(5))
    rc = main(["export", "--network", str(net_file), "--schedule", str(sched_file),
               "--slot-ns", "1000", "--cycle-ns", "4000", "--ini", str(tmp_path / "x.ini")])
    assert rc == 2
    assert "--cycle-ns 4000 is shorter than 5 slots of 1000 ns" in capsys.readouterr().err


def test_default_cycle_is_slots_times_slot_length(tmp_path: Path) -> None:
    net = network_from_obj(paper_figure2(5))
    assert solve(net, "sfr").scheduled == 5
    net_file, sched_file, _ = _solved(tmp_path, paper_figure2(5), "sfr")
    ini = tmp_path / "tob.ini"
    assert main(["export", "--network", str(net_file), "--schedule", str(sched_file),
                 "--slot-ns", "1000", "--ini", str(ini)]) == 0
    cfg = configparser.ConfigParser(comment_prefixes=(";",))
    cfg.read_string(ini.read_text())
    assert cfg["timing"]["cycle_ns"] == "5000"
