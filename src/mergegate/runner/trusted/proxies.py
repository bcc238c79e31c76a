"""Stand-ins for production objects, classes and modules: every use is a request to the subject.

A ``Remote`` is an opaque handle; a ``RemoteType`` is a real class (so ``isinstance`` and ``pytest.raises``
work) whose construction, attributes and checks forward; a ``RemoteModule`` forwards attribute reads.
Comparisons, membership and truth are decided here over snapshots; arithmetic with plain values is refused.
"""

from __future__ import annotations

import decimal
import fractions
import inspect
import sys
import types
from collections.abc import Callable
from typing import Any, Literal

import mergegate.runner.trusted.compared as compared
import mergegate.runner.trusted.dictcopy as dictcopy
import mergegate.runner.trusted.iterated as iterated
import mergegate.runner.trusted.lengths as lengths
from mergegate.runner.trusted import callsite, chains, classdefs, frozen, guess, hierarchy, methods, pickles, snapshots
from mergegate.runner.trusted.ahead import drain
from mergegate.runner.trusted.consumers import consumer
from mergegate.runner.trusted.faults import ProductionError, SealedCallError
from mergegate.runner.trusted.link import Link
from mergegate.runner.trusted.local_names import HARNESS, MODULE_LOCAL, typing_key

BUILTIN_EXCEPTIONS, ITERATION_ENDS = hierarchy.BUILTIN_EXCEPTIONS, hierarchy.ITERATION_ENDS


def remote_id(obj: Any) -> tuple[Link, int] | None:
    if type(obj) is Remote or type(obj) is RemoteModule:
        return object.__getattribute__(obj, "_gate_ref")  # type: ignore[no-any-return]
    if type(obj) is RemoteType:
        return type.__getattribute__(obj, "_gate_ref")  # type: ignore[no-any-return]
    return None


def channel_of(obj: Any) -> Link:
    ref = remote_id(obj)
    assert ref is not None
    return ref[0]


