"""What real tests do with production objects, sealed: the evaluator decides, the subject only describes.

Stand-ins against a real subject process (as tests/test_protocol.py): comparisons, hashing,
membership, truth and order decided over snapshots; lying protocols; unbounded, unstable or
mutating state; pickles; oracle objects handed to production; zoned datetimes; exception classes.
"""

from __future__ import annotations

import collections.abc
import copy
import datetime as dt
import enum
import os
import pickle
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import classdefs, pickles, proxies, snapshots, standins
from tests.helpers import production_subject

PRODUCTION = '''
import collections.abc, dataclasses, datetime, enum, itertools, os, random

class Liar:
    """Every comparison, hash, truth and length answer is production's lie."""
    def __init__(self, value):
        self.value = value
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __lt__ = __le__ = __gt__ = __ge__ = __eq__
    def __hash__(self):
        return 0
    def __bool__(self):
        return True
    def __len__(self):
        return 3
    def __contains__(self, item):
        return True

class Bag(collections.abc.Mapping):
    """A mapping whose own __eq__ and __len__ lie; its items are its state."""
    def __init__(self, data):
        self._data = dict(data)
    def __getitem__(self, key):
        return self._data[key]
    def __iter__(self):
        return iter(self._data)
    def __len__(self):
        return 99
    def __eq__(self, other):
        return True
    __hash__ = None

class Shifty(collections.abc.Set):
    """A set whose items differ at every read."""
    def __init__(self):
        self.n = 0
    def __iter__(self):
        self.n += 1
        return iter([self.n])
    def __contains__(self, x):
        return True
    def __len__(self):
        return 1

class Endless(collections.abc.Sequence):
    def __eq__(self, other):
        return True
    __hash__ = None
    def __getitem__(self, i):
        return i
    def __len__(self):
        return 10
    def __iter__(self):
        return itertools.count()

class Mutating(collections.abc.Mapping):
    """Its items change while they are read."""
    def __init__(self):
        self.d = {1: 1, 2: 2}
    def __getitem__(self, k):
        return self.d[k]
    def __len__(self):
        return len(self.d)
    def __iter__(self):
        for k in self.d:
            self.d[k + 100] = 0
            yield k

class DictProperty:
    """Its __dict__ answers differently at every read."""
    def __init__(self):
        self.calls = 0
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__
    @property
    def __dict__(self):
        object.__setattr__(self, "calls", object.__getattribute__(self, "calls") + 1)
        return {"n": random.random()}

@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int

class Plain:
    """No __eq__ of its own: Python compares it by identity."""
    def __init__(self, v):
        self.v = v

class Color(enum.Enum):
    RED = 1
    BLUE = 2

class Zone(datetime.tzinfo):
    def utcoffset(self, when):
        return datetime.timedelta(hours=2)
    def dst(self, when):
        return datetime.timedelta(0)
    def tzname(self, when):
        return "Z2"

class Evil:
    def __reduce__(self):
        return (os.getpid, ())

class ProdError(KeyError):
    pass

class SubError(ProdError):
    pass

def zoned():
    return datetime.datetime(2026, 3, 1, 12, 0, tzinfo=Zone())

def evil_bytes():
    import pickle
    return b"cos\\nsystem\\n(S'echo pwned'\\ntR."

def use(obj):
    return sorted(obj.keys()), obj["a"], len(obj), hasattr(obj, "__len__"), hasattr(obj, "__call__")

def arity(fn):
    import inspect
    return len(inspect.signature(fn).parameters)

def where():
    return os.getpid()

def fail_sub():
    raise SubError("deep")

def clear_it(obj):
    obj.clear()
    obj.items.append("production's")
    return len(obj.items)

def describe_type(cls, member):
    return cls.__name__, isinstance(cls, type), type(member).__name__, member.name, member.value, member is cls.RED
'''


class Marker(enum.Enum):
    """An oracle class handed to production: copied into the subject from this file's text."""

    RED = 1
    BLUE = 2


@pytest.fixture(scope="module")
def subject(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Subject]:
    yield from production_subject(tmp_path_factory, "objmod", PRODUCTION, "o")


@pytest.fixture
def prod(subject: sandbox.Subject) -> Any:
    return standins.Channel(subject.socket_path).request("import", "objmod")


