"""Whether ``iter()`` of a production object is a builtin consumer's that takes every item at once, read off the
caller's own bytecode.

``frozenset(m.values())``, ``list(bi)``, ``sorted(keys)``: the builtin asks the object for its iterator and drains
it, with no code of the property's running between the items (a ``set`` hashes them: the evaluator's own
``hash``). Read a batch of one at a time, that was ``iter``, a batch of one and one of 16: three requests for a
few items. bidict's state machine makes tens of thousands of them (docs/adoption.md). Where the frame that
called ``__iter__`` is executing a call of ``list``, ``tuple``, ``sorted``, ``set`` or ``frozenset`` with one
argument and no keywords, the name loaded as the builtin itself, ``iter`` and the first batch of 64 are one request
(``ahead.drain``), as ``draining`` reads an iterator whole; for ``dict`` the subject builds the whole dict
(``dictcopy.py``).

The call is found as ``callsite.py`` finds a read's call: the name's load followed on the stack, through
straight-line code only (a jump, or a jump's target, between them and nothing is found), to the call that takes
it as its callable. The call the frame is executing is then that builtin's (the name is looked up again in the
frame's globals and builtins: an oracle that rebound ``list`` is not draining). What that does not prove is that
the object is the argument itself: a C iterator of the property's that the builtin drains and that asks
iterators lazily (``itertools.chain``) has them read ahead too; ``islice`` of such a chain takes fewer than it
read. Production then ran some items ahead, as ``ahead.py`` says it may once a loop took two; every item is still
decoded here as any reply.
"""

from __future__ import annotations

import builtins
import dis
from types import CodeType, FrameType

from mergegate.runner.trusted import callsite
from mergegate.runner.trusted.decoded import Instruction

DRAINS = frozenset({"list", "tuple", "sorted", "set", "frozenset", "dict"})  # dict: ``dictcopy.py``
UNSIZED = frozenset({"set", "frozenset"})  # ask their argument for its iterator and nothing else (``iterated.py``)
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)
_SITES: dict[CodeType, dict[int, str]] = {}  # per code object: offset of a drain's call -> the builtin's name


def consumer(frame: FrameType | None) -> str | None:
    """The builtin (of ``DRAINS``) ``frame`` is executing a call of, with one argument; None where it is not one."""
    sites = callsite.sites_of(frame, _SITES, drain_calls)
    if sites is None or frame is None:
        return None
    name = sites.get(frame.f_lasti)
    if name is None or frame.f_globals.get(name, frame.f_builtins.get(name)) is not getattr(builtins, name):
        return None
    return name


def drain_calls(code: CodeType) -> dict[int, str]:
    """The offsets in ``code`` at which a call of one of ``DRAINS`` (one argument, no keywords) runs."""
    ops = callsite.instructions(code)
    out: dict[int, str] = {}
    for index, ins in enumerate(ops):
        if ins.opname == "LOAD_GLOBAL" and ins.argval in DRAINS and type(ins.arg) is int and ins.arg & 1:
            call = call_of(ops, index)
            if call is not None:
                out[ops[call].offset] = str(ins.argval)
                if ops[call].opname == "PRECALL" and call + 1 < len(ops) and ops[call + 1].opname == "CALL":
                    out[ops[call + 1].offset] = str(ins.argval)  # 3.11: the builtin runs in either
    return out


def call_of(ops: list[Instruction], load: int) -> int | None:
    """The index of the call that takes ``ops[load]`` (a ``LOAD_GLOBAL`` that pushes a NULL beside its name) as its
    callable with one argument and no keywords; None where that is not certain."""
    where = 1 if callsite.NULL_AFTER else 2  # the callable's height above the stack before the load
    height = 2
    for index in range(load + 1, len(ops)):
        ins = ops[index]
        if ins.is_jump_target or ins.opcode in _JUMPS:
            return None
        depth = callsite.CALLEE_DEPTH.get(ins.opname)
        if depth is not None and type(ins.arg) is int:
            callee = height - ins.arg - depth + 1
            if callee == where:
                keywords = ins.opname == "CALL_KW" or ops[index - 1].opname == "KW_NAMES"
                return index if ins.arg == 1 and not keywords else None
            if callee < where:
                return None
        try:
            height += dis.stack_effect(ins.opcode, ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None)
        except ValueError:
            return None
        if height < where:  # taken by something else
            return None
    return None