class Remote:
    """An opaque handle to an object that stays in the subject; every use is a request."""

    __slots__ = ("__weakref__", "_gate_ahead", "_gate_frozen", "_gate_hashed", "_gate_ref", "_gate_type")

    def __getattr__(self, name: str) -> Any:
        if name in HARNESS:
            raise AttributeError(name)
        ch, frame = channel_of(self), sys._getframe(1)
        came, value = chains.take(ch, self, name, frame)  # read with the read before it (``chains.py``)
        key = (object.__getattribute__(self, "_gate_type"), name)
        known = getattr(ch, "methods", None)  # a Link may keep none (then every read is one)
        if not came and name == "keys" and consumer(frame) == "dict":  # dict(x): one request (``dictcopy``)
            return dictcopy.keys_read(ch, self, frame)
        if not came and known is not None and key in known and callsite.called_at_once(frame):
            return methods.Method(self, name)  # a method of this type, called before anything runs: one request
        if not came:  # ``a.b.c``: the reads after this one at once come with it; else a plain read (``chains.py``)
            value = chains.read(ch, self, name, frame)
        if known is not None and type(value) is Remote and object.__getattribute__(value, "_gate_type") == "method":
            known.add(key)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        channel_of(self).request("setattr", channel_of(self).enc(self), name, channel_of(self).args([value])[0][1])

    def __delattr__(self, name: str) -> None:
        channel_of(self).request("delattr", channel_of(self).enc(self), name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ch, frame = channel_of(self), sys._getframe(1)
        done, value = methods.fused_call(ch, self, None, args, kwargs, frame)  # iterated or compared at once
        return value if done else ch.call(self, args, kwargs)

    def __repr__(self) -> str:
        text = channel_of(self).op("repr", self)
        return text if type(text) is str else "<production object>"

    def __str__(self) -> str:
        text = channel_of(self).op("str", self)
        return text if type(text) is str else "<production object>"

    def __reduce_ex__(self, protocol: Any) -> Any:
        # pickle.dumps/copy of a production object: pickled in the subject; the trusted side only ever
        # holds the bytes, and unpickles them by asking the subject (``pickles.restore``).
        return pickles.reduce(channel_of(self), self, protocol)

    def __copy__(self) -> Any:
        return channel_of(self).request("copy", channel_of(self).enc(self), False)

    def __deepcopy__(self, memo: Any) -> Any:
        return channel_of(self).request("copy", channel_of(self).enc(self), True)

    def __eq__(self, other: object) -> Any:
        return _equal(self, other, sys._getframe(1))

    def __ne__(self, other: object) -> Any:
        equal = _equal(self, other, sys._getframe(1))
        return equal if equal is NotImplemented else not equal

    @property  # type: ignore[misc]
    def __class__(self) -> Any:  # the production object's class, a stand-in (``type(x)`` stays Remote)
        known = object.__getattribute__(self, "_gate_frozen")
        return known.cls if known is not None else channel_of(self).getattr(self, "__class__")

    def __hash__(self) -> int:
        mine = _snap(self)
        if type(mine) is not snapshots.Snap and remote_id(mine) is not None:
            return hash(("handle", remote_id(mine)[1]))  # type: ignore[index]
        last = object.__getattribute__(self, "_gate_hashed")
        if last is not None and snapshots.same_state(last[0], mine):
            return int(last[1])  # the same state hashes as it did (pyrsistent's pmap caches its own hash)
        value = hash(mine)
        object.__setattr__(self, "_gate_hashed", (mine, value))
        return value

    def __bool__(self) -> bool:
        # ``if x:`` / ``assert x``: decided from the snapshot (a container's size; an object without
        # __bool__/__len__ is true); an object with its own truth is refused (production's answer).
        mine = _snap(self)
        return mine.truth() if type(mine) is snapshots.Snap else bool(mine) if remote_id(mine) is None else True

    def __contains__(self, item: Any) -> bool:
        mine = _snap(self)
        if type(mine) is snapshots.Snap:
            return mine.contains(item)
        if remote_id(mine) is not None:
            raise SealedCallError("`in` on a production class or function would be production's answer")
        return item in mine

    def __len__(self) -> int:
        return lengths.of(channel_of(self), self, sys._getframe(1))  # ``len(a) == len(b)``: one request

    def __length_hint__(self) -> Any:
        # Asked (after ``__len__`` failed) only by what drains an iterator whole (list(), tuple(), sorted()):
        # read in the largest batches (``ahead.py``); production's own hint is not asked, as before.
        reader = object.__getattribute__(self, "_gate_ahead")
        if reader is not None:
            reader.draining()
        return NotImplemented

    def __iter__(self) -> Any:
        if object.__getattribute__(self, "_gate_ahead") is not None:  # a builtin iterator is its own
            return self
        items = frozen.items(object.__getattribute__(self, "_gate_frozen"))
        if items is not None:
            return iter(items)
        ch, frame = channel_of(self), sys._getframe(1)
        came, it = iterated.take(ch, self, frame)  # asked with the call that returned it (``iterated.py``)
        if came:
            return it
        name = consumer(frame)  # list(x), frozenset(x)...: iter and a first batch in one request
        copied = dictcopy.pairs(ch, self, frame) if name == "dict" else None  # dict(x) of pairs: its copy's
        return copied if copied is not None else drain(ch, self) if name else ch.op("iter", self)

    def __getitem__(self, key: Any) -> Any:
        items = frozen.items(object.__getattribute__(self, "_gate_frozen"))
        if items is not None:
            return items[key]
        found, value = dictcopy.item(channel_of(self), self, sys._getframe(1), key) if dictcopy.NOW[0] else (False, 0)
        return value if found else channel_of(self).op("getitem", self, key)

    def __next__(self) -> Any:
        reader = object.__getattribute__(self, "_gate_ahead")
        return reader.next(channel_of(self), self) if reader is not None else guess.next_of(channel_of(self), self)

    def __enter__(self) -> Any:
        return channel_of(self).op("enter", self)

    def __exit__(self, *exc: object) -> Literal[False]:
        # Production is told the block ended, never what the property raised, and it can
        # never swallow that exception: the property's verdict is not production's to change.
        channel_of(self).op("exit", self)
        return False

    def __signature__(self) -> inspect.Signature:  # replaced by a property below
        raise NotImplementedError


def _equal(self: Remote, other: object, frame: Any) -> Any:
    # Decided here, over snapshots (``snapshots.py``): production's __eq__ is never asked.  Where the snapshot has
    # no answer (a mapping against a non-mapping) the other side's own __eq__ is asked: a trusted object's.
    came = compared.take(channel_of(self), self, other, frame) if compared.NOW[0] is not None else None
    if came is not None:  # taken with the call that returned one side (``compared.py``)
        mine, theirs = came
    elif _asks(self) and type(other) is Remote and _asks(other) and channel_of(other) is channel_of(self):
        mine, theirs = snapshots.take_all(channel_of(self), [self, other])  # both in one request
    else:
        mine = _snap(self)
        theirs = snapshots.resolve(other)
    if type(mine) is not snapshots.Snap and remote_id(mine) is not None:
        return mine is theirs  # a class or function: identity
    return mine.__eq__(theirs) if type(mine) is snapshots.Snap else mine == theirs


def _snap(handle: Any) -> Any:
    if not _asks(handle):
        return object.__getattribute__(handle, "_gate_frozen").items  # a tuple's, sent with its handle
    return snapshots.take(channel_of(handle), handle)


def _asks(handle: Any) -> bool:
    """Whether ``handle``'s snapshot is a request (a tuple's items came with its handle: what it would say)."""
    known = object.__getattribute__(handle, "_gate_frozen")
    return known is None or known.items is None


Remote.gate_snapshot = staticmethod(_snap)  # type: ignore[attr-defined]
compared.STAND_IN[:] = [Remote]
Remote.__signature__ = property(methods.signature)  # type: ignore[assignment,method-assign]


def _refuse(name: str, value: Any) -> SealedCallError:
    return SealedCallError(
        f"a production object met the property's own {type(value).__qualname__} in `{name}`: the answer would be "
        "production's, not Python's; convert it first (int(x), str(x), list(x), x.field) or mark the property "
        "isolation: shared")


NUMBERS = (bool, int, float, complex, decimal.Decimal, fractions.Fraction)


def _forward(name: str, reflected: bool = False, strict: bool = False) -> Callable[..., Any]:
    """A dunder that forwards; ``strict``: production's answer with the evaluator's own operand may not be a
    number (a production object standing in for one would choose the property's arithmetic)."""
    def method(self: Any, *args: Any) -> Any:
        result = channel_of(self).op(name, *args, self) if reflected else channel_of(self).op(name, self, *args)
        if strict and isinstance(result, NUMBERS) and not all(remote_id(a) is not None for a in args):
            raise _refuse(name, next(a for a in args if remote_id(a) is None))
        return result
    return method


def _verdict(name: str) -> Callable[..., Any]:
    """A comparison or membership test on a class: its answer would decide the verdict, so it is never asked."""
    def method(self: Any, other: Any) -> Any:
        raise SealedCallError(
            f"`{name}` on a production object would be decided by production code, not by Python: compare plain "
            "data instead (int(x), str(x), x.total, vars(x)) or identity (x is y), or mark the property "
            "isolation: shared")
    return method


def _order(name: str) -> Callable[..., Any]:
    """``<`` and the rest: decided over the snapshot where it has a natural order (sets, sequences)."""
    def method(self: Any, other: Any) -> Any:
        mine = _snap(self)
        if type(mine) is snapshots.Snap:
            return mine.order(name, other)
        if remote_id(mine) is not None:
            raise SealedCallError(f"`{name}` on a production class or function would be production's answer")
        import operator

        return getattr(operator, name)(mine, snapshots.resolve(other))
    return method


# Comparisons and membership on a production object are production's answers to the property's
# question, whatever the other side is (itself included: an object whose quantize() returns itself
# would "equal" its rounding).  They are refused; ``is`` tests identity.  Arithmetic yields a
# value, not a verdict: between production objects it forwards; with the property's own data it
# is refused too.
_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift",
           "and", "or", "xor")
