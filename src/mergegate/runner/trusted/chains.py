"""``a.b.c`` of a production object: the reads made one after another in one request, read off the caller's bytecode.

``assert bi is bi.inv.inv`` reads ``bi.inv``, then that value's ``inv``: sealed, a request each (bidict's state
machine, tens of thousands of times a seed).  Where the instruction the caller is executing is a plain attribute
read (``LOAD_ATTR``, not a method's) and the instructions after it read an attribute of its value at once --
straight from the stack (``a.b.c``) or through a local stored and loaded back (``STORE_FAST t; LOAD_FAST t``,
what pytest's assertion rewriter emits for each link of ``assert a.b.c``) -- the subject makes those reads,
each of the value before, in that order, and sends each value (``server.op_getattrs``).  Nothing runs in the
caller between them (a store and a load of a local run no code), so production meets the same reads in the
same order as in one process.  The subject goes on only while a value is a production object the evaluator
stands in for with a ``Remote`` (not a class, a module or plain data, read here as before), and stops at the
first read that raises: that error is raised from the read that made it, when the caller makes it.

The evaluator answers each next read from what came only to that frame at that instruction, on the very
object the read before gave, and only while nothing else was asked of the subject since (the request count
is unchanged); otherwise what came is dropped and the read is a request, as before.  A read the stand-in
answers itself (a name of its own, ``__class__``) or one that is a call's callee (fused with its call,
``callsite.py``) ends a chain: production is never asked for a read the caller does not make.
"""

from __future__ import annotations

from types import CodeType, FrameType
from typing import Any

from mergegate.runner.trusted import answered, callsite
from mergegate.runner.trusted.decoded import Instruction
from mergegate.runner.trusted.local_names import HARNESS

MAX_LINKS = 8  # reads after the first sent in one request
Link = tuple[int, str, "str | None"]  # a read after the first: its offset, its name, the local it reads of (or None)
_CHAINS: dict[CodeType, dict[int, tuple[Link, ...]]] = {}  # per code: read offset -> the reads after it
_NAMES: dict[tuple[CodeType, int], str] = {}  # the name each plain read in a chain reads


NOW: list[answered.Ahead | None] = [None]  # the reads that came after one: (offset, name, value, failed)


def after(frame: FrameType, name: str) -> tuple[Link, ...]:
    """The reads that follow at once the plain read of ``name`` ``frame`` is executing; none if it is not one."""
    chains = callsite.sites_of(frame, _CHAINS, _chains)
    found = chains.get(frame.f_lasti, ()) if chains is not None else ()
    return found if found and _NAMES.get((frame.f_code, frame.f_lasti)) == name else ()


def read(ch: Any, owner: Any, name: str, frame: FrameType) -> Any:
    """``owner.name`` and the reads after it in one request; the first value returned, the rest kept for the caller's
    next reads.  A name the stand-in answers itself (its class's, or the harness's) ends the chain before it; with
    no read after it, a plain read (``Channel.getattr``)."""
    links = after(frame, name)
    names: list[Any] = [name]
    stand_in, owners = type(owner), list[Any]()
    for _offset, link, local in links:
        if link in HARNESS or any(link in vars(cls) for cls in stand_in.__mro__):
            break
        if local is None:
            names.append(link)
            continue
        other = frame.f_locals.get(local)  # what ``LOAD_FAST`` will load: nothing runs before it
        if type(other) is not stand_in or object.__getattribute__(other, "_gate_ref")[0] is not ch:
            break  # plain data, a class, another channel's: read by the caller as before
        names.append([ch.enc(other), link])
        owners.append(other)
    if len(names) == 1:  # nothing after it to ask: a plain read
        return ch.getattr(owner, name)
    reply = ch.exchange(("getattrs", ch.enc(owner), names))
    if reply[0] != "ok":
        raise ch.error(reply, stop_allowed=False)
    entries = reply[1] if len(reply) == 2 else None
    if type(entries) is not list or not 1 <= len(entries) <= len(names) \
            or not all(type(e) is list and e and e[0] in ("ok", "err") for e in entries) \
            or any(e[0] == "err" for e in entries[:-1]):
        raise ch.error(["malformed getattrs reply"])
    values = [_decoded(ch, entry) for entry in entries]  # each at once: a handle named here is known from now on
    first, rest = values[0], values[1:]
    others = iter(owners)
    came = [(offset, link, value, failed, None if local is None else next(others))
            for (offset, link, local), (value, failed) in zip(links[:len(rest)], rest, strict=True)]
    if came and not first[1]:
        answered.keep(NOW, ch, frame, came[0][0], _owner(came[0], first[0]), came)
    else:
        NOW[0] = None
    return _given(first)


