"""Identity of plain values across the boundary: a value one side sent comes back as the very object.

Standard library only (the subject loads this folder as a private package).  Plain data crosses
by value, so without this ``f(x) is x`` is false sealed whenever ``x`` is not a cached small
object, and a dict keyed by ``float("nan")`` cannot find its key again (``nan != nan``: a dict
finds it only as the same object).  Real suites check both (natsort's "returns the same object",
bidict's NaN keys).

How: the top-level arguments of a request (a call's arguments, an operator's operands, a value
set on an attribute, the arguments of a callback), and the value the subject answers a call, an
attribute read or an item read with (pyrsistent's ``m.set(k, m[k]) is m``), that are immutable
plain data travel wrapped, ``["=", name, value]``: the sender keeps its object under ``name``,
the receiver keeps what it decoded under the same name.  From then on, for the rest of the connection, either side that
encodes one of those objects again (anywhere in a value) sends ``["~", name]``, and the other
side decodes it as its own object of that name.  Names are even when the trusted side chose them,
odd when the subject did, so neither can take the other's.  Both tables fork with their process
(a twin and the evaluator's child start from the same two tables).

Why it is sound: a name resolves only to a value this side sent (its own object) or an immutable
plain value it decoded from the peer earlier.  So production answering ``["~", name]`` returns a
value it was given or one it sent before: what it could have returned as itself.  Only immutable
values are named (exact ``int``, ``float``, ``str``, ``bytes``, ``Decimal``... and tuples and
frozensets of them): a list is still a copy each way, so production never writes into the
property's values.  The tables are bounded in entries and bytes; past the bound values simply
travel by value again.
"""

from __future__ import annotations

import datetime as dt
import decimal
import fractions
import uuid
from typing import Any

MAX_NAMES = 1 << 16
MAX_BYTES = 32 << 20  # text and bytes held alive by one side's table
MAX_ITEMS = 64  # items of one named tuple or frozenset
MAX_DEPTH = 8

_SCALARS = frozenset({int, float, complex, str, bytes, decimal.Decimal, fractions.Fraction, dt.date, dt.datetime,
                      dt.time, dt.timedelta, uuid.UUID, type(None), bool})


def size(value: Any, depth: int = 0) -> int:
    """The weight of an immutable plain value (its characters and bytes, one per other value), or -1
    when it is not one: not of an exact immutable type, or a container too wide or too deep."""
    kind = type(value)
    if kind is str or kind is bytes:
        return len(value) + 1
    if kind in _SCALARS:
        return 1
    if (kind is tuple or kind is frozenset) and depth < MAX_DEPTH and len(value) <= MAX_ITEMS:
        total = 1
        for item in value:
            weight = size(item, depth + 1)
            if weight < 0:
                return -1
            total += weight
        return total
    return -1


def worth_naming(value: Any) -> bool:
    """Whether identity can be lost for ``value`` (None, booleans and small ints are singletons already)."""
    kind = type(value)
    return not (value is None or kind is bool or (kind is int and -5 <= value <= 256) or (kind is tuple and not value))


class Identity:
    """One side's table of named values for one connection."""

    def __init__(self, parity: int) -> None:
        self.objects: dict[int, Any] = {}  # name -> object, kept alive (so its id is never reused)
        self.names: dict[int, int] = {}  # id(object) -> name
        self.next = parity
        self.weight = 0

    def copy(self) -> Identity:
        other = Identity(self.next)
        other.objects, other.names, other.weight = dict(self.objects), dict(self.names), self.weight
        return other

    def _room(self, value: Any) -> int:
        kind = type(value)
        if kind is str or kind is bytes:  # the common cases first: this runs for every argument of every call
            weight = len(value) + 1
        elif kind is float or (kind is int and not -5 <= value <= 256):
            weight = 1
        else:
            weight = size(value) if worth_naming(value) else -1
        return weight if weight >= 0 and self.weight + weight <= MAX_BYTES and len(self.objects) < MAX_NAMES else -1

    def add(self, value: Any) -> int | None:
        """Name one of this side's values about to be sent; None when it is not worth naming or there is no room."""
        weight = self._room(value)
        if weight < 0:
            return None
        name = self.next
        self.next += 2
        self.objects[name] = value
        self.names[id(value)] = name  # not named before (``encode_call`` asked)
        self.weight += weight
        return name

    def learn(self, name: Any, value: Any) -> None:
        """Keep a value the peer named (its parity, never a name taken); what is not immutable is not kept."""
        if type(name) is not int or (name ^ self.next) & 1 == 0 or name in self.objects:
            raise ValueError(f"malformed name {name!r}")
        weight = self._room(value)
        if weight >= 0:
            self.objects[name] = value
            self.names.setdefault(id(value), name)
            self.weight += weight

    def get(self, name: Any) -> Any:
        if type(name) is not int or name not in self.objects:
            raise ValueError(f"unknown name {name!r}")
        return self.objects[name]

    def forget(self, names: list[int]) -> None:
        """Take back names given to values of a message that was never sent."""
        for name in names:
            value = self.objects.pop(name, None)
            if self.names.get(id(value)) == name:
                del self.names[id(value)]
            self.weight -= max(size(value), 0)
