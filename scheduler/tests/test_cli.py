"""CLI contract: output shape, exit codes, and clear errors for bad input (exit 2, nothing written)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import paper_figure2, write_json

from tobsched.cli import main


def _solve(tmp_path: Path, obj: Any, *extra: str, raw: str | None = None) -> tuple[int, Path]:
    net = tmp_path / "net.json"
    if raw is not None:
        net.write_text(raw)
    else:
        write_json(net, obj)
    out = tmp_path / "out.json"
    rc = main(["solve", "--network", str(net), "--formulation", "spr", "--out", str(out), *extra])
    return rc, out


def test_console_script_help_runs() -> None:
    exe = Path(sys.executable).parent / "tob-schedule"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "tobsched.cli"]
    r = subprocess.run([*cmd, "--help"], capture_output=True, text=True, check=False)
    assert r.returncode == 0
    for word in ("solve", "verify", "generate", "export"):
        assert word in r.stdout


@pytest.mark.parametrize("form", ["sur", "spr", "sfr", "greedy"])
def test_solve_writes_the_documented_shape(tmp_path: Path, form: str) -> None:
    net = write_json(tmp_path / "net.json", paper_figure2(3))
    out = tmp_path / "s.json"
    assert main(["solve", "--network", str(net), "--formulation", form, "--time-limit", "10",
                 "--mip-gap", "0", "--threads", "1", "--out", str(out)]) == 0
    s = json.loads(out.read_text())
    assert list(s) == ["formulation", "slots", "scheduled", "proven_optimal", "solve_s", "flows"]
    assert s["formulation"] == form and s["slots"] == 3 and s["scheduled"] == 3
    assert s["proven_optimal"] is (form != "greedy")
    assert [(f["src"], f["dst"]) for f in s["flows"]] == [(f"A{i}", f"B{i}") for i in range(1, 6)]
    for f in s["flows"]:
        assert list(f) == ["src", "dst", "slot", "path"]
        if f["slot"] is None:
            assert f["path"] is None
        else:
            assert f["path"] == [f["src"], "S1", "S2", f["dst"]]


def test_slots_option_overrides_the_file(tmp_path: Path) -> None:
    rc, out = _solve(tmp_path, paper_figure2(1), "--slots", "4")
    assert rc == 0
    assert json.loads(out.read_text())["scheduled"] == 4


def _bad(obj_change: Any) -> dict[str, Any]:
    obj = paper_figure2(3)
    obj_change(obj)
    return obj


BAD_INPUTS = [
    ("unknown node in a link", lambda o: o["links"].append(["A1", "S9"]), "unknown node 'S9'"),
    ("unknown node in a flow", lambda o: o["flows"].append({"src": "A1", "dst": "B9"}), "flow 5: unknown dst node 'B9'"),
    ("flow from a switch", lambda o: o["flows"].append({"src": "S1", "dst": "B1"}), "src 'S1' is a switch"),
    ("flow to itself", lambda o: o["flows"].append({"src": "A1", "dst": "A1"}), "src and dst are both 'A1'"),
    ("duplicate host", lambda o: o["hosts"].append("A1"), "duplicate node name 'A1'"),
    ("host also a switch", lambda o: o["switches"].append("B2"), "duplicate node name 'B2'"),
    ("duplicate link", lambda o: o["links"].append(["S2", "S1"]), "duplicate link between 'S2' and 'S1'"),
    ("self loop", lambda o: o["links"].append(["S1", "S1"]), "must join two different nodes"),
    ("zero slots", lambda o: o.__setitem__("slots", 0), "'slots' must be an integer >= 1, got 0"),
    ("slots not a number", lambda o: o.__setitem__("slots", "3"), "'slots' must be an integer >= 1"),
    ("missing flows", lambda o: o.pop("flows"), "missing key 'flows'"),
    ("flow without dst", lambda o: o["flows"].append({"src": "A1"}), "flow 5: must be an object with 'src' and 'dst'"),
]


@pytest.mark.parametrize("what,change,message", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_exits_2_naming_the_item(tmp_path: Path, capsys: Any, what: str, change: Any, message: str) -> None:
    rc, out = _solve(tmp_path, _bad(change))
    assert rc == 2, what
    err = capsys.readouterr().err
    assert message in err, err
    assert not out.exists()


def test_unconnected_hosts_are_named(tmp_path: Path, capsys: Any) -> None:
    obj = paper_figure2(3)
    obj["hosts"].append("C1")
    obj["switches"].append("S3")
    obj["links"].append(["C1", "S3"])
    obj["flows"].append({"src": "A1", "dst": "C1"})
    rc, out = _solve(tmp_path, obj)
    assert rc == 2
    assert "flow 5 (A1 -> C1): hosts are not connected" in capsys.readouterr().err
    assert not out.exists()


def test_hosts_do_not_forward(tmp_path: Path, capsys: Any) -> None:
    obj = {"hosts": ["a", "b", "c"], "switches": [], "links": [["a", "b"], ["b", "c"]],
           "flows": [{"src": "a", "dst": "c"}], "slots": 1}
    rc, _ = _solve(tmp_path, obj)
    assert rc == 2
    assert "flow 0 (a -> c): hosts are not connected" in capsys.readouterr().err


def test_malformed_json_names_the_position(tmp_path: Path, capsys: Any) -> None:
    rc, out = _solve(tmp_path, None, raw='{"hosts": ["a",')
    assert rc == 2
    assert "malformed JSON at line 1" in capsys.readouterr().err
    assert not out.exists()


def test_slots_option_below_one_is_refused(tmp_path: Path, capsys: Any) -> None:
    rc, out = _solve(tmp_path, paper_figure2(3), "--slots", "0")
    assert rc == 2
    assert "--slots must be an integer >= 1, got 0" in capsys.readouterr().err
    assert not out.exists()


def test_missing_network_file_is_bad_input(tmp_path: Path, capsys: Any) -> None:
    rc = main(["solve", "--network", str(tmp_path / "nope.json"), "--formulation", "sfr",
               "--out", str(tmp_path / "o.json")])
    assert rc == 2
    assert "nope.json: cannot read" in capsys.readouterr().err


def test_verify_exit_codes(tmp_path: Path, capsys: Any) -> None:
    net = write_json(tmp_path / "net.json", paper_figure2(5))
    out = tmp_path / "s.json"
    assert main(["solve", "--network", str(net), "--formulation", "sfr", "--out", str(out)]) == 0
    assert main(["verify", "--network", str(net), "--schedule", str(out)]) == 0
    s = json.loads(out.read_text())
    s["flows"][0]["slot"] = s["flows"][1]["slot"]
    write_json(out, s)
    assert main(["verify", "--network", str(net), "--schedule", str(out)]) == 1
    assert "violation: flow 1 (A2 -> B2) and flow 0 both use S1 -> S2" in capsys.readouterr().out
    out.write_text("[")
    assert main(["verify", "--network", str(net), "--schedule", str(out)]) == 2


@pytest.mark.parametrize("model", ["er", "rrg", "ba", "waxman"])
def test_generate_is_seeded_and_valid(tmp_path: Path, model: str) -> None:
    a, b, c = (tmp_path / n for n in ("a.json", "b.json", "c.json"))
    args = ["generate", "--model", model, "--hosts", "24", "--switches", "6", "--flows", "40", "--slots", "4"]
    assert main([*args, "--seed", "7", "--out", str(a)]) == 0
    assert main([*args, "--seed", "7", "--out", str(b)]) == 0
    assert main([*args, "--seed", "8", "--out", str(c)]) == 0
    assert a.read_text() == b.read_text()
    assert a.read_text() != c.read_text()
    obj = json.loads(a.read_text())
    assert len(obj["hosts"]) == 24 and len(obj["switches"]) == 6 and len(obj["flows"]) == 40
    out = tmp_path / "s.json"
    assert main(["solve", "--network", str(a), "--formulation", "spr", "--out", str(out)]) == 0


def test_generate_reaches_a_total_link_count(tmp_path: Path) -> None:
    out = tmp_path / "n.json"
    assert main(["generate", "--model", "waxman", "--hosts", "200", "--switches", "10",
                 "--links", "256", "--flows", "10", "--out", str(out)]) == 0
    assert len(json.loads(out.read_text())["links"]) == 256


def test_generate_rejects_impossible_parameters(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "n.json"
    assert main(["generate", "--model", "rrg", "--switches", "5", "--degree", "3", "--out", str(out)]) == 2
    assert "--degree 3" in capsys.readouterr().err
    assert not out.exists()


def _hard_network(tmp_path: Path) -> Path:
    # rrg3 seed 1, 110 flows, 3 slots: the master's colouring fails, so the solve takes several
    # steps (pump, CP-SAT's decision, PartialCol) in about 0.3 s.
    from tobsched.generate import TopologyParams, generate

    return write_json(tmp_path / "net.json", generate(TopologyParams(model="rrg", degree=3), 110, 3, 1))


def test_verbose_reports_each_step_on_stderr_as_the_solve_returns_them(tmp_path: Path, capsys: Any) -> None:
    import re

    from tobsched.network import load_network
    from tobsched.solve import solve

    net = _hard_network(tmp_path)
    out = tmp_path / "s.json"
    assert main(["solve", "--network", str(net), "--formulation", "spr", "--out", str(out), "--verbose"]) == 0
    cap = capsys.readouterr()
    lines = cap.err.splitlines()
    got = [re.fullmatch(r"tob-schedule solve: +(\d+\.\d{3}) s  (.+)", line) for line in lines]
    assert all(got), lines
    times = [float(m.group(1)) for m in got if m]
    assert times == sorted(times) and times[-1] > 0
    assert [m.group(2) for m in got if m] == solve(load_network(str(net)), "spr").notes
    assert "schedule of 55 flows (CP-SAT): none" in cap.err
    assert cap.out.startswith("spr: 54 of 110 flows in 3 slots") and cap.out.count("\n") == 1
    # Without --verbose: nothing on stderr, the same schedule.
    first = json.loads(out.read_text())
    assert main(["solve", "--network", str(net), "--formulation", "spr", "--out", str(out)]) == 0
    assert capsys.readouterr().err == ""
    again = json.loads(out.read_text())
    assert again["flows"] == first["flows"]


def test_solve_prints_only_its_result_line_on_stdout(tmp_path: Path) -> None:
    # HiGHS prints a banner when a process creates its first solver; the CLI keeps it off stdout.
    net = write_json(tmp_path / "net.json", paper_figure2(3))
    exe = Path(sys.executable).parent / "tob-schedule"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "tobsched.cli"]
    r = subprocess.run([*cmd, "solve", "--network", str(net), "--formulation", "sur", "--out",
                        str(tmp_path / "s.json")], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [r.stdout.strip()] and r.stdout.startswith("sur: 3 of 5 flows in 3 slots"), r.stdout
    assert r.stderr == ""


def test_notes_report_each_step_in_order() -> None:
    from tobsched.progress import Notes

    seen: list[str] = []
    notes = Notes(seen.append)
    notes.append("a")
    notes.append("b")
    assert notes == ["a", "b"] == seen
    quiet = Notes()
    quiet.append("c")
    assert quiet == ["c"]
