"""Which lines of a file a patch adds or changes: ``git diff -U0`` hunks, new side."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from mergegate.git.core import out

_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


def parse_hunks(data: bytes) -> frozenset[int]:
    """New-side line numbers of every hunk header in a ``-U0`` diff (a pure deletion adds none)."""
    lines: set[int] = set()
    for match in _HUNK.finditer(data):
        start, count = int(match.group(1)), int(match.group(2) or b"1")
        lines.update(range(start, start + count))
    return frozenset(lines)


def added_lines(old: str, new: str, paths: Iterable[str], cwd: str | Path | None = None) -> dict[str, frozenset[int]]:
    """``{path: lines of new's file that old does not have}`` for each path (no rename detection:
    a renamed file is new in every line, as a rename counts on both sides everywhere else)."""
    found = {}
    for path in paths:
        data = out(["diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
                    old, new, "--", f":(literal){path}"], cwd)
        found[path] = parse_hunks(data)
    return found
