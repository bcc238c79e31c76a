"""The subject's line tracer: which lines of the changed production files ran (standard library only).

Loaded by ``server.py`` from its own folder and started before production is
imported, so import-time lines count too.  ``sys.settrace`` with a global trace
function that hands out the local (line) tracer only to frames of the named
files and returns None for every other frame: unrelated code, the server's own
included, runs without line events.  The trace function survives ``fork``, so
every connection's process and twin inherits it and the lines its ancestors ran.

This is production's process: what it reports is production's own report.  A
hostile patch can switch it off (its lines then count as never run) or fake it;
the gate says so wherever it shows the result.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

MAX_LINES = 200_000  # a report larger than this is cut (the evaluator bounds what it reads, too)


class Tracer:
    """Lines executed in the named files, per file."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = frozenset(files)
        self.hits: set[tuple[str, int]] = set()
        self.imported: frozenset[tuple[str, int]] = frozenset()

    def start(self) -> None:
        if not self.files:
            return
        files, add = self.files, self.hits.add

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                add((frame.f_code.co_filename, frame.f_lineno))
            return local

        def global_trace(frame: Any, event: str, arg: Any) -> Any:
            if frame.f_code.co_filename in files:
                add((frame.f_code.co_filename, frame.f_lineno))
                return local
            return None

        sys.settrace(global_trace)

    def mark_imported(self) -> None:
        """What ran so far ran while the fork server imported production, before any property."""
        self.imported = frozenset(self.hits)

    def report(self) -> dict[str, dict[str, list[int]]]:
        """``{"lines": every line run in this process so far, "import": those run at the fork server's import}``."""
        return {"lines": self.lines(self.hits), "import": self.lines(self.imported)}

    @staticmethod
    def lines(hits: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
        """``{file: sorted line numbers}``."""
        out: dict[str, list[int]] = {}
        for count, (name, line) in enumerate(sorted(hits)):
            if count >= MAX_LINES:
                break
            if line > 0:  # a module's first event can carry line 0
                out.setdefault(name, []).append(line)
        return out
