"""Snapshots: an object described as plain data, for the trusted side to compare with its own ``==``.

Standard library only: the subject loads this file from the protocol folder and
``take`` runs there; the trusted evaluator decodes what it sends
(``trusted/snapshots.py``).  Nothing here is trusted once production code has
run in the subject: a snapshot is production's description of its state, never
an answer to a question.  The evaluator decides equality, hashing, membership,
ordering and truth over it, so production can choose what state it shows, never
what the comparison concludes.

A node is a JSON array:

- ``["v", plain]``: a value the codec carries by value (``codec.encode``), read with the
  plain type's own methods;
- ``["L" | "T" | "S" | "FS", node...]``, ``["M", key, value, ...]``: a plain list, tuple, set,
  frozenset or dict holding production objects;
- ``["o", type, flags, kind, node...]``: a production object: its type's qualified name and identity
  (``module:qualname#id``: two classes production names alike are two types), what its type declares
  (``_flags``: no hash, its own truth), the kind of state read (``KINDS``) and that state: for ``mapping``
  key and value nodes in turn, for ``set``/``sequence``/``collection`` the items, for ``fields``/``enum``
  name and value nodes in turn, for ``identity`` (a class without its own ``__eq__``: Python
  compares it by identity) its reference (then its items, if it is a ``Collection``), nothing for
  ``opaque``;
- ``["r", reference]``: a class, function or module, compared by identity (its handle);
- ``["c", depth]``: a cycle back to the object ``depth`` levels up.

State is read, in this order: the items of a ``Mapping``/``Set``/``Sequence`` (its own
``items()``/``__iter__``: production's answer, which yields data); an ``Enum`` member's name;
dataclass or attrs fields; ``__dict__`` and ``__slots__`` values read with ``object``'s own
descriptors; the state ``__reduce_ex__`` returns.  The walk is bounded (``Bounds``).
"""

from __future__ import annotations

import time
import types
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence, Set
from typing import Any

from .codec import _PLAIN_BASES, EXACT, CodecError, encode

KINDS = ("mapping", "set", "sequence", "collection", "enum", "fields", "identity", "opaque")
MAX_NODES = 20_000
MAX_DEPTH = 40
MAX_SECONDS = 2.0
MAX_VIEW_BYTES = 1 << 20  # a byte view this size or smaller is compared as the bytes it holds (Python's ``==``)

_PLAIN_SCALARS = (type(None), bool, int, float, str)
_BY_IDENTITY = (type, weakref.ref, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType,
                types.MethodDescriptorType, types.WrapperDescriptorType, property, staticmethod, classmethod)


class SnapshotBound(Exception):
    """The snapshot went over one of its bounds: the comparison is refused, never guessed."""


class Walk:
    """One snapshot: its node count, deadline and the path (for cycles)."""

    def __init__(self, ref: Callable[[Any], list[Any]], max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH,
                 seconds: float = MAX_SECONDS, refs: tuple[type, ...] = ()) -> None:
        self.ref, self.max_nodes, self.max_depth = ref, max_nodes, max_depth
        self.refs = refs  # the peer's own objects held here: sent as references, never walked
        self.deadline = time.monotonic() + seconds
        self.seconds = seconds
        self.nodes = 0
        self.path: list[int] = []

    def node(self, obj: Any) -> list[Any]:
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise SnapshotBound(f"more than {self.max_nodes} values in one snapshot")
        if self.nodes % 256 == 0 and time.monotonic() > self.deadline:
            raise SnapshotBound(f"reading the state took more than {self.seconds:g} s")
        kind = type(obj)
        if kind in _PLAIN_SCALARS:
            return ["v", encode(obj, _not_plain)]
        key = id(obj)
        if key in self.path:
            return ["c", len(self.path) - self.path.index(key)]
        if len(self.path) >= self.max_depth:
            raise SnapshotBound(f"state nested deeper than {self.max_depth} levels")
        self.path.append(key)
        try:
            return self._compound(obj, kind)
        finally:
            self.path.pop()

    def _compound(self, obj: Any, kind: type) -> list[Any]:
        if self.refs and issubclass(kind, self.refs):
            return ["r", self.ref(obj)]
        if kind in (list, tuple, set, frozenset, dict):
            return self._plain(obj, kind)
        if kind in EXACT:  # a compiled pattern, a path: plain data
            return ["v", encode(obj, _not_plain)]
        if issubclass(kind, _PLAIN_BASES):
            try:
                return ["v", encode(obj, _not_plain)]
            except CodecError:  # a plain container holding production objects: walked below
                if issubclass(kind, (list, tuple, set, frozenset, dict)):
                    base = next(b for b in (dict, list, tuple, frozenset, set) if issubclass(kind, b))
                    return self._plain(obj, base)
                raise
        if kind is memoryview and obj.format == "B" and obj.nbytes <= MAX_VIEW_BYTES:
            return ["v", ["b", memoryview.tobytes(obj).decode("latin-1")]]  # compared and hashed as its bytes
        if isinstance(obj, _BY_IDENTITY):
            return ["r", self.ref(obj)]
        flags = _flags(kind)
        if "ideq" in flags:  # no __eq__ of its own: Python compares it by identity, and so does the evaluator
            items = [self.node(v) for v in self._items(obj)] if isinstance(obj, Collection) else []
            return ["o", _type_name(kind), [*flags, "items"] if isinstance(obj, Collection) else flags, "identity",
                    ["r", self.ref(obj)], *items]
        return ["o", _type_name(kind), flags, *self._state(obj, kind)]

    def _plain(self, obj: Any, kind: type) -> list[Any]:
        if kind is dict:
            out: list[Any] = ["M"]
            for k, v in dict.items(obj):
                out += [self.node(k), self.node(v)]
            return out
        tag: str = {list: "L", tuple: "T", set: "S", frozenset: "FS"}[kind]  # type: ignore[index]
        return [tag, *[self.node(v) for v in kind.__iter__(obj)]]  # type: ignore[attr-defined]

    def _state(self, obj: Any, kind: type) -> list[Any]:
        import enum

        if isinstance(obj, enum.Enum):
            return ["enum", ["v", str(object.__getattribute__(obj, "_name_"))]]
        if isinstance(obj, Mapping):
            out: list[Any] = ["mapping"]
            for k, v in self._items(obj.items()):
                out += [self.node(k), self.node(v)]
            return out
        if isinstance(obj, Set):
            return ["set", *[self.node(v) for v in self._items(obj)]]
        if isinstance(obj, Sequence) and not isinstance(obj, (str, bytes)):
            return ["sequence", *[self.node(v) for v in self._items(obj)]]
        if isinstance(obj, Collection):  # sized, iterable, with `in`: its items, compared as a multiset
            return ["collection", *[self.node(v) for v in self._items(obj)]]
        fields = _fields(obj, kind)
        if fields is None:
            return ["opaque"]
        out = ["fields"]
        for name, value in fields:
            out += [["v", name], self.node(value)]
        return out

    def _items(self, iterable: Any) -> list[Any]:
        items = []
        for item in iterable:
            items.append(item)
            if len(items) > self.max_nodes:
                raise SnapshotBound(f"more than {self.max_nodes} items in one container (or an iterator without end)")
            if len(items) % 256 == 0 and time.monotonic() > self.deadline:
                raise SnapshotBound(f"reading the state took more than {self.seconds:g} s")
        return items


