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
        ins.opname == "LOAD_ATTR" and index + 1 < len(ops) and _rewritten_callee(ops, index + 1))]


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
