"""Change coverage of one check: the patch's changed production lines, and which the head's runs ran.

The changed lines come from git (``git diff -U0`` against the merge-base); which
of them carry code, from compiling the head's blob here (``rules.coverage``:
nothing is run); which of them ran, from each head run's ``lines_run``, the
subject's own tracer.  That last part is production's own report: it catches the
change no property looks at (the common case), and a hostile patch can fake it.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from mergegate.git import blobs, diffs, linediff
from mergegate.records.policy import PRODUCTION, Policy
from mergegate.rules import coverage, globs
from mergegate.runner.rows import Row

MAX_COMPILE = 8 << 20  # a larger changed file is not compiled: every changed line of it counts


def fresh_seeds(count: int, avoid: Collection[int]) -> tuple[int, ...]:
    """``count`` seeds from the operating system's randomness, none of them in ``avoid``."""
    out: list[int] = []
    while len(out) < count:
        seed = secrets.randbits(32)
        if seed not in avoid and seed not in out:
            out.append(seed)
    return tuple(out)


def changed_lines(old: str, new: str, policy: Policy, cwd: str | Path | None = None) -> dict[str, frozenset[int]]:
    """``{path: added or changed lines}`` of the production Python files that count (``coverage.paths``,
    default ``paths.production``); files with only deletions are left out."""
    patterns = policy.coverage.paths or policy.paths.production
    paths = [c.path for c in diffs.tree_changes(old, new, cwd)
             if c.status != "D" and c.new_mode in ("100644", "100755") and c.path.endswith(".py")
             and policy.classify(c.path) == PRODUCTION and globs.matches(c.path, patterns)]
    return {p: lines for p, lines in linediff.added_lines(old, new, paths, cwd).items() if lines}


def executable(rev: str, paths: Sequence[str], cwd: str | Path | None = None) -> dict[str, frozenset[int] | None]:
    """Each path's executable lines at ``rev`` (None: too large or does not compile)."""
    out: dict[str, frozenset[int] | None] = {}
    for path in paths:
        data = blobs.file_at(rev, path, cwd)
        if data is None or len(data) > MAX_COMPILE:
            out[path] = None
            continue
        try:
            out[path] = coverage.executable_lines(data, path)
        except (RecursionError, MemoryError):
            out[path] = None
    return out


def measure(changed: Mapping[str, frozenset[int]], head: str, head_rows: Sequence[Row], policy: Policy,
            cwd: str | Path | None = None) -> coverage.Report:
    """The coverage report of the head's runs over the changed lines."""
    runs = [(r.prop, dict(r.lines_run), dict(r.lines_at_import)) for r in head_rows if r.lines_run is not None]
    unmeasured = [f"{r.prop}@{r.seed}" for r in head_rows if r.lines_run is None]
    return coverage.report(changed, executable(head, sorted(changed), cwd), runs, policy.coverage.threshold,
                           unmeasured)


def console(rep: coverage.Report | None) -> list[str]:
    """Lines for the terminal: what no property reached, and which properties reached the change."""
    if rep is None or not rep.changed:
        return []
    out = [f"change coverage: {rep.reached_count} of {rep.total} changed executable production lines ran "
           f"under the properties (threshold {rep.threshold:.0%}; the subject's own report)"]
    for path, lines in sorted(rep.unreached.items()):
        out.append(f"  not reached: {path}: {coverage.ranges(lines)}")
    for path, lines in sorted(rep.at_import_only.items()):
        out.append(f"  ran only importing production: {path}: {coverage.ranges(lines)}")
    for prop, paths in sorted(rep.by_prop.items()):
        out.append(f"  reached by {prop}: " + "; ".join(f"{p}: {coverage.ranges(v)}" for p, v in sorted(paths.items())))
    return out