def test_a_liar_answers_no_question_the_evaluator_asks(prod: Any) -> None:
    """Liar's __eq__/__hash__/__bool__/__len__/__contains__ all lie: none is asked for a verdict."""
    a, b = prod.Liar(1), prod.Liar(2)
    assert a != b and not a == b  # noqa: SIM201 - state differs, whatever Liar.__eq__ says
    assert a != 1 and a == prod.Liar(1) and hash(a) == hash(prod.Liar(1))
    with pytest.raises(standins.SealedCallError, match="truth"):
        bool(a)
    with pytest.raises(standins.SealedCallError, match="`in`"):
        _ = 1 in a
    with pytest.raises(standins.SealedCallError, match="order"):
        _ = a < b
    assert len(a) == 3  # a length is a value production returns, like any other


def test_a_mapping_is_compared_by_its_items_never_by_its_own_eq(prod: Any) -> None:
    bag = prod.Bag({"a": 1})
    assert bag == {"a": 1} and bag != {"a": 2} and bag != prod.Bag({"a": 2}) and bag == prod.Bag({"a": 1})
    assert "a" in bag and "b" not in bag and bool(bag) and not bool(prod.Bag({}))
    with pytest.raises(TypeError, match="unhashable"):
        hash(bag)  # Bag says __hash__ = None: the evaluator keeps Python's rule
    assert bag != 5 and bag != [("a", 1)]


def test_unstable_unbounded_and_mutating_state_never_decide(prod: Any) -> None:
    shifty = prod.Shifty()
    # each read shows other items: each answer is the evaluator's, from the items that read showed
    assert [shifty == {1}, shifty == {1}, shifty == frozenset({3}), 4 in shifty] == [True, False, True, True]
    assert shifty.n == 4 and shifty != {99}
    with pytest.raises(standins.SealedCallError, match="over a bound"):
        _ = prod.Endless() == [0, 1]
    with pytest.raises(RuntimeError, match="changed size"):
        _ = prod.Mutating() == {1: 1, 2: 2}
    liar_dict = prod.DictProperty()
    assert liar_dict != prod.DictProperty()  # random state: never equal, whatever __eq__ says


def test_two_production_objects_compared_are_read_in_one_request(prod: Any) -> None:
    """``a == b`` of two production objects: both snapshots in one request, read one after the other as two
    requests would read them, and the same answers (bidict's ``bi == tmp``: a fifth of its requests)."""
    ch = proxies.channel_of(prod)
    same, other, shifty, twin = prod.Bag({"a": 1}), prod.Bag({"a": 2}), prod.Shifty(), prod.Shifty()
    bag = prod.Bag({"a": 1})
    before = ch.calls
    answers = [bag == same, bag != other, bag == bag, shifty == twin, shifty == twin, twin == shifty]
    assert ch.calls - before == 6, ch.calls - before  # one request each (it was two)
    assert answers == [True, True, True, True, True, True]
    assert (shifty.n, twin.n) == (3, 3)  # each side read once per comparison: 1=1, 2=2, 3=3
    assert prod.Plain(1) != prod.Plain(1) and prod.Point(1, 2) == prod.Point(1, 2)
    with pytest.raises(standins.SealedCallError, match="over a bound"):
        _ = prod.Bag({}) == prod.Endless()  # the second over its bound: refused, as alone
    with pytest.raises(RuntimeError, match="changed size"):
        _ = prod.Mutating() == prod.Bag({1: 1})  # production's own error while it is read, as alone
    assert bag != prod.Liar(1)  # a mapping against an object: neither snapshot answers, so identity (False)


def test_dataclasses_enums_and_identity_classes(prod: Any) -> None:
    assert prod.Point(1, 2) == prod.Point(1, 2) and prod.Point(1, 2) != prod.Point(2, 1)
    assert len({prod.Point(1, 2), prod.Point(1, 2), prod.Point(3, 4)}) == 2
    plain = prod.Plain(1)
    assert plain == plain and plain != prod.Plain(1)  # no __eq__ of its own: identity, as in Python
    assert prod.Color.RED == prod.Color.RED and prod.Color.RED != prod.Color.BLUE
    assert prod.Color.RED in {prod.Color.RED: 1}


