"""The subject: production code of one tree, served to the trusted evaluator over the call protocol.

Runs in the sandbox (``subject/sandbox.py``) as ``python -s -S -P server.py CONFIG``, standard library
only: lowers its limits, puts the production roots on ``sys.path`` (after the standard library, before
third-party sites), imports the modules the oracles name, then forks a fresh child per connection (one
property x seed) that answers until the evaluator hangs up.  Nothing here is trusted: production can
rewrite any of it, so the evaluator believes nothing beyond "this value came back", decoded into its own
types.  This side only has to be correct for honest production code.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import operator
import os
import resource
import signal
import socket
import sys
import types
from collections.abc import Callable
from typing import Any

PROTOCOL_PACKAGE = "_mergegate_protocol"


def load_protocol(folder: str) -> tuple[Any, Any]:
    """codec and wire from ``folder``, as a private package no production module can shadow."""
    pkg = types.ModuleType(PROTOCOL_PACKAGE)
    pkg.__path__ = [folder]
    sys.modules[PROTOCOL_PACKAGE] = pkg
    return (importlib.import_module(f"{PROTOCOL_PACKAGE}.codec"), importlib.import_module(f"{PROTOCOL_PACKAGE}.wire"))


# ---------------------------------------------------------------- the object table and the requests


class Session:
    """One connection: its handles, the ops it answers, the callbacks it may make."""

    def __init__(self, codec: Any, roots: list[str]) -> None:
        self.codec = codec
        self.roots = [os.path.realpath(r).rstrip("/") + "/" for r in roots]
        self.objects: dict[int, Any] = {}
        self.ids: dict[int, int] = {}
        self.reverses: dict[int, Any] = {}
        self.endpoint: Any = None
        self.guessed: Any = None  # the last guess, until replayed or its guesser takes over (``guess.py``)
        self.top = False  # a twin serving its own socket: a guesser may take over (``guess.py``)
        codec.SAME = codec.identity.Identity(1)  # plain values named on this connection (``identity.py``)

    # -- values

    def ref(self, obj: Any) -> list[Any]:
        if type(obj) is Callback or OBJECTS.Reverse in type(obj).__mro__:  # the oracle's own, named back
            return ["cb" if type(obj) is Callback else "rv", object.__getattribute__(obj, "number" if type(obj)
                    is Callback else "_gate_number")]
        key = id(obj)
        handle = self.ids.get(key)
        if handle is not None:
            return ["h", handle]
        handle = len(self.objects) + 1
        self.objects[handle] = obj  # kept alive for the session: its id is never reused
        self.ids[key] = handle
        return ["H", handle, OBJECTS.describe(obj, self.ref)]

    def enc(self, value: Any) -> Any:
        return self.codec.encode(value, self.ref)

    def resolve(self, data: list[Any]) -> Any:
        tag = data[0]
        if tag == "h" and len(data) == 2 and data[1] in self.objects:
            return self.objects[data[1]]
        if tag == "cb" and len(data) in (2, 3) and type(data[1]) is int:  # one stand-in per oracle callable
            params = data[2] if len(data) == 3 and type(data[2]) is list else None
            return self.reverses.get(data[1]) or self.reverses.setdefault(data[1], Callback(self, data[1], params))
        if tag == "tz" and len(data) == 2:
            return self.dec(data[1])  # a zone this side owns (or the evaluator's, as a reverse handle)
        if tag == "rv" and len(data) in (3, 4) and type(data[1]) is int and type(data[2]) is list:
            items = self.dec(data[3]) if len(data) == 4 else None  # an iterator's items: ``objects.Batched``
            known = self.reverses.get(data[1])  # one stand-in per oracle object (the evaluator numbers each once)
            if known is None:
                return self.reverses.setdefault(data[1], OBJECTS.reverse(self, data[1], data[2], items))
            return OBJECTS.refill(known, items)
        if tag == "std" and len(data) == 3 and all(type(d) is str for d in data[1:]):
            return OBJECTS.standard(data[1], data[2])
        if tag == "tv" and len(data) == 2 and type(data[1]) is str:
            import typing

            return typing.TypeVar(data[1])
        raise self.codec.CodecError(f"unknown reference {str(data)[:80]}")

    def dec(self, data: Any) -> Any:
        return self.codec.decode(data, self.resolve)

    def out(self, value: Any) -> Any:
        """A reply's value; an immutable one named as a request's argument is (``identity.py``): passed back, it
        is this very object."""
        return self.codec.encode_call([value], None, self.ref)[0][1]

    # -- requests

    def handle(self, message: list[Any]) -> list[Any]:
        op = OPS.get(message[0])
        try:
            if op is None:
                raise ValueError(f"unknown request {message[0]!r}")
            reply: list[Any] = op(self, *message[1:])
            return reply
        except BaseException as exc:  # every failure goes back as an error reply
            if isinstance(exc, GUESS.TakeOver):  # a guesser becoming this connection's process (``guess.py``)
                raise
            return self.error(exc)

    def error(self, exc: BaseException) -> list[Any]:
        kind = type(exc)
        builtin = next((c.__name__ for c in kind.__mro__ if c.__module__ == "builtins"), "BaseException")
        try:
            message = str(exc)
        except BaseException:
            message = "<unprintable>"
        cls = None if kind.__module__ == "builtins" else self.ref(kind)
        obj = None if kind.__module__ == "builtins" else self.ref(exc)
        args = getattr(exc, "args", None)
        plain = (list(args) if type(args) is tuple and len(args) <= 8
                 and all(type(a) in (int, float, str, bool, type(None)) and len(str(a)) <= 4000 for a in args)
                 else None)  # KeyError(1) arrives as KeyError(1), not KeyError('1')
        return ["err", kind.__qualname__, builtin, cls, message[:4000], obj, plain]

    def check_origin(self, module: Any) -> None:
        """A production name the oracle imports must come from the tree under test."""
        places = []
        file = getattr(module, "__file__", None)
        if file:
            places.append(file)
        places.extend(str(p) for p in (getattr(module, "__path__", None) or ()))
        real = [os.path.realpath(p) for p in places]
        if not real or not all(any(r.startswith(root) for root in self.roots) for r in real):
            where = real[0] if real else "a built-in module"
            raise ImportError(f"production module {module.__name__} resolved to {where}, outside the tree under "
                              "test (an installed copy?); the sealed runner never substitutes it")


class Callback:
    """An oracle callable: calling it asks the evaluator to run it and waits for the answer."""

    def __init__(self, session: Session, number: int, params: list[Any] | None = None) -> None:
        self.session, self.number, self.params = session, number, params

    @property
    def __signature__(self) -> Any:
        """The oracle callable's parameters (names and kinds; a default stands for itself): production that
        inspects a callable's arity sees the oracle's."""
        import inspect

        if self.params is None:
            raise ValueError("no signature")
        return inspect.Signature([inspect.Parameter(str(n), inspect._ParameterKind(int(k)),
                                                    **({"default": None} if d else {})) for n, k, d in self.params])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        s = self.session
        args_data, kwargs_data = s.codec.encode_call(args, kwargs, s.ref)  # named: identity.py
        return OBJECTS.answer(s, s.endpoint.request(["callback", self.number, args_data, kwargs_data]))


def op_import(s: Session, name: str) -> list[Any]:
    module = importlib.import_module(name)
    s.check_origin(module)
    return ["ok", s.enc(module)]


def op_getattr(s: Session, target: Any, name: str) -> list[Any]:
    owner = s.dec(target)
    value = getattr(owner, name)
    return ["ok", s.out(value), "member"] if _member(owner, name, value) else ["ok", s.out(value)]


def _member(owner: Any, name: str, value: Any) -> bool:
    """Whether ``owner.name`` is a member of an Enum class, which Python never lets a program rebind or delete
    (``EnumType.__setattr__``): the evaluator may read it once a run (``Channel.getattr``)."""
    import enum

    if type(owner) is not enum.EnumType:
        return False
    members = type.__getattribute__(owner, "_member_map_")
    return type(members) is dict and members.get(name) is value


def op_setattr(s: Session, target: Any, name: str, value: Any) -> list[Any]:
    setattr(s.dec(target), name, s.dec(value))
    return ["ok", None]


def op_delattr(s: Session, target: Any, name: str) -> list[Any]:
    delattr(s.dec(target), name)
    return ["ok", None]


def op_call(s: Session, target: Any, args: Any, kwargs: Any) -> list[Any]:
    fn, pos, kw = s.dec(target), s.dec(args), s.dec(kwargs)
    return ["ok", s.out(fn(*pos, **kw))]


def op_callattr(s: Session, target: Any, name: str, args: Any, kwargs: Any) -> list[Any]:
    """``target.name(*args, **kwargs)``: an attribute read and its call in one request."""
    fn = getattr(s.dec(target), name)
    pos, kw = s.dec(args), s.dec(kwargs)
    return ["ok", s.out(fn(*pos, **kw))]


def _next(it: Any) -> Any:
    return next(it)


OPERATORS: dict[str, Any] = {
    name: getattr(operator, name) for name in (
        "eq", "ne", "lt", "le", "gt", "ge", "add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
        "matmul", "lshift", "rshift", "and_", "or_", "xor", "neg", "pos", "abs", "invert", "index",
        "contains", "getitem", "setitem", "delitem", "iadd", "isub", "imul", "itruediv", "ifloordiv",
        "imod", "ipow", "imatmul", "ilshift", "irshift", "iand", "ior", "ixor",
    )
}
OPERATORS.update({"len": len, "bool": bool, "hash": hash, "repr": repr, "str": str, "iter": iter, "reversed": reversed,
                  "next": _next, "int": int, "float": float, "complex": complex, "format": format,
                  "divmod": divmod, "round": round, "dir": lambda o: sorted(map(str, dir(o))),
                  "isinstance": isinstance, "issubclass": issubclass, "bytes": bytes,
                  "enter": lambda o: type(o).__enter__(o), "exit": lambda o: type(o).__exit__(o, None, None, None)})


def op_op(s: Session, name: str, args: Any) -> list[Any]:
    fn = OPERATORS.get(name)
    if fn is None:
        raise ValueError(f"unknown operator {name!r}")
    value = fn(*s.dec(args))
    return ["ok", s.out(value) if name in ("getitem", "next") else s.enc(value)]  # an item: passed back, itself


def op_twin(s: Session) -> list[Any]:
    """Fork this connection's process into a twin with the same objects, served on a new socket.

    The evaluator collects an oracle file once, then runs each property x seed against a twin of its
    own, so each run meets production in the state collection left it, in a fresh process of its own.
    The new socket's other end goes back as one byte carrying its descriptor.
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    arm = LIMITS.death_signal()  # the twin dies with this connection's process
    pid = os.fork()
    if pid == 0:  # the twin: serve the new socket until the evaluator hangs up, never the old one
        try:
            arm()
            theirs.close()
            s.endpoint.close()
            s.endpoint = s.endpoint.__class__(ours, s.handle)
            s.top, handed = True, None  # a guesser may take this process's place here, between two requests
            while True:
                try:
                    if handed is not None:  # this is the guesser now: it answers the request it was handed
                        message, handed = handed, None
                        s.endpoint.send(s.handle(message))
                    s.endpoint.serve()
                    break
                except GUESS.TakeOver as taken:
                    handed = taken.message
        finally:
            os._exit(0)
    ours.close()
    try:
        socket.send_fds(s.endpoint.sock, [b"T"], [theirs.fileno()])
    finally:
        theirs.close()
    return ["ok", pid]


