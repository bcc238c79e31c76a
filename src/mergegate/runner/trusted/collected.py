"""What collecting each oracle file opened, so a run is charged only with its own file's collection.

The audit hook (``forks.watch_opens``) keeps one flat list of the files this process opened, and a
run's row names the fixture files among them (``rows.py``: one the entry does not declare fails the
run).  A collector may collect several oracle files (``group.py``), so what collecting another oracle
file opened must not be charged to this file's runs.  Each pytest collector's ``collect()`` runs
``inside`` its node id (``session.GatePlugin.pytest_collectstart``): what a module's collection opened
(its import, its classes, its parametrize ids) goes to that module's file; what no module's collection
opened (conftest files, the session's set-up) goes to every run, as it did when a collector held one
file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


class Opens:
    """The opened files of collection, by the oracle file whose collection opened them (``None``: every file's)."""

    def __init__(self, opened: Any) -> None:
        self.opened: list[str] = opened if type(opened) is list else []
        self.seen = 0
        self.owners: list[str | None] = [None]
        self.by_file: dict[str | None, list[str]] = {}

    def _settle(self) -> None:
        if len(self.opened) > self.seen:
            self.by_file.setdefault(self.owners[-1], []).extend(self.opened[self.seen:])
        self.seen = len(self.opened)

    @contextlib.contextmanager
    def inside(self, nodeid: str) -> Iterator[None]:
        """While the collector ``nodeid`` collects: what is opened is its file's (a folder's: its owner's)."""
        self._settle()
        path = nodeid.partition("::")[0]
        self.owners.append(path if path.endswith(".py") else self.owners[-1])
        try:
            yield
        finally:
            self._settle()
            self.owners.pop()

    def close(self) -> int:
        """Collection is over: what it opened is settled; how many files that was (the runs' own come after)."""
        self._settle()
        self.opened = []
        return self.seen

    def charged(self, rel: str) -> list[str]:
        """What collection opened that a run of the oracle file ``rel`` depends on."""
        return [*self.by_file.get(None, ()), *self.by_file.get(rel, ())]
