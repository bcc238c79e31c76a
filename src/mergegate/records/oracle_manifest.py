"""Does the manifest in the work tree describe the guarded files on disk?  What to do when it does not.

Every command that writes a guarded file (``gate init``) ends with the manifest
verifying, or says that it does not and how to fix it.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from mergegate.errors import ConfigError
from mergegate.git import blobs, core
from mergegate.records import manifest
from mergegate.records.fsutil import atomic_write
from mergegate.records.policy import Policy

FIX = "fix: stage the guarded files and re-sign on an oracle-only commit: git add -A && gate manifest sign --staged"


def worktree_report(policy: Policy, top: Path) -> manifest.Report:
    """The manifest file on disk against the guarded files on disk (index blobs, re-hashed where edited)."""
    try:
        data = (top / policy.paths.manifest).read_bytes()
    except OSError:
        return manifest.Report(problems=(f"no {policy.paths.manifest}",))
    try:
        recorded = manifest.parse(data, policy.paths.manifest)
    except ConfigError as exc:
        return manifest.Report(problems=(str(exc),))
    return manifest.compare(recorded, manifest.worktree_rows(policy, top))


def resign_if_ours(policy: Policy, top: Path, written: Collection[str]) -> tuple[bool, list[str]]:
    """Re-sign the work tree's manifest if every difference is a new file in ``written`` (ours, just made).

    A file HEAD has is never re-signed for, even if we just wrote it: a guarded file deleted and
    made again from our template (an emptied ``claimed.yaml``) is a change a person signs.
    Returns (re-signed, the lines still wrong: empty when it verifies).
    """
    report = worktree_report(policy, top)
    if report.ok:
        return False, []
    differing = {*report.missing, *report.extra, *report.changed}
    head = core.head(top)
    committed = {p for p in differing if head is not None and blobs.file_at(head, p, top) is not None}
    if report.problems or committed or not differing <= set(written):
        return False, report.lines()
    rows = manifest.worktree_rows(policy, top)
    manifest.refuse_bytecode(r.path for r in rows)
    atomic_write(top / policy.paths.manifest, manifest.render(rows))
    return True, []
