"""The sealed call protocol: the codec, and stand-ins talking to a real subject process."""

from __future__ import annotations

import collections
import datetime as dt
import decimal
import fractions
import json
import math
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergegate.runner.protocol import codec, wire
from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import standins

# ---------------------------------------------------------------- the codec


def no_refs(obj: Any) -> list[Any]:
    raise codec.CodecError(f"not plain: {type(obj).__name__}")


def no_resolve(data: list[Any]) -> Any:
    raise codec.CodecError(f"unexpected reference {data[0]}")


def roundtrip(value: Any) -> Any:
    return codec.decode(wire.loads(wire.dumps(codec.encode(value, no_refs))), no_resolve)


scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
           | st.binary() | st.decimals(allow_nan=False) | st.fractions() | st.complex_numbers(allow_nan=False)
           | st.datetimes() | st.dates() | st.times() | st.timedeltas() | st.uuids())
hashable = st.recursive(scalars, lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
                        max_leaves=8)
plain = st.recursive(
    scalars | hashable,
    lambda inner: (st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.dictionaries(hashable, inner, max_size=3)
                   | st.sets(hashable, max_size=3) | st.builds(bytearray, st.binary())),
    max_leaves=20,
)


def same(a: Any, b: Any) -> bool:
    """Equal values of exactly the same types, all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and a == 0:
        return math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


@settings(max_examples=300, deadline=None)
@given(plain)
def test_plain_data_round_trips_with_its_exact_types(value: Any) -> None:
    assert same(roundtrip(value), value)


@pytest.mark.parametrize("value", [
    float("nan"), float("inf"), -0.0, 2**200, -(2**70), "\udc80 lone surrogate", b"\x00\xff", ...,
    range(1, 10, 3), slice(1, None, 2), uuid.UUID(int=5), dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
])
def test_edge_values(value: Any) -> None:
    out = roundtrip(value)
    assert type(out) is type(value)
    assert out == value or (isinstance(value, float) and math.isnan(value) and math.isnan(out))


class Opaque:
    """Neither plain data nor a class: encoded by ``other``, always."""


class Meta(type):
    pass


def test_a_kind_encoded_by_reference_once_goes_there_at_once_and_is_never_named() -> None:
    refs: list[Any] = []

    def other(value: Any) -> list[Any]:
        refs.append(value)
        return ["h", len(refs)]

    first, second = Opaque(), Opaque()
    assert codec.encode(first, other) == ["h", 1] and Opaque in codec.BY_REFERENCE
    assert codec.encode(["x", second], other) == ["l", "x", ["h", 2]]  # inside a value, the same
    args, _kw = codec.encode_call([first, 2**40, second], None, other)
    assert args[1] == ["h", 3] and args[3] == ["h", 4], args  # references: never ``["=", name, ...]``
    assert args[2][0] == "=", args  # the plain value beside them still named
    codec.SAME.forget([args[2][1]])
    # a class's values (classes) may be builtin types: never memoized, each asked as itself
    assert codec.encode(int, other) == ["B", "int"] and type not in codec.BY_REFERENCE
    assert codec.encode(Meta("K", (), {}), other) == ["h", 5] and Meta not in codec.BY_REFERENCE
    # plain data and its subclasses as before
    assert codec.encode(EvilInt(3), other) == 3 and EvilInt not in codec.BY_REFERENCE


class EvilInt(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


class EvilStr(str):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


def test_the_standard_librarys_dict_types_round_trip_as_themselves() -> None:
    """OrderedDict (in its own order), defaultdict (with its factory) and Counter: their own types, not a dict."""
    import collections

    ordered = collections.OrderedDict(a=1, b=2)
    ordered.move_to_end("a")  # its order, not the order of the dict beneath it
    out = roundtrip(ordered)
    assert type(out) is collections.OrderedDict and list(out.items()) == [("b", 2), ("a", 1)]
    grouped = roundtrip(collections.defaultdict(list, {"x": [1]}))
    assert type(grouped) is collections.defaultdict and grouped == {"x": [1]} and grouped["y"] == []
    assert type(roundtrip(collections.defaultdict(None))) is collections.defaultdict
    counts = roundtrip(collections.Counter("abca"))
    assert type(counts) is collections.Counter and counts.most_common(1) == [("a", 2)]



def test_a_subclass_of_the_standard_librarys_dict_types_travels_as_that_type_read_with_its_own_methods() -> None:
    """As a plain dict, a production OrderedDict subclass in the wrong order would compare equal to the expected
    OrderedDict (``dict``'s ``==`` ignores order): it arrives as an OrderedDict in the order it really keeps, never
    the order its own ``__iter__``/``items`` claim (tests/test_sealed_mapping_attacks.py end to end)."""
    import collections

    class Mine(collections.OrderedDict):
        def __iter__(self):
            return iter(["z"])

        def items(self):  # type: ignore[override]
            return [("z", 0)]

        def __eq__(self, other: object) -> bool:
            return True

    mine = Mine(b=2, a=1)
    mine.move_to_end("b")
    out = roundtrip(mine)
    assert type(out) is collections.OrderedDict and list(collections.OrderedDict.items(out)) == [("a", 1), ("b", 2)]
    assert out != collections.OrderedDict(b=2, a=1)

    class Counts(collections.Counter):  # type: ignore[type-arg]
        def __getitem__(self, key: object) -> int:
            return 7

    counts = roundtrip(Counts("aab"))
    assert type(counts) is collections.Counter and counts == collections.Counter(a=2, b=1)

    class Groups(collections.defaultdict):  # type: ignore[type-arg]
        def __missing__(self, key: object) -> int:
            return 7

    groups = roundtrip(Groups(list, {"x": [1]}))
    assert type(groups) is collections.defaultdict and groups == {"x": [1]} and groups["y"] == []


class _OnlyItself(str):
    """Production's own string subclass whose ``==`` is identity: two of them with one text are two."""

    __eq__ = object.__eq__  # type: ignore[assignment]
    __hash__ = object.__hash__  # type: ignore[assignment]


@pytest.mark.parametrize("make", [set, frozenset, lambda items: dict.fromkeys(items, 1),
                                  lambda items: collections.OrderedDict.fromkeys(items, 1),
                                  lambda items: collections.Counter(dict.fromkeys(items, 1)),
                                  lambda items: collections.defaultdict(list, dict.fromkeys(items, 1))])
def test_a_set_or_mapping_whose_items_the_receivers_equality_merges_is_refused_not_shortened(make: Any) -> None:
    """Two objects the sender's set keeps apart arrive as two equal values (a subclass travels as its base): a copy
    with one item would shorten what production returned (tests/test_sealed_mapping_attacks.py end to end)."""
    for text in ("a", "a text"):  # one character: one object here too (CPython caches it)
        sent = make([_OnlyItself(text), _OnlyItself(text), "b"])
        assert len(sent) == 3
        with pytest.raises(codec.CodecError, match="3 distinct items sent, 2 here"):
            roundtrip(sent)
    assert roundtrip(make(["a", "b"])) == make(["a", "b"])
    nans = make([float("nan"), float("nan"), 1.0])  # two NaN objects: ``json`` decodes them as one, not a merge
    assert len(roundtrip(nans)) == 2


@pytest.mark.parametrize("data", [["dd"], ["dd", 5, "k"], ["dd", 5], ["od", "k"], ["ctr", "a", 1, "b"]])
def test_malformed_standard_dicts_are_codec_errors(data: list[Any]) -> None:
    with pytest.raises(codec.CodecError):
        codec.decode(data, no_resolve)


def test_subclasses_of_plain_types_arrive_as_the_plain_type() -> None:
    """The evaluator's own types, so a comparison that always holds cannot cross."""
    assert type(roundtrip(EvilInt(3))) is int and roundtrip(EvilInt(3)) != 4
    assert type(roundtrip(EvilStr("a"))) is str and roundtrip(EvilStr("a")) != "b"
    assert type(roundtrip(decimal.Decimal("1.5"))) is decimal.Decimal
    point = roundtrip(__import__("collections").namedtuple("Point", "x y")(EvilInt(1), 2))
    assert point == (1, 2) and point.x == 1 and type(point.x) is int


@pytest.mark.parametrize("message", [
    b"not json", b"[]", b'["zz", 1]', b'{"a": 1}', b'["I", "xyz"]', b'["I", "' + b"f" * 70000 + b'"]',
    b'["d", 1]', b'["D", 5]', b'["B", "os"]', b'["nt", "P", ["x"], 1, 2]', b"[" * 100000 + b"]" * 100000,
    b'["dt", "not a date"]', b'["F", 1, 0]', b'["c", "x", 1]', b'["r", 1, "a"]', b'["s", ["l"]]',
])
def test_malformed_messages_are_codec_errors(message: bytes) -> None:
    with pytest.raises(codec.CodecError):
        codec.decode(wire.loads(message), no_resolve)


def test_recursive_and_overdeep_values_are_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(codec.CodecError, match="deeper"):
        codec.encode(loop, no_refs)
    deep: Any = 0
    for _ in range(codec.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(codec.CodecError):
        roundtrip(deep)


def test_other_objects_go_to_the_reference_encoder() -> None:
    class Thing:
        pass

    assert codec.encode([Thing()], lambda o: ["h", 7]) == ["l", ["h", 7]]
    assert codec.encode(int, no_refs) == ["B", "int"]


# ---------------------------------------------------------------- stand-ins against a real subject

PRODUCTION = '''
import contextlib, os, sys

class Money(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__

class Order:
    def __init__(self, total):
        self.total = total
        self.items = []
    def add(self, x):
        self.items.append(x)
        return self
    def __len__(self):
        return len(self.items)
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__

class Gauge:
    """Arithmetic that answers the number the property would want."""
    def __init__(self, v):
        self.v = v
    def __sub__(self, other):
        return 0
    __rsub__ = __sub__
    def __or__(self, other):
        return {self.v, *other}

class InvalidOrder(ValueError):
    def __init__(self, msg, code=7):
        super().__init__(msg)
        self.code = code

class Custom(Exception):
    pass

def money(n):
    return Money(n)

def fail(kind):
    if kind == "value":
        raise ValueError("bad value")
    if kind == "invalid":
        raise InvalidOrder("nope", code=42)
    if kind == "custom":
        raise Custom("mine")
    if kind == "exit":
        raise SystemExit(0)
    if kind == "interrupt":
        raise KeyboardInterrupt()
    if kind == "assert":
        raise AssertionError("production assert")

def sort_in_place(xs):
    xs.sort()
    return None

def apply(fn, values):
    return [fn(v) for v in values]

def swallow(fn):
    try:
        fn()
    except BaseException:
        pass
    return "swallowed"

@contextlib.contextmanager
def suppressing():
    try:
        yield "inside"
    except BaseException:
        pass

def gen(n):
    yield from range(n)

def same(a, b):
    return a is b

__all__ = ["money", "Order", "InvalidOrder", "Custom", "fail", "sort_in_place", "apply", "swallow",
           "suppressing", "gen", "same", "where", "next_of", "SINGLETON"]

def next_of(xs):
    return next(iter(xs))

def kind_of(o):
    """What production sees of the oracle's value (pyrsistent's freeze asks ``type(o) is defaultdict``)."""
    return type(o).__name__, list(o.items()), o["missing"] if type(o).__name__ == "defaultdict" else None

def ordered(pairs):
    import collections
    return collections.OrderedDict(pairs)

def grouped(pairs, factory=list):
    import collections
    out = collections.defaultdict(factory)
    for key, value in pairs:
        out[key] = value
    return out

def default_total():
    return Money(0)

def where():
    return {"pid": os.getpid(), "cwd": os.getcwd(), "path": sys.path[:]}

SINGLETON = Order(1)
'''


@pytest.fixture(scope="module")
def subject(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Subject]:
    tree = tmp_path_factory.mktemp("tree")
    (tree / "src").mkdir()
    (tree / "src" / "prodmod.py").write_text(PRODUCTION)
    scratch = tmp_path_factory.mktemp("scratch")
    spec = sandbox.SubjectSpec(str(tree), (str(tree / "src"),), preload=("prodmod",))
    subj = sandbox.Subject(spec, sandbox.choose("auto"), scratch, "t")
    yield subj
    subj.close()


@pytest.fixture
def prod(subject: sandbox.Subject) -> Any:
    """A fresh connection (a fresh subject child) and the stand-in for ``prodmod``."""
    channel = standins.Channel(subject.socket_path)
    return channel.request("import", "prodmod")


def test_results_are_the_evaluators_own_types(prod: Any) -> None:
    value = prod.money(5)
    assert type(value) is int and value == 5 and value != 6  # Money.__eq__ stayed in the subject


def test_objects_are_handles_with_forwarded_attributes_and_methods(prod: Any) -> None:
    order = prod.Order(10)
    assert type(order) is standins.Remote
    assert order.total == 10 and len(order) == 0
    assert order.add(3) is order  # the same remote object is the same stand-in
    assert order.items == [3] and len(order) == 1
    order.total = 11
    assert order.total == 11
    assert isinstance(order, prod.Order) and not isinstance(5, prod.Order)
    assert prod.same(order, order) is True and prod.same(order, prod.Order(1)) is False
    assert prod.SINGLETON is prod.SINGLETON


def test_exceptions_arrive_as_builtins_or_production_errors(prod: Any) -> None:
    with pytest.raises(ValueError, match="bad value"):
        prod.fail("value")
    with pytest.raises(ValueError) as caught:  # a production subclass of ValueError still matches
        prod.fail("invalid")
    assert isinstance(caught.value, standins.ProductionError) and caught.value.code == 42
    with pytest.raises(prod.InvalidOrder):
        prod.fail("invalid")
    with pytest.raises(standins.ProductionError) as custom:
        prod.fail("custom")
    assert not isinstance(custom.value, ValueError)
    for kind in ("exit", "interrupt"):  # never a control exception on the trusted side
        with pytest.raises(standins.ProductionError):
            prod.fail(kind)
    with pytest.raises(AssertionError, match="production assert"):
        prod.fail("assert")


def test_production_cannot_write_into_the_propertys_values(prod: Any) -> None:
    xs = [3, 1, 2]
    assert prod.sort_in_place(xs) is None
    assert xs == [3, 1, 2]  # arguments are copies


def test_callbacks_run_on_the_trusted_side(prod: Any) -> None:
    seen: list[int] = []

    def double(v: int) -> int:
        seen.append(v)
        return v * 2

    assert prod.apply(double, [1, 2]) == [2, 4] and seen == [1, 2]
    assert prod.apply(str, [1]) == ["1"]  # a builtin type crosses by name


def test_production_cannot_swallow_the_propertys_assertion(prod: Any) -> None:
    def check() -> None:
        raise AssertionError("the oracle's verdict")

    with pytest.raises(AssertionError, match="the oracle's verdict"):
        prod.swallow(check)
    with pytest.raises(AssertionError, match="inside the block"), prod.suppressing() as value:
        assert value == "inside"
        raise AssertionError("inside the block")


def test_iteration_is_forwarded(prod: Any) -> None:
    assert list(prod.gen(4)) == [0, 1, 2, 3]


def test_objects_of_the_oracle_reach_production_as_reverse_handles(prod: Any) -> None:
    """Production's uses of an object of the property's come back and run here; its errors stick."""
    class Local:
        def __iter__(self) -> Iterator[int]:
            return iter([1, 22, 333])

    assert prod.apply(str, Local()) == ["1", "22", "333"]

    class NotIterable:
        pass

    with pytest.raises(TypeError, match="not iterable"):
        prod.apply(len, NotIterable())
    with pytest.raises(standins.SealedCallError, match=r"cannot pass a .*type.*isolation: shared"):
        prod.apply(len, NotIterable)  # the oracle's class itself never crosses


def test_each_connection_is_a_fresh_child_in_the_tree(prod: Any, subject: sandbox.Subject) -> None:
    first = prod.where()
    other = standins.Channel(subject.socket_path).request("import", "prodmod").where()
    assert first["pid"] != other["pid"]
    assert first["cwd"] == subject.spec.tree
    assert first["path"].index(subject.spec.prod_roots[0]) < len(first["path"])


def test_a_production_name_resolving_outside_the_tree_is_an_import_error(subject: sandbox.Subject) -> None:
    channel = standins.Channel(subject.socket_path)
    with pytest.raises(ImportError, match="outside the tree under test"):
        channel.request("import", "json")  # resolves to the standard library, not the tree


def test_a_dead_subject_is_a_crash_not_a_hang(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "dies.py").write_text("import os\nos._exit(0)\n")
    spec = sandbox.SubjectSpec(str(tree), (str(tree / "src"),), preload=("dies",))
    subj = sandbox.Subject(spec, sandbox.choose("auto"), tmp_path, "d")
    try:
        subj.proc.wait(timeout=20)
        with pytest.raises(standins.SubjectGone):
            standins.Channel(subj.socket_path).request("import", "dies")
    finally:
        subj.close()


def test_malformed_replies_are_sealed_call_errors(tmp_path: Path) -> None:
    """A subject that speaks garbage gets an error on the trusted side, never a value it chose."""
    import socket
    import threading

    path = str(tmp_path / "s.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(1)
    replies = [json.dumps(["ok"]).encode(), json.dumps(["err", "x"]).encode(), json.dumps(["ok", ["Q", 1]]).encode()]

    def serve() -> None:
        for reply in replies:
            conn, _ = listener.accept()
            conn.recv(65536)
            conn.sendall(len(reply).to_bytes(4, "big") + reply)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    for _ in replies:
        with pytest.raises(standins.SealedCallError):
            standins.Channel(path).request("import", "x")
    listener.close()
    os.unlink(path)


@pytest.mark.parametrize("frame", [b"\x00\x00\x00\x05garbage", b"\x7f\xff\xff\xffxx", b"\x00\x00\x00\x02[]"])
def test_a_frame_that_does_not_parse_ends_the_channel(tmp_path: Path, frame: bytes) -> None:
    """Out of step, nothing after it could be believed: the run ends as a crash of the subject."""
    import socket
    import threading

    path = str(tmp_path / "f.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(frame)
        conn.recv(65536)
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    channel = standins.Channel(path)
    with pytest.raises(standins.SubjectGone, match="broke the protocol"):
        channel.request("import", "x")
    assert channel.endpoint is None
    listener.close()


def test_the_standard_librarys_dict_types_cross_both_ways_as_themselves(prod: Any) -> None:
    """Production sees the oracle's defaultdict as one (pyrsistent's ``freeze``), and its OrderedDict in order;
    the evaluator gets production's as its own types, a production factory called in production."""
    import collections

    name, items, missing = prod.kind_of(collections.defaultdict(list, {"a": 1}))
    assert (name, items, missing) == ("defaultdict", [("a", 1)], [])
    ordered = collections.OrderedDict(a=1, b=2)
    ordered.move_to_end("a")
    assert prod.kind_of(ordered)[:2] == ("OrderedDict", [("b", 2), ("a", 1)])
    assert prod.kind_of(collections.Counter("aab"))[:2] == ("Counter", [("a", 2), ("b", 1)])
    back = prod.ordered([("b", 1), ("a", 2)])
    assert type(back) is collections.OrderedDict
    assert back == collections.OrderedDict([("b", 1), ("a", 2)]) and back != collections.OrderedDict(a=2, b=1)
    grouped = prod.grouped([("x", 1)])
    assert type(grouped) is collections.defaultdict and grouped["y"] == [] and grouped == {"x": 1, "y": []}
    totals = prod.grouped([], prod.default_total)  # production's factory: called in production, its value here
    assert totals["new"] == 0 and type(totals["new"]) is int


def test_fractions_and_decimals_cross_both_ways(prod: Any) -> None:
    assert prod.apply(lambda v: v * 2, [fractions.Fraction(1, 3), decimal.Decimal("0.1")]) == [
        fractions.Fraction(2, 3), decimal.Decimal("0.2")]


def test_a_production_class_is_true_without_asking_production(prod: Any) -> None:
    order, invalid = prod.Order, prod.InvalidOrder
    channel = standins.channel_of(order)
    calls = channel.calls
    assert order and bool(invalid) and not not order  # noqa: SIM208
    assert channel.calls == calls  # no request at all: len() is never asked


def test_star_imports_and_dir_of_a_production_module(subject: sandbox.Subject, tmp_path: Path) -> None:
    channel = standins.Channel(subject.socket_path)
    module = channel.request("import", "prodmod")
    assert "money" in module.__all__ and "contextlib" not in module.__all__
    assert {"money", "Order", "contextlib"} <= set(dir(module))
    with pytest.raises(AttributeError):
        module.__version__  # noqa: B018 - other dunders are asked of production (it has none)
    namespace: dict[str, Any] = {}
    finder = standins.Finder({"prodmod"}, channel)
    import sys

    sys.meta_path.insert(0, finder)
    try:
        exec("from prodmod import *", namespace)
    finally:
        sys.meta_path.remove(finder)
        sys.modules.pop("prodmod", None)
    assert {"money", "Order", "SINGLETON"} <= set(namespace)


def test_a_production_object_never_answers_for_the_propertys_own_data(prod: Any) -> None:
    """Comparisons, membership and truth are decided here over snapshots; Order.__eq__ (always true) is never
    asked, and arithmetic that would hand the property a number production chose is refused."""
    order = prod.Order(10)
    assert not order == 10 and not 10 == order and order != "x"  # noqa: SIM201,SIM300 - Order.__eq__ says True
    other = prod.Order(11)
    assert order != other and not order == other  # noqa: SIM201 - production says equal: state differs
    assert order == prod.Order(10) and hash(order) == hash(prod.Order(10))  # same type, same state
    assert order == order and order in [other, order]
    for attempt in (lambda: order <= 3, lambda: order < other, lambda: sorted([order, other]),
                    lambda: 3 in order, lambda: bool(order), lambda: not order):
        with pytest.raises(standins.SealedCallError, match="production"):
            attempt()  # no natural order, not a container, and Order defines its own __len__ (truth)
    for attempt in (lambda: order - 1, lambda: 1 + order, lambda: 1 in prod.Order):
        with pytest.raises(TypeError):
            attempt()  # Order has no arithmetic (production's TypeError); a class is never asked `in`
    gauge = prod.Gauge(5)
    for attempt in (lambda: gauge - 5, lambda: 5 - gauge):
        with pytest.raises(standins.SealedCallError, match="production"):
            attempt()  # a number production's own __sub__ chose for the property's operand
    assert gauge | [1] == {5, 1} and gauge - prod.Gauge(1) == 0  # not a number / both production's: values
    assert prod.SINGLETON is prod.SINGLETON
    assert order.total == 10 and len(order) == 0 and order is not None
    assert not isinstance(5, prod.Order) and not isinstance(prod.money(3), prod.Order)


def test_stop_iteration_only_ends_an_iteration_production_drives(prod: Any, subject: sandbox.Subject) -> None:
    channel = standins.channel_of(prod)
    stop = channel.request("op", "iter", channel.enc([[]]))  # an exhausted iterator in the subject
    with pytest.raises(StopIteration):
        next(stop)
    quirky = prod.apply(lambda v: v, [])  # a plain call that returns normally
    assert quirky == []
    with pytest.raises(standins.ProductionError, match="outside iteration"):
        channel.request("call", channel.enc(prod.next_of), channel.enc([[]]), channel.enc({}))
    assert all(map(lambda n: n >= 0, prod.gen(3)))


def test_every_exception_an_oracle_callback_raises_is_sticky(prod: Any) -> None:
    def check() -> None:
        return None - 1  # type: ignore[operator,no-any-return]  # a TypeError of the property's own making

    with pytest.raises(TypeError):
        prod.swallow(check)


def test_a_production_module_has_no_file_in_the_evaluator(prod: Any) -> None:
    """Hypothesis reads the source of modules with a __file__: production must not choose a path here."""
    assert getattr(prod, "__file__", None) is None
    assert prod.where()["cwd"]  # the module itself still answers
