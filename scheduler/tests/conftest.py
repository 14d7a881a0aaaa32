"""Shared helpers for the scheduler tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def write_json(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj))
    return path


def paper_figure2(slots: int) -> dict[str, Any]:
    """Seed 003 Fig. 2: A1..A5 on S1, B1..B5 on S2, flows Ai -> Bi over the bottleneck S1 -> S2."""
    hosts = [f"A{i}" for i in range(1, 6)] + [f"B{i}" for i in range(1, 6)]
    links = [["S1", "S2"]] + [[f"A{i}", "S1"] for i in range(1, 6)] + [[f"B{i}", "S2"] for i in range(1, 6)]
    flows = [{"src": f"A{i}", "dst": f"B{i}"} for i in range(1, 6)]
    return {"hosts": hosts, "switches": ["S1", "S2"], "links": links, "flows": flows, "slots": slots}


@pytest.fixture
def fig2() -> dict[str, Any]:
    return paper_figure2(3)
