"""``a.b.c`` of a production object in one request (``trusted/chains.py``), and ``for x in obj.f():``'s call and
``iter`` in one (``trusted/iterated.py``), against a real subject.

What must hold: the values and identities one process gives, production's reads and calls made in the caller's
order, production's errors raised from the step that made them, nothing answered from what came once anything
else ran or was asked, and a malformed reply refused.
"""

from __future__ import annotations

import dis
import types
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import chains, iterated, lengths, proxies, standins
from tests.helpers import production_subject, traced_at

PRODUCTION = '''
import sys

READS = []


class Node:
    """Writes down every read of its own attributes (not the dunders Python reads)."""
    def __init__(self, value, nxt=None):
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "next", nxt)
        object.__setattr__(self, "kind", Node)
    def __getattribute__(self, name):
        if not name.startswith("__"):
            READS.append(name)
        return object.__getattribute__(self, name)
    @property
    def broken(self):
        raise ValueError("node %r cannot be read" % object.__getattribute__(self, "value"))
    def relink(self, other):
        object.__setattr__(self, "next", other)


def chain(n):
    node = None
    for value in reversed(range(n)):
        node = Node(value, node)
    return node


def mark():
    READS.append("mark")


def same(b):
    return b


def add_two(b):
    b.put(2)


def relink_second(node, other):
    object.__getattribute__(node, "next").relink(other)


def reads():
    out = list(READS)
    READS.clear()
    return out


class Bag:
    """Its iterator over what it holds when asked; writes down each ``iter``."""
    def __init__(self, items):
        self.items = list(items)
    def __iter__(self):
        READS.append("iter")
        return iter(list(self.items))
    def put(self, item):
        self.items.append(item)
    def copy(self):
        READS.append("copy")
        return Bag(self.items)


class Unloopable:
    def __iter__(self):
        raise TypeError("production refuses to be looped over")


def bag(*items):
    READS.append("bag")
    return Bag(items)


def unloopable():
    return Unloopable()


class Sized:
    """Writes down each ``len`` of it; fails it where told to."""
    def __init__(self, n, fail):
        self.n, self.fail = n, fail
    def __len__(self):
        READS.append("len%d" % self.n)
        if self.fail:
            raise ValueError("no length for %d" % self.n)
        return self.n


def sized(n, fail=False):
    return Sized(n, fail)


def grow(box):
    box.n += 1


def plain():
    return [1, 2, 3]


def counting():
    yield from range(3)


def lying(reply, op="getattrs"):
    """A hostile subject from now on: every reply to ``op`` is ``reply``."""
    server = sys.modules["__main__"]
    server.OPS[op] = lambda s, *args: reply
'''


@pytest.fixture(scope="module")
def subject(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Subject]:
    yield from production_subject(tmp_path_factory, "chainmod", PRODUCTION, "ch")


@pytest.fixture
def mod(subject: sandbox.Subject) -> Any:
    return standins.Channel(subject.socket_path).request("import", "chainmod")


def test_a_chain_of_reads_is_one_request_and_the_same_reads(mod: Any) -> None:
    ch = proxies.channel_of(mod)
    head = mod.chain(5)
    third = head.next.next
    mod.reads()
    before = ch.calls
    got = head.next.next.next.value  # four reads: one request (was four)
    assert ch.calls - before == 1, ch.calls - before
    assert got == 3 and mod.reads() == ["next", "next", "next", "value"]
    before = ch.calls
    assert head.next.next is third  # pytest's temporaries between the reads: still one request
    assert ch.calls - before == 1 and mod.reads() == ["next", "next"]
    before = ch.calls
    stored = head.next  # a local stored and loaded back: the same
    again = stored.next
    assert again is third and ch.calls - before == 1 and mod.reads() == ["next", "next"]
    before = ch.calls
    assert head.value == 0 and ch.calls - before == 1  # one read: a plain read, as before


def test_a_read_that_fails_raises_from_that_read(mod: Any) -> None:
    head = mod.chain(3)
    mod.reads()
    with pytest.raises(AttributeError, match="missing"):
        head.next.missing.value  # noqa: B018
    assert mod.reads() == ["next", "missing"]  # the read after the failed one is never made
    with pytest.raises(ValueError, match="node 1 cannot be read"):
        head.next.broken.value  # noqa: B018
    assert mod.reads() == ["next", "broken"]
    assert head.next.next.value == 2  # a chain after a failed one: as before


