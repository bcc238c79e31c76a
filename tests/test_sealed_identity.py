"""Identity of plain values across the boundary (``protocol/identity.py``), against a real subject process.

Real suites check that production returns the very object it was given (natsort: ``f(x) is x``), and
key dicts by ``float("nan")``, which a dict finds only as the same object (bidict's NaN keys).  A value
the property sent comes back as itself; mutable values stay copies; production can name only values it
was given or sent, and a name it makes up is a ``SealedCallError``, never a pass.
"""

from __future__ import annotations

import decimal
from collections.abc import Iterator
from typing import Any

import pytest

from mergegate.runner.protocol import codec, identity, wire
from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import standins
from tests.helpers import init_repo, production_subject, sign_and_commit

PRODUCTION = '''
import sys

def same(x):
    return x

def copied(x):
    return type(x)(x) if isinstance(x, (list, dict)) else x

def via(x, callback):
    """natsort_key: production hands x to the oracle's callback and returns what the callback made of it."""
    return callback(x)

def store(d, key, value):
    d[key] = value

class Box:
    pass

def keep_last(x, _seen=[]):
    _seen.append(x)
    return _seen[0]

def append_to(xs):
    xs.append("production's")
    return xs

class Map:
    """pyrsistent's pmap: setting a key to the value it already holds (``is``) returns the map itself."""

    def __init__(self):
        self.items = {"k": 10**6 + 1, "t": ("a", 2.5)}

    def __getitem__(self, key):
        return self.items[key]

    def get(self, key):
        return self.items[key]

    def set(self, key, value):
        if self.items.get(key) is value:
            return self
        out = Map()
        out.items = dict(self.items, **{key: value})
        return out

def made_up_name(n):
    """A hostile reply: a name no side gave."""
    server = sys.modules["__main__"]
    server.OPS["call"] = server.OPS["callattr"] = lambda s, *a: ["ok", ["~", n]]  # every call, fused or not
    return None

def named_list():
    """A hostile callback argument: a list sent named, then referred to by that name."""
    frame = sys._getframe(1)
    while "s" not in frame.f_locals:  # the request's Session, in op_call's frame
        frame = frame.f_back
    s = frame.f_locals["s"]
    s.endpoint.request(["callback", 0, ["l", ["=", 1001, ["l", 1, 2]]], ["d"]])
    s.endpoint.request(["callback", 0, ["l", ["~", 1001]], ["d"]])
    return None
'''


@pytest.fixture(scope="module")
def subject(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Subject]:
    yield from production_subject(tmp_path_factory, "idmod", PRODUCTION, "i")


@pytest.fixture
def prod(subject: sandbox.Subject) -> Any:
    return standins.Channel(subject.socket_path).request("import", "idmod")


@pytest.mark.parametrize("value", [2345, 0.0, float("nan"), -1e300, 3 + 4j, "text", "", b"bytes",
                                   decimal.Decimal("1.5"), (1, "a", (2.5, b"x")), frozenset({7, 8}), 10**40])
def test_an_immutable_value_comes_back_as_itself(prod: Any, value: Any) -> None:
    assert prod.same(value) is value
    assert prod.copied(value) is value
    assert prod.same(x=value) is value  # keyword arguments too


def test_identity_through_an_oracle_callback_and_inside_containers(prod: Any) -> None:
    """natsort's ``natsort_key(x, ..., lambda y: ("", y))[1] is x``: x goes to production, to the callback and
    back inside a tuple the callback built."""
    x = 123456.5
    seen: list[Any] = []

    def callback(y: Any) -> Any:
        seen.append(y)
        return ("", y)

    result = prod.via(x, callback)
    assert seen[0] is x and result[1] is x and result == ("", x)


def test_identity_holds_across_requests_nan_keys(prod: Any) -> None:
    """bidict: ``b[nan] = 'a'; b[nan] == 'a'``: the second request names the NaN the first sent."""
    nan = float("nan")
    box = prod.Box()
    box.value = nan
    assert box.value is nan
    assert prod.keep_last(nan) is nan and prod.keep_last(1.25) is nan
    other = float("nan")
    assert prod.same(other) is other and prod.same(other) is not nan


def test_a_value_production_returned_goes_back_as_its_own_object(prod: Any) -> None:
    """pyrsistent's ``m.set(k, m[k]) is m``: a value production returned (an attribute, a call's result, an
    operator's) is named, so passed back it is production's very object."""
    m = prod.Map()
    assert m.set("k", m["k"]) is m and m.set("t", m.get("t")) is m
    assert m.set("k", 10**6 + 1) is not m  # an equal value the property made is not production's object


def test_mutable_values_stay_copies(prod: Any) -> None:
    """A list is a copy each way: production never writes into the property's values, and never hands them back."""
    xs = [1, 2]
    back = prod.append_to(xs)
    assert xs == [1, 2] and back == [1, 2, "production's"] and back is not xs
    assert prod.same(xs) is not xs and prod.same(xs) == xs
    assert prod.same((1, [2])) is not None  # a tuple holding a list is not named, and still travels
    t = (1, [2])
    assert prod.same(t) is not t and prod.same(t) == t


def test_a_name_production_makes_up_is_refused(subject: sandbox.Subject) -> None:
    channel = standins.Channel(subject.socket_path)
    mod = channel.request("import", "idmod")
    assert mod.same(99999.5) == 99999.5
    mod.made_up_name(10**6)  # from now on every call answers with a name no side gave
    with pytest.raises(standins.SealedCallError, match="unknown name"):
        mod.same(1)


