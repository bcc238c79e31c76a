"""The evaluator's own answers about production objects, decided over their snapshots.

``==``, ``!=``, ``hash``, ``in``, ``<`` and truth on a production object are
questions the verdict depends on: production never answers them.  The subject
describes the object as plain data (``protocol/snapshot.py``: type, state); this
module decodes that into ``Snap`` values and decides with Python's own
operators over the evaluator's own data:

- a ``Mapping`` or ``Set`` equals any mapping or set with equal items (the
  collections ABCs' own rule), a ``Sequence`` a list, tuple or sequence of its own
  type with equal items in order;
- an object whose class has no ``__eq__`` of its own equals only itself (Python's rule);
- any other object equals an object of the same type (qualified name) with equal state;
- an object whose state cannot be read (``opaque``) is never compared: refused.

Production can choose what state it shows (its ``__iter__``, its attributes), never what
the comparison concludes.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from mergegate.runner.protocol import codec, mappings
from mergegate.runner.trusted import faults, rules
from mergegate.runner.trusted.faults import ProductionError, SealedCallError
from mergegate.runner.trusted.link import Link

CONTAINERS = ("mapping", "set", "sequence", "collection")
KINDS = ("mapping", "set", "sequence", "collection", "enum", "fields", "identity", "opaque")
MAX_DEPTH = 60


def _opaque(what: str) -> SealedCallError:
    return SealedCallError(
        f"{what} on a production object whose state cannot be read (no fields, items or __dict__) would be "
        "decided by production code, not by Python: compare plain data instead (int(x), str(x), x.total) or "
        "identity (x is y), or mark the property isolation: shared")


class Cycle:
    """A reference back up the snapshot (a container holding itself)."""

    __slots__ = ("depth",)

    def __init__(self, depth: int) -> None:
        self.depth = depth

    def __eq__(self, other: object) -> bool:
        return type(other) is Cycle and other.depth == self.depth

    def __hash__(self) -> int:
        return hash(("cycle", self.depth))


class Snap:
    """A production object's snapshot: type, flags, kind and state, compared by the evaluator."""

    __slots__ = ("flags", "items", "kind", "state", "type")

    def __init__(self, type_name: str, flags: frozenset[str], kind: str, state: Any,
                 items: tuple[Any, ...] | None = None) -> None:
        self.type, self.flags, self.kind, self.state = type_name, flags, kind, state
        self.items = items if items is not None else (tuple(state) if kind in ("sequence", "collection") else None)

    def __repr__(self) -> str:
        return f"<snapshot of {self.name}: {self.kind} {self.state!r}>"

    @property
    def name(self) -> str:
        """``module:qualname`` (``type`` ends with the class's identity: ``#id``, "same type" is the same class)."""
        return self.type.rpartition("#")[0] or self.type

    def __eq__(self, other: object) -> Any:
        """Equal, unequal, or ``NotImplemented`` (the other side's own ``__eq__`` is asked, as Python does)."""
        other = resolve(other)
        ruled = rules.decide("eq", self, other)  # the trusted revision's own rule for its class, where it has one
        if ruled is not rules.NONE:
            return ruled
        if self.kind == "opaque" or (type(other) is Snap and other.kind == "opaque"):
            raise _opaque("`==`")
        if self.kind in ("mapping", "set"):
            if type(other) is Snap:
                return other.kind == self.kind and bool(self.state == other.state)
            if self.kind == "mapping":
                return bool(self.state == dict(other.items())) if isinstance(other, Mapping) else NotImplemented
            return bool(self.state == frozenset(other)) if isinstance(other, Set) else NotImplemented
        if self.kind == "identity":
            return self.state is other.state if type(other) is Snap and other.kind == "identity" else NotImplemented
        if self.kind == "collection":
            if type(other) is not Snap or other.kind != "collection" or other.type != self.type:
                return NotImplemented
            return _same_items(self.state, other.state)
        if type(other) is not Snap:
            if self.kind == "sequence" and type(other) in (list, tuple):
                return list(self.state) == list(other)  # type: ignore[call-overload]
            return NotImplemented
        return other.type == self.type and other.kind == self.kind and bool(self.state == other.state)

    def __ne__(self, other: object) -> Any:
        ruled = rules.decide("ne", self, resolve(other))
        if ruled is not rules.NONE:
            return ruled
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __lt__(self, other: object) -> Any:  # inside a key or a container's order: decided as the object's own
        return self.order("lt", other)

    def __le__(self, other: object) -> Any:
        return self.order("le", other)

    def __gt__(self, other: object) -> Any:
        return self.order("gt", other)

    def __ge__(self, other: object) -> Any:
        return self.order("ge", other)

    def __hash__(self) -> int:
        if "nohash" in self.flags:
            raise TypeError(f"unhashable type: '{self.name.rpartition(':')[2]}'")
        keyed = rules.hash_key(self)
        if keyed is not rules.NONE:  # equal by its class's key: hashed by it (equal objects hash alike)
            try:
                return hash(("rule", keyed))
            except TypeError as exc:
                faults.handled(exc)
                return hash("rule")
        if self.kind == "opaque":
            raise _opaque("`hash`")
        if self.kind == "identity":
            return hash(("identity", id(self.state)))  # one stand-in per production object
        if self.kind == "set":
            return hash(self.state)
        if self.kind == "mapping":
            return hash(frozenset(self.state.items()))
        if self.kind == "sequence":
            return hash(tuple(self.state))
        if self.kind == "collection":
            return hash((self.type, len(self.state)))
        try:
            return hash((self.type, self.kind, tuple(sorted(self.state.items())) if type(self.state) is dict
                         else self.state))
        except TypeError as exc:
            faults.handled(exc)
            return hash((self.type, self.kind))

    def truth(self) -> bool:
        if self.kind in CONTAINERS:
            return len(self.state) > 0
        if self.items is not None:
            return len(self.items) > 0
        if "truth" in self.flags or self.kind == "opaque":
            raise SealedCallError(
                "the truth of a production object that defines its own __bool__ or __len__ would be production's "
                "answer; test a plain value instead (x is not None, len(x) > 0, x.flag is True) or mark the "
                "property isolation: shared")
        return True  # Python's default: an object without __bool__ or __len__ is true

    def contains(self, item: Any) -> bool:
        if self.kind == "identity" and self.items is not None:
            return item in self.items
        if self.kind not in CONTAINERS:
            raise SealedCallError(f"`in` on a production {self.name} that is not a mapping, set or sequence would "
                                  "be decided by production code: test a plain value read off it")
        return item in self.state

    def order(self, name: str, other: Any) -> Any:
        import operator

        op = getattr(operator, name)
        other = resolve(other)
        ruled = rules.decide(name, self, other)
        if ruled is not rules.NONE:
            return ruled
        if self.kind == "set" and (isinstance(other, Set) or (type(other) is Snap and other.kind == "set")):
            theirs = other.state if type(other) is Snap else frozenset(other)  # type: ignore[arg-type]
            return bool(op(self.state, theirs))
        if self.kind == "sequence":
            if type(other) is Snap and other.kind == "sequence" and other.type == self.type:
                return bool(op(list(self.state), list(other.state)))
            if type(other) in (list, tuple):
                return bool(op(list(self.state), list(other)))
        raise SealedCallError(f"`{name}` on a production {self.name}: it has no order the evaluator can decide "
                              "from its state (sets and sequences do); compare plain values read off it")


