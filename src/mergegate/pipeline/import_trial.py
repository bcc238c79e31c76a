"""``gate catalog import`` tries what it writes: each new entry run on the adoption revision, sealed and
in-process, before it becomes part of the oracle.

An entry that runs sealed is written as it is.  One that passes only in-process (it needs production
objects in its own process) is written ``isolation: shared``, with why, in a comment the person
reviewing the import reads.  One that fails both ways on the adoption revision is left out and
reported: written, it would fail on base and head alike (``uniform_fail``) and hold every later patch.
An entry whose test file is not committed as it stands in the work tree is not tried (there is no
revision to try it on) and is written as it is, said so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from mergegate.runner.rows import SEALED, SHARED, Row
from mergegate.runner.specs import Spec

SEALED_OK, SHARED_ONLY, FAILS, UNTRIED = "sealed", "shared", "fails", "untried"


@dataclass(frozen=True)
class Trial:
    """What trying one entry showed."""

    pid: str
    outcome: str  # SEALED_OK | SHARED_ONLY | FAILS | UNTRIED
    why: str = ""  # the first failure (witness and error), or why it was not tried


def _first_failure(rows: Sequence[Row]) -> str:
    for row in sorted(rows, key=lambda r: r.seed):
        if row.status != "pass":
            error = (row.error or "").splitlines()[0] if row.error else ""
            return f"{row.witness}: {error}"[:160] if error else row.witness
    return ""


def judge(pid: str, rows: Sequence[Row]) -> Trial:
    """An entry's trial from its rows in both modes (pure)."""
    sealed = [r for r in rows if r.prop == pid and r.isolation == SEALED]
    shared = [r for r in rows if r.prop == pid and r.isolation == SHARED]
    sealed_ok = bool(sealed) and all(r.status == "pass" for r in sealed)
    shared_ok = bool(shared) and all(r.status == "pass" for r in shared)
    if sealed_ok:
        return Trial(pid, SEALED_OK)
    if shared_ok:
        return Trial(pid, SHARED_ONLY, "sealed: " + (_first_failure(sealed) or "no run"))
    return Trial(pid, FAILS, "sealed: " + (_first_failure(sealed) or "no run")
                 + "; in-process: " + (_first_failure(shared) or "no run"))


def both_modes(specs: Sequence[Spec]) -> list[Spec]:
    """Each spec sealed, then in-process."""
    return [dataclasses.replace(s, prop=dataclasses.replace(s.prop, isolation=mode))
            for s in specs for mode in (SEALED, SHARED)]


def as_written(text: bytes, trial: Trial, rev: str) -> bytes | None:
    """The entry's text as the import writes it after its trial; None: left out."""
    if trial.outcome == FAILS:
        return None
    if trial.outcome != SHARED_ONLY:
        return text
    why = " ".join(trial.why.removeprefix("sealed: ").split())[:200]
    note = (f"# gate catalog import: on {rev[:12]} this test fails sealed ({why}) and passes in-process,\n"
            "# so it runs with production in its process: its pass is evidence production could forge\n"
            "# (docs/runner.md). Review the claim; make it sealed when the test allows.\n")
    return note.encode() + text + b"isolation: shared\n"