def take(ch: Any, owner: Any, name: str, frame: FrameType) -> tuple[bool, Any]:
    """``(True, value)`` when this read came with the one before (a failed read's error raised here); else
    ``(False, None)``, and whatever came is dropped (``answered.py``)."""
    now = answered.take(NOW, ch, owner, frame)
    if now is None:
        return False, None
    links = now.value
    _offset, link, value, failed, _other = links[0]
    if link != name:
        return False, None
    if len(links) > 1 and not failed:
        answered.keep(NOW, ch, frame, links[1][0], _owner(links[1], value), links[1:])
    return True, _given((value, failed))


def _owner(link: tuple[int, str, Any, bool, Any], before: Any) -> Any:
    """The object a read that came is of: the value before it, or (``y.b`` after ``x.a``) the other local's."""
    return before if link[4] is None else link[4]


def _decoded(ch: Any, entry: list[Any]) -> tuple[Any, bool]:
    if entry[0] == "ok":
        return (ch.dec(entry[1]) if len(entry) == 2 else _malformed(ch)), False
    return ch.error(entry, stop_allowed=False), True


def _malformed(ch: Any) -> Any:
    raise ch.error(["malformed getattrs value"])


def _given(value: tuple[Any, bool]) -> Any:
    if value[1]:
        raise value[0]
    return value[0]


def _plain_read(ins: Instruction) -> bool:
    return ins.opname == "LOAD_ATTR" and not callsite.METHOD_READ(ins)


def _chains(code: CodeType) -> dict[int, tuple[Link, ...]]:
    """Per plain attribute read in ``code``: the plain reads that follow at once, of its value or of another local."""
    ops = callsite.instructions(code)
    callees = set(callsite.callee_reads(code))
    found: dict[int, tuple[Link, ...]] = {}
    for index, ins in enumerate(ops):
        if not _plain_read(ins) or type(ins.argval) is not str:
            continue
        _NAMES[(code, ins.offset)] = ins.argval
        links: list[Link] = []
        at = index
        while len(links) < MAX_LINKS:
            nxt, local = _next_read(ops, at), None
            if nxt is None:
                nxt, local = _next_sibling(ops, at)
            if nxt is None or ops[nxt].offset in callees or type(ops[nxt].argval) is not str:
                break
            links.append((ops[nxt].offset, ops[nxt].argval, local))
            at = nxt
        if links:
            found[ins.offset] = tuple(links)
    return found


def _next_read(ops: list[Instruction], at: int) -> int | None:
    """The index of the plain read of ``ops[at]``'s value that comes next with nothing run between, if any."""
    index = at + 1
    if index + 1 < len(ops) and ops[index].opname == "STORE_FAST" and ops[index + 1].opname == "LOAD_FAST" \
            and ops[index].argval == ops[index + 1].argval:
        index += 2  # stored into a local and loaded back (pytest's temporaries: ``@py_assert3 = bi.inv``)
    elif index < len(ops) and ops[index].opname == "STORE_FAST_LOAD_FAST" and type(ops[index].argval) is tuple \
            and len(ops[index].argval) == 2 and ops[index].argval[0] == ops[index].argval[1]:
        index += 1  # 3.13's one instruction for the same
    return index if index < len(ops) and _plain_read(ops[index]) else None


def _next_sibling(ops: list[Instruction], at: int) -> tuple[int | None, str | None]:
    """``t = x.a; y.b`` (pytest's ``assert x.inv == y.inv``): the index of the plain read of another local that comes
    next with nothing run between (a value stored, a local loaded), and that local's name."""
    index = at + 1
    if index + 2 < len(ops) and ops[index].opname == "STORE_FAST" and ops[index + 1].opname == "LOAD_FAST" \
            and ops[index].argval != ops[index + 1].argval:
        local, index = ops[index + 1].argval, index + 2
    elif index + 1 < len(ops) and ops[index].opname == "STORE_FAST_LOAD_FAST" and type(ops[index].argval) is tuple \
            and len(ops[index].argval) == 2 and ops[index].argval[0] != ops[index].argval[1]:
        local, index = ops[index].argval[1], index + 1
    else:
        return None, None
    return (index, str(local)) if _plain_read(ops[index]) and type(local) is str else (None, None)