def test_a_class_or_plain_value_ends_what_the_subject_reads(mod: Any) -> None:
    ch = proxies.channel_of(mod)
    head = mod.chain(2)
    mod.reads()
    before = ch.calls
    assert head.next.kind.__name__ == "Node"  # a class: the subject stops there, its name read here
    assert mod.reads() == ["next", "kind"] and ch.calls - before == 2, ch.calls - before
    assert head.next.value.real == 1 and head.next.value.bit_length() == 1  # plain data: read here, as before
    assert mod.reads() == ["next", "value", "next", "value"]
    assert head.next.__class__ is head.kind  # the stand-in's own name ends the chain before it


def test_nothing_is_answered_from_what_came_once_anything_else_ran(mod: Any) -> None:
    head, other = mod.chain(3), mod.chain(7)
    mod.reads()
    x = head.next
    mod.mark()  # code between the reads: not one chain
    y = x.next
    assert y.value == 2 and mod.reads() == ["next", "mark", "next", "value"]

    def between(frame: FrameType) -> bool:  # a tracer runs between two opcodes of a chain
        came = chains.NOW[0] is not None  # the second read came with the first
        mod.relink_second(head, other)  # production changed between the reads (a request, no stand-in read)
        return came

    def reach(node: Any) -> Any:
        return node.next.next

    second = [i.offset for i in dis.get_instructions(reach.__code__) if i.opname == "LOAD_ATTR"][1]
    got, done = traced_at(reach, second, between, head)
    assert done == [True]
    assert got is other, "a value that came before production changed was used"
    # the first read, the second made with it, the tracer's relink, and the second asked again
    assert mod.reads() == ["next", "next", "relink", "next"] and chains.NOW[0] is None


def test_a_malformed_reply_is_refused(mod: Any) -> None:
    head = mod.chain(3)
    mod.lying(["ok", [["err", "ValueError"], ["ok", 1]]])  # an error before a value
    with pytest.raises(standins.SealedCallError, match="malformed"):
        head.next.next  # noqa: B018
    mod.lying(["ok", [["ok", 1], ["ok", 2], ["ok", 3]]])  # more values than reads asked
    with pytest.raises(standins.SealedCallError, match="malformed"):
        head.next.next  # noqa: B018
    mod.lying(["ok", "next"])
    with pytest.raises(standins.SealedCallError, match="malformed"):
        head.next.next  # noqa: B018
    mod.lying(["ok", [["ok", 5], ["ok", 6]]])  # a value after plain data: what came after it is dropped
    with pytest.raises(AttributeError, match="'int' object has no attribute 'next'"):
        head.next.next  # noqa: B018  (5's own attribute, read here)
    assert chains.NOW[0] is None



def test_a_read_of_another_local_comes_with_the_read_before_it(mod: Any) -> None:
    ch = proxies.channel_of(mod)
    a, b = mod.chain(3), mod.chain(2)
    mod.reads()
    before = ch.calls
    assert a.value == b.value  # pytest's ``@py_assert1 = a.value`` and then ``b.value``: one request
    assert ch.calls - before == 1 and mod.reads() == ["value", "value"]
    before = ch.calls
    assert a.next.value != b.next.next  # two chains, one after the other: one request, production's order
    assert ch.calls - before == 1 and mod.reads() == ["next", "value", "next", "next"]
    before = ch.calls
    x = a.next
    y = b.next
    assert ch.calls - before == 1 and x.value == y.value == 1 and chains.NOW[0] is None
    plain = types.SimpleNamespace(value=0)
    mod.reads()
    before = ch.calls
    assert a.value == plain.value  # plain data: read here, as before
    assert ch.calls - before == 1 and mod.reads() == ["value"] and chains.NOW[0] is None


def test_a_read_of_another_local_is_asked_again_once_anything_ran(mod: Any) -> None:
    a, b = mod.chain(3), mod.chain(3)

    def between(frame: FrameType) -> bool:  # a tracer runs between the two reads
        came = chains.NOW[0] is not None  # the second read came with the first
        mod.relink_second(b, a)  # production changed b's next between them (a request)
        return came

    def two(x: Any, y: Any) -> Any:
        first = x.next
        then = y.next.next
        return first, then

    second = [i.offset for i in dis.get_instructions(two.__code__) if i.opname == "LOAD_ATTR"][1]
    mod.reads()
    got, done = traced_at(two, second, between, a, b)
    assert done == [True]
    assert got[1].value == 0, "a read that came before production changed was used"
    assert chains.NOW[0] is None


