"""The evaluator's connection to one subject: requests out, values decoded into this process's types.

While it waits for a reply it serves the subject's callbacks (an oracle callable
production was handed); whatever such a callback raises is re-raised when the
production call returns, so production can never swallow the property's own errors.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

from mergegate.runner.protocol import codec, identity, wire
from mergegate.runner.trusted import classdefs, faults, guess, reverse, stdnames, zones
from mergegate.runner.trusted.faults import ProductionError, SealedCallError, SubjectGone
from mergegate.runner.trusted.made import make_proxy
from mergegate.runner.trusted.methods import Method
from mergegate.runner.trusted.proxies import BUILTIN_EXCEPTIONS, ITERATION_ENDS, RemoteType, remote_id

_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.values()), type({}.items()))


def _copy(obj: Any) -> Any:
    """What production gets of an oracle object: a deep copy (arguments are copies: production never writes
    into the property's values); an iterator it can only advance, as it is."""
    import copy

    try:
        return copy.deepcopy(obj)
    except Exception as exc:
        if getattr(type(obj), "__next__", None) is not None:
            faults.handled(exc)
            return obj
        raise codec.CodecError(f"cannot pass a {type(obj).__qualname__} to production code (it cannot be "
                               "copied)") from None


def _protocols(kind: type) -> list[str]:
    """The dunders an object of the oracle's has (its class's own namespaces, never the metaclass's)."""
    out = []
    for name in ("__getitem__", "__len__", "__iter__", "__next__", "__contains__", "__call__", "__hash__"):
        found = next((vars(k)[name] for k in kind.__mro__ if name in vars(k)), None)
        if found is not None:
            out.append(name)
    return out


def _params(fn: Any) -> list[Any] | None:
    """An oracle callable's parameters as ``[name, kind, has_default]`` (the subject's ``Callback.__signature__``)."""
    import inspect

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [[p.name, int(p.kind), p.default is not p.empty] for p in sig.parameters.values()]


class Channel:
    """The evaluator's connection to one subject process (made on first use)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.endpoint: wire.Endpoint | None = None
        self.proxies: dict[int, Any] = {}
        self.callbacks: list[Callable[..., Any]] = []
        self.methods: set[tuple[str, str]] = set()
        self.subclasses: dict[tuple[int, int], bool] = {}  # issubclass of two production classes (``frozen.py``)
        self.members: dict[tuple[int, str], Any] = {}  # a production Enum's members read in this run (``getattr``)
        self.mirrors: dict[int, tuple[type, Any]] = {}
        self.mirrored: dict[int, Any] = {}
        self.callback_ids: dict[int, int] = {}
        self.originals: dict[int, Any] = {}  # a reverse handle's number -> the oracle's own object (copies go)
        self.params: dict[int, list[Any] | None] = {}  # a callback's number -> its parameters
        self.sticky: list[BaseException] = []
        self.guessing = guess.Guessing()  # a loop's next items guessed ahead (``guess.py``)
        self.calls = 0
        self.waited = 0.0  # seconds inside requests: production's work and the round trips
        codec.SAME = identity.Identity(0)  # plain values named on this connection (one channel per process)

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
            codec.SAME = identity.Identity(0)  # a fresh subject process knows no names
            self.members.clear()
            self.guessing = guess.Guessing()
            self._share_core()
        return self.endpoint

    def _share_core(self) -> None:
        """Ask the subject's process to run on this process's core, when that is one core (pool.pin).

        Speed only: the request is production's to ignore, and its answer is not read.
        """
        try:
            cpus = sorted(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            return
        if len(cpus) == 1:
            calls, waited = self.calls, self.waited  # not a request the property made
            with contextlib.suppress(Exception):  # production's answer (SubjectGone, a BaseException, ends the run)
                self.request("affinity", cpus[0])
            self.calls, self.waited = calls, waited

    def request(self, *message: Any) -> Any:
        return self._result(self._exchange(message), stop_allowed=message[:2] == ("op", "next"))

    def raw(self, *message: Any) -> Any:
        """A request whose ``ok`` value is returned as the JSON it came as (a snapshot), never decoded."""
        reply = self._exchange(message)
        if reply[0] == "ok" and len(reply) >= 2:
            return reply[1]
        return self._result(reply, stop_allowed=False)

    def _exchange(self, message: tuple[Any, ...], guessing: bool = False) -> list[Any]:
        if self.guessing.target is not None and not guessing:
            guess.settle(self)  # another request: production's process first catches up with a guess (``guess.py``)
        self.calls += 1
        started = time.perf_counter()
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
        self.waited += time.perf_counter() - started
        self._raise_sticky()
        return reply

    def exchange(self, message: tuple[Any, ...], guessing: bool = False) -> list[Any]:
        """One request and its reply, undecoded (``ahead.py`` reads a batch's items and its end; ``guess.py``
        its guesses, ``guessing``: without first settling one)."""
        return self._exchange(message, guessing)

    def error(self, reply: Any, stop_allowed: bool = True) -> BaseException:
        """The exception an error reply names (``StopIteration`` only where it ends an iterator)."""
        if type(reply) is list and reply[:1] == ["err"] and len(reply) == 7:
            return self._exception(reply, stop_allowed)
        return SealedCallError(f"the subject sent a malformed reply: {str(reply)[:120]}")

    def twin(self) -> int | None:
        """A connection to a twin of this channel's subject process (same objects, its own process).

        Returns the new socket's descriptor, or None when nothing is connected yet (a child then
        connects afresh on first use).  Anything but one socket and an ``ok`` is SubjectGone.
        """
        if self.endpoint is None:
            return None
        guess.settle(self)  # the twin starts where one process would be
        import stat

        endpoint, fds = self.endpoint, list[int]()
        try:
            endpoint.send(["twin"])
            data, fds, _flags, _addr = socket.recv_fds(endpoint.sock, 1, 4)
            reply = endpoint.recv()
            if data != b"T" or len(fds) != 1 or not stat.S_ISSOCK(os.fstat(fds[0]).st_mode) or reply[0] != "ok":
                raise codec.CodecError("the subject did not answer a twin request with one socket")
        except (OSError, wire.ChannelClosed, codec.CodecError) as exc:
            for fd in fds:
                os.close(fd)
            self._close()
            raise SubjectGone(f"the subject could not fork a twin: {exc}") from None
        return int(fds[0])

    def attach(self, fd: int | None) -> None:
        """Talk to the twin on ``fd`` from now on (None: connect afresh on first use); the connection this
        replaces is the caller's to keep (``inplace.enter``)."""
        self.endpoint = wire.Endpoint(socket.socket(fileno=fd), self._serve_callback) if fd is not None else None
        self.calls, self.waited = 0, 0.0
        self.members.clear()  # a run reads them from its own twin
        self.sticky.clear()
        self.guessing = guess.Guessing()

    def _close(self) -> None:
        if self.endpoint is not None:
            self.endpoint.close()
        self.endpoint = None
        self.members.clear()
        self.guessing = guess.Guessing()

    def _raise_sticky(self) -> None:
        if self.sticky:
            exc = self.sticky.pop(0)
            self.sticky.clear()
            raise exc

    def _result(self, reply: list[Any], stop_allowed: bool) -> Any:
        if reply[0] == "ok" and len(reply) >= 2:
            return self.dec(reply[1])
        raise self.error(reply, stop_allowed)

    # -- values

    def enc(self, value: Any) -> Any:
        try:
            return codec.encode(value, self._ref)
        except codec.CodecError as exc:
            raise SealedCallError(f"{exc}; sealed calls carry plain data, production objects and callables "
                                  "(or mark the property isolation: shared)") from None

    def args(self, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> tuple[list[Any], list[Any]]:
        """A request's arguments, their immutable plain values named (``identity.py``: ``f(x) is x`` holds)."""
        try:
            return codec.encode_call(args, kwargs, self._ref)
        except codec.CodecError as exc:
            raise SealedCallError(f"{exc}; sealed calls carry plain data, production objects and callables "
                                  "(or mark the property isolation: shared)") from None

    def _ref(self, obj: Any) -> list[Any]:
        if type(obj) is zones.Zone:
            obj = obj.handle
        elif type(obj) is Method:
            obj = obj.gate_read()
        ref = remote_id(obj)
        if ref is not None:
            if ref[0] is not self and getattr(type(ref[0]), "bind", None) is not None:
                ref = getattr(ref[0], "bind")(obj)  # noqa: B009 - a class or module of an earlier run (``inplace.py``)
            if ref[0] is not self:
                raise codec.CodecError(getattr(type(ref[0]), "why", "a production object from another subject"))
            return ["h", ref[1]]
        named = stdnames.standard(obj)
        if named is not None:
            return named
        copied = self._mirrored(obj)
        if copied is not None:
            return copied
        if callable(obj) and not isinstance(obj, type):
            key = id(obj)
            number = self.callback_ids.get(key)
            if number is None:
                number = self.callback_ids[key] = len(self.callbacks)
                self.callbacks.append(obj)
                self.params[number] = _params(obj)  # read once: the subject keeps one stand-in per number
            return ["cb", number, self.params[number]]
        if type(obj) in _VIEWS:  # a view of one of the oracle's dicts: its items, in order, by value
            return codec.encode(list(obj), self._ref)  # type: ignore[no-any-return]
        if isinstance(obj, tuple) and not reverse.compares_itself(type(obj)):
            # an oracle's own tuple subclass (a named tuple with methods) reaches production as the tuple it is;
            # one with its own ``==``/``!=``/``hash`` goes as the object below, which answers them itself
            return codec.encode(tuple(tuple.__iter__(obj)), self._ref)  # type: ignore[no-any-return]
        if not isinstance(obj, type):  # an object of the oracle's: production's uses of a copy come back here
            number = self.callback_ids.get(id(obj))
            if number is None or self.originals.get(number) is not obj:  # one number per object, so production
                number = self.callback_ids[id(obj)] = len(self.callbacks)  # holds one stand-in for it
                self.callbacks.append(obj)
                self.originals[number] = obj
            copied = self.callbacks[number] = _copy(obj)  # a fresh copy each time it is passed: the oracle's state now
            return ["rv", number, _protocols(type(obj)), *reverse.items(copied, self._ref)]
        raise codec.CodecError(f"cannot pass a {type(obj).__qualname__} to production code")

    def _mirrored(self, obj: Any) -> list[Any] | None:
        """An oracle class as the subject's copy of it; a member of an oracle Enum as the copy's member."""
        import enum

        if isinstance(obj, type):
            made = classdefs.mirror(self, obj)
        elif isinstance(obj, enum.Enum):
            made = classdefs.mirror(self, type(obj))
            made = self.getattr(made, obj.name) if made is not None else None
        else:
            return None
        ref = remote_id(made)
        if ref is None:
            return None
        self.mirrored[ref[1]] = obj  # coming back, the copy is the oracle's own class (or member) again
        return ["h", ref[1]]

    def dec(self, data: Any, copies: bool = False) -> Any:
        """``data`` decoded; an oracle object production hands back is the oracle's own one (``copies``: the copy
        production was given, inside the copy's own methods and operators, ``reverse.py``)."""
        try:
            return codec.decode(data, self._copies if copies else self._resolve)
        except codec.CodecError as exc:
            raise SealedCallError(f"the subject sent a value that cannot be copied here: {exc}") from None

    def _copies(self, data: list[Any]) -> Any:
        if data[0] == "rv" and len(data) == 2 and type(data[1]) is int and data[1] in self.originals:
            return self.callbacks[data[1]]
        return self._resolve(data)

    def _resolve(self, data: list[Any]) -> Any:
        if data[0] in ("rv", "cb") and len(data) == 2 and type(data[1]) is int and 0 <= data[1] < len(self.callbacks):
            return self.originals.get(data[1], self.callbacks[data[1]])  # what the oracle passed, as it is
        if data[0] == "tz" and len(data) == 2:
            zone = self.dec(data[1])
            if remote_id(zone) is None:
                raise codec.CodecError("a zoned datetime whose zone is not a production object")
            return zones.Zone(zone)
        if data[0] in ("h", "H") and len(data) >= 2 and type(data[1]) is int and data[1] in self.mirrored:
            return self.mirrored[data[1]]
        if data[0] == "h" and len(data) == 2 and data[1] in self.proxies:
            return self.proxies[data[1]]
        if data[0] == "H" and len(data) == 3 and type(data[1]) is int and type(data[2]) is list:
            proxy = self.proxies.get(data[1])
            if proxy is None:
                proxy = self.proxies[data[1]] = make_proxy(self, data[1], data[2])
            return proxy
        raise codec.CodecError(f"unknown reference {str(data)[:80]}")

    def _exception(self, reply: list[Any], stop_allowed: bool) -> BaseException:
        _tag, qualname, builtin_name, cls_ref, message, obj_ref, plain_args = reply
        message = str(message)
        args = plain_args if type(plain_args) is list and len(plain_args) <= 8 and all(
            type(a) in (int, float, str, bool, type(None)) for a in plain_args) else [message]
        if builtin_name in ITERATION_ENDS and not stop_allowed:
            exc = ProductionError(f"{qualname} raised outside iteration (it would end the property's own loop): "
                                  f"{message}")
            exc.remote_type = str(qualname)
            return exc
        if cls_ref is None:
            cls = BUILTIN_EXCEPTIONS.get(builtin_name) if builtin_name == qualname else None
            if cls is not None:
                try:
                    return cls(*args)
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
        if message[0] in ("rget", "rop"):
            return reverse.serve(self, message)
        if message[0] == "rmod":
            return reverse.module_name(self, message)
        if message[0] != "callback" or len(message) != 4 or type(message[1]) is not int \
                or not 0 <= message[1] < len(self.callbacks) or message[1] in self.originals:
            self.sticky.append(SealedCallError(f"the subject asked for an unknown callback: {str(message)[:120]}"))
            return ["err", "ValueError", "the subject asked for an unknown callback"]  # honest production never does
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
        return self.request("call", self.enc(target), *self.args(args, kwargs))

    def op(self, name: str, *args: Any) -> Any:
        return self.request("op", name, self.args(args)[0])

    def getattr(self, target: Any, name: str) -> Any:
        """``target.name``; a member of a production Enum class is asked once a run.

        The subject says which reads are members (``server._member``); Python refuses to rebind or delete
        one through its class (``EnumType.__setattr__``), so a second read gives the first one's answer.
        Only a class's attributes are kept: a subject that calls every read a member can make a property
        see a class attribute's first value again, never a module's or an object's."""
        ref = remote_id(target)
        key = (ref[1], name) if ref is not None and ref[0] is self and type(target) is RemoteType else None
        if key is not None and key in self.members:
            return self.members[key]
        reply = self._exchange(("getattr", self.enc(target), name))
        value = self._result(reply, stop_allowed=False)
        if key is not None and reply[2:] == ["member"]:
            self.members[key] = value
        return value
