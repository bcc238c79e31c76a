"""Stand-ins for production code inside the trusted evaluator.

An import finder, first on ``sys.meta_path``, claims every production name: the
oracle gets a stand-in module whose attributes, functions, classes and objects
forward to the subject over the call protocol.  No production file is ever
opened here, and an installed copy of the project is never reached: the finder
answers before any path is searched.

What comes back is decoded into this process's own types (``codec.decode``);
everything else is a ``Remote`` handle.  A production exception arrives as the
builtin exception of the same name, or as a ``ProductionError`` subclass named
after its type, never as one of Hypothesis's or pytest's control exceptions.
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import inspect
import socket
import sys
import types
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from mergegate.runner.protocol import codec, wire


class ProductionError(Exception):
    """Production code raised an exception that is not a builtin one (its type is in ``remote_type``)."""

    remote_type = "?"

    def __getattr__(self, name: str) -> Any:
        obj = self.__dict__.get("_gate_obj")
        if obj is None or name.startswith("_gate"):
            raise AttributeError(name)
        return getattr(obj, name)


class ProductionImportError(ImportError):
    """A production module failed to import in the subject: production's failure, not the oracle's."""


class SealedCallError(TypeError):
    """A value cannot cross the boundary, or the protocol broke; the message names the fix."""


class SubjectGone(BaseException):
    """The subject process ended (or could not be reached): the run ends here, as a crash.

    A BaseException, so Hypothesis stops at once instead of replaying examples
    against a process that no longer exists; the evaluator reports ``Crash:subject``.
    """


BUILTIN_EXCEPTIONS = {name: cls for name, cls in vars(builtins).items()
                      if isinstance(cls, type) and issubclass(cls, Exception)
                      and not issubclass(cls, BaseExceptionGroup)}
# End an iteration the property drives (a map(), a for loop): only ever the answer to ``next``.
ITERATION_ENDS = frozenset({"StopIteration", "StopAsyncIteration"})


class Channel:
    """The evaluator's connection to one subject process (made on first use)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.endpoint: wire.Endpoint | None = None
        self.proxies: dict[int, Any] = {}
        self.callbacks: list[Callable[..., Any]] = []
        self.callback_ids: dict[int, int] = {}
        self.sticky: list[BaseException] = []
        self.calls = 0

    # -- the connection

    def _endpoint(self) -> wire.Endpoint:
        if self.endpoint is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self.path)
            except OSError as exc:
                sock.close()
                raise SubjectGone(f"cannot reach the subject process: {exc}") from None
            self.endpoint = wire.Endpoint(sock, self._serve_callback)
        return self.endpoint

    def request(self, *message: Any) -> Any:
        self.calls += 1
        try:
            reply = self._endpoint().request(list(message))
        except wire.ChannelClosed:
            raise SubjectGone("the subject process ended during a call (crashed, exited or was killed)") from None
        except codec.CodecError as exc:
            # A frame that does not parse leaves the stream out of step: nothing after it is believed.
            self._close()
            raise SubjectGone(f"the subject broke the protocol: {exc}") from None
        except OSError as exc:
            raise SubjectGone(f"the channel to the subject failed: {exc}") from None
        self._raise_sticky()
        return self._result(reply, stop_allowed=message[:2] == ("op", "next"))

    def _close(self) -> None:
        if self.endpoint is not None:
            self.endpoint.close()
        self.endpoint = None

    def _raise_sticky(self) -> None:
        if self.sticky:
            exc = self.sticky.pop(0)
            self.sticky.clear()
            raise exc

    def _result(self, reply: list[Any], stop_allowed: bool) -> Any:
        if reply[0] == "ok" and len(reply) >= 2:
            return self.dec(reply[1])
        if reply[0] == "err" and len(reply) == 6:
            raise self._exception(reply, stop_allowed)
        raise SealedCallError(f"the subject sent a malformed reply: {str(reply)[:120]}")

    # -- values

    def enc(self, value: Any) -> Any:
        try:
            return codec.encode(value, self._ref)
        except codec.CodecError as exc:
            raise SealedCallError(f"{exc}; sealed calls carry plain data, production objects and callables "
                                  "(or mark the property isolation: shared)") from None

    def _ref(self, obj: Any) -> list[Any]:
        ref = _remote_id(obj)
        if ref is not None:
            if ref[0] is not self:
                raise codec.CodecError("a production object from another subject")
            return ["h", ref[1]]
        if callable(obj) and not isinstance(obj, type):
            key = id(obj)
            number = self.callback_ids.get(key)
            if number is None:
                number = self.callback_ids[key] = len(self.callbacks)
                self.callbacks.append(obj)
            return ["cb", number]
        raise codec.CodecError(f"cannot pass a {type(obj).__qualname__} to production code")

    def dec(self, data: Any) -> Any:
        try:
            return codec.decode(data, self._resolve)
        except codec.CodecError as exc:
            raise SealedCallError(f"the subject sent a malformed value: {exc}") from None

    def _resolve(self, data: list[Any]) -> Any:
        if data[0] == "h" and len(data) == 2 and data[1] in self.proxies:
            return self.proxies[data[1]]
        if data[0] == "H" and len(data) == 3 and type(data[1]) is int and type(data[2]) is list:
            proxy = self.proxies.get(data[1])
            if proxy is None:
                proxy = self.proxies[data[1]] = _make_proxy(self, data[1], data[2])
            return proxy
        raise codec.CodecError(f"unknown reference {str(data)[:80]}")

    def _exception(self, reply: list[Any], stop_allowed: bool) -> BaseException:
        _tag, qualname, builtin_name, cls_ref, message, obj_ref = reply
        message = str(message)
        if builtin_name in ITERATION_ENDS and not stop_allowed:
            exc = ProductionError(f"{qualname} raised outside iteration (it would end the property's own loop): "
                                  f"{message}")
            exc.remote_type = str(qualname)
            return exc
        if cls_ref is None:
            cls = BUILTIN_EXCEPTIONS.get(builtin_name) if builtin_name == qualname else None
            if cls is not None:
                try:
                    return cls(message)
                except Exception:  # a builtin whose constructor wants more: fall through
                    pass
            exc = ProductionError(f"{qualname}: {message}")
            exc.remote_type = str(qualname)
            return exc
        cls = self.dec(cls_ref)
        if not (isinstance(cls, type) and issubclass(cls, ProductionError)):
            return ProductionError(f"{qualname}: {message}")
        raised: BaseException = type.__call__(cls, message)
        if obj_ref is not None:
            raised.__dict__["_gate_obj"] = self.dec(obj_ref)
        return raised

    # -- callbacks: production calling an oracle callable

    def _serve_callback(self, message: list[Any]) -> list[Any]:
        if message[0] != "callback" or len(message) != 4 or type(message[1]) is not int \
                or not 0 <= message[1] < len(self.callbacks):
            return ["err", "ValueError", "the subject asked for an unknown callback"]
        fn = self.callbacks[message[1]]
        try:
            args, kwargs = self.dec(message[2]), self.dec(message[3])
            if type(args) is not list or type(kwargs) is not dict or not all(type(k) is str for k in kwargs):
                raise SealedCallError("malformed callback arguments")
            result = fn(*args, **kwargs)
            return ["ok", self.enc(result)]
        except BaseException as exc:
            # Production may catch what it is told, but whatever the property's own code raised
            # is re-raised when the call returns: the property's verdict is not production's to swallow.
            self.sticky.append(exc)
            return ["err", type(exc).__name__ if type(exc).__name__ in BUILTIN_EXCEPTIONS else "Exception",
                    str(exc)[:2000]]

    # -- the operations the stand-ins use

    def call(self, target: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        # Arguments are copies: production can never write into the property's own values.
        return self.request("call", self.enc(target), self.enc(list(args)), self.enc(kwargs))

    def op(self, name: str, *args: Any) -> Any:
        return self.request("op", name, self.enc(list(args)))

    def getattr(self, target: Any, name: str) -> Any:
        return self.request("getattr", self.enc(target), name)


# ---------------------------------------------------------------- proxies


def _remote_id(obj: Any) -> tuple[Channel, int] | None:
    if type(obj) is Remote or type(obj) is RemoteModule:
        return object.__getattribute__(obj, "_gate_ref")  # type: ignore[no-any-return]
    if isinstance(obj, RemoteType):
        return type.__getattribute__(obj, "_gate_ref")  # type: ignore[no-any-return]
    return None


def _ch(obj: Any) -> Channel:
    ref = _remote_id(obj)
    assert ref is not None
    return ref[0]


class Remote:
    """An opaque handle to an object that stays in the subject; every use is a request."""

    __slots__ = ("__weakref__", "_gate_ref")

    def __getattr__(self, name: str) -> Any:
        return _ch(self).getattr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        _ch(self).request("setattr", _ch(self).enc(self), name, _ch(self).enc(value))

    def __delattr__(self, name: str) -> None:
        _ch(self).request("delattr", _ch(self).enc(self), name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _ch(self).call(self, args, kwargs)

    def __repr__(self) -> str:
        text = _ch(self).op("repr", self)
        return text if type(text) is str else "<production object>"

    def __str__(self) -> str:
        text = _ch(self).op("str", self)
        return text if type(text) is str else "<production object>"

    def __hash__(self) -> int:
        value = _ch(self).op("hash", self)
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
        value = _ch(self).op("len", self)
        if type(value) is not int or value < 0:
            raise TypeError("production returned a bad length")
        return value

    def __iter__(self) -> Any:
        return _ch(self).op("iter", self)

    def __next__(self) -> Any:
        return _ch(self).op("next", self)

    def __enter__(self) -> Any:
        return _ch(self).op("enter", self)

    def __exit__(self, *exc: object) -> Literal[False]:
        # Production is told the block ended, never what the property raised, and it can
        # never swallow that exception: the property's verdict is not production's to change.
        _ch(self).op("exit", self)
        return False

    def __signature__(self) -> inspect.Signature:  # replaced by a property below
        raise NotImplementedError


def _signature(self: Any) -> inspect.Signature:
    ch = _ch(self)
    params = ch.request("signature", ch.enc(self))
    out = []
    for name, kind, has_default, default in params:
        extra = {"default": ch.dec(default) if has_default else None} if has_default else {}
        out.append(inspect.Parameter(str(name), inspect._ParameterKind(int(kind)), **extra))
    return inspect.Signature(out)


Remote.__signature__ = property(_signature)  # type: ignore[assignment,method-assign]


def _is_remote(value: Any) -> bool:
    return _remote_id(value) is not None


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
        return _ch(self).op(name, *args, self) if reflected else _ch(self).op(name, self, *args)
    return method


# Comparisons, arithmetic and membership with a production object are production's answers to a
# question about the property's data.  Between two production objects that is production's own
# semantics (documented); with plain data it is refused, so an object that "equals" everything can
# never stand in for the plain value a property expected.
_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift",
           "and", "or", "xor")
for _name in _BINARY:
    _op = _name + "_" if _name in ("and", "or") else _name
    setattr(Remote, f"__{_name}__", _forward(_op, strict=True))
    setattr(Remote, f"__r{_name}__", _forward(_op, reflected=True, strict=True))
    setattr(Remote, f"__i{_name}__", _forward("i" + _name, strict=True))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(Remote, f"__{_name}__", _forward(_name, strict=True))
setattr(Remote, "__divmod__", _forward("divmod", strict=True))  # noqa: B010
setattr(Remote, "__rdivmod__", _forward("divmod", reflected=True, strict=True))  # noqa: B010
setattr(Remote, "__contains__", lambda self, item: _forward("contains", strict=True)(self, item) is True)  # noqa: B010
for _name in ("neg", "pos", "abs", "invert", "index", "getitem", "setitem", "delitem", "int", "float",
              "complex", "format", "round", "bytes"):
    setattr(Remote, f"__{_name}__", _forward(_name))
setattr(Remote, "__dir__", lambda self: list(_ch(self).op("dir", self)))  # noqa: B010


class RemoteType(type):
    """The metaclass of stand-ins for production classes: construction, attributes, checks forward."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return _ch(cls).call(cls, args, kwargs)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in ("__members__", "__annotations__"):
            raise AttributeError(name)  # Python's own probes (e.g. __set_name__) stay local
        return _ch(cls).getattr(cls, name)

    def __instancecheck__(cls, obj: Any) -> bool:
        if not _is_remote(obj):
            return False  # the evaluator's own value is never a production instance
        return _ch(cls).op("isinstance", obj, cls) is True

    def __subclasscheck__(cls, sub: Any) -> bool:
        if isinstance(sub, RemoteType):
            return _ch(cls).op("issubclass", sub, cls) is True
        return type.__subclasscheck__(cls, sub)

    def __iter__(cls) -> Any:
        return _ch(cls).op("iter", cls)

    def __len__(cls) -> int:
        return int(_ch(cls).op("len", cls))

    def __bool__(cls) -> bool:
        return True  # a class is true; ``if cls:`` must not ask production for its length

    def __getitem__(cls, key: Any) -> Any:
        return _ch(cls).op("getitem", cls, key)

    def __contains__(cls, item: Any) -> bool:
        if not _is_remote(item):
            raise _refuse("in", item)
        return _ch(cls).op("contains", cls, item) is True

    def __repr__(cls) -> str:
        return f"<production class {type.__getattribute__(cls, '__qualname__')}>"


# The import system's own attributes of a module: local, never asked of production.
# ``__file__`` too: the evaluator never opens a path production chooses (Hypothesis reads the source
# of "local" modules for constants; a stand-in has no source here).
_MODULE_LOCAL = frozenset({"__path__", "__spec__", "__loader__", "__package__", "__name__", "__cached__",
                           "__builtins__", "__getattr__", "__dir__", "__class__", "__dict__", "__file__"})


class RemoteModule(types.ModuleType):
    """A stand-in for a production module: attribute reads forward (nothing is cached)."""

    def __getattr__(self, name: str) -> Any:
        if name in _MODULE_LOCAL or name.startswith("_gate"):
            raise AttributeError(name)
        try:
            return _ch(self).getattr(self, name)
        except AttributeError:
            if name != "__all__":
                raise
        # ``from module import *`` without an __all__: the module's public names, as Python does.
        return [n for n in self.__dir__() if not n.startswith("_")]

    def __dir__(self) -> list[str]:
        names = _ch(self).op("dir", self)
        return [n for n in names if type(n) is str] if type(names) is list else []


def _make_proxy(ch: Channel, number: int, desc: list[Any]) -> Any:
    kind = desc[0] if desc and type(desc[0]) is str else "object"
    if kind == "module" and len(desc) == 2 and type(desc[1]) is str:
        existing = sys.modules.get(desc[1])
        if type(existing) is RemoteModule and _remote_id(existing) == (ch, number):
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


# ---------------------------------------------------------------- the import finder


class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Claims the production names; each import is a request to the subject."""

    def __init__(self, names: Iterable[str], channel: Channel) -> None:
        self.names = frozenset(names)
        self.channel = channel

    def claims(self, fullname: str) -> bool:
        return fullname.partition(".")[0] in self.names

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not self.claims(fullname):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        try:
            module = self.channel.request("import", spec.name)
        except Exception as exc:
            raise ProductionImportError(f"production module {spec.name} failed to import in the subject: "
                                        f"{type(exc).__name__}: {exc}", name=spec.name) from None
        if type(module) is not RemoteModule:
            raise ProductionImportError(f"the subject did not answer the import of {spec.name} with a module",
                                        name=spec.name)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []  # a package for the import system: submodules come through this finder too


def install(names: Iterable[str], socket_path: str) -> Finder:
    """Put the finder first on ``sys.meta_path``; nothing is contacted until an import needs it."""
    finder = Finder(names, Channel(socket_path))
    sys.meta_path.insert(0, finder)
    return finder