def test_production_exceptions_keep_their_hierarchy(prod: Any) -> None:
    with pytest.raises(prod.ProdError) as info:
        prod.fail_sub()
    assert isinstance(info.value, KeyError) and isinstance(info.value, prod.SubError)
    raised = prod.ProdError("mine")
    assert isinstance(raised, prod.ProdError)
    with pytest.raises(prod.ProdError):
        raise raised


def test_pickle_runs_in_the_subject_and_production_bytes_are_never_unpickled_here(prod: Any) -> None:
    channel = standins.channel_of(prod)
    pickles.guard(channel, "/nonexistent-trusted-root")
    try:
        point = pickle.loads(pickle.dumps(prod.Point(1, 2)))
        assert type(point) is standins.Remote and point == prod.Point(1, 2)
        assert pickle.loads(pickle.dumps(prod.Evil())) == prod.where() != os.getpid()  # __reduce__ ran there
        with pytest.raises(pickle.UnpicklingError, match="not unpickled in the evaluator"):
            pickle.loads(prod.evil_bytes())  # os.system: refused, never called here
        assert copy.copy(prod.Point(3, 4)) == prod.Point(3, 4) and copy.deepcopy([prod.Point(5, 6)])[0].x == 5
        assert pickle.loads(pickle.dumps({"plain": [1, 2]})) == {"plain": [1, 2]}
    finally:
        pickle.loads, pickle.load, pickle.Unpickler = pickles._REAL  # type: ignore[misc]


def test_oracle_objects_and_callables_reach_production_with_their_protocols(prod: Any) -> None:
    class Keys:
        def __init__(self) -> None:
            self.data = {"b": 2, "a": 1}

        def keys(self) -> Any:
            return self.data.keys()

        def __getitem__(self, key: str) -> int:
            return self.data[key]

        def __len__(self) -> int:
            return 2

    assert prod.use(Keys()) == (["a", "b"], 1, 2, True, False)
    assert prod.arity(lambda a, b: a) == 2 and prod.arity(lambda: 0) == 0


def test_a_zoned_datetime_is_a_real_datetime_whose_zone_forwards(prod: Any) -> None:
    when = prod.zoned()
    assert type(when) is dt.datetime and when.utcoffset() == dt.timedelta(hours=2) and when.tzname() == "Z2"
    assert when == dt.datetime(2026, 3, 1, 10, 0, tzinfo=dt.UTC)
    assert prod.use.__call__ is not None and prod.where() != os.getpid()


def test_snapshots_are_bounded_in_the_subject(tmp_path: Path) -> None:
    from mergegate.runner.protocol import snapshot

    deep: Any = []
    for _ in range(snapshot.MAX_DEPTH + 5):
        deep = [deep, object()]
    with pytest.raises(snapshot.SnapshotBound, match="deeper"):
        snapshot.Walk(lambda o: ["h", 1]).node(deep)
    loop: list[Any] = []
    loop.append(loop)
    assert snapshot.Walk(lambda o: ["h", 1]).node(loop) == ["L", ["c", 1]]
    assert isinstance(snapshots.Snap("m:T", frozenset(), "fields", {"a": 1}), snapshots.Snap)


def test_a_method_read_and_called_is_one_request_and_still_a_value(prod: Any) -> None:
    channel = standins.channel_of(prod)
    first = prod.Point(1, 2)
    assert first.__repr__() == "Point(x=1, y=2)"  # the first read learns that __repr__ is a method of Point
    calls = channel.calls
    assert prod.Point(3, 4).__repr__() == "Point(x=3, y=4)"
    assert channel.calls - calls == 3  # read the class off the module, construct, then read-and-call at once
    method = first.__repr__
    assert method == first.__repr__ and method() == "Point(x=1, y=2)" and prod.arity(method) == 0
    assert prod.use.__name__ == "use"  # a function, not a method of a production object: read as before


def production_module(subject: sandbox.Subject, name: str, source: str) -> standins.Channel:
    """``source`` as production module ``name`` in the subject's tree, and a fresh connection to import it."""
    (Path(subject.spec.tree) / "src" / f"{name}.py").write_text(source)
    return standins.Channel(subject.socket_path)


