"""A code object's instructions, read from its bytes: what ``dis.get_instructions`` gives, at about a fifth of its cost.

Every production call a test makes asks the caller's site tables (``callsite``, ``chains``, ``iterated``,
``compared``, ``lengths``, ``consumers``) whether it may be fused with the next step; each table is built
once per code object from its instructions.  A plain test's function is called once, so each one's
instructions are read once per run: ``dis.get_instructions`` took about 1 ms for a function pytest
rewrote (three ``assert``s: 300 instructions), most of it text no table reads (``argrepr``, positions,
line starts, a quadratic label search).  This reads the same fields the tables use, ``opname``,
``opcode``, ``arg``, ``argval``, ``offset`` and ``is_jump_target``, with the rules of ``dis`` on 3.11 to
3.13 (``tests/test_decoded.py`` compares the two on every code object of nine real modules and of test
files as pytest rewrites them; by hand, the same on the whole standard library under each version).  The
code read is the oracle's own (the trusted side's), never production's; on any surprise it falls back to
``dis`` itself.
"""

from __future__ import annotations

import dis
import sys
from types import CodeType
from typing import Any, NamedTuple


class Instruction(NamedTuple):
    opname: str
    opcode: int
    arg: int | None
    argval: Any
    offset: int
    is_jump_target: bool


_VERSION = sys.version_info[:2]
_SKIPPED = frozenset({"CACHE", "EXTENDED_ARG", "NOP"})  # as the tables never see them
_EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]
_INT_OVERFLOW: int = getattr(dis, "_INT_OVERFLOW", 2 ** 31)  # an oparg is stored signed (``dis``'s own bound)


def _cache_size(op: int) -> int:
    if _VERSION >= (3, 13):
        return int(dis._get_cache_size(dis._all_opname[op]))  # type: ignore[attr-defined]
    table = dis._inline_cache_entries  # type: ignore[attr-defined]
    return int(table[op]) if op < len(table) else 0


def _has_arg(op: int) -> bool:
    has: list[int] | None = getattr(dis, "hasarg", None)  # 3.12 and later
    return op in has if has is not None else op >= dis.HAVE_ARGUMENT


# How each opcode's ``argval`` is made (``dis``'s own rules): an index into co_consts, co_names (shifted on the
# versions that pack a flag into the low bits), the locals, the comparison names, a jump's target.
CONST, UNKNOWN, NAME, NAME1, NAME2, LOCAL, LOCAL2, COMPARE, JREL, JABS, FORMAT, CONVERT, ARG = range(13)


def _kind(op: int) -> int:
    name = dis.opname[op]
    if op in dis.hasconst:  # 3.11's KW_NAMES alone does not name its constant (``dis.UNKNOWN``)
        return UNKNOWN if name == "KW_NAMES" and _VERSION < (3, 12) else CONST
    if op in dis.hasname:
        if name == "LOAD_GLOBAL" or (name == "LOAD_ATTR" and _VERSION >= (3, 12)):
            return NAME1
        return NAME2 if name == "LOAD_SUPER_ATTR" else NAME
    if name in ("LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST"):
        return LOCAL2
    if op in dis.haslocal or op in dis.hasfree:
        return LOCAL
    if op in dis.hascompare:
        return COMPARE
    if op in dis.hasjrel:
        return JREL
    if op in dis.hasjabs:
        return JABS
    return FORMAT if name == "FORMAT_VALUE" else CONVERT if name == "CONVERT_VALUE" else ARG


def _row(op: int) -> tuple[int, int, bool, int, str]:
    """What decoding needs of one opcode, looked up once: its base form, inline caches, whether it takes an
    argument, how its ``argval`` is made, its name."""
    deop: int = getattr(dis, "_deoptop", lambda o: o)(op)
    name = dis.opname[deop]
    return deop, _cache_size(deop), _has_arg(deop), SKIP if name in _SKIPPED else _kind(deop), name


SKIP = -1
_TABLE = [_row(op) for op in range(256)]
_BACKWARD = frozenset(op for op in range(256) if "JUMP_BACKWARD" in dis.opname[op])  # 3.11: POP_JUMP_BACKWARD_...
_COMPARE_SHIFT = 5 if _VERSION >= (3, 13) else 4 if _VERSION >= (3, 12) else 0
_JUMP_PAST_CACHES = _VERSION >= (3, 12)  # a relative jump counts from after the jump's inline caches
_UNKNOWN = getattr(dis, "UNKNOWN", None)
_FORMATS = (None, str, repr, ascii)
_NEW = tuple.__new__


def instructions(code: CodeType) -> list[Instruction]:
    """``code``'s instructions as ``dis.get_instructions`` gives them, without caches, ``EXTENDED_ARG`` and ``NOP``."""
    try:
        return _decode(code)
    except Exception:  # a shape this reader does not know: ``dis`` itself
        return [Instruction(i.opname, i.opcode, i.arg, i.argval, i.offset, i.is_jump_target)
                for i in dis.get_instructions(code) if i.opname not in _SKIPPED]


def _decode(code: CodeType) -> list[Instruction]:
    raw, names, consts = code.co_code, code.co_names, code.co_consts
    local = code._varname_from_oparg  # type: ignore[attr-defined]
    found: list[tuple[str, int, int | None, Any, int]] = []
    labels: set[int] = set()  # jump targets (``dis`` does not count an exception handler's start as one)
    extended, offset, end, table = 0, 0, len(raw), _TABLE
    while offset < end:
        op, caches, has_arg, kind, name = table[raw[offset]]
        arg: int | None
        if has_arg:
            arg = raw[offset + 1] | extended
            extended = (arg << 8) if op == _EXTENDED_ARG else 0
            if extended >= _INT_OVERFLOW:
                extended -= 2 * _INT_OVERFLOW
        else:
            arg, extended = None, 0
        after = offset + 2 + 2 * caches
        if kind == SKIP:
            offset = after
            continue
        argval: Any = arg
        if arg is not None:
            if kind == CONST:
                argval = consts[arg]
            elif kind == NAME:
                argval = names[arg]
            elif kind == NAME1:
                argval = names[arg >> 1]
            elif kind == LOCAL:
                argval = local(arg)
            elif kind == COMPARE:
                argval = dis.cmp_op[arg >> _COMPARE_SHIFT]
            elif kind == JREL:
                argval = (after if _JUMP_PAST_CACHES else offset + 2) + (-arg if op in _BACKWARD else arg) * 2
                labels.add(argval)
            elif kind == JABS:
                argval = arg * 2
                labels.add(argval)
            elif kind == NAME2:
                argval = names[arg >> 2]
            elif kind == LOCAL2:
                argval = (local(arg >> 4), local(arg & 15))
            elif kind == UNKNOWN:
                argval = _UNKNOWN
            elif kind == FORMAT:
                argval = (_FORMATS[arg & 0x3], bool(arg & 0x4))
            elif kind == CONVERT:
                argval = _FORMATS[arg]
        found.append((name, op, arg, argval, offset))
        offset = after
    make = _NEW  # ``tuple.__new__``: the named tuple's own ``__new__`` is a Python function, a call per instruction
    return [make(Instruction, (name, op, arg, argval, at, at in labels)) for name, op, arg, argval, at in found]
