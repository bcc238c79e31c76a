"""A method read off a production object and called at once: one request, not two."""

from __future__ import annotations

import inspect
import sys
from typing import Any

from mergegate.runner.trusted import compared, iterated
from mergegate.runner.trusted.link import Link


def _channel(owner: Any) -> Link:
    return object.__getattribute__(owner, "_gate_ref")[0]  # type: ignore[no-any-return]


class Method:
    """``handle.name`` where ``name`` was a method of the handle's type: called, the read and the call are one
    request (``callattr``, the same ``getattr`` then call in the subject); used any other way, it is read."""

    __slots__ = ("_gate_name", "_gate_self", "_gate_value")

    def __init__(self, owner: Any, name: str) -> None:
        self._gate_self, self._gate_name, self._gate_value = owner, name, None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ch, frame = _channel(self._gate_self), sys._getframe(1)
        done, value = fused_call(ch, self._gate_self, self._gate_name, args, kwargs, frame)
        return value if done else ch.request("callattr", ch.enc(self._gate_self), self._gate_name,
                                             *ch.args(args, kwargs))

    def gate_read(self) -> Any:
        if self._gate_value is None:
            self._gate_value = _channel(self._gate_self).getattr(self._gate_self, self._gate_name)
        return self._gate_value

    def __getattr__(self, name: str) -> Any:
        return getattr(self.gate_read(), name)

    def __eq__(self, other: object) -> Any:
        return self.gate_read() == (other.gate_read() if type(other) is Method else other)

    def __hash__(self) -> int:
        return hash(self.gate_read())

    def __repr__(self) -> str:
        return repr(self.gate_read())

    @property
    def __signature__(self) -> inspect.Signature:
        return self.gate_read().__signature__  # type: ignore[no-any-return]


def signature(handle: Any) -> inspect.Signature:
    """A production callable's or class's parameters, as the subject reads them (``__signature__``)."""
    ch = _channel(handle)
    params = ch.raw("signature", ch.enc(handle))  # plain JSON: the defaults and annotations decoded below
    out = []
    for name, kind, has_default, default, *note in params:
        extra: dict[str, Any] = {"default": ch.dec(default)} if has_default else {}
        annotation = ch.dec(note[0]) if note and note[0] is not None else None
        if isinstance(annotation, type):  # a class (the evaluator's int, a production class's stand-in)
            extra["annotation"] = annotation
        out.append(inspect.Parameter(str(name), inspect._ParameterKind(int(kind)), **extra))
    return inspect.Signature(out)


def fused_call(ch: Any, owner: Any, name: str | None, args: Any, kwargs: Any, frame: Any) -> tuple[bool, Any]:
    """``(True, value)`` for a call of ``owner`` (its method ``name``, or itself) whose value the caller iterates
    (``iterated.py``: ``for x in obj.f():``) or compares (``compared.py``: ``assert expected == obj.f()``) at once,
    made with that next step in one request; ``(False, None)`` for any other: a plain call."""
    site = iterated.iterated_at_once(frame)
    if site is not None:
        return True, iterated.call(ch, ch.enc(owner), name, ch.args(args, kwargs), frame, site)
    fused = compared.ahead(frame, ch)
    if fused is not None:
        return True, compared.call(ch, ch.enc(owner), name, ch.args(args, kwargs), frame, *fused)
    return False, None
