"""The subject's side of what real tests do with production objects (loaded by ``server.py``, by path).

Standard library only, and as untrusted as the rest of the subject: snapshots of
objects (``protocol/snapshot.py`` does the walk), the oracle's class statements
executed here, ``pickle``/``copy`` of production objects, names of the standard
library, and ``Reverse`` stand-ins for objects of the oracle's that production was
handed.  ``Session`` is ``server.Session``.
"""

from __future__ import annotations

import builtins
import collections.abc
import importlib
import sys
import types
from collections.abc import Callable
from typing import Any

Session = Any


def answer(s: Session, reply: list[Any]) -> Any:
    """The evaluator's answer to a callback: its value, or the builtin exception it names."""
    if reply[0] == "ok":
        return s.dec(reply[1])
    name = reply[1] if len(reply) > 1 and type(reply[1]) is str else "Exception"
    cls = getattr(builtins, name, None)
    cls = cls if isinstance(cls, type) and issubclass(cls, Exception) else RuntimeError
    raise cls(reply[2] if len(reply) > 2 else "the oracle's callable failed")


class Reverse:
    """An object of the oracle's (not a callable) handed to production: every use asks the evaluator."""

    __slots__ = ("_gate_number", "_gate_session")

    def __init__(self, session: Session, number: int) -> None:
        object.__setattr__(self, "_gate_session", session)
        object.__setattr__(self, "_gate_number", number)

    def _gate_op(self, name: str, *args: Any) -> Any:
        s = object.__getattribute__(self, "_gate_session")
        number = object.__getattribute__(self, "_gate_number")
        return answer(s, s.endpoint.request(["rop", number, name, s.enc(list(args))]))

    def __getattr__(self, name: str) -> Any:
        s = object.__getattribute__(self, "_gate_session")
        return answer(s, s.endpoint.request(["rget", object.__getattribute__(self, "_gate_number"), name]))

    def __repr__(self) -> str:
        return str(self._gate_op("repr"))

    def __eq__(self, other: object) -> bool:
        return self._gate_op("eq", other) is True

    def __ne__(self, other: object) -> bool:  # the oracle's own (a tuple subclass's is ``tuple``'s, not ``not ==``)
        return self._gate_op("ne", other) is True

    __hash__ = None  # type: ignore[assignment]


PROTOCOLS: dict[str, Any] = {
    "__getitem__": lambda self, key: self._gate_op("getitem", key),
    "__len__": lambda self: int(self._gate_op("len")),
    "__iter__": lambda self: self._gate_op("iter"),
    "__next__": lambda self: self._gate_op("next"),
    "__contains__": lambda self, item: self._gate_op("contains", item) is True,
    "__call__": lambda self, *args, **kwargs: self._gate_op("call", list(args), kwargs),
    "__hash__": lambda self: int(self._gate_op("hash")),
}
_classes: dict[frozenset[str], type] = {}


class Batched(Reverse):
    """An oracle iterator over a list, tuple, range, str or bytes (``trusted/reverse.py`` ``items``).

    Production advances a copy of it that nothing of the oracle's sees, so its items came along: ``next``,
    ``iter`` and the length hint are answered here; any other use still asks the evaluator's copy (and so does
    ``next`` when the items did not come: ``None``).
    """

    __slots__ = ("_gate_items",)

    def __iter__(self) -> Any:
        return self

    def __next__(self) -> Any:
        items = object.__getattribute__(self, "_gate_items")
        return next(items) if items is not None else self._gate_op("next")

    def __length_hint__(self) -> int:
        items = object.__getattribute__(self, "_gate_items")
        return int(items.__length_hint__()) if items is not None else 0


def reverse(session: Session, number: int, protocols: list[Any], items: Any = None) -> Reverse:
    """A ``Reverse`` with exactly the protocols the oracle's object has (``hasattr(x, "__len__")`` tells); a
    ``Batched`` one when the iterator's items came with it."""
    batched = items is not None
    names = frozenset(p for p in protocols if p in PROTOCOLS and not (batched and p in ("__iter__", "__next__")))
    key = names | {"batched"} if batched else names
    cls = _classes.get(key)
    if cls is None:
        cls = _classes[key] = type("Reverse", (Batched if batched else Reverse,), {
            "__slots__": (), **{n: PROTOCOLS[n] for n in names}})
    made = cls(session, number)
    return refill(made, items) if batched else made


