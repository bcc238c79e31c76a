"""An oracle iterator over a list, tuple, range, str or bytes that production consumes (``reverse.items``).

natsort's ``sep_inserter(iter(x), "")``: production advanced the oracle's iterator one round trip per item.
Production always advanced a copy (it never moves the property's own iterator), so the copy's items go along
with the handle and production takes them where it runs.  What must hold: the same items, ends and results as
before; the oracle's own iterator is where it was; the same iterator passed twice is one object in production;
passed again later, production meets the items the oracle's iterator has then; a long one, or one whose items
cannot cross, is still asked one item at a time; production's other uses of it still reach the copy.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import reverse, standins
from tests.helpers import production_subject

PRODUCTION = '''
import itertools
import operator

KEPT = []


def take(it, n):
    return [next(it) for _ in range(n)]


def drain(it):
    return list(it)


def pairs(a, b):
    """``zip(it, it)``: the same iterator twice pairs its items up."""
    return list(zip(a, b))


def hint(it):
    return operator.length_hint(it)


def keep(it):
    KEPT.append(it)
    return None


def kept_next():
    return next(KEPT[-1], "end")


def joined(it):
    return "-".join(str(x) for x in it)


def marks(it):
    return [next(it), hasattr(it, "__setstate__")]
'''


class Oracle:
    """An object of the oracle's inside the list: it crosses as its own handle, as before."""

    def __init__(self, x: int) -> None:
        self.x = x


@pytest.fixture(scope="module")
def subject(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Subject]:
    yield from production_subject(tmp_path_factory, "itermod2", PRODUCTION, "oi")


@pytest.fixture
def counted(subject: sandbox.Subject) -> tuple[Any, standins.Channel, list[str]]:
    """The production module, its channel, and the requests production made of the oracle's side."""
    channel = standins.Channel(subject.socket_path)
    seen: list[str] = []
    serve = channel._serve_callback

    def counting(message: list[Any]) -> Any:
        seen.append(message[2] if message[0] in ("rop", "rget") and len(message) > 2 else message[0])
        return serve(message)

    channel._serve_callback = counting  # type: ignore[method-assign]
    return channel.request("import", "itermod2"), channel, seen


@pytest.mark.parametrize("sequence", [list(range(10)), tuple("abcdefghij"), range(10), "abcdefghij",
                                      "\u0100bc\u0101efghij", b"abcdefghij", bytearray(b"abcdefghij")])
def test_production_takes_the_items_without_a_round_trip_each(
        counted: tuple[Any, standins.Channel, list[str]], sequence: Any) -> None:
    mod, _channel, seen = counted
    it = iter(sequence)
    assert next(it) == sequence[0]  # the oracle took one itself: production gets the rest
    assert mod.take(it, 3) == list(sequence[1:4])
    assert mod.drain(it) == list(sequence[1:])  # a fresh copy each time it is passed: from where the oracle is
    assert mod.hint(it) == len(sequence) - 1
    assert next(it) == sequence[1]  # the oracle's own iterator is where it was
    assert seen == [], seen  # not one request of the oracle's side


def test_the_same_iterator_twice_is_one_object_in_production(
        counted: tuple[Any, standins.Channel, list[str]]) -> None:
    mod, _channel, seen = counted
    it = iter([1, 2, 3, 4, 5, 6])
    assert mod.pairs(it, it) == [(1, 2), (3, 4), (5, 6)]  # as in one process
    assert seen == []


def test_production_keeps_it_and_meets_the_items_of_the_next_pass(
        counted: tuple[Any, standins.Channel, list[str]]) -> None:
    mod, _channel, _seen = counted
    it = iter([1, 2, 3])
    mod.keep(it)
    assert mod.kept_next() == 1 and mod.kept_next() == 2
    assert next(it) == 1  # the oracle's own moves on; passed again, production's stand-in holds what it has now
    mod.keep(it)
    assert mod.kept_next() == 2 and mod.kept_next() == 3 and mod.kept_next() == "end"


def test_an_exhausted_iterator_and_its_end(counted: tuple[Any, standins.Channel, list[str]]) -> None:
    mod, _channel, seen = counted
    it = iter([1])
    assert list(it) == [1]
    assert mod.drain(it) == [] and mod.take(iter([]), 0) == []
    with pytest.raises(standins.ProductionError, match="StopIteration raised outside iteration"):
        mod.take(iter([7]), 2)  # production's next() past the end, raised out of its function: as before
    assert seen == []


def test_the_oracle_s_objects_inside_cross_as_the_copy_s(
        counted: tuple[Any, standins.Channel, list[str]]) -> None:
    mod, _channel, _seen = counted
    first, second = Oracle(1), Oracle(2)
    got = mod.drain(iter([first, second]))
    # the items of the copy production advances, handed back: copies, as production was given (unchanged)
    assert [type(g) for g in got] == [Oracle, Oracle] and [g.x for g in got] == [1, 2]
    assert got[0] is not first and first.x == 1


def test_a_long_iterator_is_still_asked_one_item_at_a_time(
        counted: tuple[Any, standins.Channel, list[str]]) -> None:
    mod, _channel, seen = counted
    long = list(range(reverse.MAX_ITEMS + 5))
    assert mod.take(iter(long), 3) == [0, 1, 2]
    assert seen.count("next") == 3, seen
    seen.clear()
    it = iter(long)
    mod.keep(it)  # a stand-in made without its items ...
    for _ in range(reverse.MAX_ITEMS):
        next(it)
    mod.keep(it)  # ... and passed again, short now: it still asks the copy, which is the fresh one
    assert mod.kept_next() == reverse.MAX_ITEMS
    short = iter([1, 2, 3])
    mod.keep(short)  # a stand-in made with its items ...
    mod.keep(iter(long))  # (another object, another stand-in)
    seen.clear()
    assert mod.drain(short) == [1, 2, 3] and seen == []
    long_now = iter(long)
    mod.keep(long_now)
    assert mod.kept_next() == 0 and seen == ["next"]


def test_other_uses_still_reach_the_copy(counted: tuple[Any, standins.Channel, list[str]]) -> None:
    mod, _channel, seen = counted
    # an attribute the stand-in lacks is read off the evaluator's copy, as before
    assert mod.marks(iter([5, 6])) == [5, True]
    assert seen == ["__setstate__"], seen
    assert mod.joined(iter(range(4))) == "0-1-2-3"