def test_a_call_iterated_at_once_is_one_request_with_its_iterator(mod: Any) -> None:
    ch = proxies.channel_of(mod)
    mod.bag()  # read once as a function: from now on read with its call (``callsite.py``)
    mod.reads()
    before = ch.calls
    seen = [x for x in mod.bag(1, 2, 3)]  # a comprehension: the call, then GET_ITER
    asked = ch.calls - before
    assert seen == [1, 2, 3] and mod.reads() == ["bag", "iter"]
    assert asked == 3, asked  # the call with its iterator, then two batches of items (was four)
    make = mod.bag  # a production function held in a local: its own call, the same
    before = ch.calls
    total = 0
    for x in make(4, 5):
        total += x
    asked = ch.calls - before
    assert total == 9 and asked == 3 and mod.reads() == ["bag", "iter"], asked
    box = mod.bag(7)
    before = ch.calls
    assert list(box.items) == [7] and [x for x in box] == [7]  # no call before: as before
    assert [x for x in mod.plain()] == [1, 2, 3] and [x for x in mod.counting()] == [0, 1, 2]


def test_iter_that_fails_raises_from_the_loop(mod: Any) -> None:
    with pytest.raises(TypeError, match="refuses to be looped over"):
        for _ in mod.unloopable():
            pass
    assert iterated.NOW[0] is None


def test_an_iterator_is_not_used_once_anything_else_was_asked(mod: Any) -> None:
    box = mod.bag(1)

    def between(frame: FrameType) -> bool:  # a tracer runs between the call and GET_ITER
        came = iterated.NOW[0] is not None  # the iterator came with the call
        mod.add_two(box)  # production changed between them (a request)
        return came

    def loop(m: Any, b: Any) -> list[Any]:
        return [x for x in m.same(b)]

    get_iter = next(i.offset for i in dis.get_instructions(loop.__code__) if i.opname == "GET_ITER")
    mod.reads()
    got, done = traced_at(loop, get_iter, between, mod, box)
    assert done == [True]
    assert got == [1, 2], "an iterator that came before production changed was used"
    assert mod.reads() == ["iter", "iter"] and iterated.NOW[0] is None  # made with the call, then asked again


def test_a_malformed_calliter_reply_is_refused(mod: Any) -> None:
    mod.lying(["ok", ["l", 1], "no iterator"], op="calliter")
    with pytest.raises(standins.SealedCallError, match="malformed"):
        for _ in mod.bag(1):
            pass
    mod.lying(["ok", 5, ["ok", ["l", 1]]], op="calliter")  # an iterator for plain data: dropped, 5 iterated here
    with pytest.raises(TypeError, match="'int' object is not iterable"):
        for _ in mod.bag(1):
            pass
    assert iterated.NOW[0] is None

def test_a_call_drained_by_frozenset_is_one_request_with_its_items(mod: Any) -> None:
    ch = proxies.channel_of(mod)
    box = mod.bag(1, 2, 3)
    mod.same(box), box.copy()  # each read once: from now on read with its call (``callsite.py``)
    mod.reads()
    before = ch.calls
    got = frozenset(box.copy())  # a method's value drained at once
    asked = ch.calls - before
    assert got == {1, 2, 3} and mod.reads() == ["copy", "iter"], "production's steps in one process's order"
    assert asked == 1, asked  # the call, iter and every item (was two: the call, then iter with a batch)
    before = ch.calls
    got = set(mod.same(box))  # a function's value
    asked = ch.calls - before
    assert got == {1, 2, 3} and asked == 1 and mod.reads() == ["iter"], asked
    before = ch.calls
    assert frozenset(box.copy()) == {1, 2, 3}  # pytest's rewriting: ``@py_assert2 = box.copy()``, then the builtin
    asked = ch.calls - before
    assert asked == 1 and mod.reads() == ["copy", "iter"], asked
    for _ in range(20):  # warm: Python 3.11's specialized PRECALL runs the builtin itself (its offset, not CALL's)
        before = ch.calls
        assert frozenset(box.copy()) == {1, 2, 3} and ch.calls - before == 1
    before = ch.calls
    assert list(box.copy()) == [1, 2, 3] and ch.calls - before > 1, "list asks a length first: not fused"
    assert iterated.NOW[0] is None