def test_collections_and_named_tuple_subclasses(subject: sandbox.Subject, tmp_path: Path) -> None:
    channel = production_module(subject, "bagmod",
        "import collections, collections.abc\n"
        "class Bag(collections.abc.Collection):\n"
        "    def __init__(self, items):\n        self.items = list(items)\n"
        "    def __iter__(self):\n        return iter(self.items)\n"
        "    def __len__(self):\n        return len(self.items)\n"
        "    def __contains__(self, x):\n        return True\n"
        "    def __eq__(self, other):\n        return True\n"
        "    __hash__ = None\n"
        "class Pair(collections.namedtuple('Pair', 'a b')):\n"
        "    def swapped(self):\n        return Pair(self.b, self.a)\n")
    bags = channel.request("import", "bagmod")
    assert bags.Bag([1, 2, 2]) == bags.Bag([2, 1, 2]) and bags.Bag([1, 2]) != bags.Bag([1, 2, 2])
    assert 2 in bags.Bag([1, 2]) and 3 not in bags.Bag([1, 2]) and not bags.Bag([]) and bags.Bag([0])
    pair = bags.Pair(1, 2)
    assert type(pair) is standins.Remote and pair.swapped() == (2, 1) and pair == (1, 2)


def test_a_production_class_declared_slots_are_production_s(subject: sandbox.Subject) -> None:
    """bidict's ``BidirectionalMapping.__dict__['__slots__'] == ()``: a production class's own ``__slots__``
    declaration (names: plain data) is in its stand-in's namespace; nothing else of production's namespace is."""
    channel = production_module(subject, "slotmod",
        "import typing\n"
        "class Abstract(typing.Mapping[int, int]):\n    __slots__ = ()\n"
        "class Point:\n    __slots__ = ('x', 'y')\n    kind = 'point'\n"
        "    def __init__(self, x, y):\n        self.x, self.y = x, y\n"
        "class One:\n    __slots__ = 'only'\n"
        "class Documented:\n    __slots__ = {'a': 'the a'}\n"
        "class Sub(Point):\n    pass\n"
        "class Loose:\n    pass\n")
    mod = channel.request("import", "slotmod")
    assert mod.Abstract.__dict__["__slots__"] == () and mod.Abstract.__slots__ == ()
    assert mod.Point.__dict__["__slots__"] == ("x", "y") and mod.One.__dict__["__slots__"] == "only"
    assert mod.Point(1, 2).x == 1 and mod.Point.kind == "point"  # slots made no local descriptors: reads forward
    assert type(mod.Point.x) is standins.Remote  # production's member descriptor, a handle
    assert "__slots__" not in vars(mod.Documented) and mod.Documented.__slots__ == {"a": "the a"}  # read from there
    assert "__slots__" not in vars(mod.Sub) and mod.Sub.__slots__ == ("x", "y")  # inherited: production's answer
    assert "__slots__" not in vars(mod.Loose) and "kind" not in vars(mod.Point)
    with pytest.raises(AttributeError):
        mod.Loose.__slots__  # noqa: B018
    with pytest.raises(AttributeError):
        mod.Loose.__set_name__  # noqa: B018 - a probe of Python's own: never asked of production
    assert isinstance(mod.Abstract, type) and issubclass(mod.Abstract, collections.abc.Mapping)


def test_an_oracle_class_handed_to_production_is_copied_there(prod: Any) -> None:
    with pytest.raises(standins.SealedCallError, match="cannot pass a EnumType"):
        prod.describe_type(Marker, Marker.RED)  # not from the trusted oracle tree: never copied
    classdefs._trusted[:] = [str(Path(__file__).parent)]
    try:
        assert prod.describe_type(Marker, Marker.RED) == ("Marker", True, "Marker", "RED", 1, True)
    finally:
        classdefs._trusted[:] = []


SETTING = {"plain": [1, 2]}


def helper_the_oracle_keeps() -> str:
    return "never production's to call"


class Model:
    def __init__(self) -> None:
        self.items = [1, 2, 3]

    def clear(self) -> None:
        self.items.clear()


