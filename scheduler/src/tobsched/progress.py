"""The steps of a solve as they happen: `Notes` is the list of notes a solve returns
(`Schedule.notes`), and it also hands each note to a reporter when one is given
(`SolveOptions.progress`; `tob-schedule solve --verbose` prints them on stderr with the time), so
that a long solve (S/UR at 300 flows, up to its time limit) shows where it is."""

from __future__ import annotations

from collections.abc import Callable

Reporter = Callable[[str], None]


class Notes(list[str]):
    def __init__(self, report: Reporter | None = None) -> None:
        super().__init__()
        self._report = report

    def append(self, note: str) -> None:
        super().append(note)
        if self._report is not None:
            self._report(note)