for _name in _BINARY:
    _op = _name + "_" if _name in ("and", "or") else _name
    setattr(Remote, f"__{_name}__", _forward(_op, strict=True))
    setattr(Remote, f"__r{_name}__", _forward(_op, reflected=True, strict=True))
    setattr(Remote, f"__i{_name}__", _forward("i" + _name, strict=True))
for _name in ("lt", "le", "gt", "ge"):
    setattr(Remote, f"__{_name}__", _order(_name))
setattr(Remote, "__divmod__", _forward("divmod", strict=True))  # noqa: B010
setattr(Remote, "__rdivmod__", _forward("divmod", reflected=True, strict=True))  # noqa: B010
for _name in ("neg", "pos", "abs", "invert", "index", "setitem", "delitem", "int", "float",
              "complex", "format", "round", "bytes", "reversed"):
    setattr(Remote, f"__{_name}__", _forward(_name))
setattr(Remote, "__dir__", lambda self: list(channel_of(self).op("dir", self)))  # noqa: B010


# Dunders of a production class read from production (the rest are Python's probes and stay local).
_CLASS_FORWARDED = frozenset({"__members__", "__annotations__", "__slots__"})


def _structural(cls: type) -> bool:
    """A production ``typing.Protocol``: an object of the oracle's may be its instance (``made.py``)."""
    return vars(cls).get("_gate_structural") is True


