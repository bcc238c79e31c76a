"""The trusted revision's comparison rules (``runner/comparisons.py``), applied by the evaluator to snapshots.

``decide(op, mine, other)`` answers ``mine <op> other`` for a production object whose
class (as the trusted revision defines it) has a rule this module can follow: a key
read off both snapshots and compared with the evaluator's own operator, a
``TypeError`` the class raises, or ``not ==``.  It returns ``NONE`` where there is no
such rule or the snapshots lack what the rule reads (an attribute not in the state):
the caller then decides over the whole snapshot, as it does for every other class.

Production never answers: the rule is read from the trusted revision's source, the
values from the snapshots (production's description of its state, as everywhere), the
comparison is Python's over the evaluator's data.  Which rule applies follows the
class name the snapshot carries, so production chooses which of the trusted
revision's classes its object is, as it chooses what it returns.
"""

from __future__ import annotations

import operator
from typing import Any

TABLE: dict[str, Any] = {}  # set per run from the job (``standins.seal``)
SNAP: list[type] = []  # ``snapshots.Snap`` (set there: it imports this module)
NONE: Any = object()  # no rule here: decide over the snapshot
FLIPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
SYMBOLS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class Undecided(Exception):
    """The rule reads something the snapshot does not hold."""


SEEN: dict[str, str] = {}  # a class name -> the one class (``module:qualname#id``) this run has seen under it


_MROS: dict[str, list[str] | None] = {}


def load(table: Any) -> None:
    TABLE.clear()
    SEEN.clear()
    _MROS.clear()
    if isinstance(table, dict):
        TABLE.update(table)


def mro(name: str) -> list[str] | None:
    """The class's bases in Python's order (C3), as the trusted revision states them; None if one is unknown
    or may write methods it does not show (a metaclass, ``__init_subclass__``)."""
    if name not in _MROS:
        _MROS[name] = _mro(name) if TABLE else None
    return _MROS[name]


def _mro(name: str) -> list[str] | None:
    seen: dict[str, list[str] | None] = {}

    def walk(cls: str, depth: int) -> list[str] | None:
        if cls in seen:
            return seen[cls]
        row = TABLE.get(cls)
        if row is None or depth > 50 or row.get("open"):
            return None
        seen[cls] = None  # a cycle reads as unknown
        parents = [walk(b, depth + 1) for b in row.get("bases", [])]
        if any(p is None for p in parents):
            return None
        order = _merge([[*p] for p in parents if p] + [list(row.get("bases", []))])
        seen[cls] = None if order is None else [cls, *order]
        return seen[cls]
    return walk(name, 0)


def _merge(seqs: list[list[str]]) -> list[str] | None:
    out: list[str] = []
    seqs = [s for s in seqs if s]
    while seqs:
        head = next((s[0] for s in seqs if not any(s[0] in t[1:] for t in seqs)), None)
        if head is None:
            return None  # no consistent order: Python would refuse the class
        out.append(head)
        seqs = [t for t in ([x for x in s if x != head] for s in seqs) if t]
    return out


def rule(name: str, op: str) -> tuple[list[Any] | None, str | None]:
    """The rule for ``op`` on class ``name``: (rule or None, the class it comes from)."""
    order = mro(name)
    if order is None:
        return None, None
    for cls in order:
        row = TABLE[cls]
        found = row["methods"].get(op)
        if found is not None:
            return (None, cls) if found[0] == "unknown" else (found, cls)
        total = row.get("total")
        if total is not None and op in ("lt", "le", "gt", "ge") and op != total:
            return ["total", total], cls
    if op == "ne":
        return ["not", "eq"], None  # Python's own __ne__ negates __eq__
    # no class defines the order: object's answer, NotImplemented (Python then asks the other side's reflection)
    return (["absent"], None) if op in ("lt", "le", "gt", "ge") else (None, None)


def decide(op: str, mine: Any, other: Any) -> Any:
    """``mine <op> other`` by the trusted revision's rule (``NotImplemented`` to let the other side answer), or
    ``NONE``."""
    found, _cls = rule(_name(mine), op)
    if found is None:
        return NONE
    try:
        _one_class(mine)
        _one_class(other)
        return _apply(found, op, mine, other)
    except Undecided:
        return NONE


