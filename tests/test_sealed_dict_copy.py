"""``dict(x)`` of a production object in one request (``trusted/dictcopy.py``), against a real subject.

What must hold: the dict one process builds (the same keys, values and production's reads of them, in that
order), production's errors where they would come, nothing answered from a copy once anything else was asked,
and a malformed copy refused.
"""

from __future__ import annotations

import collections.abc
from collections.abc import Iterator
from typing import Any

import pytest

from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import proxies, standins
from tests.helpers import production_subject

PRODUCTION = '''
import collections.abc, dataclasses, sys

READS = []


class Table(collections.abc.Mapping):
    """A mapping that writes down every read the builtin makes of it."""
    def __init__(self, data):
        self.data = dict(data)
    def __getitem__(self, key):
        READS.append(("getitem", key))
        return self.data[key]
    def __iter__(self):
        READS.append(("iter",))
        return iter(self.data)
    def __len__(self):
        return len(self.data)
    def keys(self):
        READS.append(("keys",))
        return collections.abc.KeysView(self)
    def set(self, key, value):
        self.data[key] = value


def reads():
    out = list(READS)
    READS.clear()
    return out


class Pairs:
    """No keys: dict() takes its pairs."""
    def __iter__(self):
        READS.append(("iter",))
        return iter([("a", 1), ("b", 2)])


class Broken(collections.abc.Mapping):
    def __getitem__(self, key):
        raise ValueError("production cannot read %r" % key)
    def __iter__(self):
        return iter(["a"])
    def __len__(self):
        return 1


class KeysFails(collections.abc.Mapping):
    """Its keys() raises AttributeError: dict() raises it (its read of keys found the method)."""
    def keys(self):
        raise AttributeError("production's keys() failed")
    def __iter__(self):
        READS.append(("iter",))
        return iter(["a"])
    def __getitem__(self, key):
        return 1
    def __len__(self):
        return 1


class PairsFail:
    def __iter__(self):
        yield ("a", 1)
        raise ValueError("the pairs broke")


@dataclasses.dataclass(frozen=True)
class Key:
    n: int


def keyed():
    return Table({Key(1): "one", Key(2): "two"})


def malformed():
    """A hostile copy: a list where the dict goes."""
    server = sys.modules["__main__"]
    server.OPS["dictof"] = lambda s, target: ["ok", ["l", 1, 2], True]
    return Table({"a": 1})
'''


@pytest.fixture(scope="module")
def subject(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Subject]:
    yield from production_subject(tmp_path_factory, "dictmod", PRODUCTION, "dc")


@pytest.fixture
def mod(subject: sandbox.Subject) -> Any:
    return standins.Channel(subject.socket_path).request("import", "dictmod")


def test_dict_of_a_production_mapping_is_one_request_and_the_same_reads(mod: Any) -> None:
    ch = proxies.channel_of(mod)
    table = mod.Table({"a": 1, "b": 2, "c": 3})
    mod.reads()
    before = ch.calls
    got = dict(table)
    assert ch.calls - before == 1, ch.calls - before  # was two reads of keys, its call, iter, a batch, 3 getitems
    assert got == {"a": 1, "b": 2, "c": 3} and list(got) == ["a", "b", "c"]
    # production saw what one process shows it: keys() called once, its keys iterated, each key read once
    assert mod.reads() == [("keys",), ("iter",), ("getitem", "a"), ("getitem", "b"), ("getitem", "c")]
    for value in (10, 20):  # the same call site again, after production changed: asked again, never the old copy
        table.set("a", value)
        assert dict(table)["a"] == value
    before = ch.calls
    assert table["b"] == 2 and ch.calls - before == 1  # outside dict(): a request, as before


def test_dict_of_pairs_and_of_production_keys(mod: Any) -> None:
    ch = proxies.channel_of(mod)
    pairs = mod.Pairs()
    mod.reads()
    before = ch.calls
    assert dict(pairs) == {"a": 1, "b": 2}
    assert ch.calls - before == 1 and mod.reads() == [("iter",)]  # one request; its pairs read once
    keyed = dict(mod.keyed())  # production's own keys: the evaluator's hash of them asks their snapshots
    assert sorted(keyed.values()) == ["one", "two"] and keyed[mod.Key(1)] == "one"


