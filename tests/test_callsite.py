"""A production module's function read and called at once is one request (``trusted/callsite.py``).

What must hold: ``mod.f(x)`` and ``assert mod.f(x) == y`` (as pytest rewrites it) cost one round trip
once ``f`` was seen to be a function; a read that is stored, compared or named keeps its own request
and its identity; the call meets whatever the module holds when it is made (a rebinding production
made is seen, never a stale value); a failing assertion shows production's function as it is.
"""

from __future__ import annotations

import ast
import dis
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import callsite, standins
from tests.helpers import production_subject

PRODUCTION = '''
def double(x):
    return 2 * x


def triple(x):
    return 3 * x


def rebind():
    """Production rebinding its own module attribute: a later call must meet the new function."""
    global double
    double = triple
    return "rebound"


class Made:
    def __init__(self, x):
        self.x = x

    @classmethod
    def twice(cls, x):
        return 2 * x


class Till:
    def shown(self, x):
        return x

    def bump(self):
        """Rebinds this till's ``shown`` to a liar, once (the next read meets the method again)."""
        def liar(x):
            del self.shown
            return -1

        self.shown = liar
        return 5
'''


@pytest.fixture(scope="module")
def subject(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Subject]:
    yield from production_subject(tmp_path_factory, "callmod", PRODUCTION, "c")


@pytest.fixture
def channel(subject: sandbox.Subject) -> standins.Channel:
    return standins.Channel(subject.socket_path)


def test_a_function_called_at_once_is_one_request(channel: standins.Channel) -> None:
    mod = channel.request("import", "callmod")
    assert mod.double(1) == 2  # the first read is a read: now it is known to be a function
    before = channel.calls
    mod.double(2)
    assert channel.calls - before == 1, channel.calls - before  # a method-call read
    before = channel.calls
    assert mod.double(3) == 6  # this test's module is rewritten by pytest: the temporary is the callee
    assert channel.calls - before == 1, channel.calls - before


def test_a_function_of_a_module_the_oracle_imported_is_one_request(channel: standins.Channel) -> None:
    mod = channel.request("import", "callmod")
    sys.modules["callmod"] = mod  # as the stand-in finder installs it: an oracle file's ``import callmod``
    try:
        namespace: dict[str, Any] = {}
        exec(compile("import callmod\ndef f(x):\n    return callmod.double(x)\n", "oracle.py", "exec"), namespace)
    finally:
        del sys.modules["callmod"]
    assert namespace["f"](1) == 2  # the first read: a read
    before = channel.calls
    assert namespace["f"](4) == 8
    assert channel.calls - before == 1, channel.calls - before


def test_a_class_method_called_at_once_is_one_request(channel: standins.Channel) -> None:
    made = channel.request("import", "callmod").Made
    assert made.twice(1) == 2
    before = channel.calls
    assert made.twice(3) == 6
    assert channel.calls - before == 1, channel.calls - before
    assert made(5).x == 5  # the class itself is still called as a class


def test_a_method_is_read_before_its_arguments_run(channel: standins.Channel) -> None:
    """``till.shown(till.bump())``: Python reads ``shown`` first; ``bump`` then rebinds it, and the call still meets
    the method read before.  A read deferred to the call would meet the liar."""
    till = channel.request("import", "callmod").Till()
    assert till.shown(1) == 1 and till.shown(2) == 2  # a method of Till: its later calls may be fused
    assert till.shown(till.bump()) == 5
    assert till.shown(3) == -1  # the liar bump left, as in one process (it removes itself)
    before = channel.calls
    assert till.shown(4) == 4
    assert channel.calls - before == 1, channel.calls - before  # quiet arguments: still one request


def test_a_function_is_read_before_an_argument_that_calls_a_name(channel: standins.Channel) -> None:
    """``mod.double(rebind_and_two())``, ``rebind_and_two`` a production function the oracle holds by name: Python
    reads ``double`` first; ``rebind`` then rebinds it to ``triple``, and the call still meets ``double``."""
    mod = channel.request("import", "callmod")
    rebind = mod.rebind
    assert mod.double(2) == 4 and mod.double(3) == 6  # known as a function: a read called at once is fused
    shown = mod.double(len(rebind()))  # outside an assert: the compiler's own method-call read
    assert shown == 14  # double(7), not triple: read before rebind ran, as in one process
    assert mod.double(1) == 3  # and after it, the new binding