def refill(known: Reverse, items: Any) -> Reverse:
    """The stand-in of an iterator the oracle passed (again): the items its copy holds now, or (``None``: too
    many to send) none, and every ``next`` asks the copy."""
    if isinstance(known, Batched):
        if items is not None and type(items) is not list:
            raise ValueError("an iterator's items are a list")
        object.__setattr__(known, "_gate_items", iter(items) if items is not None else None)
    return known  # a stand-in made before its items came along: it asks the copy, which is the fresh one


def standard(module: str, qualname: str) -> Any:
    """A standard-library object the oracle named (``collections.UserDict``), looked up here by name."""
    if module.partition(".")[0] not in sys.stdlib_module_names:
        raise ValueError(f"{module} is not a standard-library module")
    obj: Any = importlib.import_module(module)
    for part in qualname.split(".") if qualname else ():
        obj = getattr(obj, part)
    return obj


def op_snapshot(s: Session, targets: Any) -> list[Any]:
    """Each target's state as plain data (``protocol/snapshot.py``); the evaluator compares it."""
    return ["ok", _snapshots(s, s.dec(targets))]


def _snapshots(s: Session, objects: list[Any]) -> list[Any]:
    snapshot = importlib.import_module("_mergegate_protocol.snapshot")
    oracle_own = (Reverse, getattr(sys.modules.get(type(s).__module__), "Callback", Reverse))  # named back as is
    return [snapshot.Walk(s.ref, refs=oracle_own).node(t) for t in objects]


def op_defclass(s: Session, source: str, name: str, module: str, bases: Any, names: Any) -> list[Any]:
    """A class statement of the oracle's, executed here: its methods are part of the system under test.

    ``source`` is the trusted tree's own text of the statement, its bases replaced by
    ``__gate_base_<n>`` and its decorators left on the trusted side.
    """
    namespace: dict[str, Any] = {"__name__": module, "__builtins__": builtins}
    namespace.update(s.dec(names))
    for number, base in enumerate(s.dec(bases)):
        namespace[f"__gate_base_{number}"] = base
    exec(compile(source, f"<oracle class {name}>", "exec"), namespace)
    cls = namespace[name]
    home = sys.modules.get(module)
    if home is None:  # the oracle module's name, here: pickle (and a type named by string) finds the class by it
        home = sys.modules[module] = types.ModuleType(module)
        home.__dict__["__gate_oracle__"] = True
        # any other name of the oracle module is asked of the evaluator (an oracle class comes as its copy)
        home.__dict__["__getattr__"] = lambda attr: answer(s, s.endpoint.request(["rmod", module, attr]))
    if home.__dict__.get("__gate_oracle__"):
        setattr(home, name, cls)
    return ["ok", s.enc(cls)]


def op_pickle(s: Session, target: Any, protocol: Any) -> list[Any]:
    import pickle

    return ["ok", s.enc(pickle.dumps(s.dec(target), protocol if type(protocol) is int else None))]


def op_unpickle(s: Session, data: Any) -> list[Any]:
    import pickle

    return ["ok", s.enc(pickle.loads(s.dec(data)))]


def op_copy(s: Session, target: Any, deep: Any) -> list[Any]:
    import copy

    obj = s.dec(target)
    return ["ok", s.enc(copy.deepcopy(obj) if deep is True else copy.copy(obj))]


def op_signature(s: Session, target: Any) -> list[Any]:
    """A callable's parameters: name, kind, default, and the annotation when it is a class (``int``, a
    production class; what ``st.builds``/``st.from_type`` draw for it), string annotations resolved here."""
    import inspect

    obj = s.dec(target)
    try:
        sig = inspect.signature(obj, eval_str=True)
    except Exception:  # an annotation that does not resolve: the parameters without it
        sig = inspect.signature(obj)
    params = []
    for p in sig.parameters.values():
        default = None if p.default is p.empty else s.enc(p.default)
        note = s.enc(p.annotation) if isinstance(p.annotation, type) and p.annotation is not p.empty else None
        params.append([p.name, int(p.kind), p.default is not p.empty, default, note])
    return ["ok", params]


def op_ahead(s: Session, target: Any, count: Any) -> list[Any]:
    """Up to ``count`` items of an iterator, and how it ended: None (not yet), "stop", or the error reply."""
    items, end = _batch(s, s.dec(target), count)
    return ["ok", s.enc(items), end]


def op_drain(s: Session, target: Any, count: Any) -> list[Any]:
    """``iter()`` of an object a builtin consumer takes whole at once (``list(x)``, ``frozenset(x)``: the evaluator read
    the call off its bytecode) and, when the iterator is a builtin one it reads ahead, its first batch."""
    it = iter(s.dec(target))
    items, end = _batch(s, it, count) if iterator(it) else ([], None)
    return ["ok", s.enc(it), s.enc(items), end]


