"""Shared entries may only reject: an admit needs sealed evidence (pure).

An entry a person marked ``isolation: shared`` runs with production in its own process, behind
in-process guards production could get around, so its pass may be forged.  Its fail still counts
(a forged fail only rejects the patch that forged it).  Its pass is no evidence: a production path
the patch touched that a shared entry covers must also be covered by a sealed entry that passed,
else the check is ``review`` with reason ``shared_only``, naming the paths.  A path no entry covers
is what it always was (the suite says nothing of it).

``covers`` are the catalog's globs (written at adoption from each test file's production imports,
or by a person), read from the trusted revision.  A shared entry that declares none is taken to
cover every production path; a sealed entry that declares none covers none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mergegate.rules import globs

SHARED_ONLY = "shared_only"


@dataclass(frozen=True)
class Evidence:
    """One entry, as one check saw it: whether it ran shared, whether it passed, what it covers."""

    prop: str
    shared: bool
    passed: bool
    covers: tuple[str, ...] = ()


def uncovered(touched: Iterable[str], entries: Sequence[Evidence]) -> tuple[str, ...]:
    """The touched production paths a shared entry covers and no passing sealed entry does, sorted."""
    shared = [e.covers for e in entries if e.shared]
    sealed = [e.covers for e in entries if not e.shared and e.passed and e.covers]
    return tuple(sorted(
        p for p in set(touched)
        if any(not c or globs.matches(p, c) for c in shared) and not any(globs.matches(p, c) for c in sealed)))
