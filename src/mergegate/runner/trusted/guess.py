"""A loop of ``next`` on a production object, its items guessed ahead in a copy of the subject and replayed.

``ahead.py`` reads a *builtin* iterator (a generator, ``map``...) in batches: nothing but the iterator
itself decides its items.  An object of production's own class with a ``__next__`` (priority's
``PriorityTree``, a scheduler, a cursor) is different: its other methods change what it yields, so
reading it ahead would give items the property, calling ``p.block(3)`` in between, must not see; each
``next`` was a round trip (priority's ``period_of_repetition`` pulls millions and timed out sealed).

Once a property has called ``next`` on one production object ``START`` times in a row with no other
request in between, the evaluator asks the subject to *guess* (``subject/guess.py``): the subject forks
a copy of itself that runs ``next`` up to 64, then 256, 1024, 4096 times and sends the outcomes (plain
data, or the ``StopIteration`` that ends them); the subject itself does not run them.  The evaluator
hands them out one ``next`` at a time and counts them.  Before any other request, before the next guess
and at the end of each example and test, the subject catches up: when every outcome was taken, its copy,
which ran exactly those, takes the subject process's place; otherwise the subject *replays* as many
``next`` calls as were taken, each of whose outcome must be the guess's (the same encoding).  Either way
production's process ends each step exactly where one process would be, having run the same code
(change coverage sees it); outcomes not taken are forgotten.

What the verdict rests on is unchanged: every item is decoded here as any reply, from a process running
production from the state the property left it in.  A replay that answers differently (production that
reads the clock, or tells its copy from itself) is a ``SealedCallError`` (``faults.py``: the example
fails, whatever it catches); a reply that is not a well-formed guess is one too.  What production can
observe: its copy runs a few items ahead, earlier than one process would run them, and is killed or
carries on as the subject.  Nothing here changes on this side when the copy takes over.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from mergegate.runner.trusted.faults import SealedCallError

START = 16  # nexts in a row on one object before a guess (a fork costs about as much as 20 round trips)
SIZES = (64, 256, 1024, 4096)  # outcomes asked for by the first guess, the second, ... every later one


class Guessing:
    """One connection's guess: the object, the outcomes not yet taken, how many were taken (owed)."""

    __slots__ = ("outcomes", "owed", "rounds", "streak", "target")

    def __init__(self) -> None:
        self.target: Any = None
        self.outcomes: deque[list[Any]] = deque()
        self.owed = 0
        self.streak = 0  # nexts on ``target`` in a row, each its own request
        self.rounds = 0  # guesses made in this streak

    def other(self) -> int:
        """Another request goes out: what the subject owes must be replayed first (returned), the rest forgotten."""
        owed = self.owed
        self.target, self.owed, self.streak, self.rounds = None, 0, 0, 0
        self.outcomes.clear()
        return owed


def next_of(ch: Any, handle: Any) -> Any:
    """``next(handle)`` for a production object that is not a builtin iterator."""
    g: Guessing = ch.guessing
    if g.target is not handle:
        settle(ch)
        g.target = handle
    if g.outcomes:
        return _take(ch, g)
    g.streak += 1
    if g.streak <= START:
        owed, g.owed = g.owed, 0
        _replay(ch, owed)  # a guess that stopped before an item it cannot carry: what it answered comes first
        return _one(ch, handle)
    size = SIZES[min(g.rounds, len(SIZES) - 1)]
    g.rounds += 1
    owed, g.owed, g.target = g.owed, 0, None  # a request an oracle callback makes meanwhile settles nothing
    reply = ch.exchange(("guess", ch.enc(handle), owed, size), guessing=True)
    g.target = handle
    outcomes, why = _checked(reply, size)
    if why == "halt":
        g.streak = 0  # the next item is not one a guess can carry: ask for it the usual way, then count again
    if not outcomes:
        return _one(ch, handle)
    g.outcomes.extend(outcomes)
    return _take(ch, g)


def settle(ch: Any) -> None:
    """The subject runs the nexts the property took from a guess (before any other request, and at the end of
    each example and test); the outcomes not taken are forgotten."""
    _replay(ch, ch.guessing.other())


def settle_finder(finder: Any) -> None:
    """``settle`` at the end of an example or test (``session.GatePlugin``; a shared run has no channel)."""
    channel = getattr(finder, "channel", None)
    if channel is not None:
        settle(channel)


def _replay(ch: Any, owed: int) -> None:
    if owed and ch.endpoint is not None:
        g, ch.guessing = ch.guessing, Guessing()  # a request an oracle callback makes meanwhile settles nothing
        try:
            reply = ch.exchange(("replay", owed), guessing=True)
        finally:
            ch.guessing = g
        if reply != ["ok", None]:
            why = reply[4] if type(reply) is list and len(reply) == 7 and reply[0] == "err" else reply
            raise SealedCallError(f"production's process did not end where the guess of its next items said: "
                                  f"{str(why)[:200]}")


def _one(ch: Any, handle: Any) -> Any:
    """``next(handle)``, one request (counted in the streak)."""
    reply = ch.exchange(("op", "next", ch.args([handle])[0]), guessing=True)
    if reply[0] == "ok" and len(reply) >= 2:
        return ch.dec(reply[1])
    raise ch.error(reply, stop_allowed=True)


def _take(ch: Any, g: Guessing) -> Any:
    outcome = g.outcomes.popleft()
    g.owed += 1
    if outcome[0] == "stop":
        raise StopIteration
    return ch.dec(outcome[1])


def _checked(reply: Any, size: int) -> tuple[list[list[Any]], str]:
    if type(reply) is list and len(reply) == 7 and reply[0] == "err":
        raise SealedCallError(f"the subject could not guess production's next items: {str(reply[4])[:200]}")
    if type(reply) is not list or len(reply) != 3 or reply[0] != "ok":
        raise SealedCallError(f"the subject sent a malformed guess: {str(reply)[:200]}")
    why = reply[2]
    try:  # one outcome a line, each a JSON array: parsed at once, then checked as any reply
        outcomes = (json.loads("[" + reply[1].replace("\n", ",") + "]") if reply[1] else []) \
            if type(reply[1]) is str else None
    except (ValueError, RecursionError):
        outcomes = None
    if type(outcomes) is not list or len(outcomes) > size or why not in ("full", "stop", "halt") \
            or not all(type(o) is list and (o == ["stop"] or (len(o) == 2 and o[0] == "v")) for o in outcomes) \
            or any(o == ["stop"] for o in outcomes[:-1]) or (why == "stop") != (outcomes[-1:] == [["stop"]]) \
            or (why == "full" and len(outcomes) != size):
        raise SealedCallError(f"the subject sent a malformed guess: {str(reply)[:200]}")
    return outcomes, why