def op_dictof(s: Session, target: Any) -> list[Any]:
    """``dict(x)`` as the builtin builds it (``trusted/dictcopy.py``): ``x.keys`` read, read again and called, its
    keys listed, ``x[k]`` read for each; else, with no ``keys``, ``x``'s pairs. The dict (or what production raised
    after the first read: ``dict()`` raises it, where an ``AttributeError`` from the read itself means no ``keys``),
    and whether ``keys`` was there."""
    obj, missing = s.dec(target), object()
    has = getattr(obj, "keys", missing) is not missing
    try:
        built = {key: obj[key] for key in list(obj.keys())} if has else dict(iter(obj))
    except BaseException as exc:
        return ["ok", None, has, s.error(exc)]
    return ["ok", s.enc(built), has, None]


def op_getattrs(s: Session, target: Any, names: Any) -> list[Any]:
    """``target.a.b``: the reads one after another, each of the value before, as one process makes them
    (``trusted/chains.py``); each value as ``getattr`` sends it.  An entry ``[other, name]`` reads ``name`` of
    ``other`` instead (``t = x.a; y.b``).  The first read that raises ends them, its error in its value's place; so
    does a value the evaluator does not stand in for with an object's stand-in (a class, a module, plain data: the
    evaluator reads those itself) where the next read is of it."""
    if type(names) is not list or not names or not all(type(n) is str or (
            type(n) is list and len(n) == 2 and type(n[1]) is str) for n in names[1:]) or type(names[0]) is not str:
        raise ValueError("getattrs takes a name, then names or [object, name] pairs")
    owner, out, stop = s.dec(target), list[Any](), False
    for entry in names:
        if type(entry) is list:
            owner, name = s.dec(entry[0]), entry[1]
        elif stop:
            break
        else:
            name = entry
        try:
            owner = getattr(owner, name)
        except BaseException as exc:
            return ["ok", [*out, s.error(exc)]]
        sent = s.out(owner)
        out.append(["ok", sent])
        stop = isinstance(owner, (type, types.ModuleType)) or type(sent) is not list or sent[:1] not in (["h"], ["H"])
    return ["ok", out]


def op_callsnap(s: Session, target: Any, name: Any, args: Any, kwargs: Any, other: Any, left: Any) -> list[Any]:
    """``target(*args)`` (or ``target.name(*args)``) and then the snapshots the comparison of its value takes
    (``trusted/compared.py``): the value's alone, or with ``other``'s, the left operand's first (``left``: the
    value is the left one).  None where the evaluator takes none: the value a class, a module, a tuple of
    production's or not a production object at all."""
    fn = s.dec(target) if name is None else getattr(s.dec(target), str(name))
    value = fn(*s.dec(args), **s.dec(kwargs))
    sent = s.out(value)
    if type(sent) is not list or sent[:1] not in (["h"], ["H"]) or isinstance(value, (type, types.ModuleType)) \
            or issubclass(type(value), tuple):
        return ["ok", sent, None]
    try:
        pair = [value] if other is None else [value, s.dec(other)] if left is True else [s.dec(other), value]
        return ["ok", sent, ["ok", _snapshots(s, pair)]]
    except BaseException as exc:
        return ["ok", sent, s.error(exc)]


def op_lens(s: Session, targets: Any) -> list[Any]:
    """``len(a) == len(b)`` (``trusted/lengths.py``): each length in the caller's order; the first ``len`` that raises
    ends them, its error in its value's place."""
    if type(targets) is not list or not 1 <= len(targets) <= 2:
        raise ValueError("lens takes one or two objects")
    out = list[Any]()
    for target in targets:
        try:
            out.append(["ok", s.enc(len(s.dec(target)))])
        except BaseException as exc:
            out.append(s.error(exc))
            break
    return ["ok", out]


def op_calliter(s: Session, target: Any, name: Any, args: Any, kwargs: Any, count: Any = None) -> list[Any]:
    """``target(*args)`` (or ``target.name(*args)``) and then ``iter`` of its value, as ``for x in obj.f():`` does
    (``trusted/iterated.py``): the value as a call sends it, and its iterator (or what ``iter`` raised) where the
    evaluator's stand-in would ask for one: a production object that is not a class, a module, a builtin iterator
    or a tuple of its own.  With ``count`` (``frozenset(obj.f())``: a builtin that drains it whole), the iterator's
    first batch too, as ``drain`` reads it."""
    fn = s.dec(target) if name is None else getattr(s.dec(target), str(name))
    value = fn(*s.dec(args), **s.dec(kwargs))
    sent = s.out(value)
    if type(sent) is not list or sent[:1] not in (["h"], ["H"]) or isinstance(value, (type, types.ModuleType)) \
            or iterator(value) or issubclass(type(value), tuple):
        return ["ok", sent, None]
    try:
        it = iter(value)
    except BaseException as exc:
        return ["ok", sent, s.error(exc)]
    if count is None:
        return ["ok", sent, ["ok", s.enc(it)]]
    items, end = _batch(s, it, count) if iterator(it) else ([], None)
    return ["ok", sent, ["ok", s.enc(it), s.enc(items), end]]


