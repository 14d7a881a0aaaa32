"""A solved schedule and its JSON form (the `solve --out` contract)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tobsched.network import Network


@dataclass
class Schedule:
    formulation: str
    slots: int
    # Per flow, in input order: (slot, path) or None when the flow is not scheduled.
    assignments: list[tuple[int, tuple[str, ...]] | None]
    proven_optimal: bool = False
    solve_s: float = 0.0
    # Best proven upper bound on the number of flows (not part of the JSON contract).
    upper_bound: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def scheduled(self) -> int:
        return sum(1 for a in self.assignments if a is not None)

    def to_obj(self, net: Network) -> dict[str, Any]:
        flows: list[dict[str, Any]] = []
        for f, a in zip(net.flows, self.assignments):
            if a is None:
                flows.append({"src": f.src, "dst": f.dst, "slot": None, "path": None})
            else:
                flows.append({"src": f.src, "dst": f.dst, "slot": a[0], "path": list(a[1])})
        return {
            "formulation": self.formulation,
            "slots": self.slots,
            "scheduled": self.scheduled,
            "proven_optimal": self.proven_optimal,
            "solve_s": round(self.solve_s, 6),
            "flows": flows,
        }