def test_production_gets_copies_of_oracle_objects_and_no_oracle_function_by_name(prod: Any) -> None:
    """A reverse handle is a copy (production never writes into the property's objects); an oracle module's
    names reach production as class copies or plain data, never as functions it could call."""
    from mergegate.runner.trusted import reverse

    model = Model()
    assert prod.clear_it(model) == 0 and model.items == [1, 2, 3]  # the copy was cleared; a list read is a copy
    channel = standins.channel_of(prod)
    classdefs._trusted[:] = [str(Path(__file__).parent)]
    try:
        assert reverse.module_name(channel, ["rmod", __name__, "SETTING"]) == ["ok", ["d", "plain", ["l", 1, 2]]]
        for name in ("helper_the_oracle_keeps", "pytest", "_private", "missing"):
            assert reverse.module_name(channel, ["rmod", __name__, name])[:2] == ["err", "AttributeError"], name
        assert reverse.module_name(channel, ["rmod", __name__, "Marker"])[0] == "ok"  # a class: its copy
    finally:
        classdefs._trusted[:] = []
    assert reverse.module_name(channel, ["rmod", __name__, "SETTING"])[:2] == ["err", "AttributeError"]


def tuplemod(subject: sandbox.Subject) -> Any:
    """Production's tuple subclasses, hpack's ``HeaderTuple`` in small."""
    channel = production_module(subject, "tuplemod",
        "class HeaderTuple(tuple):\n"
        "    __slots__ = ()\n    indexable = True\n"
        "    def __new__(cls, *args):\n        return tuple.__new__(cls, args)\n"
        "class NeverIndexed(HeaderTuple):\n"
        "    __slots__ = ()\n    indexable = False\n"
        "class Liar(tuple):\n"
        "    def __eq__(self, other):\n        return True\n"
        "    __hash__ = tuple.__hash__\n"
        "def decode():\n    return [HeaderTuple(':path', '/'), NeverIndexed('cookie', 'x')]\n"
        "def encode(headers):\n"
        "    return [(h[0], isinstance(h, NeverIndexed), type(h).__name__) for h in headers]\n")
    return channel, channel.request("import", "tuplemod")


def test_a_production_tuple_subclass_keeps_its_type_and_compares_by_its_items(subject: sandbox.Subject) -> None:
    """hpack's HeaderTuple: ``isinstance`` and its class attribute hold sealed, ``==``/``hash`` are the tuple's,
    decided by the evaluator (its own lying ``__eq__`` is never asked), and one the oracle builds reaches
    production as the production object it is."""
    channel, mod = tuplemod(subject)
    plain, never = mod.decode()
    assert isinstance(plain, mod.HeaderTuple) and not isinstance(plain, mod.NeverIndexed)
    header, asked = mod.HeaderTuple, channel.calls
    for _ in range(100):  # hpack's stories: 430,000 headers; answered here from what came with each handle
        assert plain == (":path", "/") and isinstance(plain, header) and len(plain) == 2
        assert plain[0] == ":path" and list(never) == ["cookie", "x"] and hash(never) == hash(("cookie", "x"))
    assert channel.calls == asked
    assert isinstance(never, mod.NeverIndexed) and isinstance(never, mod.HeaderTuple)
    assert isinstance(plain, tuple) and issubclass(mod.NeverIndexed, tuple)  # hpack's test_is_tuple
    assert plain.indexable is True and never.indexable is False
    assert plain == (":path", "/") and never != ("cookie", "y") and hash(plain) == hash((":path", "/"))
    assert {(":path", "/"): 1}[plain] == 1 and plain in [(":path", "/")] and len(plain) == 2
    name, value = never
    assert (name, value) == ("cookie", "x") and never[1] == "x"
    built = mod.NeverIndexed("authorization", "secret")
    assert mod.encode([built, ("a", "b")]) == [("authorization", True, "NeverIndexed"), ("a", False, "tuple")]
    assert mod.Liar((1, 2)) != (3, 4) and mod.Liar((1, 2)) == (1, 2)  # its items decide, not its __eq__


class OraclePair(tuple):
    """An oracle's own tuple subclass: production gets the tuple it is."""


def test_an_oracle_tuple_subclass_reaches_production_as_a_tuple(subject: sandbox.Subject) -> None:
    _channel, mod = tuplemod(subject)
    assert mod.encode([OraclePair(("k", "v"))]) == [("k", False, "tuple")]


