"""Production's builtin iterators read ahead in growing batches (``trusted/ahead.py``), against a real subject.

A loop over a production generator, ``filter`` or ``map`` was a round trip per item; now it is a few
batches (1, 16, then 64 items).  What must hold: the same items, end and exceptions as in one process;
a single ``next`` runs production exactly one step; production's own iterator classes keep one request
per ``next``; a malformed batch is a ``SealedCallError``, never items production did not send.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import standins
from tests.helpers import production_subject

PRODUCTION = '''
import itertools, sys

STEPS = []


def count_up(n):
    for i in range(n):
        STEPS.append(i)
        yield i


def steps():
    return len(STEPS)


def failing(n):
    yield from range(n)
    raise ValueError("production failed after %d" % n)


def kept(pred, xs):
    return filter(pred, xs)


def doubled(xs):
    return map(lambda x: 2 * x, xs)


def forever():
    return itertools.count()


class Own:
    """An iterator class of production's own: one request per next, as before."""
    def __init__(self):
        self.n = 0
    def __iter__(self):
        return self
    def __next__(self):
        self.n += 1
        if self.n > 3:
            raise StopIteration
        return self.n


class Bag:
    """Sized; its iterator is a builtin one over a list."""
    def __init__(self, items):
        self.items = list(items)
    def __len__(self):
        return len(self.items)
    def __iter__(self):
        return iter(self.items)


class Counted:
    """Sized; its iterator is a generator of production's (each step counted)."""
    def __init__(self, n):
        self.n = n
    def __len__(self):
        return self.n
    def __iter__(self):
        return count_up(self.n)


class NoIter:
    def __iter__(self):
        raise ValueError("no iterator here")


class Failing:
    def __iter__(self):
        return failing(3)


class OwnBox:
    def __iter__(self):
        return Own()


def malformed_drain():
    """A hostile drain: a first batch short of what was asked, with no end."""
    server = sys.modules["__main__"]
    server.OPS["drain"] = lambda s, target, count: ["ok", s.enc(iter([1, 2])), ["l", 1, 2], None]
    return Bag([1, 2])


def malformed():
    """A hostile batch: more items than asked for, and an end that is not one."""
    server = sys.modules["__main__"]
    server.OPS["ahead"] = lambda s, target, count: ["ok", ["l", 1, 2, 3, 4, 5, 6, 7, 8, 9], "maybe"]
    return (i for i in range(3))