def test_a_rebound_set_is_not_drained_ahead(mod: Any) -> None:
    box = mod.bag(4, 5)
    box.copy()
    seen: list[Any] = []

    def own(values: Any) -> Any:  # the module's own ``frozenset``: not the builtin, so nothing is read ahead for it
        seen.append(iterated.NOW[0])
        return sorted(values)

    scope: dict[str, Any] = {"frozenset": own}
    exec("def drain(b):\n    return frozenset(b.copy())\n", scope)  # a global name, rebound
    mod.reads()
    assert scope["drain"](box) == [4, 5] and seen == [None]
    assert mod.reads() == ["copy", "iter"], "production iterated ahead for a call that is not the builtin's"


def test_a_drained_call_is_not_answered_once_anything_else_was_asked(mod: Any) -> None:
    box = mod.bag(1)

    def between(frame: FrameType) -> bool:  # a tracer runs between the call and frozenset's
        came = iterated.NOW[0] is not None  # the iterator and its items came with the call
        mod.add_two(box)  # production changed between them (a request)
        return came

    def drain(m: Any, b: Any) -> frozenset[Any]:
        return frozenset(m.same(b))

    calls = [i for i in dis.get_instructions(drain.__code__) if i.opname in ("PRECALL", "CALL")]
    mod.reads()
    got, done = traced_at(drain, calls[-1].offset, between, mod, box)  # just before frozenset's own call
    assert done == [True]
    assert got == {1, 2}, "items that came before production changed were used"
    assert mod.reads() == ["iter", "iter"] and iterated.NOW[0] is None  # read with the call, then asked again


def test_iter_that_fails_raises_from_the_drain(mod: Any) -> None:
    mod.unloopable()
    with pytest.raises(TypeError, match="refuses to be looped over"):
        frozenset(mod.unloopable())
    assert iterated.NOW[0] is None


def test_a_malformed_drained_calliter_reply_is_refused(mod: Any) -> None:
    mod.bag()
    mod.lying(["ok", ["h", 1], ["ok", ["l", 1]]], op="calliter")  # no batch where one was asked for
    with pytest.raises(standins.SealedCallError, match="malformed calliter iterator"):
        frozenset(mod.bag(1))


def test_two_lengths_one_after_the_other_are_one_request(mod: Any) -> None:
    ch = proxies.channel_of(mod)
    a, b = mod.sized(2), mod.sized(3)
    mod.reads()
    for _ in range(12):  # warm too: Python 3.11's specialized PRECALL runs ``len`` itself
        before = ch.calls
        assert len(a) != len(b)  # pytest's ``@py_assert2 = len(a)``, then ``len(b)``
        assert ch.calls - before == 1 and mod.reads() == ["len2", "len3"]
    before = ch.calls
    same = len(b) == len(a)  # no temporaries
    assert not same and ch.calls - before == 1 and mod.reads() == ["len3", "len2"]
    plain = [1, 2]
    before = ch.calls
    assert len(a) == len(plain) and ch.calls - before == 1 and lengths.NOW[0] is None


def test_a_length_that_fails_ends_the_pair_where_it_failed(mod: Any) -> None:
    good, bad = mod.sized(2), mod.sized(5, True)
    mod.reads()
    with pytest.raises(ValueError, match="no length for 5"):
        assert len(bad) == len(good)
    assert mod.reads() == ["len5"], "the second length was asked after the first failed"
    ch = proxies.channel_of(mod)
    before = ch.calls
    with pytest.raises(ValueError, match="no length for 5"):
        assert len(good) == len(bad)  # the second's error: raised from the second call
    assert ch.calls - before == 1 and mod.reads() == ["len2", "len5"] and lengths.NOW[0] is None


def test_a_second_length_is_asked_again_once_anything_ran(mod: Any) -> None:
    a, b = mod.sized(2), mod.sized(2)

    def between(frame: FrameType) -> bool:  # a tracer runs between the two lengths
        came = lengths.NOW[0] is not None  # the second length came with the first
        mod.grow(b)  # production changed b between them (a request)
        return came

    def two(x: Any, y: Any) -> tuple[int, int]:
        n = len(x)
        m = len(y)
        return n, m

    second = [i.offset for i in dis.get_instructions(two.__code__) if i.opname == "LOAD_GLOBAL"][1]
    got, done = traced_at(two, second, between, a, b)
    assert done == [True]
    assert got == (2, 3), "a length that came before production changed was used"
    assert lengths.NOW[0] is None


