"""What a stand-in needs of its connection to the subject (``channel.Channel`` is the one there is).

A protocol, so ``proxies`` names the connection's type without importing ``channel``, which
imports ``proxies`` to build the stand-ins it decodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class Link(Protocol):
    """Requests to one subject process; values encoded and decoded on this side."""

    methods: set[tuple[str, str]]  # (type, name) pairs that were methods: ``methods.Method``
    mirrors: dict[int, tuple[type, Any]]  # oracle classes copied into the subject (``classdefs.mirror``)

    def request(self, *message: Any) -> Any: ...

    def raw(self, *message: Any) -> Any: ...

    def enc(self, value: Any) -> Any: ...

    def args(self, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> tuple[list[Any], list[Any]]: ...

    def dec(self, data: Any) -> Any: ...

    def call(self, target: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any: ...

    def op(self, name: str, *args: Any) -> Any: ...

    def getattr(self, target: Any, name: str) -> Any: ...