def _batch(s: Session, it: Any, count: Any) -> tuple[list[Any], Any]:
    items: list[Any] = []
    end = None
    for _ in range(count if type(count) is int and 0 < count <= 256 else 1):
        try:
            items.append(next(it))
        except StopIteration:
            end = "stop"
            break
        except BaseException as exc:
            end = s.error(exc)
            break
    return items, end


def describe(obj: Any, ref: Callable[[Any], list[Any]]) -> list[Any]:
    """What the evaluator needs to build its stand-in: kind, names, exception bases (production's as references)."""
    if isinstance(obj, types.ModuleType):
        return ["module", str(getattr(obj, "__name__", "?"))]
    if isinstance(obj, type):
        name = str(getattr(obj, "__qualname__", getattr(obj, "__name__", "?")))
        module = str(getattr(obj, "__module__", "?"))
        if issubclass(obj, BaseException):
            bases = [c.__name__ for c in obj.__mro__ if c.__module__ == "builtins"]
            direct = [b.__name__ if b.__module__ == "builtins" else ref(b) for b in obj.__bases__]
            return ["exception", name, module, bases, direct]
        abcs = [n for n in collections.abc.__all__ if n != "ByteString"  # and "tuple": a base the stand-in has
                and issubclass(obj, getattr(collections.abc, n))] + (["tuple"] if issubclass(obj, tuple) else []) \
            + (["structural"] if type.__dict__["__dict__"].__get__(obj).get("_is_protocol") is True else [])
        return ["class", name, module, abcs, str(getattr(obj, "__name__", name)),
                slots(obj)]
    if issubclass(type(obj), tuple):  # production's own tuple subclass (plain tuples travel by value)
        return frozen_tuple(obj, ref)
    if iterator(obj):  # read ahead by the evaluator (``trusted/ahead.py``)
        return ["object", type(obj).__qualname__, "iterator"]
    return ["callable" if callable(obj) else "object", type(obj).__qualname__]


def iterator(obj: Any) -> bool:
    """A builtin iterator (a generator, ``filter``, ``map``, ``zip``, ``itertools``...): its own iterator, no length."""
    kind = type(obj)
    return getattr(kind, "__module__", None) in ("builtins", "itertools") and hasattr(kind, "__next__") \
        and not hasattr(kind, "__len__")


OPS = {"signature": op_signature, "snapshot": op_snapshot, "defclass": op_defclass, "pickle": op_pickle,
       "unpickle": op_unpickle, "copy": op_copy, "ahead": op_ahead, "drain": op_drain,
       "dictof": op_dictof, "getattrs": op_getattrs,
       "calliter": op_calliter, "lens": op_lens, "callsnap": op_callsnap}


_IMMUTABLE = (str, bytes, int, float, complex, bool, type(None))


def _immutable(value: Any, depth: int = 0) -> bool:
    kind = type(value)
    return kind in _IMMUTABLE or (kind is tuple and depth < 20 and all(_immutable(v, depth + 1) for v in value))


def frozen_tuple(obj: tuple[Any, ...], ref: Any) -> list[Any]:
    """One of production's tuple subclasses described with its class and, when they are immutable plain
    data, its items (``trusted/frozen.py``), and whether its class keeps ``tuple``'s own protocols."""
    codec = importlib.import_module("_mergegate_protocol.codec")
    kind = type(obj)
    items = tuple(tuple.__iter__(obj))
    plain = all(getattr(kind, name, None) is getattr(tuple, name) for name in ("__len__", "__iter__", "__getitem__"))
    sent = codec.encode(items, ref) if len(items) <= 64 and _immutable(items) else None
    return ["tuple", kind.__qualname__, ref(kind), sent, plain]


def slots(cls: type) -> list[Any] | None:
    """A class's own ``__slots__`` declaration when it is names (a str, tuple or list of str), as plain data."""
    declared = type.__dict__["__dict__"].__get__(cls).get("__slots__")  # its own namespace, no descriptor runs
    names = [declared] if type(declared) is str else declared
    if type(names) in (tuple, list) and all(type(n) is str for n in names):
        return [type(declared).__name__, list(names)]
    return None