rules.SNAP[:] = [Snap]


def same_state(earlier: Any, now: Any) -> bool:
    """Whether two snapshots of one object show the same state (the evaluator's ``==``; any doubt is no)."""
    try:
        return type(earlier) is type(now) and bool(earlier == now)
    except Exception as exc:
        faults.handled(exc)
        return False


def resolve(value: Any) -> Any:
    """A handle's snapshot (its class says how to take it: ``Remote.gate_snapshot``); anything else as it is."""
    snap = getattr(type(value), "gate_snapshot", None)
    return snap(value) if snap is not None else value


def take(ch: Link, handle: Any) -> Any:
    """The snapshot of one production object: a ``Snap``, plain data, or (a class, a function) the handle."""
    return take_all(ch, [handle])[0]


def take_all(ch: Link, handles: list[Any]) -> list[Any]:
    """The snapshots of production objects of one subject, in one request (``a == b``: both sides).

    The subject reads them one after the other, as that many requests would, with nothing of the
    evaluator's running between them: what a property observes is the same."""
    try:
        nodes = ch.raw("snapshot", ch.enc(handles))
    except ProductionError as exc:
        if refused(exc) is exc:
            raise
        raise refused(exc) from None
    return received(ch, nodes, len(handles))


def received(ch: Link, nodes: Any, count: int) -> list[Any]:
    """``count`` snapshots as the subject sent them, decoded (``take_all``; ``compared.py``: with a call)."""
    if type(nodes) is not list or len(nodes) != count:
        raise SealedCallError("the subject sent a malformed snapshot")
    return [decode(ch, node, 0) for node in nodes]


