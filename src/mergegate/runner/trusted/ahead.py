"""A production iterator read ahead: ``next`` on a generator, ``filter`` or ``map`` of production's, in batches.

Real suites drain production's iterators (``list(path_splitter(p))``, ``sorted(filter(...))``), and
one request per item made such a loop a round trip per element (natsort: a third of its requests).
For a *builtin* iterator (``subject/objects.py`` ``iterator``: a generator, ``filter``, ``map``,
``zip``, ``itertools``...; its own iterator, no length) the evaluator asks for items in batches of 1, then
16, then 64 (the first ``next`` fetches one item, so a single ``next(gen)`` runs production exactly as
far as in one process; a loop's second asks for more); ``iter()`` of it is itself
and ``len()`` a ``TypeError`` without a request (as Python answers for those types).

``list()``, ``tuple()``, ``sorted()``, ``str.join`` and ``list.extend`` ask an iterator's
``__length_hint__`` before they drain it whole (``draining``): their reads start at the largest
batch, so ``tuple(path_splitter(p))`` is one request. Nothing else asks for a length hint, and
what those consumers take, they take to the end, so production runs no further than in one process.
A production object that has a length is never asked its iterator's hint (``list(bi)`` asks ``len(bi)``), and
``set()``/``frozenset()`` ask none: where the caller's bytecode shows such a builtin called on the object
(``consumers.py``), ``drain`` fetches the iterator and its first batch of 64 in one request.

What changes, said plainly: once a loop has taken two items, production's generator may run up to
63 items ahead of the loop (its own code, and any oracle callback it calls, run earlier than
in one process). A property that interleaves ``next`` with other calls that observe the generator's
progress sees that. Nothing of the verdict moves to production: each item is decoded here as any
reply; where the iterator ended (``StopIteration``) or failed (its exception, raised after the items
before it) is production's answer, as it is for a single ``next``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from mergegate.runner.trusted.faults import SealedCallError

SIZES = (1, 16, 64)  # the first batch, the second, every later one


class Reader:
    """The items fetched and not yet taken, how the iterator ended, and the next batch's size."""

    __slots__ = ("end", "items", "size")

    def __init__(self) -> None:
        self.items: deque[Any] = deque()
        self.end: Any = None  # None: not ended; "stop"; or the error reply the subject sent
        self.size = SIZES[0]

    def next(self, ch: Any, handle: Any) -> Any:
        if not self.items and self.end is None:
            self._fetch(ch, handle)
        if self.items:
            return self.items.popleft()
        if self.end == "stop":
            raise StopIteration
        raise ch.error(self.end)

    def draining(self) -> None:
        """The consumer takes every item (it asked for a length hint): read in the largest batches from now."""
        self.size = SIZES[-1]

    def _fetch(self, ch: Any, handle: Any) -> None:
        reply = ch.exchange(("ahead", ch.enc(handle), self.size))
        if reply[0] != "ok" or len(reply) != 3:
            raise ch.error(reply)
        self._take(ch, reply[1], reply[2], reply)
        self.size = SIZES[min(SIZES.index(self.size) + 1, len(SIZES) - 1)]

    def _take(self, ch: Any, data: Any, end: Any, reply: Any) -> None:
        items = ch.dec(data)
        if type(items) is not list or not (end is None or end == "stop" or (type(end) is list and end[:1] == ["err"])) \
                or (end is None and len(items) != self.size):
            raise SealedCallError(f"the subject sent a malformed batch of items: {str(reply)[:120]}")
        self.items.extend(items)
        self.end = end


def drain(ch: Any, handle: Any) -> Any:
    """``iter(handle)`` for a builtin consumer that takes every item at once (``consumers.consumer``): the
    iterator, its first batch already read in the largest size (one request where ``iter``, a batch of one and
    one of 16 were three), as ``draining`` reads the rest."""
    reply = ch.exchange(("drain", ch.enc(handle), SIZES[-1]))
    if reply[0] != "ok" or len(reply) != 4:
        raise ch.error(reply, stop_allowed=False)
    it = ch.dec(reply[1])
    started(ch, it, reply[2], reply[3], reply)
    return it


def started(ch: Any, it: Any, data: Any, end: Any, reply: Any) -> None:
    """The first batch (``data``, ``end``) read with ``iter`` for a consumer that drains ``it`` (its stand-in) whole;
    the rest read in the largest batches."""
    try:
        reader = object.__getattribute__(it, "_gate_ahead")
    except AttributeError:
        reader = None
    if reader is None:  # production's own iterator class (asked a ``next`` at a time, or guessed): nothing read
        if ch.dec(data) != [] or end is not None:
            raise SealedCallError(f"the subject sent a malformed batch of items: {str(reply)[:120]}")
        return
    reader.draining()
    reader._take(ch, data, end, reply)
