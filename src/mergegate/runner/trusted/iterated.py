"""A call of production's whose value is iterated at once (``for k, v in bi.items():``): the call and ``iter`` in one
request, read off the caller's bytecode.

``for x in obj.method():`` and ``[f(x) for x in mod.func()]`` call production and then ask the value for its
iterator (``GET_ITER``, the next instruction): sealed, two requests.  Where the instruction after the call the
caller is executing is ``GET_ITER``, the subject makes the call and then asks its value for its iterator, in that
order, and sends both (``objects.op_calliter``): nothing runs in the caller between them, so production meets
what one process does.  The subject asks only where the stand-in's ``__iter__`` would ask it (a production object
that is not a class, a module, a builtin iterator or a tuple of its own; plain data is iterated here); an error
from ``iter`` is raised from the caller's ``GET_ITER``, as in one process.  The iterator is given only to that
frame at that instruction, for the very stand-in the call returned, while nothing else was asked of the subject
since; otherwise it is dropped and ``iter`` is a request, as before.
"""

from __future__ import annotations

import itertools
import weakref
from types import CodeType, FrameType
from typing import Any

from mergegate.runner.trusted import callsite

_SITES: dict[CodeType, dict[int, int]] = {}  # per code: a call's offset -> the offset of the GET_ITER after it
_CALLS = frozenset({"CALL", "CALL_KW"})


class Pending:
    """The iterator that came with a call's value: where it is asked for (the frame by its id and code), for what
    (held weakly), and the iterator or the error ``iter`` raised."""

    __slots__ = ("calls", "ch", "code", "failed", "frame", "lasti", "owner", "value")

    def __init__(self, ch: Any, frame: FrameType, lasti: int, owner: Any, value: Any, failed: bool) -> None:
        self.ch, self.frame, self.code, self.lasti, self.calls = ch, id(frame), frame.f_code, lasti, ch.calls
        self.owner, self.value, self.failed = weakref.ref(owner), value, failed


NOW: list[Pending | None] = [None]


def iterated_at_once(frame: FrameType | None) -> int | None:
    """The offset of the ``GET_ITER`` right after the call ``frame`` is executing, if there is one."""
    sites = callsite.sites_of(frame, _SITES, _iterated_calls)
    return sites.get(frame.f_lasti) if sites is not None and frame is not None else None


def call(ch: Any, message: tuple[Any, ...], frame: FrameType, at: int) -> Any:
    """``message`` (a ``calliter`` request: the call's target, method name or None, arguments) sent; its value
    returned, the iterator kept for the ``GET_ITER`` at offset ``at``."""
    reply = ch.exchange(message)
    if reply[0] != "ok":
        raise ch.error(reply, stop_allowed=False)
    if len(reply) != 3 or not (reply[2] is None or (type(reply[2]) is list and reply[2][:1] in (["ok"], ["err"]))):
        raise ch.error(["malformed calliter reply"])
    value = ch.dec(reply[1])
    got = reply[2]
    if got is None:
        return value
    failed = got[0] == "err"
    if not failed and len(got) != 2:
        raise ch.error(["malformed calliter iterator"])
    it = ch.error(got, stop_allowed=False) if failed else ch.dec(got[1])  # at once: a handle named is known
    try:
        NOW[0] = Pending(ch, frame, at, value, it, failed)
    except TypeError:  # a value that is no stand-in (a subject that sent an iterator for plain data): dropped
        NOW[0] = None
    return value


def take(ch: Any, owner: Any, frame: FrameType) -> tuple[bool, Any]:
    """``(True, iterator)`` when ``iter(owner)`` came with the call that returned it (``iter``'s error raised here);
    else ``(False, None)``, and whatever came is dropped."""
    now = NOW[0]
    if now is None:
        return False, None
    NOW[0] = None
    if now.ch is not ch or now.frame != id(frame) or now.code is not frame.f_code or frame.f_lasti != now.lasti \
            or now.owner() is not owner or now.calls != ch.calls:
        return False, None
    if now.failed:
        raise now.value
    return True, now.value


def _iterated_calls(code: CodeType) -> dict[int, int]:
    ops = callsite.instructions(code)
    return {ins.offset: nxt.offset for ins, nxt in itertools.pairwise(ops)
            if ins.opname in _CALLS and nxt.opname == "GET_ITER"}
