"""The trusted revision's comparison rules: read from source (``runner/comparisons.py``), applied to snapshots by
the evaluator (``runner/trusted/rules.py``).  A class whose ``__eq__``/``__lt__`` is a plain key comparison is
compared by that key; anything the reader cannot follow stays unknown, and the evaluator decides over the whole
snapshot as before."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from mergegate.runner import comparisons
from mergegate.runner.trusted import rules
from mergegate.runner.trusted.faults import SealedCallError
from mergegate.runner.trusted.snapshots import Snap

STREAM = '''
class Stream(object):
    """A stream, ordered by its id."""

    def __init__(self, stream_id, weight=16):
        self.stream_id = stream_id
        self.weight = weight

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return False
        return self.stream_id == other.stream_id

    def __ne__(self, other):
        return not self.__eq__(other)

    def __lt__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        return self.stream_id < other.stream_id


class Bag(object):
    def __lt__(self, other):
        raise TypeError('Bags are not orderable')

    __le__ = __lt__
    __gt__ = __lt__
    __ge__ = __lt__


class Deque(object):
    def __lt__(self, other):
        if not isinstance(other, Deque):
            return NotImplemented
        return tuple(self) < tuple(other)


class Point:
    def _key(self):
        return (self.x, self.y)

    @property
    def norm(self):
        return self.x

    def __eq__(self, other):
        return isinstance(other, Point) and self._key() == other._key()

    def __lt__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self.norm < other.norm


class Sub(Stream):
    pass


class Walked(object):
    def __eq__(self, other):
        """Walks both."""
        if not isinstance(other, Walked):
            return NotImplemented
        for a, b in zip(self, other):
            if a != b:
                return False
        return len(self) == len(other)
'''


def row(source: str, name: str, module: str = "pkg.mod") -> dict[str, Any]:
    return comparisons.read_module(module, textwrap.dedent(source).encode())[f"{module}:{name}"]


# ---------------------------------------------------------------- reading the trusted revision's source


def test_a_key_comparison_after_an_isinstance_guard_is_read() -> None:
    methods = row(STREAM, "Stream")["methods"]
    assert methods["eq"] == ["key", "eq", ["isinstance", ["pkg.mod:Stream"], False], ["attr", ["self"], "stream_id"]]
    assert methods["lt"] == ["key", "lt", ["isinstance", ["pkg.mod:Stream"], "NotImplemented"],
                             ["attr", ["self"], "stream_id"]]
    assert methods["ne"] == ["not", "eq"]


def test_a_body_that_only_raises_type_error_and_its_aliases_are_read() -> None:
    methods = row(STREAM, "Bag")["methods"]
    assert methods == {op: ["raise", "Bags are not orderable"] for op in ("lt", "le", "gt", "ge")}


def test_items_helpers_properties_and_the_same_type_guard_are_read() -> None:
    assert row(STREAM, "Deque")["methods"]["lt"][3] == ["items", ["self"], "tuple"]
    point = row(STREAM, "Point")["methods"]
    assert point["eq"] == ["key", "eq", ["isinstance", ["pkg.mod:Point"], False],
                           ["tuple", ["attr", ["self"], "x"], ["attr", ["self"], "y"]]]
    assert point["lt"] == ["key", "lt", ["sametype", "NotImplemented"], ["attr", ["self"], "x"]]


def test_a_guard_before_a_body_that_is_not_a_key_is_kept_alone() -> None:
    assert row(STREAM, "Walked")["methods"]["eq"] == ["guarded", ["isinstance", ["pkg.mod:Walked"], "NotImplemented"]]


def test_bases_are_named_within_the_module_and_through_its_imports() -> None:
    source = "from .base import Base\nimport pkg.other as other\nclass A(Base, other.Mixin):\n    pass\n"
    assert row(source, "A")["bases"] == ["pkg.base:Base", "pkg.other:Mixin"]
    assert row(STREAM, "Sub")["bases"] == ["pkg.mod:Stream"]
    assert row("from . import x\nclass A(object, Exception):\n    pass\n", "A")["bases"] == []
    assert row("class A(make_base()):\n    pass\n", "A")["bases"] == ["?"]
    init = comparisons.read_module("pkg", b"from .core import Core\nclass A(Core):\n    pass\n", package=True)
    assert init["pkg:A"]["bases"] == ["pkg.core:Core"]


UNKNOWN_BODIES = {
    "a constant answer": "return True",
    "a comparison of self with itself": "return self.a == self.a",
    "keys that differ": "return self.a == other.b",
    "a call into something else": "return compare(self, other)",
    "a loop": "for a in self.a:\n    pass\nreturn True",
    "an empty key": "return () == ()",
    "the objects themselves": "return (self,) == (other,)",
    "a TypeError built at run time": "raise TypeError(self.message)",
    "another exception": "raise ValueError('no')",
}


@pytest.mark.parametrize("body", UNKNOWN_BODIES.values(), ids=list(UNKNOWN_BODIES))
def test_anything_else_is_unknown(body: str) -> None:
    source = "class A:\n    def __eq__(self, other):\n" + textwrap.indent(body, " " * 8) + "\n"
    assert row(source, "A")["methods"]["eq"] == ["unknown"]


def test_what_may_write_methods_the_body_does_not_show_makes_them_unknown() -> None:
    decorated = "import attr\n@attr.s\nclass A:\n    x = attr.ib()\n"
    assert row(decorated, "A")["methods"] == {op: ["unknown"] for op in ("eq", "ne", "lt", "le", "gt", "ge")}
    assert row("class A(metaclass=M):\n    pass\n", "A")["open"] is True
    assert row("class A:\n    def __init_subclass__(cls):\n        pass\n", "A")["open"] is True
    patched = STREAM + "\nStream.__lt__ = lambda self, other: True\n"
    assert row(patched, "Stream")["methods"]["lt"] == ["unknown"]
    assert row(patched, "Stream")["methods"]["eq"][0] == "key"
    ordering = "import functools\n@functools.total_ordering\nclass A:\n" \
               "    def __eq__(self, o):\n        return self.a == o.a\n" \
               "    def __lt__(self, o):\n        return self.a < o.a\n"
    assert row(ordering, "A")["total"] == "lt"


def test_only_files_that_mention_a_comparison_are_read() -> None:
    files = {"src/pkg/mod.py": textwrap.dedent(STREAM).encode(), "src/pkg/plain.py": b"class Q(Stream):\n    pass\n",
             "src/pkg/__init__.py": b""}
    table = comparisons.table(files, ["src"])
    assert "pkg.mod:Stream" in table and "pkg.mod:Bag" in table
    assert not any(name.startswith("pkg.plain:") for name in table)
    assert comparisons.module_name("src/pkg/__init__.py", "src") == "pkg"
    assert comparisons.module_name("src/pkg/my-mod.py", "src") is None


# ---------------------------------------------------------------- the evaluator applying them


@pytest.fixture
def table() -> Iterator[None]:
    rules.load(comparisons.read_module("pkg.mod", textwrap.dedent(STREAM).encode()))
    yield
    rules.load({})


def snap(cls: str, **state: Any) -> Snap:
    return Snap(f"pkg.mod:{cls}#1{cls}", frozenset(), "fields", dict(state))


@pytest.mark.usefixtures("table")
def test_objects_compare_by_their_class_key_not_their_whole_state() -> None:
    a, b, c = snap("Stream", stream_id=1, weight=16), snap("Stream", stream_id=1, weight=32), \
        snap("Stream", stream_id=3, weight=16)
    assert a == b and (a != b) is False and a != c
    assert a.order("lt", c) is True and c.order("lt", a) is False
    assert hash(a) == hash(b)
    assert sorted([c, a]) == [a, c]
    assert (a == 1) is False  # a plain value is never a Stream: the guard's answer


@pytest.mark.usefixtures("table")
def test_a_subclass_follows_its_base_class_rule() -> None:
    assert Snap("pkg.mod:Sub#2", frozenset(), "fields", {"stream_id": 1, "weight": 2}) == \
        snap("Stream", stream_id=1, weight=3)


@pytest.mark.usefixtures("table")
def test_an_unorderable_class_raises_type_error_and_a_guard_may_leave_it_to_python() -> None:
    bag = Snap("pkg.mod:Bag#3", frozenset(), "fields", {"items": (1,)})
    with pytest.raises(TypeError, match="Bags are not orderable") as info:
        bag.order("lt", bag)
    assert not isinstance(info.value, SealedCallError)  # the class's own answer, not the gate's refusal
    assert snap("Stream", stream_id=1).order("lt", 5) is NotImplemented


@pytest.mark.usefixtures("table")
def test_a_guard_alone_answers_for_other_types_and_leaves_its_own_to_the_snapshot() -> None:
    walked = Snap("pkg.mod:Walked#5", frozenset(), "sequence", (1, 2))
    assert walked.__eq__([1, 2]) is NotImplemented  # a list is not a Walked: Python then says unequal
    assert walked.__ne__([1, 2]) is NotImplemented
    assert walked == Snap("pkg.mod:Walked#5", frozenset(), "sequence", (1, 2))  # the snapshot rule
    assert rules.decide("eq", walked, Snap("pkg.mod:Walked#5", frozenset(), "sequence", (1, 3))) is rules.NONE


@pytest.mark.usefixtures("table")
def test_an_order_no_class_defines_is_left_to_the_other_side_as_python_does() -> None:
    a, c = snap("Stream", stream_id=1), snap("Stream", stream_id=3)
    assert a.order("gt", c) is NotImplemented  # Stream has no __gt__: Python asks c.__lt__(a)
    assert c > a and not a > c  # the reflected rule answers
    assert a.order("lt", Snap("pkg.mod:Point#4", frozenset(), "fields", {"x": 1, "y": 2})) is NotImplemented


@pytest.mark.usefixtures("table")
def test_a_rule_whose_reads_the_snapshot_lacks_falls_back_to_the_whole_snapshot() -> None:
    a, b = snap("Stream", weight=1), snap("Stream", weight=1)
    assert rules.decide("eq", a, b) is rules.NONE
    assert a == b  # the snapshot rule: same type, same state


@pytest.mark.usefixtures("table")
def test_two_classes_under_one_name_are_never_taken_for_one() -> None:
    real = Snap("pkg.mod:Stream#10", frozenset(), "fields", {"stream_id": 1, "weight": 1})
    renamed = Snap("pkg.mod:Stream#11", frozenset(), "fields", {"stream_id": 1, "weight": 2})
    assert real == Snap("pkg.mod:Stream#10", frozenset(), "fields", {"stream_id": 1, "weight": 9})
    assert rules.decide("eq", renamed, real) is rules.NONE
    assert real != renamed  # the snapshot rule: different classes


def test_total_ordering_follows_functools_formulas() -> None:
    source = "import functools\n@functools.total_ordering\nclass A:\n" \
             "    def __eq__(self, o):\n        return self.a == o.a\n" \
             "    def __le__(self, o):\n        return self.a <= o.a\n"
    rules.load(comparisons.read_module("m", source.encode()))
    try:
        for x in range(3):
            for y in range(3):
                one = Snap("m:A#1", frozenset(), "fields", {"a": x})
                two = Snap("m:A#1", frozenset(), "fields", {"a": y})
                assert [one.order(op, two) for op in ("lt", "le", "gt", "ge")] == [x < y, x <= y, x > y, x >= y]
    finally:
        rules.load({})


def test_without_a_table_nothing_changes() -> None:
    rules.load({})
    with pytest.raises(SealedCallError):
        snap("Stream", stream_id=1).order("lt", snap("Stream", stream_id=2))
    assert snap("Stream", stream_id=1, weight=1) != snap("Stream", stream_id=1, weight=2)


def test_rows_are_cached_by_the_files_bytes_and_a_bad_cache_entry_is_read_again(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from mergegate.runner import comparison_cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    comparison_cache.cache_root.cache_clear()
    try:
        source = textwrap.dedent(STREAM).encode()
        first = comparison_cache.read_module("pkg.mod", source)
        assert first == comparisons.read_module("pkg.mod", source)
        calls: list[str] = []
        real = comparisons.read_module
        monkeypatch.setattr(comparisons, "read_module", lambda *a: calls.append(a[0]) or real(*a))
        assert comparison_cache.read_module("pkg.mod", source) == first and calls == []  # from the cache
        assert comparison_cache.read_module("pkg.other", source) != first and calls == ["pkg.other"]  # its own key
        for cached in (tmp_path / "mergegate" / "comparisons").rglob("*.json"):
            cached.write_bytes(b"[not json")
        assert comparison_cache.read_module("pkg.mod", source) == first and calls[-1] == "pkg.mod"
        assert not list((tmp_path / "mergegate" / "comparisons").rglob("*.tmp"))
    finally:
        comparison_cache.cache_root.cache_clear()


DATACLASSES = '''
import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar


@dataclass(order=True, frozen=True)
class Slot:
    start: int
    label: str = field(default="", compare=False)
    kinds: ClassVar[int] = 3


@dataclasses.dataclass
class Plain:
    a: int

    def __eq__(self, other):
        return isinstance(other, Plain) and self.a == other.a


@dataclass(eq=flag)
class Dynamic:
    a: int


@dataclass
class Child(Plain):
    b: int
'''


def test_a_plain_dataclass_is_read_as_the_rules_it_writes() -> None:
    slot = row(DATACLASSES, "Slot")["methods"]
    key = ["tuple", ["attr", ["self"], "start"]]
    assert slot == {op: ["key", op, ["sametype", "NotImplemented"], key] for op in ("eq", "lt", "le", "gt", "ge")}
    assert row(DATACLASSES, "Plain")["methods"]["eq"][2] == ["isinstance", ["pkg.mod:Plain"], False]  # its own
    assert "lt" not in row(DATACLASSES, "Plain")["methods"]
    for name in ("Dynamic", "Child"):  # eq from a name; fields inherited: not the plain case
        assert row(DATACLASSES, name)["methods"]["eq"] == ["unknown"]


def test_a_dataclass_compares_and_orders_by_its_compared_fields() -> None:
    rules.load(comparisons.read_module("pkg.mod", DATACLASSES.encode()))
    try:
        early, late = (Snap("pkg.mod:Slot#1", frozenset(), "fields", {"start": s, "label": label})
                       for s, label in ((1, "b"), (2, "a")))
        assert early == Snap("pkg.mod:Slot#1", frozenset(), "fields", {"start": 1, "label": "other"})
        assert early.order("lt", late) is True and sorted([late, early]) == [early, late]
        assert early.__eq__(Snap("pkg.mod:Other#2", frozenset(), "fields", {"start": 1})) is NotImplemented
    finally:
        rules.load({})