def test_a_production_regex_is_plain_data_and_a_byte_view_compares_as_its_bytes(subject: sandbox.Subject) -> None:
    """natsort's parametrize table keys on compiled patterns (``hash``); hpack's raw decoder returns
    ``memoryview``s that equal the bytes they hold. Both are decided here, by this side's own ``re`` and
    ``bytes``; a pattern the oracle compiles reaches production as one."""
    channel = production_module(subject, "viewmod",
        "import re\n"
        "NUMBER = re.compile(r'(\\d+)', re.ASCII)\n"
        "def views():\n    return [(memoryview(b'key'), memoryview(b'value'))]\n"
        "def writable():\n    return memoryview(bytearray(b'rw'))\n"
        "def use(pattern, text):\n    return type(pattern).__name__, pattern.split(text)\n")
    mod = channel.request("import", "viewmod")
    number = mod.NUMBER
    assert type(number) is type(re.compile("")) and number.flags & re.ASCII
    assert {number: "int"}[re.compile(r"(\d+)", re.ASCII)] == "int" and number.split("a12b") == ["a", "12", "b"]
    assert mod.use(re.compile(r"-"), "a-b") == ("Pattern", ["a", "b"])
    (key, value), = mod.views()
    assert type(key) is standins.Remote and key == b"key" and value != b"other" and hash(key) == hash(b"key")
    assert key.tobytes() == b"key"  # still production's memoryview: its methods are its own
    view = mod.writable()
    assert view == b"rw" and view != b"wr"  # read at each comparison: what it holds then


def test_paths_are_plain_data_both_ways(subject: sandbox.Subject) -> None:
    """natsort: an oracle's ``pathlib`` path reaches production as a path (``os.fspath`` works there), and
    production's come back as paths; a subclass of production's own stays a handle."""
    channel = production_module(subject, "pathmod",
        "import os, pathlib\n"
        "class Mine(pathlib.PurePosixPath):\n    pass\n"
        "def parts(p):\n    return type(p).__name__, os.fspath(p), p.parts\n"
        "def made():\n    return [pathlib.PurePosixPath('a/10/x'), pathlib.PosixPath('/tmp'), Mine('m')]\n")
    mod = channel.request("import", "pathmod")
    import pathlib

    assert mod.parts(pathlib.PurePosixPath("a/1/b")) == ("PurePosixPath", "a/1/b", ("a", "1", "b"))
    assert mod.parts(pathlib.Path("/x/y")) == ("PosixPath", "/x/y", ("/", "x", "y"))
    pure, concrete, mine = mod.made()
    assert type(pure) is pathlib.PurePosixPath and str(pure) == "a/10/x" and pure == pathlib.PurePosixPath("a/10/x")
    assert type(concrete) is pathlib.PosixPath and {concrete: 1}[pathlib.Path("/tmp")] == 1
    assert type(mine) is standins.Remote and isinstance(mine, mod.Mine)


def test_st_from_type_and_builds_draw_production_classes_from_their_annotations(subject: sandbox.Subject) -> None:
    """``st.from_type(ProductionClass)`` / ``st.builds``: the class's parameters and class annotations come
    from the subject (string annotations resolved there), so Hypothesis draws each argument and production
    builds the object; ``inspect.signature`` of a production function reads the same way."""
    import inspect

    from hypothesis import given, settings
    from hypothesis import strategies as st

    channel = production_module(subject, "typedmod",
        "from __future__ import annotations\nimport dataclasses\n"
        "@dataclasses.dataclass(frozen=True)\nclass Point:\n    x: int\n    y: int\n"
        "class Line:\n    def __init__(self, start: Point, end: Point, label: str = ''):\n"
        "        self.start, self.end, self.label = start, end, label\n"
        "def scale(p: Point, k: int = 2) -> Point:\n    return Point(p.x * k, p.y * k)\n")
    mod = channel.request("import", "typedmod")
    point, line = mod.Point, mod.Line
    assert str(inspect.signature(point)) == "(x: int, y: int)"
    assert list(inspect.signature(mod.scale).parameters) == ["p", "k"]
    seen: list[Any] = []

    @settings(max_examples=10, database=None, derandomize=True)
    @given(st.from_type(point), st.builds(line))
    def drawn(p: Any, ln: Any) -> None:
        assert isinstance(p, point) and isinstance(ln, line) and isinstance(ln.start, point)
        assert mod.scale(p) == point(p.x * 2, p.y * 2)
        seen.append(p.x)

    drawn()
    assert len(set(seen)) > 1  # drawn integers, not one default
