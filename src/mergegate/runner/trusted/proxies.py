"""Stand-ins for production objects, classes and modules: every use is a request to the subject.

A ``Remote`` is an opaque handle; a ``RemoteType`` is a real class (so ``isinstance``
and ``pytest.raises`` work) whose construction, attributes and checks forward; a
``RemoteModule`` forwards attribute reads.  A handle never answers a question
about the evaluator's own data: comparisons, arithmetic, membership and truth
against plain values are refused (see ``_forward``).
"""

from __future__ import annotations

import builtins
import inspect
import sys
import types
from collections.abc import Callable, Iterable
from typing import Any, Literal

from mergegate.runner.trusted.faults import ProductionError, SealedCallError
from mergegate.runner.trusted.link import Link

BUILTIN_EXCEPTIONS = {name: cls for name, cls in vars(builtins).items()
                      if isinstance(cls, type) and issubclass(cls, Exception)
                      and not issubclass(cls, BaseExceptionGroup)}
# End an iteration the property drives (a map(), a for loop): only ever the answer to ``next``.
ITERATION_ENDS = frozenset({"StopIteration", "StopAsyncIteration"})



def remote_id(obj: Any) -> tuple[Link, int] | None:
    if type(obj) is Remote or type(obj) is RemoteModule:
        return object.__getattribute__(obj, "_gate_ref")  # type: ignore[no-any-return]
    if isinstance(obj, RemoteType):
        return type.__getattribute__(obj, "_gate_ref")  # type: ignore[no-any-return]
    return None


def channel_of(obj: Any) -> Link:
    ref = remote_id(obj)
    assert ref is not None
    return ref[0]


# What the test harness (pytest, unittest, Hypothesis) asks of every object in a test module to
# decide what is a test, a fixture, a mark or a skip.  Answered here, never by production: a
# production object is never a test, a fixture or a mark of the trusted session (and the probes
# cost no round trips).
HARNESS = frozenset({
    "__test__", "pytestmark", "_pytestfixturefunction", "_fixture_function_marker", "_fixture_function",
    "__pytest_wrapped__", "hypothesis", "is_hypothesis_test", "hypothesis_explicit_examples",
    "_hypothesis_internal_use_settings", "_hypothesis_internal_use_seed", "_hypothesis_internal_use_reproduce_failure",
    "_hypothesis_internal_use_generated_seed", "_hypothesis_state_machine_class", "__unittest_skip__",
    "__unittest_skip_why__", "__unittest_expecting_failure__",
})


