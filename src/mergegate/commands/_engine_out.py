"""Shared output of the engine commands (verdict, admit, decide, score, freeze).

A plain aligned table by default (rich draws it, with colour, when stdout is a
terminal), one JSON object with ``--json``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

_COLOURS = {"pass": "green", "accept": "green", "admit": "green", "fail": "red", "reject": "red",
            "inconclusive": "yellow", "hold": "yellow", "review": "yellow", "propose_freeze": "yellow"}


def emit_json(data: object) -> None:
    print(json.dumps(data, indent=2, sort_keys=False))


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], title: str | None = None) -> None:
    """Print a table: rich on a TTY, aligned plain text otherwise (logs, pipes, tests)."""
    cells = [[_cell(v) for v in row] for row in rows]
    if sys.stdout.isatty():  # pragma: no cover - needs a terminal
        _rich(headers, cells, title)
        return
    if title:
        print(title)
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "-"
    return str(value)


def _rich(headers: Sequence[str], cells: list[list[str]], title: str | None) -> None:  # pragma: no cover
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    tab = Table(title=escape(title) if title else None)
    for h in headers:
        tab.add_column(h)
    for row in cells:
        # cells are data (paths, reasons a person typed): never rich markup
        tab.add_row(*(f"[{_COLOURS[c]}]{c}[/]" if c in _COLOURS else escape(c) for c in row))
    Console().print(tab)


def line(label: str, value: object) -> None:
    print(f"{label}: {_cell(value)}")