def op_affinity(s: Session, cpu: Any) -> list[Any]:
    """This process (and its twins) on the evaluator's core: a ping-pong there is a direct switch (``pool.pin``)."""
    if type(cpu) is not int:
        raise TypeError("affinity takes one core number")
    os.sched_setaffinity(0, {cpu})
    return ["ok", None]


def op_lines(s: Session) -> list[Any]:
    """The lines of the changed production files this process (and its ancestors) ran (``tracer.py``)."""
    return ["ok", s.enc(TRACER[0].report() if TRACER else {"lines": {}, "import": {}})]


TRACER: list[Any] = []  # the fork server's tracer, inherited by every child


def start_tracer(files: list[str]) -> None:
    """Trace the named files' lines from here on (before production is imported)."""
    if files:
        TRACER.append(_beside("tracer.py", "_mergegate_tracer").Tracer(files))
        TRACER[0].start()


OPS: dict[str, Callable[..., list[Any]]] = {
    "affinity": op_affinity, "lines": op_lines,
    "import": op_import, "getattr": op_getattr, "setattr": op_setattr, "delattr": op_delattr,
    "call": op_call, "callattr": op_callattr, "op": op_op, "twin": op_twin,
}


def _beside(filename: str, name: str) -> Any:
    """A module of this folder, by path (``sys.path`` is production's: never searched for our own code)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                     filename))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _load_objects() -> Any:
    """``objects.py`` (snapshots, oracle classes, pickles, reverse handles); its requests join ``OPS``."""
    module = _beside("objects.py", "_mergegate_subject_objects")
    OPS.update(module.OPS)
    return module


OBJECTS = _load_objects()
GUESS = _beside("guess.py", "_mergegate_subject_guess")  # a production iterator's items guessed ahead
OPS.update(GUESS.OPS)
LIMITS = _beside("limits.py", "_mergegate_subject_limits")  # hard limits; dying with the parent


# ---------------------------------------------------------------- the fork server


def serve_connection(conn: socket.socket, codec: Any, wire: Any, roots: list[str], cpu: int | None) -> None:
    if cpu:  # a run that hangs in production stops burning a core once its evaluator gave up
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    session = Session(codec, roots)
    session.endpoint = wire.Endpoint(conn, session.handle)
    session.endpoint.serve()


def main() -> None:
    config = json.loads(sys.argv[1])
    LIMITS.lower_limits(config)
    codec, wire = load_protocol(config["protocol"])
    listener = socket.socket(fileno=int(config["listen_fd"]))
    sys.dont_write_bytecode = True
    if config.get("pycache_prefix"):
        sys.pycache_prefix = config["pycache_prefix"]  # the gate's checked-hash bytecode, read-only
    roots = list(config["prod_roots"])
    stdlib = [p for p in sys.path if p and not p.endswith(("site-packages", "dist-packages"))]
    sys.path[:] = [*stdlib, *roots, *config["site_dirs"]]
    os.chdir(config["tree"])
    start_tracer(list(config.get("trace") or ()))
    for name in config.get("preload", ()):
        with contextlib.suppress(BaseException):  # the child imports it again and reports the error
            importlib.import_module(name)
    if TRACER:
        TRACER[0].mark_imported()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    die_with_parent = LIMITS.death_signal()
    import gc

    gc.collect()
    gc.freeze()  # production's imported objects: shared by every child, never rescanned
    gate = os.getppid()
    listener.settimeout(2.0)  # every 2 s without a connection: is the gate that started this server still there?
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if os.getppid() != gate:  # the gate was killed: no one connects again (outside bubblewrap's
                os._exit(0)  # --die-with-parent, this is what ends a server it left behind)
            continue
        if os.fork() == 0:
            die_with_parent()
            listener.close()
            try:
                serve_connection(conn, codec, wire, roots, config.get("cpu_seconds"))
            finally:
                os._exit(0)
        conn.close()


if __name__ == "__main__":
    main()
