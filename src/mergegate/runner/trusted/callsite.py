"""Whether an attribute read is the callee of a call made at once, read off the caller's own bytecode.

``utils.path_splitter(given)`` reads a production module's attribute and calls it: two round
trips.  Where the value read can be nothing but that call's callee, and nothing can run between the
read and the call, the read and the call are one request (``callattr``: the same ``getattr`` then
the call, in the subject).  Three shapes are recognised, and nothing else:

- a method-call read (``mod.f(x)``): ``LOAD_METHOD`` (3.11), or ``LOAD_ATTR`` with its method bit
  (3.12 and later).  The compiler emits it only for ``obj.name(...)``, and its value goes to the
  call and nowhere else;
- a plain ``LOAD_ATTR`` (what the compiler emits for a module the oracle imported), followed on the
  stack to the call that takes it as its callable;
- the same inside an ``assert`` that pytest rewrote: ``@py_assertN = mod.f`` (a ``LOAD_ATTR`` stored
  at once into one of the rewriter's temporaries), whose next use is as a callee (``PUSH_NULL``
  beside the ``LOAD_FAST``: 3.11-3.13).  The rewriter uses the temporary again only to show it
  when the assertion fails, and the stand-in shows what the read gives then.

In each, every instruction between the read and the call must be one that runs no code at all
(loading a name or a constant, building a tuple or a list of them): an argument that calls, reads
an attribute, indexes or computes could run production, which could rebind the attribute, and
Python reads the attribute *before* the arguments.  ``calc.total(calc.add(1, 2))`` and
``calc.total(add(1, 2))`` (``add`` imported by name) are a read and then a call: a patch whose
``add`` rebinds ``calc.total`` to a liar meets the function read before, as in one process.  Each
shape is followed on the stack to the call that takes the read as its callable, and that call must
be the first.  So fusing changes nothing a property can observe.  On a Python whose bytecode is not one
of these, no read is fused: every read is one request.
"""

from __future__ import annotations

import dis
import sys
from collections.abc import Callable
from types import CodeType, FrameType
from typing import TypeVar

from mergegate.runner.trusted import decoded
from mergegate.runner.trusted.decoded import Instruction

T = TypeVar("T")

_VERSION = sys.version_info[:2]
KNOWN = (3, 11) <= _VERSION <= (3, 13)  # the bytecode shapes below; elsewhere nothing is fused
_NULL_AFTER = _VERSION >= (3, 13)  # 3.13 pushes a callee, then NULL; 3.11 and 3.12 NULL, then the callee
_TEMPORARY = "@py_assert"  # pytest's assertion rewriter's temporaries (no source can spell the name)
_SITES: dict[CodeType, frozenset[int]] = {}  # per code object: offsets of reads that are callees
_DECODED: dict[CodeType, list[Instruction]] = {}  # per code object: its instructions, read once for every table


def called_at_once(frame: FrameType | None) -> bool:
    """Whether the instruction ``frame`` is executing reads an attribute that is called at once."""
    sites = sites_of(frame, _SITES, lambda code: frozenset(callee_reads(code)))
    return sites is not None and frame is not None and frame.f_lasti in sites


def sites_of(frame: FrameType | None, cache: dict[CodeType, T], build: Callable[[CodeType], T]) -> T | None:
    """``build(code)`` for the code ``frame`` is running, made once per code object (``cache``); None on a Python
    whose bytecode is not the one read here."""
    if frame is None or not KNOWN:
        return None
    code = frame.f_code
    found = cache.get(code)
    if found is None:
        found = cache[code] = build(code)
    return found


def instructions(code: CodeType) -> list[Instruction]:
    """``code``'s instructions, without the interpreter's caches and prefixes; none where ``dis`` cannot read it
    (nothing is fused there).  Read once per code object: every site table (``chains``, ``iterated``, ``compared``,
    ``lengths``, ``consumers`` and this module's) reads the same list, never changing it."""
    found = _DECODED.get(code)
    if found is None:
        try:
            found = decoded.instructions(code)
        except Exception:
            found = []
        _DECODED[code] = found
    return found


def callee_reads(code: CodeType) -> list[int]:
    """The offsets in ``code`` of attribute reads whose value is only ever a call's callee, called before
    anything else runs."""
    ops = instructions(code)
    return [ins.offset for index, ins in enumerate(ops) if index + 1 < len(ops) and (
        (_method_read(ins) and _callee_on_stack(ops, index, _METHOD_DEPTH, pushed=2))
        or (ins.opname == "LOAD_ATTR" and not _method_read(ins)
            and (_rewritten_callee(ops, index + 1) or _callee_on_stack(ops, index, _CALLEE_DEPTH))))]