'''


@pytest.fixture(scope="module")
def subject(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Subject]:
    yield from production_subject(tmp_path_factory, "itermod", PRODUCTION, "it")


@pytest.fixture
def channel(subject: sandbox.Subject) -> standins.Channel:
    return standins.Channel(subject.socket_path)


def test_a_drained_generator_is_a_few_batches(channel: standins.Channel) -> None:
    mod = channel.request("import", "itermod")
    before = channel.calls
    gen = mod.count_up(100)
    assert list(gen) == list(range(100))
    # the module's attribute and the call, then two batches of 64 (list() drains it whole: the second ends it);
    # no len or iter request, against 103 one item at a time
    assert channel.calls - before == 2 + 2, channel.calls - before
    assert sorted(mod.doubled([3, 1, 2])) == [2, 4, 6]
    assert list(mod.kept(lambda x: x % 2 == 0, range(10))) == [0, 2, 4, 6, 8]  # the oracle's predicate, called back


def test_what_drains_a_generator_whole_reads_it_in_one_batch(channel: standins.Channel) -> None:
    """tuple(), list(), sorted() and str.join ask for a length hint first: one request for a short generator;
    a loop still starts at one item, and a loop's later list() takes the rest in the largest batches."""
    mod = channel.request("import", "itermod")
    for drain, expected in ((tuple, (0, 1, 2, 3, 4)), (list, [0, 1, 2, 3, 4]), (sorted, [0, 1, 2, 3, 4]),
                            (lambda g: ",".join(map(str, list(g))), "0,1,2,3,4")):
        gen = mod.count_up(5)
        before = channel.calls
        assert drain(gen) == expected
        assert channel.calls - before == 1, (drain, channel.calls - before)
    gen, ran = mod.count_up(200), mod.steps()  # STEPS counts every generator this process ran
    assert next(gen) == 0 and mod.steps() == ran + 1  # a single next: one step, as before
    before = channel.calls
    assert list(gen) == list(range(1, 200))
    assert channel.calls - before == 4, channel.calls - before  # 64, 64, 64 and the 7 that end it
    assert mod.steps() == ran + 200


def test_a_builtin_that_takes_a_production_object_whole_asks_once(channel: standins.Channel) -> None:
    """``frozenset(x)``, ``set``, ``sorted``, ``tuple``, ``list`` of a production object: ``iter`` and the first 64
    items in one request (``consumers.py``; it was ``iter``, a batch of one and one of 16); ``list()`` and
    ``tuple()`` also ask its ``len``, as CPython does. Anything else still starts at one item."""
    mod = channel.request("import", "itermod")
    bag = mod.Bag([3, 1, 2])
    marks = [channel.calls]  # each builtin named in its call, as a property writes it (the bytecode shows the name)
    assert frozenset(bag) == frozenset({1, 2, 3})
    marks.append(channel.calls)
    assert set(bag) == {1, 2, 3}
    marks.append(channel.calls)
    assert sorted(bag) == [1, 2, 3]
    marks.append(channel.calls)
    assert tuple(bag) == (3, 1, 2)
    marks.append(channel.calls)
    assert list(bag) == [3, 1, 2]
    marks.append(channel.calls)
    asked = [b - a for a, b in itertools.pairwise(marks)]
    assert asked == [1, 1, 2, 2, 2], asked
    big = mod.Bag(range(200))
    before = channel.calls
    assert list(big) == list(range(200))
    assert channel.calls - before == 5, channel.calls - before  # len; 64 with the iterator, 64, 64, the 8 that end it
    before = channel.calls
    assert [x for x in bag] == [3, 1, 2]  # a comprehension's iter: not a builtin's
    assert channel.calls - before == 3, channel.calls - before  # iter, then batches of one and 16, as before
    scope: dict[str, Any] = {"list": frozenset}  # an oracle module whose `list` is its own: looked up again
    exec("def take(x):\n    return list(x)\n", scope)
    before = channel.calls
    assert scope["take"](bag) == frozenset({1, 2, 3}) and channel.calls - before == 3
    ran = mod.steps()
    assert list(mod.Counted(5)) == [0, 1, 2, 3, 4] and mod.steps() == ran + 5  # a generator: what list() takes


def test_a_drained_object_ends_and_fails_where_it_would(channel: standins.Channel) -> None:
    mod = channel.request("import", "itermod")
    with pytest.raises(ValueError, match="no iterator here"):
        frozenset(mod.NoIter())
    with pytest.raises(ValueError, match="failed after 3"):
        list(mod.Failing())
    assert list(mod.OwnBox()) == [1, 2, 3]  # production's own iterator class: nothing read ahead, a next each
    assert sorted(mod.Bag([])) == [] and frozenset(mod.Bag([])) == frozenset()
    with pytest.raises(standins.SealedCallError, match="malformed batch"):
        list(mod.malformed_drain())


def test_one_next_runs_production_one_step(channel: standins.Channel) -> None:
    mod = channel.request("import", "itermod")
    gen = mod.count_up(1000)
    assert next(gen) == 0 and mod.steps() == 1  # exactly as far as in one process
    assert next(gen) == 1 and next(gen) == 2 and mod.steps() == 17  # a loop: then a batch of 16
    assert iter(gen) is gen
    with pytest.raises(TypeError, match="has no len"):
        len(gen)
    forever = mod.forever()
    assert [next(forever) for _ in range(5)] == [0, 1, 2, 3, 4]


def test_the_end_and_the_error_come_where_they_would(channel: standins.Channel) -> None:
    mod = channel.request("import", "itermod")
    gen = mod.failing(5)
    seen = []
    with pytest.raises(ValueError, match="failed after 5"):
        for item in gen:
            seen.append(item)
    assert seen == [0, 1, 2, 3, 4]
    empty = mod.count_up(0)
    assert next(empty, "default") == "default"
    with pytest.raises(StopIteration):
        next(empty)


def test_productions_own_iterator_class_keeps_one_request_per_next(channel: standins.Channel) -> None:
    mod = channel.request("import", "itermod")
    own = mod.Own()
    before = channel.calls
    assert list(own) == [1, 2, 3]
    assert channel.calls - before >= 4  # iter, then a next per item and the one that stops


def test_a_malformed_batch_is_refused(channel: standins.Channel) -> None:
    mod = channel.request("import", "itermod")
    gen = mod.malformed()
    with pytest.raises(standins.SealedCallError, match="malformed batch"):
        next(gen)


def test_read_ahead_is_what_plain_python_gives(channel: standins.Channel) -> None:
    """The same loops in one process and sealed give the same items (a property over sizes)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    mod = channel.request("import", "itermod")

    @settings(max_examples=25, database=None, derandomize=True)
    @given(st.integers(0, 300), st.integers(0, 20))
    def same(n: int, take: int) -> None:
        gen: Any = mod.count_up(n)
        head = [next(gen) for _ in range(min(take, n))]
        assert head == list(range(min(take, n))) and list(gen) == list(range(min(take, n), n))

    same()


# ---------------------------------------------------------------- end to end: a patch that edits the batches


SQUARES = '''\
def squares(n):
    for i in range(n):
        yield i * i
