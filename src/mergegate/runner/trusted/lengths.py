"""``len(a) == len(b)``: both lengths in one request, read off the caller's bytecode.

Tests compare sizes (``assert len(m1) == len(m2)``: bidict's state machine, thousands of times an example): sealed,
a request each.  Where the frame that called ``len`` of a production object goes on at once -- the value stored in
a local or not, nothing else run -- to call the builtin ``len`` of a local that holds another of the same
channel's stand-ins, the subject takes both lengths, in that order, in one request (``objects.op_lens``), and the
second is given to that frame at that call, for that very stand-in, while nothing else was asked of the subject
since (``answered.py``); otherwise it is dropped and asked again.  An error from the first ``len`` ends it (the
second is never asked); one from the second is raised from the second call.  A stand-in whose length is known here
(items the evaluator holds, a builtin iterator that has none) is never paired: production is asked for nothing the
caller does not ask it.  The local is read off the frame (what ``LOAD_FAST`` or ``LOAD_DEREF`` will push: only a
store into another local and a load of a global run between).
"""

from __future__ import annotations

import builtins
from types import CodeType, FrameType
from typing import Any

from mergegate.runner.trusted import answered, callsite, consumers, frozen

Site = tuple[str, tuple[int, ...]]  # the local whose length is asked next, the offsets its ``len`` may run at
_SITES: dict[CodeType, dict[int, Site]] = {}  # per code: a ``len`` call's offsets -> the next ``len`` of a local
_LOADS = frozenset({"LOAD_FAST", "LOAD_DEREF"})

NOW: list[answered.Ahead | None] = [None]  # the second length (or its error) and whether it failed


def of(ch: Any, owner: Any, frame: FrameType) -> int:
    """``len(owner)`` of a stand-in, and of the local whose length ``frame`` asks next, in one request."""
    if object.__getattribute__(owner, "_gate_ahead") is not None:  # a generator, filter, map...: no length
        raise TypeError(f"object of type '{object.__getattribute__(owner, '_gate_type')}' has no len()")
    items = frozen.items(object.__getattribute__(owner, "_gate_frozen"))
    if items is not None:
        return len(items)
    now = answered.take(NOW, ch, owner, frame)
    if now is not None:
        value, failed = now.value
        if failed:
            raise value
        return _length(value)
    other, site = _next(ch, owner, frame)
    if other is None or site is None:
        return _length(ch.op("len", owner))
    reply = ch.exchange(("lens", [ch.enc(owner), ch.enc(other)]))
    if reply[0] != "ok":
        raise ch.error(reply, stop_allowed=False)
    entries = reply[1] if len(reply) == 2 else None
    if type(entries) is not list or not 1 <= len(entries) <= 2 \
            or not all(type(e) is list and len(e) >= 2 and e[0] in ("ok", "err") for e in entries) \
            or (entries[0][0] == "err" and len(entries) != 1):
        raise ch.error(["malformed lens reply"])
    got = [(ch.error(e, stop_allowed=False), True) if e[0] == "err" else (ch.dec(e[1]), False) for e in entries]
    if got[0][1]:
        raise got[0][0]
    if len(got) == 2:
        answered.keep(NOW, ch, frame, site[1], other, got[1])
    return _length(got[0][0])


def _length(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise TypeError("production returned a bad length")
    return value


def _next(ch: Any, owner: Any, frame: FrameType) -> tuple[Any, Site | None]:
    """The other stand-in whose length the caller asks at once, and where; (None, None) if there is none."""
    sites = callsite.sites_of(frame, _SITES, _len_pairs)
    site = sites.get(frame.f_lasti) if sites is not None else None
    if site is None or frame.f_globals.get("len", frame.f_builtins.get("len")) is not builtins.len:
        return None, None
    other = frame.f_locals.get(site[0])
    if type(other) is not type(owner) or object.__getattribute__(other, "_gate_ref")[0] is not ch \
            or object.__getattribute__(other, "_gate_ahead") is not None \
            or frozen.items(object.__getattribute__(other, "_gate_frozen")) is not None:
        return None, None
    return other, site


def _len_pairs(code: CodeType) -> dict[int, Site]:
    ops = callsite.instructions(code)
    out: dict[int, Site] = {}
    for index in range(len(ops)):
        first = _len_call(ops, index)
        if first is None:
            continue
        after = first[-1] + 1
        stored = ops[after].argval if after < len(ops) and ops[after].opname == "STORE_FAST" else None
        at = after + (stored is not None)
        second = _len_call(ops, at)
        if second is None or ops[at + 1].opname not in _LOADS or type(ops[at + 1].argval) is not str \
                or (stored == ops[at + 1].argval and ops[at + 1].opname == "LOAD_FAST"):
            continue  # not the next thing the caller does, or the local just stored (that is the first length)
        for position in first:
            out[ops[position].offset] = (ops[at + 1].argval, tuple(ops[p].offset for p in second))
    return out


def _len_call(ops: list[Any], index: int) -> list[int] | None:
    """The positions of the call (3.11: ``PRECALL`` and ``CALL``) of ``len`` of one plain load, for the
    ``LOAD_GLOBAL len`` at ``ops[index]``; None where that is not what is there."""
    if index + 2 >= len(ops) or ops[index].opname != "LOAD_GLOBAL" or ops[index].argval != "len" \
            or type(ops[index].arg) is not int or not ops[index].arg & 1 or ops[index + 1].opname not in _LOADS:
        return None
    call = consumers.call_of(ops, index)
    if call != index + 2:
        return None
    return [call, call + 1] if ops[call].opname == "PRECALL" and call + 1 < len(ops) else [call]