def test_production_errors_come_from_dict_as_they_would(mod: Any) -> None:
    with pytest.raises(ValueError, match="cannot read 'a'"):
        dict(mod.Broken())
    mod.reads()
    with pytest.raises(AttributeError, match="keys\\(\\) failed"):  # not taken for "no keys": its pairs never read
        dict(mod.KeysFails())
    assert mod.reads() == []
    with pytest.raises(ValueError, match="the pairs broke"):
        dict(mod.PairsFail())


def test_a_rebound_dict_or_another_call_shape_is_not_copied(mod: Any) -> None:
    ch = proxies.channel_of(mod)
    table = mod.Table({"a": 1, "b": 2})
    scope: dict[str, Any] = {"dict": collections.OrderedDict}  # an oracle module whose `dict` is its own
    exec("def take(x):\n    return dict(x)\n", scope)
    before = ch.calls
    assert scope["take"](table) == {"a": 1, "b": 2} and ch.calls - before > 1  # each read a request, as before
    before = ch.calls
    assert dict(table, c=3) == {"a": 1, "b": 2, "c": 3} and ch.calls - before > 1  # keywords: not the one shape


def test_a_malformed_copy_is_refused(mod: Any) -> None:
    with pytest.raises(standins.SealedCallError, match="malformed dict"):
        dict(mod.malformed())


# ---------------------------------------------------------------- end to end: a patch that edits its copies

TABLE = '''\
import collections.abc


class Squares(collections.abc.Mapping):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, k):
        if not 0 <= k < self.n:
            raise KeyError(k)
        return k * k

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n
'''

TABLE_SUITE = '''\
from hypothesis import given, strategies as st

from tab import Squares


@given(st.integers(0, 40))
def test_squares(n):
    assert dict(Squares(n)) == {i: i * i for i in range(n)}
'''

# The bug: 7's square is wrong.  The trick: production rewrites the subject's copy of dict(x) so that the wrong
# key is left out, as if the mapping ended before it.
HIDING = TABLE.replace("return k * k", "return k * k + (1 if k == 7 else 0)") + '''

import sys as _sys

_server = _sys.modules["__main__"]
_real = _server.OPS["dictof"]


def _dictof(s, target):
    reply = _real(s, target)
    if reply[0] != "ok" or reply[1] is None:
        return reply
    flat = reply[1][1:]  # key, value, key, value...
    kept = [x for i in range(0, len(flat), 2) if flat[i] != 7 for x in flat[i:i + 2]]
    return ["ok", ["d", *kept], reply[2], reply[3]]


_server.OPS["dictof"] = _dictof
'''


def test_a_patch_that_edits_its_copies_to_hide_a_wrong_value_is_rejected(tmp_path_factory: pytest.TempPathFactory,
                                                                         bwrap_works: bool) -> None:
    from tests.helpers import init_repo, sign_and_commit
    from tests.test_sealed_attacks import agent_head, assert_admitted, assert_rejected, check

    repo = init_repo(tmp_path_factory.mktemp("dictcopy") / "repo")
    sign_and_commit(repo, {
        "src/tab.py": TABLE,
        "oracles/properties/test_tab.py": TABLE_SUITE,
        "oracles/catalog/claimed.yaml": "claimed: [prop.squares]\n",
        "oracles/catalog/prop.squares.yaml": 'id: prop.squares\noracle: oracles/properties/test_tab.py::test_squares\n'
                                             'claim: "squares"\nmax_examples: 30\ncovers: ["src/tab.py"]\n',
    }, "squares")
    honest = check(repo, agent_head(repo, "honest", {"src/tab.py": TABLE + "\nVERSION = 2\n"}))
    assert_admitted(honest)
    calls = [r.get("production_calls") for r in honest.head_rows()]
    assert all(type(c) is int and c < 200 for c in calls), calls  # a dict(x) an example: one request, not 2 + n
    res = check(repo, agent_head(repo, "hiding", {"src/tab.py": HIDING}))
    assert_rejected(res, "prop.squares")
    assert any(str(r.get("witness", "")).startswith("AssertionError") for r in res.head_rows()), res.explain()
