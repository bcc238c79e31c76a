"""A production tuple subclass's handle, answered here from the items the subject sent with it.

A tuple's items are fixed when it is made, so the subject describes one of production's tuple
subclasses (``describe`` in ``subject/server.py``: ``["tuple", qualname, class, items, plain]``)
with its class and, when every item is immutable plain data, the items themselves.  The
evaluator then needs no request to compare, hash or test membership with it (its snapshot is
those items: ``proxies._snap``), to read its class (``isinstance``), or, when ``plain`` says the
class keeps ``tuple``'s own ``__len__``, ``__iter__`` and ``__getitem__``, to take its length,
iterate it or index it.  hpack's stories decode 430,000 ``HeaderTuple`` headers: a request each
would be minutes.

What the subject sends is production's description, as a snapshot is: it can choose the items it
shows, never what a comparison with them concludes.
"""

from __future__ import annotations

from typing import Any

from mergegate.runner.protocol import codec
from mergegate.runner.trusted import faults
from mergegate.runner.trusted.link import Link


class Frozen:
    """The class of a production tuple and, when they were sent, its items."""

    __slots__ = ("cls", "items", "plain")

    def __init__(self, cls: Any, items: tuple[Any, ...] | None, plain: bool) -> None:
        self.cls, self.items, self.plain = cls, items, plain and items is not None


def _no_refs(data: list[Any]) -> Any:
    raise codec.CodecError("a reference among a frozen tuple's items")


def make(ch: Link, desc: list[Any]) -> Frozen | None:
    """``desc``'s class (a stand-in) and items, or None when it is not a well-formed tuple description."""
    if len(desc) != 5:
        return None
    try:
        cls = ch.dec(desc[2])
        items = codec.decode(desc[3], _no_refs) if desc[3] is not None else None
    except Exception as exc:
        faults.handled(exc)
        return None
    if items is not None and type(items) is not tuple:
        return None
    return Frozen(cls, items, desc[4] is True)


def items(frozen: Frozen | None) -> tuple[Any, ...] | None:
    """The items, when the class keeps ``tuple``'s own protocols (then answering here is Python's answer)."""
    return frozen.items if frozen is not None and frozen.plain else None


def subclass(ch: Link, sub: Any, cls: Any, ask: Any) -> bool:
    """``issubclass(sub, cls)`` for two production classes, asked of the subject once per pair and connection."""
    cache: dict[tuple[int, int], bool] | None = getattr(ch, "subclasses", None)
    if cache is None:
        return bool(ask())
    key = (id(sub), id(cls))
    if key not in cache:
        cache[key] = ask() is True
    return cache[key]
