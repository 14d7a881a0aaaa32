"""pytest for perf/ic_labels_experiment.py without a cluster: the search over label counts against
fake trials (thresholds, clusters that do not form, budgets), the [ic] section and the cycle
mapping, and the command line. Run: python3 -m pytest perf/test_ic_labels_experiment.py"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ic_labels_experiment as exp  # noqa: E402


def fake(threshold: int, outcome_above: str = "fail", calls: list[int] | None = None) -> Callable[[int], exp.TrialResult]:
    """A cluster on which L labels pass exactly when L <= threshold."""
    def run(labels: int) -> exp.TrialResult:
        if calls is not None:
            calls.append(labels)
        outcome = "pass" if labels <= threshold else outcome_above
        return exp.TrialResult(100, 1, 100_000_000, labels, outcome)
    return run


def run_search(trial: Callable[[int], exp.TrialResult], start: int = 64, max_labels: int = 8192,
               resolution: float = 0.0, max_trials: int = 64,
               out_of_time: Callable[[], bool] = lambda: False) -> exp.SearchResult:
    return exp.search(trial, exp.SearchResult(100, 1), start, max_labels, resolution, max_trials, out_of_time)


@pytest.mark.parametrize("threshold", [1, 2, 37, 63, 64, 65, 1000, 4097, 8191])
def test_search_finds_the_exact_threshold_with_resolution_zero(threshold: int) -> None:
    r = run_search(fake(threshold))
    assert r.status == "done"
    assert r.best == threshold
    assert r.first_fail == threshold + 1
    assert all(t.passed == (t.labels <= threshold) for t in r.trials)


def test_search_stops_within_the_resolution() -> None:
    r = run_search(fake(1500), resolution=0.05)
    assert r.status == "done"
    assert r.best <= 1500 < r.first_fail
    assert r.first_fail - r.best <= max(1, int(0.05 * r.best) + 1)
    assert len(r.trials) < 12  # doubling 64 -> 2048, then a few bisections


def test_a_configuration_the_daemon_refuses_counts_as_a_failure() -> None:
    r = run_search(fake(700, outcome_above="refused"))
    assert (r.best, r.first_fail, r.status) == (700, 701, "done")


def test_a_cluster_that_never_forms_is_reported_as_such_not_as_zero_labels() -> None:
    calls: list[int] = []
    r = run_search(fake(0, outcome_above="no_cluster", calls=calls), max_trials=40)
    assert r.status == "no_cluster"
    assert r.best == 0
    # Every candidate is tried twice (one retry), halving down to 1: bounded.
    assert calls == [64, 64, 32, 32, 16, 16, 8, 8, 4, 4, 2, 2, 1, 1]


def test_a_cluster_that_fails_to_form_once_is_retried() -> None:
    calls: list[int] = []
    first = {"done": False}

    def trial(labels: int) -> exp.TrialResult:
        calls.append(labels)
        if not first["done"]:
            first["done"] = True
            return exp.TrialResult(100, 1, 100_000_000, labels, "no_cluster")
        return fake(100)(labels)

    r = run_search(trial)
    assert calls[:2] == [64, 64]
    assert r.best == 100 and r.status == "done"


def test_no_labels_passing_on_a_formed_cluster_is_a_result() -> None:
    r = run_search(fake(0))
    assert (r.best, r.first_fail, r.status) == (0, 1, "done")


def test_max_labels_and_max_trials_and_budget_bound_the_search() -> None:
    r = run_search(fake(10**6), max_labels=1000)
    assert (r.best, r.status) == (1000, "max_labels")
    assert r.trials[-1].labels == 1000
    r = run_search(fake(5000), max_trials=3)
    assert r.status == "max_trials" and len(r.trials) == 3
    ticks = {"n": 0}

    def out_of_time() -> bool:
        ticks["n"] += 1
        return ticks["n"] > 2
    r = run_search(fake(5000), out_of_time=out_of_time)
    assert r.status == "budget" and len(r.trials) == 2


def test_an_interrupted_trial_ends_the_search() -> None:
    def trial(labels: int) -> exp.TrialResult:
        return exp.TrialResult(100, 1, 100_000_000, labels, "interrupted")
    r = run_search(trial)
    assert r.status == "interrupted" and len(r.trials) == 1


def test_the_ic_section_is_sized_for_the_labels() -> None:
    text = exp.ic_section(1000, 4, 1)
    lines = dict(line.split(" = ") for line in text.splitlines()[1:])
    assert text.splitlines()[0] == "[ic]"
    assert lines["f"] == "1"
    assert lines["keys_per_period"] == "1000"
    assert lines["key_bytes"] == str(len("lb/999"))
    assert lines["value_bytes"] == "16"
    assert lines["reduction"] == "majority"
    assert dict(line.split(" = ") for line in exp.ic_section(10, 7, 2).splitlines()[1:])["f"] == "2"
    assert exp.key_bytes_for(1) == len("lb/0")
    assert exp.key_bytes_for(10001) == len("lb/10000")


def test_the_cycle_is_the_label_period_over_the_ic_period() -> None:
    assert exp.cycle_ns_for(100, 1) == 100_000_000
    assert exp.cycle_ns_for(10, 4) == 2_500_000
    with pytest.raises(ValueError):
        exp.cycle_ns_for(1, 3)


@pytest.mark.parametrize("argv", [
    ["--periods-ms", "100,x"],
    ["--periods-ms", "0"],
    ["--period-cycles", "1,2"],
    ["--periods-ms", "1", "--period-cycles", "3"],
    ["--nodes", "3"],
    ["--start-labels", "100", "--max-labels", "50"],
    ["--seconds", "0"],
])
def test_bad_command_lines_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as e:
        exp.parse_args(["--out", "/tmp/x", *argv])
    assert e.value.code == 2


def test_dry_run_prints_the_plan_without_a_cluster(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert exp.main(["--out", str(tmp_path), "--dry-run", "--periods-ms", "100,10", "--period-cycles", "1,2"]) == 0
    out = capsys.readouterr().out
    assert "cycle 100000000 ns" in out and "cycle 5000000 ns" in out
    assert "keys_per_period = 64" in out
    assert "--period-ms 100" in out


def test_outputs_are_written_and_readable(tmp_path: Path) -> None:
    s = run_search(fake(300), resolution=0.1)
    exp.write_outputs(tmp_path, [s])
    import csv
    import json
    rows = list(csv.DictReader((tmp_path / "trials.csv").open()))
    assert len(rows) == len(s.trials)
    results = json.loads((tmp_path / "results.json").read_text())
    assert results[0]["largest_labels_at_100pc"] == s.best
    assert results[0]["cycle_ns"] == 100_000_000