# Where a call finds its callable: how many stack items, counting it, lie at or above it when the call starts.
_CALLEE_DEPTH = {"PRECALL": 1} if _VERSION < (3, 12) else {"CALL": 1} if _VERSION < (3, 13) \
    else {"CALL": 2, "CALL_KW": 3}  # 3.13: a NULL above the callable; CALL_KW: and the names' tuple
CALLEE_DEPTH, NULL_AFTER = _CALLEE_DEPTH, _NULL_AFTER  # ``consumers.py`` follows a builtin's load the same way
# The same for a method-call read, which pushes two items (the method and its object, or a NULL and the function).
_METHOD_DEPTH = {"PRECALL": 2} if _VERSION < (3, 12) else {"CALL": 2} if _VERSION < (3, 13) \
    else {"CALL": 2, "CALL_KW": 3}
_PUSHES_ONLY = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_LOAD_FAST", "LOAD_CONST", "LOAD_GLOBAL",
                          "LOAD_NAME", "LOAD_DEREF", "LOAD_CLOSURE", "PUSH_NULL"})
# What runs no code of anyone's: names and constants loaded, tuples and lists of them built, the rewriter's
# temporaries stored, a call's keyword names.  (No jump, no copy or swap of the stack.)
_QUIET = _PUSHES_ONLY | {"KW_NAMES", "BUILD_TUPLE", "BUILD_LIST", "BUILD_CONST_KEY_MAP", "STORE_FAST"}


def _quiet_until_call(ops: list[Instruction], start: int) -> int | None:
    """The index of the first call at or after ``start`` when every instruction before it runs no code."""
    for index in range(start, len(ops)):
        if ops[index].opname in _CALLEE_DEPTH:
            return index
        if ops[index].opname not in _QUIET:
            return None
    return None


def _callee_on_stack(ops: list[Instruction], read: int, depth: dict[str, int], pushed: int = 1) -> bool:
    """``ops[read]`` (an attribute read that pushes ``pushed`` items) is the callable of the call that follows its
    quiet arguments.

    Followed on the stack: the read is the callee when the first thing after it only pushes, nothing
    afterwards reaches down to it (a tuple or list built of it would bring the stack back down to it),
    and the first call starts with exactly its arguments above it.  A call among the arguments
    (``m.g(h(x))``) is the first call, and its own callable lies above the read: not this read's call.
    """
    call = _quiet_until_call(ops, read + 1)
    if call is None:
        return False
    height = pushed  # the read's items and everything above them
    for ins in ops[read + 1:call]:
        if ins.opname == "STORE_FAST" or (height == pushed and ins.opname not in _PUSHES_ONLY):
            return False
        height += dis.stack_effect(ins.opcode, ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None)
        if height <= pushed:
            return False
    argc = ops[call].arg
    return type(argc) is int and height == argc + depth[ops[call].opname]


def _method_read(ins: Instruction) -> bool:
    """``obj.name(...)``'s read: ``LOAD_METHOD`` (3.11), ``LOAD_ATTR`` with its low bit set (3.12 and later)."""
    return ins.opname == "LOAD_METHOD" or (ins.opname == "LOAD_ATTR" and _VERSION >= (3, 12)
                                           and type(ins.arg) is int and bool(ins.arg & 1))


METHOD_READ = _method_read  # ``chains.py`` tells a plain read from a method's the same way


def _rewritten_callee(ops: list[Instruction], store: int) -> bool:
    """``ops[store]`` stores into an assertion temporary that is the callee of the next call, with nothing but
    quiet instructions between."""
    ins = ops[store]
    call = _quiet_until_call(ops, store + 1)
    if ins.opname != "STORE_FAST" or not str(ins.argval).startswith(_TEMPORARY) or call is None:
        return False
    for later in range(store + 1, call):
        use = ops[later]
        names = use.argval if type(use.argval) is tuple else (use.argval,)  # 3.13 loads and stores two at once
        if ins.argval not in names:
            continue
        if use.opname != "LOAD_FAST":  # stored again or a fused form before a plain use: not sure
            return False
        beside = later + 1 if _NULL_AFTER else later - 1
        return 0 <= beside < len(ops) and ops[beside].opname == "PUSH_NULL"
    return False