def test_a_name_production_gives_to_a_list_is_not_kept(subject: sandbox.Subject) -> None:
    """A callback argument production sent named, as a list: it arrives (a copy), and the name resolves to nothing."""
    channel = standins.Channel(subject.socket_path)
    got: list[Any] = []
    channel.callbacks.append(got.append)  # callback 0
    mod = channel.request("import", "idmod")
    with pytest.raises(standins.SealedCallError, match="unknown name"):
        mod.named_list()
    assert got == [[1, 2]] and 1001 not in codec.SAME.objects


def test_the_table_is_bounded_and_names_keep_their_sides() -> None:
    table = identity.Identity(0)
    assert table.add(2345.5) == 0 and table.add(7.5) == 2
    assert table.add(None) is None and table.add(True) is None and table.add(3) is None and table.add(()) is None
    assert table.add([1]) is None and table.add((1, [2])) is None and table.add("x" * (identity.MAX_BYTES + 1)) is None
    with pytest.raises(ValueError, match="malformed name"):
        table.learn(4, 1.5)  # an even name is the trusted side's to give
    with pytest.raises(ValueError, match="malformed name"):
        table.learn("1", 1.5)
    table.learn(1, [1, 2])  # a list is never kept
    with pytest.raises(ValueError, match="unknown name"):
        table.get(1)
    table.learn(3, 99.5)
    assert table.get(3) == 99.5
    with pytest.raises(ValueError, match="malformed name"):
        table.learn(3, 98.5)  # a name is given once


def test_a_message_that_cannot_be_encoded_takes_back_its_names() -> None:
    previous = codec.SAME
    codec.SAME = identity.Identity(0)
    try:
        x = 4567.5

        def refuse(obj: Any) -> list[Any]:
            raise codec.CodecError("no")

        with pytest.raises(codec.CodecError):
            codec.encode_call([x, object()], None, refuse)
        assert not codec.SAME.objects and codec.encode(x, refuse) == x
        args, kwargs = codec.encode_call([x], {"k": x}, refuse)
        name = args[1][1]
        assert args == ["l", ["=", name, x]] and kwargs == ["d", "k", ["~", name]] and name % 2 == 0
        assert codec.decode(wire.loads(wire.dumps(["t", ["~", name]])), refuse)[0] is x
    finally:
        codec.SAME = previous


# ---------------------------------------------------------------- end to end: natsort's and bidict's checks


CHAIN = '''\
"""natsort's chain_functions and bidict's NaN keys, reduced."""


def chain(functions):
    def run(x):
        for f in functions:
            x = f(x)
        return x

    return run


class Table:
    def __init__(self):
        self.data = {}

    def __setitem__(self, key, value):
        if key in self.data and self.data[key] is not value and self.data[key] != value:
            raise KeyError("duplicate")
        self.data[key] = value

    def __getitem__(self, key):
        return self.data[key]

    def __len__(self):
        return len(self.data)
'''

IDENTITY_SUITE = '''\
import math

from hypothesis import given, strategies as st

from chain import Table, chain


@given(st.one_of(st.integers(), st.floats(), st.text(), st.binary()))
def test_chain_of_nothing_is_a_no_op(x):
    assert chain([])(x) is x


def test_nan_keys():
    nan = float("nan")
    t = Table()
    t[nan] = "a"
    t[nan] = "a"
    assert len(t) == 1 and t[nan] == "a" and math.isnan(nan)
'''


@pytest.fixture(scope="module")
def chain_repo(tmp_path_factory: pytest.TempPathFactory) -> Any:
    repo = init_repo(tmp_path_factory.mktemp("identity") / "repo")
    policy = (repo / "gate.yaml").read_text()
    files: dict[str, str | bytes | None] = {
        "gate.yaml": policy.replace("seeds: [11, 29, 47]", "seeds: [11]"),
        "src/chain.py": CHAIN,
        "oracles/properties/test_chain.py": IDENTITY_SUITE,
        "oracles/catalog/claimed.yaml": "claimed: [prop.no_op, prop.nan_keys]\n",
    }
    for pid, func in (("prop.no_op", "test_chain_of_nothing_is_a_no_op"), ("prop.nan_keys", "test_nan_keys")):
        files[f"oracles/catalog/{pid}.yaml"] = (f"id: {pid}\noracle: oracles/properties/test_chain.py::{func}\n"
                                                'claim: "identity"\nmax_examples: 30\ncovers: ["src/chain.py"]\n')
    sign_and_commit(repo, files, "identity suite")
    return repo


def test_identity_checks_run_sealed_end_to_end(chain_repo: Any) -> None:
    """Sealed, as plain pytest: a clean patch is admitted; a no-op that copies its input is a regression."""
    from tests.test_sealed_attacks import agent_head, assert_admitted, assert_rejected, check

    assert_admitted(check(chain_repo, agent_head(chain_repo, "honest", {"src/chain.py": CHAIN + "\nVERSION = 2\n"})))
    copying = CHAIN.replace("        return x\n", "        return type(x)(x) if type(x) is not float else x * 1.0\n")
    res = check(chain_repo, agent_head(chain_repo, "copies", {"src/chain.py": copying}))
    assert_rejected(res, "prop.no_op")
    assert res.verdicts()["prop.nan_keys"] == "pass", res.explain()
    rekeyed = CHAIN.replace("        self.data[key] = value\n", "        self.data[key * 1.0] = value\n")
    assert_rejected(check(chain_repo, agent_head(chain_repo, "rekeys", {"src/chain.py": rekeyed})), "prop.nan_keys")
