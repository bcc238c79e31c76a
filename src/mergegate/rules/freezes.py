"""Freezes as the seeds define them: a time-boxed record, the ledger that holds them, its budget (pure).

A freeze may turn one matching ``fail`` into ``inconclusive`` and nothing else (seed 000);
``records/ledger.py`` reads and writes the file these come from.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from mergegate.rules import globs

VERSION = 1


@dataclass(frozen=True)
class Budget:
    """How many freezes may be active at once, and how many one patch may add."""

    max_active: int = 3
    max_added_per_patch: int = 0


@dataclass(frozen=True)
class Entry:
    """One freeze.  ``line`` is where it sits in its file (for messages only)."""

    id: str
    prop_id: str
    signature: str
    fixture_digest: str
    base_revision: str
    paths: tuple[str, ...]
    reason: str
    opened_by: str
    opened_at: dt.datetime
    expires_at: dt.datetime
    witness: str = ""
    allows_agent_rely: bool = False
    line: int | None = field(default=None, compare=False)  # for messages; not part of identity
    test_nodeid: str = ""  # seed 004's name for the frozen test: a catalog entry's node id (with_props)

    def expired(self, now: dt.datetime) -> bool:
        """True once ``expires_at`` is not in the future."""
        return self.expires_at <= now

    def covers_any(self, touched: Iterable[str]) -> bool:
        """The freeze's ``paths`` (globs) overlap ``touched`` paths."""
        return any(globs.matches(p, self.paths) for p in touched)


@dataclass(frozen=True)
class Ledger:
    """A whole ledger file."""

    version: int = VERSION
    budget: Budget = Budget()
    entries: tuple[Entry, ...] = ()
    source: str = "freeze_ledger.yaml"

    def active(self, now: dt.datetime) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if not e.expired(now))

    def expired(self, now: dt.datetime) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if e.expired(now))

    def for_prop(self, prop_id: str) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if e.prop_id == prop_id)

    def by_id(self) -> dict[str, Entry]:
        return {e.id: e for e in self.entries}

    def without(self, ids: Iterable[str]) -> Ledger:
        drop = set(ids)
        return replace(self, entries=tuple(e for e in self.entries if e.id not in drop))

    def with_entry(self, entry: Entry) -> Ledger:
        if entry.id in self.by_id():
            raise ValueError(f"duplicate freeze id {entry.id}")
        return replace(self, entries=(*self.entries, entry))


def added(base: Ledger, head: Ledger) -> tuple[Entry, ...]:
    """Entries in ``head`` that ``base`` lacks or that ``head`` changed (extended, widened)."""
    before = base.by_id()
    return tuple(e for e in head.entries if _key(before.get(e.id)) != _key(e))


def _key(e: Entry | None) -> object:
    return None if e is None else replace(e, line=None)