class RemoteType(type):
    """The metaclass of stand-ins for production classes: construction, attributes, checks forward."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> RemoteType:
        if "_gate_ref" not in namespace:  # a class statement in the oracle: executed in the subject
            remote = [b for b in bases if type(b) is RemoteType]
            if kwargs or any(b is not object and type(b) is not RemoteType for b in bases):
                raise SealedCallError(f"class {name} mixes a production class with the oracle's own classes or "
                                      "keywords: its methods would run here; mark the entry isolation: shared")
            return classdefs.define(channel_of(remote[0]), name, bases, namespace)  # type: ignore[no-any-return]
        return super().__new__(mcs, name, bases, namespace, **kwargs)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        made = channel_of(cls).call(cls, args, kwargs)
        if ProductionError in type.__getattribute__(cls, "__mro__") and type(made) is Remote:
            # ``raise ProductionError(...)`` in the oracle (its own model of the system): a raisable
            # exception of the stand-in class, the production instance behind it for its attributes
            exc: BaseException = BaseException.__new__(cls)  # type: ignore[arg-type]
            exc.args = args
            exc.__dict__["_gate_obj"] = made
            return exc
        return made

    def __getattr__(cls, name: str) -> Any:
        if (name.startswith("__") and name.endswith("__") and name not in _CLASS_FORWARDED) or name in HARNESS:
            raise AttributeError(name)  # Python's own probes (e.g. __set_name__) and the harness's stay local
        return _read(cls, f"<class {type.__getattribute__(cls, '_gate_ref')[1]}>", name)

    @property
    def __signature__(cls) -> inspect.Signature:  # ``st.builds``/``st.from_type``: the production class's own
        return methods.signature(cls)

    def __instancecheck__(cls, obj: Any) -> bool:
        if type(type(obj)) is RemoteType:  # an exception raised here from a production class: its real classes
            return type.__subclasscheck__(cls, type(obj))
        if remote_id(obj) is None:  # the evaluator's own value is never an instance of a nominal production class;
            # of a typing.Protocol (bidict's Maplike) it is one when it has the members: production's check, as
            # any isinstance of its classes, run on a copy of the object
            return _structural(cls) and channel_of(cls).op("isinstance", obj, cls) is True
        known = object.__getattribute__(obj, "_gate_frozen") if type(obj) is Remote else None
        if known is not None and type(known.cls) is RemoteType:
            return cls.__subclasscheck__(known.cls)
        return channel_of(cls).op("isinstance", obj, cls) is True

    def __subclasscheck__(cls, sub: Any) -> bool:
        if type(sub) is RemoteType:
            if channel_of(sub) is not channel_of(cls):
                return False  # classes of another subject (an ABC's registry holds both)
            return sub is cls or frozen.subclass(channel_of(cls), sub, cls,
                                                 lambda: channel_of(cls).op("issubclass", sub, cls))
        if _structural(cls) and isinstance(sub, type) and not type.__subclasscheck__(cls, sub):
            return channel_of(cls).op("issubclass", sub, cls) is True
        return type.__subclasscheck__(cls, sub)

    def __iter__(cls) -> Any:
        return channel_of(cls).op("iter", cls)

    def __len__(cls) -> int:
        return int(channel_of(cls).op("len", cls))

    def __bool__(cls) -> bool:
        return True  # a class is true; ``if cls:`` must not ask production for its length

    def __getitem__(cls, key: Any) -> Any:
        if typing_key(key, RemoteType):  # ``Base[KT, VT]`` in an annotation or alias: typing's, answered here
            return types.GenericAlias(cls, key)
        return channel_of(cls).op("getitem", cls, key)

    def __contains__(cls, item: Any) -> bool:
        return bool(_verdict("in")(cls, item))

    def __repr__(cls) -> str:
        return f"<production class {type.__getattribute__(cls, '__qualname__')}>"


_CALLS = frozenset({"function", "builtin_function_or_method", "method", "partial"})  # fused when called at once


def _read(owner: Any, key: str, name: str) -> Any:
    """``owner.name`` (a module's, a class's): a request, or, where the name was a function and this read is the
    callee of a call made at once (``callsite.py``), none: read and call are one request (``methods.Method``)."""
    ch = channel_of(owner)
    known = getattr(ch, "methods", None)  # a Link may keep none (then every read is one)
    if known is not None and (key, name) in known and callsite.called_at_once(sys._getframe(2)):
        return methods.Method(owner, name)
    value = ch.getattr(owner, name)
    if known is not None and type(value) is Remote and object.__getattribute__(value, "_gate_type") in _CALLS:
        known.add((key, name))
    return value


class RemoteModule(types.ModuleType):
    """A stand-in for a production module: attribute reads forward (nothing is cached)."""

    def __getattr__(self, name: str) -> Any:
        if name in MODULE_LOCAL or name in HARNESS or name.startswith("_gate"):
            raise AttributeError(name)
        try:
            return _read(self, f"<module {self.__dict__.get('__name__')}>", name)
        except AttributeError:
            if name != "__all__":
                raise
        # ``from module import *`` without an __all__: the module's public names, as Python does.
        return [n for n in self.__dir__() if not n.startswith("_")]

    def __dir__(self) -> list[str]:
        names = channel_of(self).op("dir", self)
        return [n for n in names if type(n) is str] if type(names) is list else []