def _apply(found: list[Any], op: str, mine: Any, other: Any) -> Any:
    form = found[0]
    if form == "absent":
        return NotImplemented
    if form == "raise":
        raise TypeError(found[1] or f"'{SYMBOLS[op]}' is not supported by {_name(mine)}")
    if form == "not":
        equal = decide("eq", mine, other)
        if equal is NONE:
            raise Undecided
        return equal if equal is NotImplemented else not equal
    if form == "total":
        return _total(found[1], op, mine, other)
    if form == "guarded":  # the guard's answer for what is not one of the classes; the rest is not read
        if _guard(found[1], mine, other):
            raise Undecided
        return found[1][-1] if found[1][-1] != "NotImplemented" else NotImplemented
    _form, compare, guard, key = found
    if guard is not None:
        passed = _guard(guard, mine, other)
        if not passed:
            return guard[-1] if guard[-1] != "NotImplemented" else NotImplemented
    elif _name(other) is None:
        raise Undecided  # no guard: the rule reads the key off anything, a plain value too
    return bool(getattr(operator, compare)(_key(key, mine, 0), _key(key, other, 0)))


def _total(root: str, op: str, mine: Any, other: Any) -> Any:
    """``functools.total_ordering``'s formulas from the class's one order and its ``==``."""
    def ask(name: str) -> Any:
        answer = decide(name, mine, other)
        if answer is NONE:
            raise Undecided
        return answer
    first = ask(root)
    if first is NotImplemented:
        return NotImplemented
    strict = root in ("lt", "gt")
    same_side = {"lt": ("lt", "le"), "le": ("lt", "le"), "gt": ("gt", "ge"), "ge": ("gt", "ge")}[root]
    if op in same_side:  # lt from le: le and not eq; le from lt: lt or eq
        equal = ask("eq")
        return (first and not equal) if not strict else (first or equal)
    if strict:  # the opposite side: gt from lt is not (lt or eq); ge from lt is not lt
        return (not first) if op in ("ge", "le") else not (first or ask("eq"))
    return (not first or ask("eq")) if op in ("ge", "le") else not first


def _one_class(value: Any) -> None:
    """Two class objects under one name (production renamed one) are never taken for one class: no rule."""
    name = _name(value)
    if name is not None and SEEN.setdefault(name, value.type) != value.type:
        raise Undecided


def _guard(guard: list[Any], mine: Any, other: Any) -> bool:
    theirs = _name(other)
    if theirs is None:
        return False  # the evaluator's own values are never instances of a production class
    if guard[0] == "sametype":
        return bool(mine.type == other.type)
    classes = [_name(mine) if c == "@self" else c for c in guard[1]]
    order = mro(theirs)
    if order is None:
        if theirs in classes:
            return True
        raise Undecided  # a class the trusted revision does not show: its bases are unknown
    return any(c in order for c in classes)


def hash_key(mine: Any) -> Any:
    """What ``hash`` must follow where ``==`` follows a key rule (equal objects hash alike), or ``NONE``."""
    found, _cls = rule(_name(mine), "eq")
    if found is None or found[0] != "key" or found[1] != "eq":
        return NONE
    try:
        return _key(found[3], mine, 0)
    except Undecided:
        return NONE


def _name(value: Any) -> Any:
    return getattr(value, "name", None) if SNAP and type(value) is SNAP[0] else None


def _key(key: list[Any], value: Any, depth: int) -> Any:
    if depth > 20:
        raise Undecided
    form = key[0]
    if form == "self":
        return value
    if form == "attr":
        inner = _key(key[1], value, depth + 1)
        if _name(inner) is None or inner.kind != "fields" or key[2] not in inner.state:
            raise Undecided
        return inner.state[key[2]]
    if form == "items":
        inner = _key(key[1], value, depth + 1)
        if _name(inner) is not None and inner.kind in ("sequence", "collection"):
            items = inner.state
        elif type(inner) in (tuple, list):
            items = inner
        else:
            raise Undecided
        return tuple(items) if key[2] == "tuple" else list(items)
    if form in ("tuple", "list"):
        parts = [_key(k, value, depth + 1) for k in key[1:]]
        return tuple(parts) if form == "tuple" else parts
    raise Undecided
