"""An object of the oracle's that production holds and hands back (``trusted/channel.py``, ``subject/server.py``).

pyrsistent's ``pmap({dummy1: 1, dummy2: 2})`` keys a production map by the oracle's objects whose ``__eq__`` is
identity, then reads them back (``keys == {dummy1, dummy2}``); its state machines store the oracle's objects in
a ``pvector`` and compare what comes out with ``==``.  Production gets a copy of such an object (it never writes
into the property's values), one stand-in per object however often it is passed, and what it hands back is the
oracle's own object: production chooses which of the oracle's objects it returns, never what they are.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

import pytest

from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import standins
from tests.helpers import production_subject

PRODUCTION = '''
import sys

def same(x):
    return x

def pair(a, b):
    return [a, b]

class Table:
    """pyrsistent's pmap buckets: ``k == key``, never ``is``."""

    def __init__(self):
        self.items = []

    def put(self, key, value):
        self.items = [(k, v) for k, v in self.items if not k == key] + [(key, value)]
        return self

    def get(self, key):
        for k, v in self.items:
            if k == key:
                return v
        raise KeyError("missing")

    def has(self, key):
        return any(k == key for k, _ in self.items)

    def keys(self):
        return [k for k, _ in self.items]

class Vector:
    """pyrsistent's pvector: a production sequence holding the oracle's objects, compared by its items."""

    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def __eq__(self, other):
        return list(self) == list(other)

import collections.abc
collections.abc.Sequence.register(Vector)

def remembers(fn, _seen=[]):
    """Production that keys a cache by the callable it was given (natsort_keygen-style)."""
    _seen.append(fn)
    return _seen[0] is fn

class Frozen:
    """pyrsistent's pmap: immutable, its hash computed once from its items."""

    def __init__(self, items):
        self.items = tuple(items)

    def __eq__(self, other):
        return isinstance(other, Frozen) and self.items == other.items

    def __hash__(self):
        if not hasattr(self, "_hash"):
            self._hash = hash(self.items)
        return self._hash

class Box:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Box) and self.value == other.value

    def __hash__(self):
        return hash(self.value)

def read_x(obj):
    return obj.x

def bump_and_read(obj):
    obj.bump()  # the oracle's method, run on the copy production was given
    return obj.x

def rewrites_the_oracle(obj):
    """Hostile: ask for the oracle's own function behind a method of its object, and rewrite it there."""
    server = sys.modules["__main__"]
    method = obj.bump
    s = method.session
    ask = lambda n, name: server.OBJECTS.answer(s, s.endpoint.request(["rget", n, name]))
    tried = []
    for step in (lambda: ask(ask(method.number, "__func__").number, "__setattr__")("__code__", ask(
                     ask(obj.keep.number, "__func__").number, "__code__")),
                 lambda: ask(ask(method.number, "__func__").number, "__setattr__")("__doc__", "rewritten"),
                 lambda: server.OBJECTS.answer(s, s.endpoint.request(["rop", method.number, "call", s.enc([[], {}])]))):
        try:
            step()
            tried.append("done")
        except Exception as exc:
            tried.append(type(exc).__name__)
    return tried

import typing

@typing.runtime_checkable
class Maplike(typing.Protocol):
    """bidict's ``Maplike``: its oracle asks ``isinstance(updates, Maplike)`` of its own objects."""

    def keys(self): ...
    def __getitem__(self, key): ...

@typing.runtime_checkable
class NamedLike(typing.Protocol):
    name: str

class Plain(typing.Protocol):
    def go(self): ...

def calls_as_a_callback(obj, offset):
    """Hostile: a callback request naming the oracle object it holds (offset 0) or a number never given."""
    s = object.__getattribute__(obj, "_gate_session")
    number = object.__getattribute__(obj, "_gate_number") + offset
    args, kwargs = s.codec.encode_call([], {}, s.ref)
    try:
        s.endpoint.request(["callback", number, args, kwargs])
    except Exception as exc:
        return type(exc).__name__
    return "called"

def differ(a, b):
    return a != b

def kind(x):
    return type(x).__name__, isinstance(x, tuple)

def names_a_reverse(n):
    """A hostile reply: every later call answers with the oracle object numbered ``n``."""
    server = sys.modules["__main__"]
    server.OPS["call"] = server.OPS["callattr"] = lambda s, *a: ["ok", ["rv", n]]  # every call, fused or not