def _flags(kind: type) -> list[str]:
    """What the type declares (data about the class, read from its namespaces, not asked of instances)."""
    flags = []
    mro = [k for k in type.__getattribute__(kind, "__mro__") if k is not object]
    if next((vars(k)["__hash__"] for k in mro if "__hash__" in vars(k)), 0) is None:
        flags.append("nohash")
    if any("__bool__" in vars(k) or "__len__" in vars(k) for k in mro):
        flags.append("truth")
    if not any("__eq__" in vars(k) for k in mro):
        flags.append("ideq")
    return flags


def _not_plain(obj: Any) -> list[Any]:
    raise CodecError("not plain")


def _type_name(kind: type) -> str:
    """``module:qualname#id``: the name for messages, the class object's identity for "same type" (production
    can name two classes alike, never make them one)."""
    module = type.__getattribute__(kind, "__module__")
    qualname = type.__getattribute__(kind, "__qualname__")
    return f"{module if type(module) is str else '?'}:{qualname if type(qualname) is str else '?'}#{id(kind)}"


def _fields(obj: Any, kind: type) -> list[tuple[str, Any]] | None:
    """Named state: dataclass or attrs fields, else ``__dict__`` and ``__slots__``, else reduce state."""
    declared = getattr(kind, "__dataclass_fields__", None)
    if isinstance(declared, dict):
        return [(str(n), object.__getattribute__(obj, n)) for n in declared
                if type(n) is str and _has(obj, n)]
    attrs = getattr(kind, "__attrs_attrs__", None)
    if isinstance(attrs, tuple):
        names = [getattr(a, "name", None) for a in attrs]
        return [(n, object.__getattribute__(obj, n)) for n in names if type(n) is str and _has(obj, n)]
    out: dict[str, Any] = {}
    try:
        state = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        state = None
    if type(state) is dict:
        out.update((str(k), v) for k, v in dict.items(state))
    for klass in type.__getattribute__(kind, "__mro__"):
        slots = vars(klass).get("__slots__", ())
        for slot in (slots,) if type(slots) is str else slots:
            if type(slot) is str and slot not in ("__dict__", "__weakref__") and slot not in out and _has(obj, slot):
                out[slot] = object.__getattribute__(obj, slot)
    if out:
        return sorted(out.items())
    try:
        reduced = obj.__reduce_ex__(4)
    except Exception:
        return None
    if type(reduced) is tuple and len(reduced) >= 2:
        args, state = reduced[1], reduced[2] if len(reduced) > 2 else None
        if type(args) is tuple and args[:1] == (kind,):
            args = args[1:]  # copyreg.__newobj__(cls, *args): the class is not state
        if args not in ((), None) or state not in (None, {}):
            return [("args", args), ("state", state)]
    return None


def _has(obj: Any, name: str) -> bool:
    try:
        object.__getattribute__(obj, name)
    except AttributeError:
        return False
    return True
