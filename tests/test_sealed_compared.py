"""A call whose value is compared at once, and the snapshots that comparison takes, in one request
(``trusted/compared.py``), against a real subject.

What must hold: the answers one process gives (``==`` and ``!=`` decided by the evaluator over snapshots, as
before), production's calls and reads in the caller's order, a snapshot's error raised from the comparison, nothing
answered from what came once anything else ran or was asked, an operand of the oracle's own class left as before,
and a malformed reply refused.
"""

from __future__ import annotations

import dataclasses
import dis
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import compared, proxies, standins
from tests.helpers import production_subject, traced_at

PRODUCTION = '''
import collections.abc
import sys

READS = []


class Bag(collections.abc.Set):
    """A production set: its snapshot is its items, read through its own ``__iter__`` (written down)."""
    def __init__(self, items):
        self.items = list(items)
    def __contains__(self, item):
        return item in self.items
    def __iter__(self):
        READS.append("iter")
        if "boom" in self.items:
            raise ValueError("a bag that cannot be read")
        return iter(list(self.items))
    def __len__(self):
        return len(self.items)
    def copy(self):
        READS.append("copy")
        return Bag(self.items)


def bag(*items):
    READS.append("bag")
    return Bag(items)


def add(b, item):
    b.items.append(item)


def pair():
    return (1, 2)


def reads():
    out = list(READS)
    READS.clear()
    return out


def lying(reply, op):
    """A hostile subject from now on: every reply to ``op`` is ``reply``."""
    server = sys.modules["__main__"]
    server.OPS[op] = lambda s, *args: reply
'''


@pytest.fixture(scope="module")
def subject(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Subject]:
    yield from production_subject(tmp_path_factory, "cmpmod", PRODUCTION, "cm")


@pytest.fixture
def mod(subject: sandbox.Subject) -> Any:
    return standins.Channel(subject.socket_path).request("import", "cmpmod")


@dataclasses.dataclass
class Mine:
    """The oracle's own class: its ``==`` may ask the stand-in anything first."""

    items: frozenset[int]


def asked(mod: Any, before: int) -> int:
    return proxies.channel_of(mod).calls - before


def test_a_value_compared_at_once_comes_with_its_snapshot(mod: Any) -> None:
    ch = proxies.channel_of(mod)
    box = mod.bag(1, 2)
    box.copy()  # read once as a method: from now on read with its call (``callsite.py``)
    expected, other = frozenset({1, 2}), frozenset({3})
    mod.reads()
    for _ in range(3):
        before = ch.calls
        assert expected == box.copy()  # pytest: ``@py_assert3 = box.copy()``, then ``expected == @py_assert3``
        assert asked(mod, before) == 1 and mod.reads() == ["copy", "iter"]
    before = ch.calls
    assert box.copy() == expected  # the value on the left
    assert asked(mod, before) == 1 and mod.reads() == ["copy", "iter"]
    before = ch.calls
    assert other != box.copy() and asked(mod, before) == 1
    assert mod.reads() == ["copy", "iter"] and compared.NOW[0] is None
    before = ch.calls
    assert (expected != mod.bag(2, 1)) is False  # a function's value
    assert asked(mod, before) == 1 and mod.reads() == ["bag", "iter"]


def test_two_production_objects_compared_at_once_come_with_the_call(mod: Any) -> None:
    ch = proxies.channel_of(mod)
    box = mod.bag(1, 2)
    box.copy()
    made = mod.bag(2, 1)
    mod.reads()
    before = ch.calls
    assert made == box.copy()  # the call, then both snapshots, the left one's first
    assert asked(mod, before) == 1 and mod.reads() == ["copy", "iter", "iter"]
    before = ch.calls
    assert box.copy() == made
    assert asked(mod, before) == 1 and mod.reads() == ["copy", "iter", "iter"]
    smaller = mod.bag(1)
    mod.reads()
    assert smaller != box.copy() and mod.reads() == ["copy", "iter", "iter"]


def test_what_is_not_taken_ahead(mod: Any) -> None:
    ch = proxies.channel_of(mod)
    box = mod.bag(1, 2)
    box.copy()
    mine = Mine(frozenset({1, 2}))
    mod.reads()
    before = ch.calls
    assert (mine == box.copy()) is False  # the oracle's own class: its ``==`` asks first; nothing was taken ahead
    assert mod.reads() == ["copy", "iter"] and compared.NOW[0] is None and asked(mod, before) >= 3
    pair = (1, 2)
    assert pair == mod.pair() and compared.NOW[0] is None  # plain data back: nothing to take
    x = box.copy()
    mod.reads()
    assert x == frozenset({1, 2}) and mod.reads() == ["iter"]  # not a comparison right after the call


def test_a_snapshot_error_is_raised_from_the_comparison(mod: Any) -> None:
    box = mod.bag(1, "boom")
    box.copy()
    expected = frozenset({1})
    mod.reads()
    made = None
    with pytest.raises(ValueError, match="cannot be read"):
        made = box.copy()
        assert expected == made
    assert made is not None, "the call itself raised the snapshot's error"
    with pytest.raises(ValueError, match="cannot be read"):
        assert expected == box.copy()
    assert compared.NOW[0] is None


def test_snapshots_are_taken_again_once_anything_ran(mod: Any) -> None:
    box = mod.bag(1)
    box.copy()

    def check(b: Any, expected: Any) -> bool:
        value = b.copy()
        return expected == value

    def between(frame: FrameType) -> bool:  # a tracer runs between the call and the compare
        came = compared.NOW[0] is not None  # the snapshot came with the call
        mod.add(frame.f_locals["value"], 2)  # production changed the value between them (a request)
        return came

    compare = next(i.offset for i in dis.get_instructions(check.__code__) if i.opname == "COMPARE_OP")
    got, done = traced_at(check, compare, between, box, frozenset({1}))
    assert done == [True]
    assert got is False, "a snapshot taken before production changed was used"
    assert compared.NOW[0] is None


def test_a_malformed_callsnap_reply_is_refused(mod: Any) -> None:
    box = mod.bag(1)
    box.copy()
    expected = frozenset({1})
    mod.lying(["ok", ["l", 1], "no snapshots"], op="callsnap")
    with pytest.raises(standins.SealedCallError, match="malformed callsnap reply"):
        assert expected == box.copy()
    mod.lying(["ok", ["l", 1], ["ok", []]], op="callsnap")  # snapshots not the ones asked for
    with pytest.raises(standins.SealedCallError, match="malformed snapshot"):
        assert expected == box.copy()
    assert compared.NOW[0] is None