def test_a_rebound_len_or_a_malformed_lens_reply(mod: Any) -> None:
    a, b = mod.sized(1), mod.sized(4)
    scope: dict[str, Any] = {"len": lambda x: 7}
    exec("def two(x, y):\n    n = len(x)\n    return n, builtins_len(y)\n", scope)
    scope["builtins_len"] = len
    mod.reads()
    assert scope["two"](a, b) == (7, 4) and mod.reads() == ["len4"] and lengths.NOW[0] is None
    mod.lying(["ok", [["ok", 1], ["ok", 4], ["ok", 9]]], op="lens")
    with pytest.raises(standins.SealedCallError, match="malformed lens reply"):
        assert len(a) == len(b)


# ---------------------------------------------------------------- end to end: a patch that cuts its chains short

LADDER = '''\
class Rung:
    def __init__(self, n, height):
        self.n = n
        self.up = Rung(n + 1, height) if n + 1 < height else None

    @property
    def value(self):
        return self.n * 10
'''

LADDER_SUITE = '''\
from hypothesis import given, strategies as st

from ladder import Rung


@given(st.integers(4, 12))
def test_rungs(height):
    base = Rung(0, height)
    assert base.up.up.up.value == 30
    assert base.up.up.n == 2
'''

# The bug: the third rung's value is wrong.  The trick: production answers every chain of reads with its first value
# only, as if it had stopped there, hoping the evaluator takes a value it did not get for the reads after it.
CUTTING = LADDER.replace("return self.n * 10", "return self.n * 10 + (1 if self.n == 3 else 0)") + '''

import sys as _sys

_server = _sys.modules["__main__"]
_real = _server.OPS["getattrs"]


def _getattrs(s, target, names):
    return _real(s, target, names[:1])


_server.OPS["getattrs"] = _getattrs
'''


def _ladder_repo(factory: pytest.TempPathFactory, name: str) -> Any:
    """A repository whose trusted revision holds the ladder and its property, signed."""
    from tests.helpers import init_repo, sign_and_commit

    repo = init_repo(factory.mktemp(name) / "repo")
    sign_and_commit(repo, {
        "src/ladder.py": LADDER,
        "oracles/properties/test_ladder.py": LADDER_SUITE,
        "oracles/catalog/claimed.yaml": "claimed: [prop.rungs]\n",
        "oracles/catalog/prop.rungs.yaml": 'id: prop.rungs\noracle: oracles/properties/test_ladder.py::test_rungs\n'
                                           'claim: "rungs"\nmax_examples: 30\ncovers: ["src/ladder.py"]\n',
    }, "rungs")
    return repo


def test_a_patch_that_cuts_its_chains_short_is_rejected(tmp_path_factory: pytest.TempPathFactory,
                                                        bwrap_works: bool) -> None:
    from tests.test_sealed_attacks import agent_head, assert_admitted, assert_rejected, check

    repo = _ladder_repo(tmp_path_factory, "chains")
    honest = check(repo, agent_head(repo, "honest", {"src/ladder.py": LADDER + "\nVERSION = 2\n"}))
    assert_admitted(honest)
    calls = [r.get("production_calls") for r in honest.head_rows()]
    assert all(type(c) is int and c <= 4 * 30 for c in calls), calls  # an example: a call and two chains
    res = check(repo, agent_head(repo, "cutting", {"src/ladder.py": CUTTING}))
    assert_rejected(res, "prop.rungs")
    assert any(str(r.get("witness", "")).startswith("AssertionError") for r in res.head_rows()), res.explain()


# The same bug.  The trick: production adds to every chain's reply one value more than was asked for -- the right
# value for the read after the last -- hoping the evaluator answers a later read from it.
FORGING = LADDER.replace("return self.n * 10", "return self.n * 10 + (1 if self.n == 3 else 0)") + '''

import sys as _sys

_server = _sys.modules["__main__"]
_real = _server.OPS["getattrs"]


def _getattrs(s, target, names):
    reply = _real(s, target, names)
    return ["ok", [*reply[1], ["ok", 30]]]


_server.OPS["getattrs"] = _getattrs
'''


def test_a_patch_that_forges_a_read_it_was_not_asked_is_rejected(tmp_path_factory: pytest.TempPathFactory,
                                                                  bwrap_works: bool) -> None:
    from tests.test_sealed_attacks import agent_head, assert_rejected, check

    repo = _ladder_repo(tmp_path_factory, "forged")
    res = check(repo, agent_head(repo, "forging", {"src/ladder.py": FORGING}))
    assert_rejected(res, "prop.rungs")
    assert all("malformed getattrs reply" in str(r) for r in res.head_rows()), res.explain()  # refused, each seed