def test_a_stored_read_is_a_read_and_keeps_its_identity(channel: standins.Channel) -> None:
    mod = channel.request("import", "callmod")
    mod.double(1)
    before = channel.calls
    first = mod.double
    assert channel.calls - before == 1  # stored: a read
    assert first is mod.double  # the same stand-in for the same production function
    assert mod.double is not mod.triple
    assert type(first) is not type(mod.Made)


def test_the_call_meets_what_the_module_holds_when_it_is_made(channel: standins.Channel) -> None:
    mod = channel.request("import", "callmod")
    assert mod.double(5) == 10 and mod.double(5) == 10
    assert mod.rebind() == "rebound"
    assert mod.double(5) == 15  # production rebound it: the fused call reads the module again
    made = mod.Made(4)  # a class is never fused (it was never seen as a function)
    assert made.x == 4


def test_a_failing_assertion_shows_productions_function(channel: standins.Channel) -> None:
    mod = channel.request("import", "callmod")
    mod.triple(1)
    with pytest.raises(AssertionError) as info:
        assert mod.triple(2) == 7
    assert "6 == 7" in str(info.value) and "triple" in str(info.value), str(info.value)


# ---------------------------------------------------------------- the bytecode shapes, on their own


def _rewritten(source: str) -> Any:
    """``source``'s function, its asserts rewritten by pytest's own rewriter."""
    from _pytest.assertion.rewrite import rewrite_asserts

    tree = ast.parse(source)
    rewrite_asserts(tree, source.encode(), "t.py", None)
    namespace: dict[str, Any] = {}
    exec(compile(tree, "t.py", "exec"), namespace)
    return namespace["f"]


@pytest.mark.parametrize(("source", "fused"), [
    ("def f(m, x):\n    m.g(x)\n", ["g"]),  # a method-call read
    ("def f(m, x):\n    assert m.g(x) == 1\n", ["g"]),  # rewritten: the temporary is the callee
    ("def f(m, x):\n    assert m.g(m.h(x)) == 1\n", ["h"]),  # g is read before h runs (h could rebind it)
    ("def f(m, h, x):\n    m.g(h(x))\n", []),  # a call among the arguments, of a name: g is read before it
    ("def f(m, h, x):\n    m.g(x, h())\n", []),
    ("def f(m, h, x):\n    return m.g(len(x))\n", []),
    ("def f(m, h, x):\n    assert m.g(h(x)) == 1\n", []),
    ("def f(m, h, x):\n    m.g(x)(h(x))\n", ["g"]),  # g's call comes first; what it returns is called later
    ("import os as m\ndef f(h, x):\n    m.g(h(x))\n", []),
    ("def f(m, x):\n    assert tuple(m.g(x)) == (1,)\n", ["g"]),
    ("def f(m, x):\n    y = m.g\n    return y(x)\n", []),  # stored in a name of the oracle's: a read
    ("def f(m, x):\n    assert m.g == 1\n", []),  # rewritten, compared: a read
    ("def f(m, x):\n    assert m.g is m.h\n", []),  # identity: reads
    ("def f(m, x):\n    assert m.g\n", []),  # truth: a read
    ("def f(m, x):\n    return [m.g, getattr(m, 'h')]\n", []),
    # a module the oracle imported: the compiler reads its attribute with a plain LOAD_ATTR, followed on the stack
    ("import os as m\ndef f(x):\n    m.g(x)\n", ["g"]),
    ("import os as m\ndef f(x):\n    m.t()\n", ["t"]),
    ("import os as m\ndef f(x, a):\n    m.h(a, k=x)\n", ["h"]),
    ("import os as m\ndef f(x, a):\n    m.h(a[0], k=-x)\n", []),  # an index, a negation: code runs first
    ("import os as m\ndef f(x):\n    assert m.g(x) == 1\n", ["g"]),
    ("import os as m\ndef f(x, a):\n    m.k(a, (x, 1))\n", ["k"]),
    ("import os as m\ndef f(x, a):\n    m.k(a, m.l)\n", []),  # an argument read (a property could run)
    ("import os as m\ndef f(x, a):\n    m.v(m.w(x), *a)\n", ["w"]),  # a call with *args: not followed
    ("import os as m\ndef f(x, a, b):\n    m.c(x if a else b)\n", []),  # a jump among the arguments
    ("import os as m\ndef f(x):\n    m.q[0](x)\n", []),  # subscripted, then called
    ("import os as m\ndef f(x):\n    m.r.s(x)\n", ["s"]),  # the base of a method-call read
    ("import os as m\ndef f(x):\n    return m.g + x\n", []),
])
def test_which_reads_are_callees(source: str, fused: list[str]) -> None:
    code = _rewritten(source).__code__
    names = {i.offset: i.argval for i in dis.get_instructions(code)}
    # (the rewriter's own calls, ``@pytest_ar._saferepr(...)``, ``@py_builtins.locals()``, are callees too: the
    # names of the cases here are one letter)
    assert sorted(n for n in (names[o] for o in callsite.callee_reads(code)) if len(n) == 1) == sorted(fused)