'''

SQUARES_SUITE = '''\
from hypothesis import given, strategies as st

from sq import squares


@given(st.integers(0, 40))
def test_squares(n):
    assert list(squares(n)) == [i * i for i in range(n)]
'''

# The bug: 7's square is wrong.  The trick: production rewrites the subject's batch replies (the first, sent with
# the iterator to `list()`, and the later ones) so that the wrong item is dropped and the iterator ends early, as
# if the generator had stopped there.
HIDING = SQUARES.replace("yield i * i", "yield i * i + (1 if i == 7 else 0)") + '''

import sys as _sys

_server = _sys.modules["__main__"]
_real = _server.OPS["ahead"]


def _ahead(s, target, count):
    reply = _real(s, target, count)
    items = reply[1]
    if isinstance(items, list) and 50 in items[1:]:
        return ["ok", items[:items.index(50)], "stop"]
    return reply


_server.OPS["ahead"] = _ahead
_drain = _server.OPS["drain"]


def _drained(s, target, count):  # list(squares(n)): the iterator and its first batch in one reply
    reply = _drain(s, target, count)
    items = reply[2]
    if isinstance(items, list) and 50 in items[1:]:
        return ["ok", reply[1], items[:items.index(50)], "stop"]
    return reply


_server.OPS["drain"] = _drained
'''


def test_a_patch_that_edits_its_batches_to_hide_a_wrong_item_is_rejected(tmp_path_factory: pytest.TempPathFactory,
                                                                         bwrap_works: bool) -> None:
    from tests.helpers import init_repo, sign_and_commit
    from tests.test_sealed_attacks import agent_head, assert_admitted, assert_rejected, check

    repo = init_repo(tmp_path_factory.mktemp("ahead") / "repo")
    sign_and_commit(repo, {
        "src/sq.py": SQUARES,
        "oracles/properties/test_sq.py": SQUARES_SUITE,
        "oracles/catalog/claimed.yaml": "claimed: [prop.squares]\n",
        "oracles/catalog/prop.squares.yaml": 'id: prop.squares\noracle: oracles/properties/test_sq.py::test_squares\n'
                                             'claim: "squares"\nmax_examples: 30\ncovers: ["src/sq.py"]\n',
    }, "squares")
    assert_admitted(check(repo, agent_head(repo, "honest", {"src/sq.py": SQUARES + "\nVERSION = 2\n"})))
    assert "50" in HIDING and '_server.OPS["drain"]' in HIDING
    res = check(repo, agent_head(repo, "hiding", {"src/sq.py": HIDING}))
    assert_rejected(res, "prop.squares")
    # the list it got was short: the property's own assertion failed (the batch was well-formed, only a lie)
    assert any(str(r.get("witness", "")).startswith("AssertionError") for r in res.head_rows()), res.explain()
