"""What the rules read of the gate's records, as protocols: the rules name no file, no loader.

``records.policy.Policy``, ``records.catalog.Catalog`` and ``git.diffs.Change`` satisfy these
structurally; a test can hand the rules anything of the same shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Classifies(Protocol):
    """A policy's path classifier."""

    def classify(self, path: str) -> str: ...


class AgentSettings(Protocol):
    """``agents:`` of gate.yaml: how an agent is known."""

    @property
    def env(self) -> str: ...

    @property
    def authors(self) -> tuple[str, ...]: ...

    @property
    def pushers(self) -> tuple[str, ...]: ...


class ServerSettings(Protocol):
    """The part of ``server:`` that tells an agent from a person."""

    @property
    def require_signed_oracle_commits(self) -> bool: ...

    @property
    def protected_branches(self) -> bool: ...


class AgentPolicy(Protocol):
    """A policy as the agent rules read it."""

    @property
    def agents(self) -> AgentSettings: ...

    @property
    def server(self) -> ServerSettings: ...


class Changed(Protocol):
    """One changed path (git's ``-z`` raw diff entry)."""

    @property
    def path(self) -> str: ...


class CatalogedProperty(Protocol):
    """A catalog entry as the rules read it."""

    @property
    def id(self) -> str: ...

    @property
    def oracle_file(self) -> str: ...

    @property
    def source(self) -> str: ...

    def uses_fixture(self, path: str) -> bool: ...


class CatalogView(Protocol):
    """The catalog: its entries."""

    @property
    def properties(self) -> Sequence[CatalogedProperty]: ...
