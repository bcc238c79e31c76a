"""Whether an attribute read is the callee of a call made at once, read off the caller's own bytecode.

``utils.path_splitter(given)`` reads a production module's attribute and calls it: two round
trips.  Where the value read can be nothing but that call's callee, the read and the call are one
request (``callattr``: the same ``getattr`` then the call, in the subject).  Two shapes are
recognised, and nothing else:

- a method-call read (``mod.f(x)``): ``LOAD_METHOD`` (3.11), or ``LOAD_ATTR`` with its method bit
  (3.12 and later).  The compiler emits it only for ``obj.name(...)``, and its value goes to the
  call and nowhere else;
- the same inside an ``assert`` that pytest rewrote: ``@py_assertN = mod.f`` (a ``LOAD_ATTR`` stored
  at once into one of the rewriter's temporaries), whose next use is as a callee (``PUSH_NULL``
  beside the ``LOAD_FAST``: 3.11-3.13).  The rewriter uses the temporary again only to show it
  when the assertion fails, and the stand-in shows what the read gives then.

What changes, said plainly: the attribute is read when the call is made, after the arguments were
evaluated, not before (as ``methods.Method`` already does for a production object's methods).  An
argument whose own evaluation rebinds the module attribute sees the difference; nothing of the
verdict moves to production (the value read is production's either way, and the call is the same).
On a Python whose bytecode is not one of these, no read is fused: every read is one request.
"""

from __future__ import annotations

import dis
import sys
from types import CodeType, FrameType

_VERSION = sys.version_info[:2]
KNOWN = (3, 11) <= _VERSION <= (3, 13)  # the bytecode shapes below; elsewhere nothing is fused
_NULL_AFTER = _VERSION >= (3, 13)  # 3.13 pushes a callee, then NULL; 3.11 and 3.12 NULL, then the callee
_TEMPORARY = "@py_assert"  # pytest's assertion rewriter's temporaries (no source can spell the name)
_SITES: dict[CodeType, frozenset[int]] = {}  # per code object: offsets of reads that are callees


def called_at_once(frame: FrameType | None) -> bool:
    """Whether the instruction ``frame`` is executing reads an attribute that is called at once."""
    if frame is None or not KNOWN:
        return False
    code = frame.f_code
    sites = _SITES.get(code)
    if sites is None:
        sites = _SITES[code] = frozenset(callee_reads(code))
    return frame.f_lasti in sites


def callee_reads(code: CodeType) -> list[int]:
    """The offsets in ``code`` of attribute reads whose value is only ever a call's callee."""
    try:
        ops = [i for i in dis.get_instructions(code) if i.opname not in ("CACHE", "EXTENDED_ARG", "NOP")]
    except Exception:  # a code object dis cannot read: fuse nothing in it
        return []
    return [ins.offset for index, ins in enumerate(ops) if _method_read(ins) or (
        ins.opname == "LOAD_ATTR" and index + 1 < len(ops)
        and (_rewritten_callee(ops, index + 1) or _callee_on_stack(ops, index)))]


# Where a call finds its callable: how many stack items, counting it, lie at or above it when the call starts.
_CALLEE_DEPTH = {"PRECALL": 1} if _VERSION < (3, 12) else {"CALL": 1} if _VERSION < (3, 13) \
    else {"CALL": 2, "CALL_KW": 3}  # 3.13: a NULL above the callable; CALL_KW: and the names' tuple
_PUSHES_ONLY = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_LOAD_FAST", "LOAD_CONST", "LOAD_GLOBAL",
                          "LOAD_NAME", "LOAD_DEREF", "LOAD_CLOSURE", "PUSH_NULL"})
_ARGUMENTS = _PUSHES_ONLY | {  # what evaluating plain arguments compiles to: no jump, no copy or swap of the stack
    "LOAD_ATTR", "LOAD_METHOD", "PRECALL", "CALL", "CALL_KW", "KW_NAMES", "BINARY_OP", "BINARY_SUBSCR",
    "BINARY_SLICE", "BUILD_SLICE", "BUILD_LIST", "BUILD_TUPLE", "BUILD_SET", "BUILD_MAP", "BUILD_CONST_KEY_MAP",
    "BUILD_STRING", "FORMAT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "CONVERT_VALUE", "LIST_EXTEND",
    "SET_UPDATE", "DICT_UPDATE", "UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT", "UNARY_POSITIVE", "COMPARE_OP",
    "IS_OP", "CONTAINS_OP", "MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE", "NOP"}


def _callee_on_stack(ops: list[dis.Instruction], read: int) -> bool:
    """``ops[read]`` (an attribute read) is the callable of the call that follows its arguments.

    ``utils.f(x)`` where ``utils`` was imported compiles to a plain ``LOAD_ATTR`` (the compiler keeps
    ``LOAD_METHOD`` for objects that are not modules).  Followed on the stack: the read is the callee when
    the first thing after it only pushes, nothing afterwards reaches down to it (every instruction allowed
    here that pops it leaves at most one item, so the stack would come back down to it), and a call
    starts with exactly its arguments above it.  Anything else (a jump, a copy or swap, an unknown
    instruction) is not fused.
    """
    height = 1  # the read's value and everything above it
    for ins in ops[read + 1:]:
        depth = _CALLEE_DEPTH.get(ins.opname)
        if depth is not None and type(ins.arg) is int and height == ins.arg + depth:
            return True
        if ins.opname not in _ARGUMENTS or (height == 1 and ins.opname not in _PUSHES_ONLY):
            return False
        height += dis.stack_effect(ins.opcode, ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None)
        if height < 2:
            return False
    return False


def _method_read(ins: dis.Instruction) -> bool:
    """``obj.name(...)``'s read: ``LOAD_METHOD`` (3.11), ``LOAD_ATTR`` with its low bit set (3.12 and later)."""
    return ins.opname == "LOAD_METHOD" or (ins.opname == "LOAD_ATTR" and _VERSION >= (3, 12)
                                           and type(ins.arg) is int and bool(ins.arg & 1))


def _rewritten_callee(ops: list[dis.Instruction], store: int) -> bool:
    """``ops[store]`` stores into an assertion temporary whose next use is as a callee."""
    ins = ops[store]
    if ins.opname != "STORE_FAST" or not str(ins.argval).startswith(_TEMPORARY):
        return False
    for later in range(store + 1, len(ops)):
        use = ops[later]
        names = use.argval if type(use.argval) is tuple else (use.argval,)  # 3.13 loads and stores two at once
        if ins.argval not in names or not use.opname.startswith(("LOAD_FAST", "STORE_FAST", "DELETE_FAST")):
            continue
        if use.opname != "LOAD_FAST":  # stored again, deleted or a fused form before a plain use: not sure
            return False
        beside = later + 1 if _NULL_AFTER else later - 1
        return 0 <= beside < len(ops) and ops[beside].opname == "PUSH_NULL"
    return False
