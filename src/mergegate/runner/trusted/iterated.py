"""A call of production's whose value is iterated at once (``for k, v in bi.items():``, ``frozenset(m.values())``): the
call and ``iter`` in one request, read off the caller's bytecode.

``for x in obj.method():`` and ``[f(x) for x in mod.func()]`` call production and then ask the value for its
iterator (``GET_ITER``, the next instruction): sealed, two requests.  Where the instruction after the call the
caller is executing is ``GET_ITER``, the subject makes the call and then asks its value for its iterator, in that
order, and sends both (``objects.op_calliter``): nothing runs in the caller between them, so production meets
what one process does.  The subject asks only where the stand-in's ``__iter__`` would ask it (a production object
that is not a class, a module, a builtin iterator or a tuple of its own; plain data is iterated here); an error
from ``iter`` is raised from the caller's ``GET_ITER``, as in one process.

``set(x.f())`` and ``frozenset(x.f())`` (``consumers.UNSIZED``: builtins that ask their argument for nothing but its
iterator, and drain it) are the same with the builtin's call next: the subject also reads the iterator's first
batch, as ``drain`` does for ``frozenset(x)`` (``ahead.py``), so call, ``iter`` and the items are one request
where they were three.  ``list``, ``tuple`` and ``sorted`` ask a length first: those are left as they are, so
production is never asked for items before the length it is asked for in one process.

What came is given only to that frame at that instruction (the ``GET_ITER``, or the builtin's call), for the very
stand-in the call returned, while nothing else was asked of the subject since (``answered.py``); otherwise it is
dropped and ``iter`` is a request, as before (a dropped batch was production running some items ahead, as
``ahead.py`` says it may).
"""

from __future__ import annotations

import builtins
from types import CodeType, FrameType
from typing import Any

from mergegate.runner.trusted import ahead, answered, callsite, consumers
from mergegate.runner.trusted.decoded import Instruction

Site = tuple[tuple[int, ...], "str | None"]  # where the caller asks for the iterator; the builtin draining it, or None
_SITES: dict[CodeType, dict[int, Site]] = {}  # per code: a call's offset -> the GET_ITER or the builtin's call after it
_CALLS = frozenset({"CALL", "CALL_KW"})


NOW: list[answered.Ahead | None] = [None]  # the iterator (or iter's error) and whether iter failed


def iterated_at_once(frame: FrameType | None) -> Site | None:
    """Where the value of the call ``frame`` is executing is iterated at once: the offset of the ``GET_ITER`` (or the
    offsets of the call of ``set``/``frozenset``, the name still the builtin's) right after it, and that builtin's
    name."""
    sites = callsite.sites_of(frame, _SITES, _iterated_calls)
    site = sites.get(frame.f_lasti) if sites is not None and frame is not None else None
    if site is None or site[1] is None or frame is None:
        return site
    name = site[1]
    return site if frame.f_globals.get(name, frame.f_builtins.get(name)) is getattr(builtins, name) else None


def call(ch: Any, target: Any, name: str | None, arguments: tuple[Any, Any], frame: FrameType, site: Site) -> Any:
    """The call (``target``, encoded, its method ``name`` or None, the encoded arguments) and its value's iterator in
    one ``calliter`` request; the value returned, the iterator (with its first batch, for a builtin that drains it)
    kept for the caller's step at ``site``."""
    at, drains = site
    batch = () if drains is None else (ahead.SIZES[-1],)
    value, got = answered.fused_call(ch, ("calliter", target, name, *arguments, *batch))
    if got is None:
        return value
    failed = got[0] == "err"
    if not failed and len(got) != (2 if drains is None else 4):
        raise ch.error(["malformed calliter iterator"])
    it = ch.error(got, stop_allowed=False) if failed else ch.dec(got[1])  # at once: a handle named is known
    if drains is not None and not failed:
        ahead.started(ch, it, got[2], got[3], got)  # its first batch, read as ``drain`` reads it
    answered.keep(NOW, ch, frame, at, value, (it, failed))  # kept only for a stand-in (``answered.py``)
    return value


def take(ch: Any, owner: Any, frame: FrameType) -> tuple[bool, Any]:
    """``(True, iterator)`` when ``iter(owner)`` came with the call that returned it (``iter``'s error raised here);
    else ``(False, None)``, and whatever came is dropped (``answered.py``)."""
    now = answered.take(NOW, ch, owner, frame)
    if now is None:
        return False, None
    it, failed = now.value
    if failed:
        raise it
    return True, it


def _iterated_calls(code: CodeType) -> dict[int, Site]:
    ops = callsite.instructions(code)
    drains = consumers.drain_calls(code)
    out: dict[int, Site] = {}
    for index, ins in enumerate(ops[:-1]):
        nxt = ops[index + 1]
        if ins.opname not in _CALLS:
            continue
        if nxt.opname == "GET_ITER":
            out[ins.offset] = ((nxt.offset,), None)
            continue
        start = index + 1
        if _stored_for_a_drain(ops, index + 1, drains):
            start = index + 4  # ``t = x.f(); frozenset(t)``: pytest's rewriting of ``assert ... frozenset(x.f())``
        if start < len(ops) and drains.get(ops[start].offset) in consumers.UNSIZED:  # the value: its one argument
            runs = (ops[start].offset, ops[start + 1].offset) if ops[start].opname == "PRECALL" \
                and start + 1 < len(ops) else (ops[start].offset,)  # 3.11: the builtin runs at PRECALL or CALL
            out[ins.offset] = (runs, drains[ops[start].offset])
    return out


def _stored_for_a_drain(ops: list[Instruction], at: int, drains: dict[int, str]) -> bool:
    """Whether ``ops[at:]`` store the value in a local, load the builtin's name (``LOAD_GLOBAL``) and the local back,
    and call it: nothing of the caller's runs between the call and the builtin's."""
    if at + 3 >= len(ops):
        return False
    store, name, load, run = ops[at:at + 4]
    return store.opname == "STORE_FAST" and name.opname == "LOAD_GLOBAL" and name.argval in consumers.UNSIZED \
        and load.opname == "LOAD_FAST" and load.argval == store.argval and drains.get(run.offset) == name.argval
