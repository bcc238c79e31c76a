"""The standard library's own dict types on the wire: an ``OrderedDict``, a ``defaultdict`` or a ``Counter`` arrives
as itself, not as a plain ``dict``.

Real code checks for them: pyrsistent's ``freeze`` asks ``type(o) is collections.defaultdict``; an
``OrderedDict`` compares in order.  These types, and a subclass of one as that type (as every subclass of a plain
type travels as its base: as a mere ``dict``, a production ``OrderedDict`` subclass in the wrong order would
compare equal to the expected one), their items read with the type's own stdlib methods (never a subclass's),
rebuilt by the receiving side's own ``collections``; a ``defaultdict``'s factory is a value like any other (a
builtin type by name, a callable by reference: calling it on a missing key asks the side that owns it).
Standard library only: the subject loads this folder as a private package (``subject/server.py``).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

Coder = Callable[[list[Any], Any, int], Any]
_FACTORY: Any = vars(collections.defaultdict)["default_factory"]  # the type's own descriptor: never an attribute read


def encoders(encode: Callable[[Any, Any, int], Any]) -> dict[type, Callable[[Any, Any, int], Any]]:
    """The three types' encoders, given the codec's ``encode(value, other, depth)``."""

    def pairs(items: Any, other: Any, depth: int) -> list[Any]:
        out: list[Any] = []
        for key, item in items:
            out.append(encode(key, other, depth))
            out.append(encode(item, other, depth))
        return out

    return {
        # the order an OrderedDict keeps is its own (``move_to_end``), not the order of the dict beneath it
        collections.OrderedDict: lambda v, o, d: ["od", *pairs(collections.OrderedDict.items(v), o, d)],
        collections.Counter: lambda v, o, d: ["ctr", *pairs(dict.items(v), o, d)],
        collections.defaultdict: lambda v, o, d: ["dd", encode(_FACTORY.__get__(v), o, d), *pairs(dict.items(v), o, d)],
    }


def kept_apart(made: Any, keys: list[Any], error: type[Exception]) -> Any:
    """``made`` (a set, or a dict by its keys), unless building it merged items the sender's set kept apart.

    The sender's own equality kept them apart (two production objects equal only to themselves, whose class
    a patch gave an ``__eq__``, compare here by their state): a copy with fewer items would shorten what
    production returned without a word (``len(tickets())``), so it is refused.  NaNs are not a merge: ``json``
    decodes every NaN as one object."""
    if len(made) < len(keys) and len(made) < len(keys) - max(0, sum(type(k) is float and k != k for k in keys) - 1):
        raise error(f"{len(keys)} distinct items sent, {len(made)} here: they compare by the sender's own "
                    "equality, which this side does not ask")
    return made


def decoders(decode: Callable[[Any, Any, int], Any], error: type[Exception]) -> dict[str, Coder]:
    """The three types' decoders, given the codec's ``decode(data, resolve, depth)`` and its error."""

    def pairs(data: list[Any], resolve: Any, depth: int, start: int) -> list[tuple[Any, Any]]:
        items = [decode(v, resolve, depth) for v in data[start:]]
        if len(items) % 2:
            raise error(f"malformed {data[0]!r}: odd number of items")
        made = list(zip(items[::2], items[1::2], strict=True))
        kept_apart(dict(made), items[::2], error)
        return made

    def factory(data: list[Any], resolve: Any, depth: int) -> Any:
        if len(data) < 2:
            raise error("malformed 'dd': no factory")
        made = decode(data[1], resolve, depth)
        if made is not None and not callable(made):
            raise error("malformed 'dd': its factory is not callable")
        return made

    return {
        "od": lambda d, r, n: collections.OrderedDict(pairs(d, r, n, 1)),
        "ctr": lambda d, r, n: collections.Counter(dict(pairs(d, r, n, 1))),
        "dd": lambda d, r, n: collections.defaultdict(factory(d, r, n), pairs(d, r, n, 2)),
    }
