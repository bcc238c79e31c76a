"""Reading a run's change coverage from its subject: one ``lines`` request, its answer bounded.

The answer is production's own report (``subject/tracer.py`` runs in its
process): it is kept only as plain data, as paths inside the tree under test,
and it can only say which lines ran, never decide a property's verdict.
"""

from __future__ import annotations

import contextlib
from typing import Any

from mergegate.runner.trusted import faults

MAX_FILES = 1000
MAX_LINES = 200_000


def record(channel: Any, root: str, result: dict[str, Any]) -> None:
    """``result["lines_run"]`` (every line of the traced files that ran in the run's subject process)
    and ``result["lines_at_import"]`` (those the fork server ran importing production, before any
    property), each ``{relative path: [line, ...]}``, when the subject answers plainly."""
    if channel.endpoint is None:  # the run never reached production: nothing of the change ran
        result["lines_run"], result["lines_at_import"] = {}, {}
        return
    calls, waited = channel.calls, channel.waited  # not a request the property made
    try:
        answer = channel.request("lines")
    except Exception as exc:  # production's answer; no lines recorded is the safe reading
        faults.handled(exc)
        return
    finally:
        channel.calls, channel.waited = calls, waited
    if type(answer) is not dict:
        return
    with contextlib.suppress(Exception):
        lines, imported = plain(answer.get("lines"), root), plain(answer.get("import"), root)
        if lines is not None and imported is not None:
            result["lines_run"], result["lines_at_import"] = lines, imported


def plain(answer: Any, root: str) -> dict[str, list[int]] | None:
    """``answer`` as ``{path under root: sorted lines}``, or None when it is anything else."""
    if type(answer) is not dict or len(answer) > MAX_FILES:
        return None
    prefix = root.rstrip("/") + "/"
    out: dict[str, list[int]] = {}
    total = 0
    for name, lines in answer.items():
        if type(name) is not str or type(lines) is not list or not name.startswith(prefix):
            return None
        total += len(lines)
        if total > MAX_LINES or not all(type(n) is int and 0 < n < 10_000_000 for n in lines):
            return None
        out[name[len(prefix):]] = sorted(set(lines))
    return out
