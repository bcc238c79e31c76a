"""A production Enum's members are read once a run (channel.py ``getattr``, subject ``server._member``).

natsort's suite reads ``ns.DEFAULT`` in every example: one request each, for an answer Python never lets
change (``EnumType`` refuses to rebind or delete a member).  What must hold: the same values as a read of
each, a read of anything else (a class attribute, a method of the Enum, a module's attribute) asked every
time, a run's twin asked afresh, and a subject that calls every read a member changes what a property
sees of a class attribute only (never of a module or an object).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import standins
from tests.helpers import production_subject

PRODUCTION = '''
import enum, sys


class Color(enum.Enum):
    RED = "r"
    PAIR = (1, 2)

    def shade(self):
        return self.value


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Perm(enum.Flag):
    R = 4
    W = 2


class Box:
    SIZE = 3


COUNT = 0


def grow():
    global COUNT
    COUNT += 1
    Box.SIZE += 1


def sneak():
    """Rebind a member around EnumType.__setattr__ (Python refuses ``Color.RED = ...``)."""
    type.__setattr__(Color, "RED", Color.PAIR)


def refused():
    try:
        Color.RED = Color.PAIR
    except AttributeError as exc:
        return str(exc)
    return "rebound"


def liar():
    """A subject that calls every attribute read a member."""
    server = sys.modules["__main__"]
    plain = server.OPS["getattr"]
    server.OPS["getattr"] = lambda s, target, name: [*plain(s, target, name)[:2], "member"]
'''


@pytest.fixture(scope="module")
def subject(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Subject]:
    yield from production_subject(tmp_path_factory, "enummod", PRODUCTION, "en")


@pytest.fixture
def channel(subject: sandbox.Subject) -> standins.Channel:
    return standins.Channel(subject.socket_path)


def reads(channel: standins.Channel, read: object, times: int = 5) -> tuple[list[object], int]:
    before = channel.calls
    values = [read() for _ in range(times)]  # type: ignore[operator]
    return values, channel.calls - before


def test_a_member_is_asked_once_a_run(channel: standins.Channel) -> None:
    mod = channel.request("import", "enummod")
    color, level, perm = mod.Color, mod.Level, mod.Perm
    values, asked = reads(channel, lambda: color.RED)
    assert asked == 1 and all(v is values[0] for v in values), asked  # one stand-in, one request
    assert values[0].shade() == "r"
    values, asked = reads(channel, lambda: level.HIGH)
    assert asked == 1 and values == [2] * 5, (asked, values)  # an IntEnum member crosses as its int
    values, asked = reads(channel, lambda: perm.W)
    assert asked == 1 and all(v is values[0] for v in values)
    assert reads(channel, lambda: color.PAIR)[1] == 1  # each member its own first read


def test_anything_else_is_asked_every_time(channel: standins.Channel) -> None:
    mod = channel.request("import", "enummod")
    color, box = mod.Color, mod.Box
    assert reads(channel, lambda: color.shade)[1] == 5  # the Enum's method: not a member
    assert reads(channel, lambda: color.__members__)[1] == 5
    values, asked = [], 0
    for _ in range(3):
        before = channel.calls
        values.append(box.SIZE)
        asked += channel.calls - before
        mod.grow()
    assert asked == 3 and values == [3, 4, 5], (asked, values)  # a class attribute that changes: seen changing
    assert [mod.COUNT for _ in range(2)] == [3, 3]


def test_a_run_asks_its_own_twin_afresh(channel: standins.Channel) -> None:
    mod = channel.request("import", "enummod")
    color = mod.Color
    assert reads(channel, lambda: color.RED)[1] == 1
    fd = channel.twin()
    assert fd is not None
    saved = channel.endpoint
    channel.attach(fd)  # the next run: a twin of this process
    try:
        assert reads(channel, lambda: color.RED)[1] == 1
    finally:
        assert channel.endpoint is not None
        channel.endpoint.close()
        channel.endpoint = saved


def test_python_refuses_to_rebind_a_member_and_going_around_it_is_not_seen_again(channel: standins.Channel) -> None:
    mod = channel.request("import", "enummod")
    color = mod.Color
    first = color.RED
    assert "cannot reassign member" in mod.refused()
    assert color.RED is first
    mod.sneak()  # type.__setattr__: a later read of the same run still gives what the first gave
    assert color.RED is first and first.shade() == "r"


def test_a_subject_that_calls_every_read_a_member_reaches_class_attributes_only(channel: standins.Channel) -> None:
    mod = channel.request("import", "enummod")
    fd = channel.twin()
    assert fd is not None
    saved = channel.endpoint
    channel.attach(fd)  # the liar patches its own process only: a twin of the module's process
    try:
        mod.liar()
        box = mod.Box
        assert box.SIZE == 3
        mod.grow()
        assert box.SIZE == 3  # the lie: the class attribute's first value again (production's own answer)
        assert mod.COUNT == 1
        mod.grow()
        assert mod.COUNT == 2  # a module's attribute is asked every time, lie or not
    finally:
        assert channel.endpoint is not None
        channel.endpoint.close()
        channel.endpoint = saved
