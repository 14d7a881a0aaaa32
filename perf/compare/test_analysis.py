"""The comparison's analysis on hand-made client files (perf/compare/README.md "Analysis"): each
property it reports is computed right, and each fault it must catch is caught."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import analysis  # noqa: E402

MS = 1_000_000
S = 1_000_000_000


def write_member(d: Path, node: int, rows: list[tuple[int, int, int, int]], sent: int, first: int = 0,
                 last: int = 0, events: list[tuple[int, str, str]] | None = None) -> analysis.Member:
    rec = d / f"node{node}.records.csv"
    rec.write_text("sender,seq,send_ns,recv_ns\n" + "".join(f"{a},{b},{c},{e}\n" for a, b, c, e in rows))
    summ = d / f"node{node}.summary.json"
    summ.write_text(json.dumps({"node": node, "clock": "realtime", "sent": sent, "send_errors": 0, "retries": 0,
                                "delivered": len(rows), "first_send_ns": first, "last_send_ns": last, "error": None}))
    ev = d / f"node{node}.events.csv"
    ev.write_text("at_ns,kind,detail\n" + "".join(f"{a},{k},{t}\n" for a, k, t in (events or [])))
    return analysis.read_member(node, rec, summ, ev)


def total_order(n_senders: int, per_sender: int, gap_ns: int = MS, latency_ns: int = 2 * MS):
    """Rows of a perfect run: message (s, q) sent at (q * n + s) * gap, delivered latency later."""
    rows = []
    for q in range(per_sender):
        for s in range(n_senders):
            t = (q * n_senders + s) * gap_ns + S
            rows.append((s, q, t, t + latency_ns))
    return rows


def cluster(tmp: Path, rows_of, per_sender: int = 100, events=None) -> list[analysis.Member]:
    first = S
    last = S + (per_sender * 4 - 1) * MS
    return [write_member(tmp, k, rows_of(k), per_sender, first, last, (events or {}).get(k)) for k in range(4)]


def test_a_perfect_run_is_identical_complete_and_timed(tmp_path: Path) -> None:
    rows = total_order(4, 100)
    r = analysis.analyse(cluster(tmp_path, lambda k: rows))
    assert r["order_identical"] and r["lost"] == 0 and r["duplicates"] == 0 and r["order_conflicts"] == 0
    assert r["latency_us"]["p50"] == pytest.approx(2000) and r["latency_us"]["max"] == pytest.approx(2000)
    assert r["latency_us"]["count"] == 4 * 400
    # 400 messages over 399 ms, the first second excluded when the run is shorter: all of it counts.
    assert r["msgs_per_s"] == pytest.approx(400 / 0.399, rel=0.01)


def test_two_members_that_swap_two_messages_are_not_identical(tmp_path: Path) -> None:
    rows = total_order(4, 100)
    swapped = rows[:10] + [rows[11], rows[10]] + rows[12:]
    r = analysis.analyse(cluster(tmp_path, lambda k: swapped if k == 2 else rows))
    assert not r["order_identical"]
    assert r["lost"] == 0
    assert r["order_conflicts"] == 3  # member 2 against each of the other three


def test_a_member_that_stopped_a_little_early_is_still_identical(tmp_path: Path) -> None:
    rows = total_order(4, 100)
    r = analysis.analyse(cluster(tmp_path, lambda k: rows[:-3] if k == 1 else rows))
    assert r["order_identical"]
    assert r["lost"] == 3  # but what it never delivered counts as lost


def test_a_hole_in_one_member_is_lost_and_breaks_the_order(tmp_path: Path) -> None:
    rows = total_order(4, 100)
    holed = rows[:50] + rows[51:]
    r = analysis.analyse(cluster(tmp_path, lambda k: holed if k == 3 else rows))
    assert r["lost"] == 1
    assert not r["order_identical"]
    assert r["order_conflicts"] == 0  # a gap is not a conflict


def test_a_message_delivered_twice_is_a_duplicate(tmp_path: Path) -> None:
    rows = total_order(4, 100)
    r = analysis.analyse(cluster(tmp_path, lambda k: rows + [rows[5]] if k == 0 else rows))
    assert r["duplicates"] == 1


def test_percentiles_are_nearest_rank() -> None:
    values = list(range(1, 1001))
    assert analysis.percentile(values, 0.5) == 500
    assert analysis.percentile(values, 0.99) == 990
    assert analysis.percentile(values, 0.999) == 999
    assert analysis.percentile(values, 1.0) == 1000
    assert analysis.percentile([], 0.5) == 0


def test_failover_detection_is_the_last_survivor_to_see_the_victim_gone(tmp_path: Path) -> None:
    rows = total_order(4, 1000)
    kill = S + 2 * S // 10
    events = {k: [(S, "members", "0 1 2 3"), (kill + (20 + 5 * k) * MS, "members", "0 1 3")] for k in (0, 1, 3)}
    # The victim (node 2) stops delivering at the kill; the others see a 30 ms gap right after it.
    def rows_of(k: int):
        if k == 2:
            return [r for r in rows if r[3] < kill]
        return [r for r in rows if r[3] < kill or r[3] > kill + 30 * MS]
    r = analysis.analyse(cluster(tmp_path, rows_of, per_sender=1000, events=events), killed=2, kill_ns=kill)
    assert r["detection_ms"] == pytest.approx(35.0)  # node 3, the last: 20 + 15 ms
    assert r["gap_ms"] == pytest.approx(31.0, abs=1.01)
    # Node 2's own messages sent after the kill are not counted lost; the survivors' are.
    assert r["lost"] > 0


def test_a_gap_that_outlasts_the_sending_is_measured_until_delivery_resumes(tmp_path: Path) -> None:
    rows = total_order(4, 100)  # sending ends at S + 399 ms
    kill = S + 200 * MS
    resume = S + 900 * MS  # half a second after the last send: a token-timeout kind of pause
    def rows_of(k: int):
        if k == 2:
            return [r for r in rows if r[3] < kill]
        return [r if r[3] < kill else (r[0], r[1], r[2], resume + r[2] - kill) for r in rows]
    r = analysis.analyse(cluster(tmp_path, rows_of), killed=2, kill_ns=kill)
    assert r["gap_ms"] == pytest.approx(700.0, abs=3.0)  # from the last delivery before the kill to the resumption


def test_a_survivor_that_never_saw_the_victim_gone_gives_no_detection(tmp_path: Path) -> None:
    rows = total_order(4, 100)
    events = {0: [(S + 50 * MS, "members", "0 1 3")], 1: [(S + 60 * MS, "members", "0 1 3")], 3: []}
    r = analysis.analyse(cluster(tmp_path, lambda k: rows, events=events), killed=2, kill_ns=S + 40 * MS)
    assert r["detection_ms"] is None


def test_a_leader_change_counts_as_detection() -> None:
    m = analysis.Member(node=0, events=[(100, "leader", "2"), (5 * MS, "leader", "2"), (9 * MS, "leader", "1")])
    assert analysis.detection_ms([m], victim=2, kill_ns=1 * MS) == pytest.approx(8.0)


def test_missing_and_malformed_files_are_problems_not_crashes(tmp_path: Path) -> None:
    (tmp_path / "bad.csv").write_text("sender,seq,send_ns,recv_ns\n1,2,3\n")
    m = analysis.read_member(0, tmp_path / "bad.csv", tmp_path / "none.json", tmp_path / "none.csv")
    assert any("summary" in p for p in m.problems) and any("cut line" in p for p in m.problems)
    r = analysis.analyse([m])
    assert r["problems"] and r["lost"] == 0
