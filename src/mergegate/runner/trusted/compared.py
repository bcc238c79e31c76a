"""``assert expected == obj.f()``: the call and the snapshots its comparison reads, in one request.

A production object compared with ``==`` or ``!=`` is decided here over its snapshot (``snapshots.py``): where the
compared value is what a call of production's just returned (``assert frozenset(...) == m2.keys()``, ``assert result
== Order(10)``), that was the call and then a ``snapshot`` request.  Where the instructions after the call the
caller is executing store its value in a local and load it and another local, in either order, and compare them at
once (``STORE_FAST t; LOAD_FAST a; LOAD_FAST t; COMPARE_OP ==``: pytest's rewriting of such an assert), the subject
makes the call and then takes the snapshots that comparison takes (``objects.op_callsnap``), in the order
``Remote.__eq__`` takes them: the value's alone where the other local holds plain data of a builtin type (whose
own ``==`` gives way to the stand-in's without looking at it), or, where the other holds a stand-in of the same
channel, the left operand's and then the right's.  Any other operand (an object of the oracle's own class, whose
``==`` may ask the stand-in anything first) and nothing is taken ahead.

The snapshots are given only to that frame at that comparison, for that very value and the other operand loaded,
while nothing else was asked of the subject since (``answered.py``); otherwise they are dropped and taken again
(production's state then read once more than one process reads it: only where something ran between the call and
the comparison, a tracer).  What a snapshot shows stays production's answer about its own state; what the
comparison concludes is decided here, as before.
"""

from __future__ import annotations

from types import CodeType, FrameType
from typing import Any

from mergegate.runner.trusted import answered, callsite, snapshots

Site = tuple[int, str, bool]  # the comparison's offset, the other local, whether the call's value is the left one
_SITES: dict[CodeType, dict[int, Site]] = {}  # per code: a call's offset -> the comparison of its value after it
_CALLS = frozenset({"CALL", "CALL_KW"})
_EQUALITY = frozenset({"==", "!="})

NOW: list[answered.Ahead | None] = [None]  # (the snapshots or their error, the other operand's id, value is left)
STAND_IN: list[type] = []  # ``proxies.Remote``, put here where it is defined (proxies imports this module)


def compared_at_once(frame: FrameType | None) -> Site | None:
    """Where the value of the call ``frame`` is executing is compared at once with another local, if it is."""
    sites = callsite.sites_of(frame, _SITES, _compared_calls)
    return sites.get(frame.f_lasti) if sites is not None and frame is not None else None


def ahead(frame: FrameType, ch: Any) -> tuple[Site, Any] | None:
    """Where the call ``frame`` is executing has its value compared at once, and the other operand, when the
    snapshots can be taken ahead for it: plain data of a builtin type, or a stand-in of ``ch`` whose snapshot is a
    request; else None."""
    site = compared_at_once(frame)
    if site is None:
        return None
    missing = object()
    other = frame.f_locals.get(site[1], missing)  # what ``LOAD_FAST`` will push: only a store runs before it
    if other is missing:
        return None
    if type(other) is _stand_in():
        known = object.__getattribute__(other, "_gate_frozen")
        mine = object.__getattribute__(other, "_gate_ref")[0] is ch
        return (site, other) if mine and (known is None or known.items is None) else None
    return (site, other) if getattr(type(other), "__module__", None) == "builtins" else None


def _stand_in() -> type:
    return STAND_IN[0]


def call(ch: Any, target: Any, name: str | None, arguments: tuple[Any, Any], frame: FrameType, site: Site,
         other: Any) -> Any:
    """The call (``target`` encoded, its method ``name`` or None, the encoded arguments) and the snapshots its
    comparison at ``site`` takes, in one ``callsnap`` request; the value returned, the snapshots kept."""
    at, _local, left = site
    remote = type(other) is _stand_in()
    message = ("callsnap", target, name, *arguments, ch.enc(other) if remote else None, left)
    value, got = answered.fused_call(ch, message)
    if got is None:
        return value
    if got[0] == "err":
        taken: Any = snapshots.refused(ch.error(got, stop_allowed=False))
    elif len(got) == 2:
        taken = snapshots.received(ch, got[1], 2 if remote else 1)  # at once: a handle named is known
    else:
        raise ch.error(["malformed callsnap snapshots"])
    answered.keep(NOW, ch, frame, at, value, (taken, id(other), left, remote))
    return value


def take(ch: Any, mine: Any, other: Any, frame: FrameType) -> list[Any] | None:
    """The two sides' snapshots for ``mine == other`` when they came with the call (their error raised here);
    else None, and whatever came is dropped."""
    now = NOW[0]
    if now is None:  # (nearly always)
        return None
    NOW[0] = None
    taken, other_id, left, remote = now.value
    value = mine if now.fits(ch, mine, frame) else other if remote and now.fits(ch, other, frame) else None
    if value is None:
        return None
    if remote:  # both stand-ins: the snapshots are [left, right], and ``mine`` is the left one
        if (mine is value) != left or id(other if mine is value else mine) != other_id:
            return None
    elif id(other) != other_id:
        return None
    if isinstance(taken, BaseException):
        raise taken
    return list(taken) if remote else [taken[0], snapshots.resolve(other)]


def _compared_calls(code: CodeType) -> dict[int, Site]:
    ops = callsite.instructions(code)
    out: dict[int, Site] = {}
    for index, ins in enumerate(ops[:-4]):
        if ins.opname not in _CALLS:
            continue
        store, first, second, compare = ops[index + 1:index + 5]
        if store.opname != "STORE_FAST" or first.opname != "LOAD_FAST" or second.opname != "LOAD_FAST" \
                or compare.opname != "COMPARE_OP" or compare.argval not in _EQUALITY or first.argval == second.argval:
            continue
        if store.argval == first.argval:
            out[ins.offset] = (compare.offset, str(second.argval), True)
        elif store.argval == second.argval:
            out[ins.offset] = (compare.offset, str(first.argval), False)
    return out