'''


class Dummy:
    """pyrsistent's ``HashDummy``: one hash for all, equal only to itself."""

    def __init__(self, x: int = 0) -> None:
        self.x = x

    def __hash__(self) -> int:
        return 6528039219058920

    def __eq__(self, other: object) -> bool:
        return self is other

    def bump(self) -> None:
        self.x += 1

    def keep(self) -> None:
        pass


class BrokenPerson(collections.namedtuple("Person", "name")):
    """pyrsistent's #268 test: a named tuple with an ``__eq__`` of its own and ``tuple``'s ``!=``."""

    def __eq__(self, other: object) -> bool:
        return self.__class__ == other.__class__ and self.name == other.name  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self.name)


class BrokenItem(collections.namedtuple("Item", "name")):
    def __eq__(self, other: object) -> bool:
        return self.__class__ == other.__class__ and self.name == other.name  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self.name)


class Labelled(collections.namedtuple("Labelled", "name")):
    def label(self) -> str:
        return self.name.upper()


@pytest.fixture(scope="module")
def subject(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Subject]:
    yield from production_subject(tmp_path_factory, "revmod", PRODUCTION, "r")


@pytest.fixture
def prod(subject: sandbox.Subject) -> Any:
    return standins.Channel(subject.socket_path).request("import", "revmod")


def test_an_oracle_object_handed_back_is_the_oracle_s_own(prod: Any) -> None:
    d = Dummy()
    assert prod.same(d) is d and prod.pair(d, d) == [d, d] and prod.pair(d, d)[1] is d

    def f(x: int) -> int:
        return x + 1

    assert prod.same(f) is f  # a callable too
    assert prod.remembers(f) and prod.remembers(f)  # production holds one stand-in for it, however often passed


def test_production_keys_by_the_oracle_s_identity_objects(prod: Any) -> None:
    """pyrsistent's ``test_hash_collision_is_correctly_resolved``, with production's map."""
    d1, d2, d3, d4 = Dummy(), Dummy(), Dummy(), Dummy()
    table = prod.Table().put(d1, 1).put(d2, 2).put(d3, 3)
    assert table.get(d1) == 1 and table.get(d2) == 2 and table.get(d3) == 3
    assert not table.has(d4) and table.has(d2)
    assert set(table.keys()) == {d1, d2, d3} and table.keys()[0] is d1
    table.put(d1, 11)
    assert table.get(d1) == 11 and len(table.keys()) == 3


def test_a_production_sequence_of_the_oracle_s_objects_compares_by_them(prod: Any) -> None:
    """pyrsistent's state machine: ``assert [d] == pvector([d])`` (the snapshot holds the oracle's own objects)."""
    d1, d2 = Dummy(1), Dummy(2)
    vector = prod.Vector([d1, d2])
    assert [d1, d2] == vector and vector == [d1, d2] and vector != [d2, d1] and vector != [d1, Dummy(2)]
    assert d1 in vector and Dummy(1) not in vector


class Controlled:
    """pyrsistent's ``HashabilityControlled``: hashable until told otherwise."""

    hashable = True

    def __hash__(self) -> int:
        if self.hashable:
            return 4
        raise ValueError("I am not currently hashable.")


def test_the_same_state_hashes_as_it_did(prod: Any) -> None:
    """``map_does_not_hash_values_on_second_hash_invocation``: the evaluator hashes a production object from its
    state, and a state it hashed before keeps its hash; a changed state is hashed afresh."""
    item = Controlled()
    frozen = prod.Frozen([item])
    first = hash(frozen)
    item.hashable = False
    assert hash(frozen) == first
    box = prod.Box(1)
    one = hash(box)
    box.value = 2
    assert one == hash(prod.Box(1)) != hash(prod.Box(2))
    assert hash(box) == hash(prod.Box(2)) and box == prod.Box(2)  # hashed again from the new state, as ``==`` is


def test_production_sees_the_oracle_s_state_when_passed_and_never_writes_into_it(prod: Any) -> None:
    d = Dummy(1)
    assert prod.read_x(d) == 1
    d.x = 5
    assert prod.read_x(d) == 5  # each pass copies the oracle's object as it is now
    assert prod.bump_and_read(d) == 6 and d.x == 5  # production's write reached its copy only
    held = prod.Table().put(d, "v")
    assert held.keys()[0] is d and d.x == 5


def test_a_reverse_number_production_was_never_given_is_refused(subject: sandbox.Subject) -> None:
    channel = standins.Channel(subject.socket_path)
    mod = channel.request("import", "revmod")
    d = Dummy()
    assert mod.same(d) is d
    mod.names_a_reverse(10**6)  # from now on every call answers with an oracle object that was never passed
    with pytest.raises(standins.SealedCallError, match="unknown reference"):
        mod.same(1)


def test_a_reverse_number_names_only_what_this_channel_passed(subject: sandbox.Subject) -> None:
    """Production naming a number it was given answers with that very object; nothing else of the oracle's."""
    channel = standins.Channel(subject.socket_path)
    mod = channel.request("import", "revmod")
    first, second = Dummy(1), Dummy(2)
    assert mod.same(first) is first and mod.same(second) is second
    mod.names_a_reverse(channel.callback_ids[id(first)])
    assert mod.same(second) is first  # production may choose which of them it returns (its answer) ...
    assert first.x == 1 and second.x == 2  # ... never what they are


def test_production_reaches_no_function_of_the_oracle_s_behind_a_callable_it_holds(prod: Any) -> None:
    """A callable of the oracle's is only ever called: its attributes (``__func__``, ``__setattr__``, ``__code__``)
    are not production's to read, so production cannot rewrite the oracle's own method in this process."""
    d = Dummy(1)
    with pytest.raises(standins.SealedCallError, match=r"unknown object of the oracle's.*__func__"):
        prod.rewrites_the_oracle(d)  # every step is refused (production sees ValueError); the property fails
    d.bump()
    assert d.x == 2 and Dummy.bump.__doc__ is None


@pytest.mark.parametrize("offset", [0, 10**6])
def test_a_callback_request_for_what_is_not_an_oracle_callable_fails_the_property(prod: Any, offset: int) -> None:
    """An object of the oracle's is used through its stand-in's operations, never called as a callback; a number
    never given names nothing. Honest production never asks either: the property fails."""
    with pytest.raises(standins.SealedCallError, match="unknown callback"):
        prod.calls_as_a_callback(Dummy(1), offset)


class KeysAndItems:
    """bidict's test fixture ``SupportsKeysAndGetItem``: the oracle's own mapping-like object."""

    def __init__(self, items: dict[Any, Any]) -> None:
        self.items = items

    def keys(self) -> Any:
        return self.items.keys()

    def __getitem__(self, key: Any) -> Any:
        return self.items[key]


def test_an_oracle_object_is_an_instance_of_a_production_protocol_it_has_the_members_of(
        subject: sandbox.Subject) -> None:
    """``isinstance(x, Maplike)`` with a runtime-checkable production Protocol is structural, so the oracle's own
    objects can be instances (bidict's Oracle.putall branches on it); a nominal production class never asks."""
    channel = standins.Channel(subject.socket_path)
    mod = channel.request("import", "revmod")
    assert isinstance(KeysAndItems({1: 2}), mod.Maplike) and isinstance({1: 2}, mod.Maplike)
    assert not isinstance([1, 2], mod.Maplike) and not isinstance(Dummy(), mod.Maplike)
    assert issubclass(dict, mod.Maplike) and not issubclass(list, mod.Maplike)  # (a class of the oracle's tree
    # goes as the subject's copy of it, ``classdefs.py``; this test file is not one)
    assert isinstance(Dummy(), mod.NamedLike) is False and isinstance(type("N", (), {"name": "x"})(), mod.NamedLike)
    with pytest.raises(TypeError, match="runtime_checkable"):  # as in one process: not a runtime protocol
        isinstance(Dummy(), mod.Plain)
    table = mod.Table
    calls = channel.calls
    assert not isinstance(KeysAndItems({}), table) and not issubclass(KeysAndItems, table)
    assert channel.calls == calls  # a nominal class: the evaluator's own object is never its instance


def test_an_oracle_tuple_with_comparisons_of_its_own_is_compared_by_them_in_production(prod: Any) -> None:
    """pyrsistent's ``pmap_removal_with_broken_classes_deriving_from_namedtuple``: production's map keys by the
    oracle's named tuples; its ``==`` is the class's own (a person is not an item), its ``!=`` is ``tuple``'s
    (the bug the test documents), exactly as in one process.  A named tuple with only methods of its own still
    reaches production as the tuple it is."""
    person, item = BrokenPerson("X"), BrokenItem("X")
    table = prod.Table().put(person, 1).put(item, 2)
    assert table.has(person) and table.has(item) and table.get(item) == 2 and table.get(person) == 1
    assert table.keys() == [person, item] and table.keys()[1] is item
    assert (person == item, person != item) == (False, False)  # in this process: tuple's != holds them equal
    assert prod.differ(person, item) is False and prod.differ(person, BrokenPerson("Y")) is True
    assert prod.kind(Labelled("x")) == ("tuple", True)
