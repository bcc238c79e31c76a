"""Production using an object of the oracle's (not a callable): each use comes back here and runs here.

The oracle passed ``SupportsKeysAndGetItem({...})`` to a production function: the subject
holds a ``Reverse`` stand-in (``subject/server.py``) whose attribute reads and operations are
requests to the evaluator, answered by the oracle's own object in this process.  What the
object raises is re-raised in the property when the production call returns (sticky, as for
callbacks), except the protocol answers production is entitled to (``AttributeError`` for a
missing attribute, ``KeyError``/``IndexError`` from ``[]``, ``StopIteration`` from ``next``):
``hasattr`` and ``dict(obj)`` must work.
"""

from __future__ import annotations

import operator
from typing import Any

from mergegate.runner.protocol import codec
from mergegate.runner.trusted import faults
from mergegate.runner.trusted.faults import SealedCallError

OPS: dict[str, Any] = {
    "getitem": operator.getitem, "len": len, "iter": iter, "next": next, "contains": operator.contains,
    "repr": repr, "eq": operator.eq, "ne": operator.ne, "hash": hash,
    "call": lambda obj, args, kwargs: obj(*args, **kwargs),
}
ANSWERS = {"rget": (AttributeError,), "getitem": (KeyError, IndexError), "next": (StopIteration,)}


# An oracle iterator over a list, tuple, range, str or bytes: production advances a copy of it (``_copy``), which
# nothing of the oracle's ever sees, so its items go along with the handle and production takes them in the
# subject (``subject/objects.py`` ``Batched``), not one round trip each (natsort: ``sep_inserter(iter(x), "")``).
_SEQUENCES: tuple[Any, ...] = ([], (), range(0), "", "\u0100", b"", bytearray())
SEQUENCE_ITERATORS = frozenset(type(iter(x)) for x in _SEQUENCES)
MAX_ITEMS = 1024  # longer, they are asked for one at a time, as any iterator of the oracle's


def items(copied: Any, ref: Any) -> list[Any]:
    """``[the copy's remaining items, encoded]`` for a sequence iterator short enough; else ``[]``."""
    left = operator.length_hint(copied) if type(copied) in SEQUENCE_ITERATORS else -1
    if not 0 <= left <= MAX_ITEMS:
        return []
    state = copied.__reduce__()  # (iter, (sequence,), position), or (iter, ((),)) once it ended
    rest = [next(copied) for _ in range(left)]  # its own next (a list subclass's __iter__ is not asked) ...
    if len(state) > 2:
        copied.__setstate__(state[2])  # ... and back where it was: never past its end, so never exhausted
    try:
        return [codec.encode(rest, ref)]
    except codec.CodecError:  # an item that cannot cross: production meets it where it reaches it, as before
        return []


COMPARISONS = ("__eq__", "__ne__", "__hash__", "__lt__", "__le__", "__gt__", "__ge__")


def compares_itself(kind: type) -> bool:
    """Whether a class of the oracle's defines a comparison or hash of its own (not ``tuple``'s or ``object``'s):
    then its tuples reach production as objects answered here, not as plain tuples (``Channel._ref``):
    pyrsistent's ``BrokenItem(namedtuple(...))``, whose ``__eq__`` production's map must use, and whose ``!=``
    is ``tuple``'s (pyrsistent's issue #268)."""
    return any(name in vars(k) for k in kind.__mro__ if k not in (tuple, object) for name in COMPARISONS)


def module_name(ch: Any, message: list[Any]) -> list[Any]:
    """``rmod``: production read a name of an oracle module (a type named by string): a class as the subject's
    copy (``classdefs.mirror``), plain data by value, nothing else (never a function production could call);
    only modules of the trusted oracle tree answer."""
    import sys

    from mergegate.runner.trusted import classdefs

    module = sys.modules.get(message[1]) if len(message) == 3 and type(message[1]) is str else None
    file = getattr(module, "__file__", None)
    if module is None or type(file) is not str or not classdefs._is_trusted(file) or type(message[2]) is not str \
            or message[2].startswith("_") or not hasattr(module, message[2]):
        return ["err", "AttributeError", f"oracle module has no attribute {str(message[2])[:100]!r}"]
    value = getattr(module, message[2])
    try:
        if not isinstance(value, type):  # plain data by value; never the oracle's functions or objects
            return ["ok", codec.encode(value, _refuse)]
        return ["ok", ch.enc(value)]
    except Exception as exc:
        faults.handled(exc)  # production's answer is an AttributeError; the property never saw it
        return ["err", "AttributeError", str(exc)[:500]]


def _refuse(obj: Any) -> list[Any]:
    raise codec.CodecError(f"an oracle {type(obj).__qualname__} is not handed to production by name")


def serve(ch: Any, message: list[Any]) -> list[Any]:
    """One ``rget`` (``[op, number, name]``) or ``rop`` (``[op, number, name, args]``) request."""
    number = message[1] if len(message) >= 3 else None
    if type(number) is not int or number not in ch.originals or type(message[2]) is not str \
            or message[2].startswith("_gate"):
        # Only a copy the oracle passed answers; a callable of the oracle's is the original and is only ever
        # called (``__func__.__setattr__('__code__', ...)`` would rewrite the oracle here). Honest production
        # never asks this: the property fails.
        ch.sticky.append(SealedCallError(f"the subject asked for an unknown object of the oracle's: "
                                         f"{str(message[:3])[:120]}"))
        return ["err", "ValueError", "the subject asked for an unknown object of the oracle's"]
    obj, name = ch.callbacks[number], message[2]
    expected: tuple[type[BaseException], ...] = ANSWERS.get("rget" if message[0] == "rget" else name, ())
    try:
        if message[0] == "rget":
            value = getattr(obj, name)
        else:
            fn = OPS.get(name)
            args = ch.dec(message[3], copies=True) if len(message) == 4 else None
            if fn is None or type(args) is not list:
                return ["err", "ValueError", f"unknown operation {name!r}"]
            value = fn(obj, *args)
        return ["ok", ch.enc(value)]
    except expected as exc:
        return ["err", type(exc).__name__, str(exc)[:2000]]
    except BaseException as exc:
        ch.sticky.append(exc)
        return ["err", "Exception", str(exc)[:2000]]