def test_an_unknown_python_fuses_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    code = _rewritten("def f(m, x):\n    m.g(x)\n").__code__
    frame = type("Frame", (), {"f_code": code, "f_lasti": callsite.callee_reads(code)[0]})()
    assert callsite.called_at_once(frame)  # type: ignore[arg-type]
    monkeypatch.setattr(callsite, "KNOWN", False)
    assert not callsite.called_at_once(frame)  # type: ignore[arg-type]
    assert not callsite.called_at_once(None)
    assert callsite.KNOWN is False and sys.version_info >= (3, 11)


# ---------------------------------------------------------------- end to end: a patch rebinds what the oracle read

CALC = '''\
"""Totals of a till."""


def add(a, b):
    return a + b


def total(amount):
    """What the till shows: the amount in cents."""
    return amount * 100
'''

CALC_PROPERTIES = '''\
from hypothesis import given
from hypothesis import strategies as st

from shop import calc
from shop.calc import add


@given(st.integers(0, 50), st.integers(0, 50))
def test_total_of_a_sum(a, b):
    assert calc.total(calc.add(a, b)) == (a + b) * 100


@given(st.integers(0, 50), st.integers(0, 50))
def test_total_of_a_sum_called_plainly(a, b):
    shown = calc.total(calc.add(a, b))
    assert shown == (a + b) * 100


@given(st.integers(0, 50), st.integers(0, 50))
def test_total_of_a_sum_added_by_name(a, b):
    assert calc.total(0) == 0  # the read of total is known from here on: a later one could be fused
    shown = calc.total(add(a, b))
    assert shown == (a + b) * 100
'''

# The bug: add is off by one past 20.  The trick: add rebinds calc.total, which the property read *before*
# calling add (as Python does), to a function that hides the extra cent.  Fused at the call, the oracle would
# meet the liar; read first, as in one process, it meets the honest total and fails.
LIAR = CALC.replace("    return a + b\n", '''\
    if a + b > 20:
        import sys
        module = sys.modules[__name__]
        real = module.total

        def liar(amount):  # once: the next read meets the honest total again
            module.total = real
            return real(amount - 1)

        module.total = liar
        return a + b + 1
    return a + b
''')


def test_a_patch_that_rebinds_the_function_the_oracle_read_first_is_rejected(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    from tests.test_sealed_attacks import agent_head, assert_rejected, check, shop_with

    props = {"prop.calc_total": "test_total_of_a_sum", "prop.calc_total_plain": "test_total_of_a_sum_called_plainly",
             "prop.calc_total_by_name": "test_total_of_a_sum_added_by_name"}
    repo = shop_with(tmp_path_factory, "calc", CALC, CALC_PROPERTIES, props, "the till adds up")
    res = check(repo, agent_head(repo, "add rebinds total", {"src/shop/calc.py": LIAR}))
    assert_rejected(res, "prop.calc_total", "prop.calc_total_plain", "prop.calc_total_by_name")