class Remote:
    """An opaque handle to an object that stays in the subject; every use is a request."""

    __slots__ = ("__weakref__", "_gate_ref")

    def __getattr__(self, name: str) -> Any:
        if name in HARNESS:
            raise AttributeError(name)
        return channel_of(self).getattr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        channel_of(self).request("setattr", channel_of(self).enc(self), name, channel_of(self).enc(value))

    def __delattr__(self, name: str) -> None:
        channel_of(self).request("delattr", channel_of(self).enc(self), name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return channel_of(self).call(self, args, kwargs)

    def __repr__(self) -> str:
        text = channel_of(self).op("repr", self)
        return text if type(text) is str else "<production object>"

    def __str__(self) -> str:
        text = channel_of(self).op("str", self)
        return text if type(text) is str else "<production object>"

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise SealedCallError("a production object cannot be pickled in a sealed run (it stays in the "
                              "subject); test a plain value read off it, or mark the entry isolation: shared")

    def __hash__(self) -> int:
        value = channel_of(self).op("hash", self)
        if type(value) is not int:
            raise TypeError("production returned a non-integer hash")
        return value

    def __bool__(self) -> bool:
        # ``if x:`` / ``assert x`` on a production object would be production's answer: refused, so
        # an always-true object cannot stand in for the bool or value a property expected.
        raise SealedCallError("the truth of a production object would be production's answer; test a plain "
                              "value instead (x is not None, len(x) > 0, x.flag is True) or mark the property "
                              "isolation: shared")

    def __len__(self) -> int:
        value = channel_of(self).op("len", self)
        if type(value) is not int or value < 0:
            raise TypeError("production returned a bad length")
        return value

    def __iter__(self) -> Any:
        return channel_of(self).op("iter", self)

    def __next__(self) -> Any:
        return channel_of(self).op("next", self)

    def __enter__(self) -> Any:
        return channel_of(self).op("enter", self)

    def __exit__(self, *exc: object) -> Literal[False]:
        # Production is told the block ended, never what the property raised, and it can
        # never swallow that exception: the property's verdict is not production's to change.
        channel_of(self).op("exit", self)
        return False

    def __signature__(self) -> inspect.Signature:  # replaced by a property below
        raise NotImplementedError


def _signature(self: Any) -> inspect.Signature:
    ch = channel_of(self)
    params = ch.request("signature", ch.enc(self))
    out = []
    for name, kind, has_default, default in params:
        extra = {"default": ch.dec(default) if has_default else None} if has_default else {}
        out.append(inspect.Parameter(str(name), inspect._ParameterKind(int(kind)), **extra))
    return inspect.Signature(out)


Remote.__signature__ = property(_signature)  # type: ignore[assignment,method-assign]


def _is_remote(value: Any) -> bool:
    return remote_id(value) is not None


def _refuse(name: str, value: Any) -> SealedCallError:
    return SealedCallError(
        f"a production object met the property's own {type(value).__qualname__} in `{name}`: the answer would be "
        "production's, not Python's; convert it first (int(x), str(x), list(x), x.field) or mark the property "
        "isolation: shared")


def _forward(name: str, reflected: bool = False, strict: bool = False) -> Callable[..., Any]:
    """A dunder that forwards; ``strict``: refused when an operand is the evaluator's own data."""
    def method(self: Any, *args: Any) -> Any:
        if strict:
            for arg in args:
                if not _is_remote(arg):
                    raise _refuse(name, arg)
        return channel_of(self).op(name, *args, self) if reflected else channel_of(self).op(name, self, *args)
    return method


def _verdict(name: str) -> Callable[..., Any]:
    """A comparison or membership test: its answer would decide the verdict, so it is never asked."""
    def method(self: Any, other: Any) -> Any:
        raise SealedCallError(
            f"`{name}` on a production object would be decided by production code, not by Python: compare plain "
            "data instead (int(x), str(x), x.total, vars(x)) or identity (x is y), or mark the property "
            "isolation: shared")
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
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(Remote, f"__{_name}__", _verdict(_name))
setattr(Remote, "__divmod__", _forward("divmod", strict=True))  # noqa: B010
setattr(Remote, "__rdivmod__", _forward("divmod", reflected=True, strict=True))  # noqa: B010
setattr(Remote, "__contains__", lambda self, item: _verdict("in")(self, item))  # noqa: B010
for _name in ("neg", "pos", "abs", "invert", "index", "getitem", "setitem", "delitem", "int", "float",
              "complex", "format", "round", "bytes"):
    setattr(Remote, f"__{_name}__", _forward(_name))
setattr(Remote, "__dir__", lambda self: list(channel_of(self).op("dir", self)))  # noqa: B010


class RemoteType(type):
    """The metaclass of stand-ins for production classes: construction, attributes, checks forward."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> RemoteType:
        if "_gate_ref" not in namespace:  # a class statement in the oracle, not a stand-in
            parents = ", ".join(type.__getattribute__(b, "__qualname__") for b in bases if isinstance(b, RemoteType))
            raise SealedCallError(f"class {name} subclasses the production class {parents}: its methods would run "
                                  "here, not in production; not supported sealed: mark the entry isolation: shared")
        return super().__new__(mcs, name, bases, namespace, **kwargs)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return channel_of(cls).call(cls, args, kwargs)

    def __getattr__(cls, name: str) -> Any:
        if (name.startswith("__") and name.endswith("__") and name not in ("__members__", "__annotations__")) \
                or name in HARNESS:
            raise AttributeError(name)  # Python's own probes (e.g. __set_name__) and the harness's stay local
        return channel_of(cls).getattr(cls, name)

    def __instancecheck__(cls, obj: Any) -> bool:
        if not _is_remote(obj):
            return False  # the evaluator's own value is never a production instance
        return channel_of(cls).op("isinstance", obj, cls) is True

    def __subclasscheck__(cls, sub: Any) -> bool:
        if isinstance(sub, RemoteType):
            return channel_of(cls).op("issubclass", sub, cls) is True
        return type.__subclasscheck__(cls, sub)

    def __iter__(cls) -> Any:
        return channel_of(cls).op("iter", cls)

    def __len__(cls) -> int:
        return int(channel_of(cls).op("len", cls))

    def __bool__(cls) -> bool:
        return True  # a class is true; ``if cls:`` must not ask production for its length

    def __getitem__(cls, key: Any) -> Any:
        if _typing_key(key):  # ``Base[KT, VT]`` in an annotation or alias: typing's, answered here
            return types.GenericAlias(cls, key)
        return channel_of(cls).op("getitem", cls, key)

    def __contains__(cls, item: Any) -> bool:
        return bool(_verdict("in")(cls, item))

    def __repr__(cls) -> str:
        return f"<production class {type.__getattribute__(cls, '__qualname__')}>"


def _typing_key(key: Any) -> bool:
    import typing

    keys = key if type(key) is tuple else (key,)
    return bool(keys) and all(isinstance(k, (typing.TypeVar, typing.ParamSpec, types.GenericAlias))
                              or type(k).__module__ == "typing"
                              or (isinstance(k, type) and not isinstance(k, RemoteType)) for k in keys)


# The import system's own attributes of a module: local, never asked of production.
# ``__file__`` too: the evaluator never opens a path production chooses (Hypothesis reads the source
# of "local" modules for constants; a stand-in has no source here).
_MODULE_LOCAL = frozenset({"__path__", "__spec__", "__loader__", "__package__", "__name__", "__cached__",
                           "__builtins__", "__getattr__", "__dir__", "__class__", "__dict__", "__file__"})


class RemoteModule(types.ModuleType):
    """A stand-in for a production module: attribute reads forward (nothing is cached)."""

    def __getattr__(self, name: str) -> Any:
        if name in _MODULE_LOCAL or name in HARNESS or name.startswith("_gate"):
            raise AttributeError(name)
        try:
            return channel_of(self).getattr(self, name)
        except AttributeError:
            if name != "__all__":
                raise
        # ``from module import *`` without an __all__: the module's public names, as Python does.
        return [n for n in self.__dir__() if not n.startswith("_")]

    def __dir__(self) -> list[str]:
        names = channel_of(self).op("dir", self)
        return [n for n in names if type(n) is str] if type(names) is list else []


def make_proxy(ch: Link, number: int, desc: list[Any]) -> Any:
    kind = desc[0] if desc and type(desc[0]) is str else "object"
    if kind == "module" and len(desc) == 2 and type(desc[1]) is str:
        existing = sys.modules.get(desc[1])
        if type(existing) is RemoteModule and remote_id(existing) == (ch, number):
            return existing
        module = RemoteModule(desc[1])
        object.__setattr__(module, "_gate_ref", (ch, number))
        return module
    if kind in ("class", "exception") and len(desc) >= 3 and all(type(d) is str for d in desc[1:3]):
        bases: tuple[type, ...] = (object,)
        if kind == "exception" and len(desc) == 4 and type(desc[3]) is list:
            bases = _exception_bases(desc[3])
        name = desc[1].rpartition(".")[2] or "Production"
        cls = RemoteType(name, bases, {"__qualname__": desc[1], "__module__": desc[2], "_gate_ref": (ch, number),
                                        "remote_type": desc[1]})
        return cls
    proxy = object.__new__(Remote)
    object.__setattr__(proxy, "_gate_ref", (ch, number))
    return proxy


def _exception_bases(names: Iterable[Any]) -> tuple[type, ...]:
    """(the nearest builtin exception, ProductionError): ``except ValueError`` still matches."""
    for name in names:
        cls = BUILTIN_EXCEPTIONS.get(name) if type(name) is str and name not in ITERATION_ENDS else None
        if cls is not None and cls is not Exception:
            try:
                type("probe", (cls, ProductionError), {})
            except TypeError:
                continue
            return (cls, ProductionError)
    return (ProductionError,)