def refused(exc: BaseException) -> BaseException:
    """What taking a snapshot that failed raises: a snapshot over its bound refused as the gate's; else ``exc``."""
    if getattr(exc, "remote_type", "") == "SnapshotBound" or type(exc).__qualname__ == "SnapshotBound":
        return SealedCallError(f"cannot compare a production object: its snapshot is over a bound ({exc}); "
                               "compare plain values read off it")
    return exc


def _no_refs(data: list[Any]) -> Any:
    raise codec.CodecError("a reference inside a plain snapshot value")


def decode(ch: Link, node: Any, depth: int) -> Any:
    if type(node) is not list or not node or type(node[0]) is not str or depth > MAX_DEPTH:
        raise SealedCallError("the subject sent a malformed snapshot")
    tag, rest = node[0], node[1:]
    try:
        if tag == "v" and len(rest) == 1:
            return codec.decode(rest[0], _no_refs)
        if tag == "r" and len(rest) == 1:
            return ch.dec(rest[0])
        if tag == "c" and len(rest) == 1 and type(rest[0]) is int:
            return Cycle(rest[0])
        items = [decode(ch, n, depth + 1) for n in (rest[3:] if tag == "o" else rest)]
        if tag in ("L", "T", "S", "FS", "M"):
            return _plain(tag, items)
        if tag == "o" and len(rest) >= 3 and type(rest[0]) is str and type(rest[1]) is list and rest[2] in KINDS:
            flags = frozenset(f for f in rest[1] if type(f) is str)
            if rest[2] == "identity" and items:
                return Snap(rest[0], flags, "identity", items[0], tuple(items[1:]) if "items" in flags else None)
            return Snap(rest[0], flags, rest[2], _state(rest[2], items))
    except codec.CodecError as exc:
        raise SealedCallError(f"the subject sent a malformed snapshot: {exc}") from None
    except TypeError as exc:  # an unhashable key or set member
        raise SealedCallError(f"the subject sent a snapshot the evaluator cannot hold: {exc}") from None
    raise SealedCallError("the subject sent a malformed snapshot")


def _pairs(items: list[Any]) -> dict[Any, Any]:
    if len(items) % 2:
        raise codec.CodecError("odd number of items in a mapping")
    made = dict(zip(items[::2], items[1::2], strict=True))
    _apart(made, items[::2])
    return made


def _apart(made: Any, keys: list[Any]) -> Any:
    """A set or mapping of a snapshot, unless the evaluator's equality merged items production kept apart (as for
    a set production returns: ``mappings.kept_apart``)."""
    try:
        return mappings.kept_apart(made, keys, codec.CodecError)
    except codec.CodecError as exc:
        raise SealedCallError(f"cannot compare a production object: its state holds {exc}") from None


def _plain(tag: str, items: list[Any]) -> Any:
    if tag == "L":
        return items
    if tag == "T":
        return tuple(items)
    if tag == "S":
        return _apart(set(items), items)
    if tag == "FS":
        return _apart(frozenset(items), items)
    return _pairs(items)


def _state(kind: str, items: list[Any]) -> Any:
    if kind in ("mapping", "fields", "enum"):
        return _pairs(items) if kind != "enum" else {"name": items[0] if items else None}
    if kind == "set":
        return _apart(frozenset(items), items)
    if kind in ("sequence", "collection"):
        return tuple(items)
    return None


def _same_items(mine: tuple[Any, ...], theirs: tuple[Any, ...]) -> bool:
    """Equal as multisets (a bag's items in any order), with the evaluator's own ``==``."""
    if len(mine) != len(theirs):
        return False
    rest = list(theirs)
    for item in mine:
        for i, other in enumerate(rest):
            if item == other:
                del rest[i]
                break
        else:
            return False
    return True
