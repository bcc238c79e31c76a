"""Production never decides what the adopted suite tests: issue 21's collection-time attacks, end to end.

A small adopted suite (parametrized tests, a conftest fixture with params, per-instance skipif and
xfail conditions, a state machine with a precondition, an ``assume``) whose inputs, markers and
filters are computed from production, as real suites do.  Each attack is an agent's commit that
plants a real bug the suite catches (``double`` is wrong on multiples of three; ``Tally`` loses a
count from its third add on) and changes what production answers at collection or generation time so
that the failing case is not run.  Each must be rejected with the gate's own reason, ``narrowed``,
on the entry it narrowed.  Controls: the bug alone is a regression; honest patches (a refactor, a new
case in a production list the suite reads) are admitted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mergegate.rules import differential as diff
from tests.helpers import init_repo, sign_and_commit
from tests.test_sealed_attacks import Result, agent_head, assert_admitted, check

GRID = '''\
"""Doubling, and a tally: the production code the suite below tests."""

CASES = [1, 2, 3, 4]
SIZES = [1, 2, 3]


def double_listed(n):
    return n + n


def double_sized(n):
    return n + n


def double_supported(n):
    return n + n


def double_expected(n):
    return n + n


def double_valid(n):
    return n + n


def supported(n):
    return True


def known_broken(n):
    return False


def is_valid(n):
    return True


def can_add(count):
    return True


class Tally:
    def __init__(self):
        self.count = 0
        self.sum = 0

    def add(self, n):
        self.count += 1
        self.sum += n

    def reset(self):
        self.count = 0
        self.sum = 0
'''

SUITE = '''\
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import grid


@pytest.mark.parametrize("n", grid.CASES)
def test_listed(n):
    assert grid.double_listed(n) == 2 * n


def test_sized(size):
    assert grid.double_sized(size) == 2 * size


@pytest.mark.parametrize("n", [pytest.param(n, marks=pytest.mark.skipif(not grid.supported(n), reason="unsupported"))
                               for n in range(1, 7)])
def test_supported(n):
    assert grid.double_supported(n) == 2 * n


@pytest.mark.parametrize("n", [pytest.param(n, marks=pytest.mark.xfail(grid.known_broken(n), reason="known"))
                               for n in range(1, 7)])
def test_expected(n):
    assert grid.double_expected(n) == 2 * n


@given(st.integers(0, 30))
def test_valid(n):
    assume(grid.is_valid(n))
    assert grid.double_valid(n) == 2 * n


class Tallies(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.tally = grid.Tally()
        self.model = []

    @precondition(lambda self: grid.can_add(len(self.model)))
    @rule(n=st.integers(0, 9))
    def add(self, n):
        self.tally.add(n)
        self.model.append(n)

    @rule()
    def reset(self):
        self.tally.reset()
        self.model = []

    @invariant()
    def agrees(self):
        assert self.tally.count == len(self.model)
        assert self.tally.sum == sum(self.model)


TestTallies = Tallies.TestCase
TestTallies.settings = settings(stateful_step_count=12)
'''

CONFTEST = '''\
import pytest

import grid


@pytest.fixture(params=grid.SIZES)
def size(request):
    return request.param
'''

ENTRIES = {
    "prop.listed": ("test_listed", {}),
    "prop.sized": ("test_sized", {}),
    "prop.supported": ("test_supported", {"allow_skip": True}),
    "prop.expected": ("test_expected", {}),
    "prop.valid": ("test_valid", {}),
    "prop.tallies": ("TestTallies", {}),
}

# The bugs: a double_*() is wrong on multiples of three (each entry reads its own, so a bug in one is
# caught by that entry alone), Tally.add drops its count from the third add on.
def bug_double(entry: str) -> tuple[str, str]:
    return (f"def double_{entry}(n):\n    return n + n\n",
            f"def double_{entry}(n):\n    return n + n + (1 if n % 3 == 0 else 0)\n")


DOUBLES = ("listed", "sized", "supported", "expected", "valid")
BUG_TALLY = ("        self.count += 1\n", "        self.count += 1 if self.count < 2 else 0\n")


def grid_with(*edits: tuple[str, str]) -> str:
    text = GRID
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return adopted(tmp_path_factory.mktemp("narrowing") / "suite", GRID)


def adopted(path: Path, grid: str) -> Path:
    """The grid suite adopted over ``grid`` (production) on main."""
    repo = init_repo(path)
    policy = (repo / "gate.yaml").read_text()
    assert "seeds: [11, 29, 47]" in policy
    files: dict[str, str | bytes | None] = {
        "gate.yaml": policy.replace("seeds: [11, 29, 47]", "seeds: [11]"),
        "src/grid.py": grid,
        "oracles/properties/test_grid.py": SUITE,
        "oracles/properties/conftest.py": CONFTEST,
        "oracles/catalog/claimed.yaml": f"claimed: [{', '.join(ENTRIES)}]\n",
    }
    for pid, (func, extra) in ENTRIES.items():
        lines = [f"id: {pid}", f"oracle: oracles/properties/test_grid.py::{func}", 'claim: "doubles and tallies"',
                 "max_examples: 20", 'covers: ["src/grid.py"]', *(f"{k}: {str(v).lower()}" for k, v in extra.items())]
        files[f"oracles/catalog/{pid}.yaml"] = "\n".join(lines) + "\n"
    sign_and_commit(repo, files, "the grid suite")
    return repo


def assert_narrowed(res: Result, prop: str, words: str) -> None:
    """Not admitted: rejected, ``prop`` (only) failing with the gate's own reason ``narrowed``, saying how."""
    assert res.code == 1 and res.decision == "reject", res.explain()
    verdicts = {p["prop"]: p for p in res.data.get("properties") or []}
    assert {p: v["reason"] for p, v in verdicts.items() if v["reason"] != "both_pass"} == {prop: "narrowed"}, \
        res.explain()
    assert words in str(verdicts[prop].get("detail")), verdicts[prop]


# Each attack: the bug, and production answering the suite's question so that the failing case is not run.
ATTACKS = {
    # the parametrize list is a production constant: the patch drops the case it gets wrong
    "parametrize list": ("prop.listed", (bug_double("listed"), ("CASES = [1, 2, 3, 4]", "CASES = [1, 2, 4]"))),
    # a conftest fixture's params come from production and lose one
    "fixture params": ("prop.sized", (bug_double("sized"), ("SIZES = [1, 2, 3]", "SIZES = [1, 2]"))),
    # a skipif condition from production turns the failing instances into skips (the entry allows skips)
    "skipif condition": ("prop.supported", (bug_double("supported"), ("def supported(n):\n    return True",
                                                         "def supported(n):\n    return n % 3 != 0"))),
    # an xfail condition from production turns the failures into "as expected"
    "xfail condition": ("prop.expected", (bug_double("expected"), ("def known_broken(n):\n    return False",
                                                       "def known_broken(n):\n    return n % 3 == 0"))),
    # assume(production.is_valid(x)) rejects exactly the failing inputs
    "assume": ("prop.valid", (bug_double("valid"), ("def is_valid(n):\n    return True",
                                           "def is_valid(n):\n    return n % 3 != 0"))),
    # the state machine's precondition asks production, which says no exactly where the tally goes wrong
    "precondition where it fails": ("prop.tallies", (BUG_TALLY, ("def can_add(count):\n    return True",
                                                                 "def can_add(count):\n    return count < 2"))),
    # ... or always
    "precondition always no": ("prop.tallies", (BUG_TALLY, ("def can_add(count):\n    return True",
                                                            "def can_add(count):\n    return False"))),
}


# What the evidence says of each (the first thing the head dropped).
SAYS = {
    "parametrize list": "test_grid.py::test_listed[3] passed on the base, not collected on the head",
    "fixture params": "test_grid.py::test_sized[3] passed on the base, not collected on the head",
    "skipif condition": "test_grid.py::test_supported[3] passed on the base, skipped on the head",
    "xfail condition": "test_grid.py::test_expected[3] passed on the base, xfailed on the head",
    "assume": "test_grid.py::test_valid: example",
    "precondition where it fails": "test_grid.py::TestTallies::runTest: step",
    "precondition always no": "test_grid.py::TestTallies::runTest: step",
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_production_narrowing_what_runs_is_rejected(suite: Path, name: str) -> None:
    prop, edits = ATTACKS[name]
    res = check(suite, agent_head(suite, f"narrow-{name}", {"src/grid.py": grid_with(*edits)}))
    assert_narrowed(res, prop, SAYS[name])


BUGS = {**{f"prop.{entry}": bug_double(entry) for entry in DOUBLES}, "prop.tallies": BUG_TALLY}


@pytest.mark.parametrize("prop", sorted(BUGS))
def test_each_bug_alone_is_a_regression_of_its_entry(suite: Path, prop: str) -> None:
    """The controls: without the trick the suite catches each bug (so a trick is what would hide it)."""
    res = check(suite, agent_head(suite, f"bug-{prop}", {"src/grid.py": grid_with(BUGS[prop])}))
    assert res.code == 1 and res.decision == "reject", res.explain()
    reasons = {p["prop"]: p["reason"] for p in res.data.get("properties") or []}
    assert {p: r for p, r in reasons.items() if r != "both_pass"} == {prop: "regression"}, res.explain()


HONEST = {
    # the same behaviour, written differently: nothing the suite asks production changes
    "refactor": (("def double_listed(n):\n    return n + n\n", "def double_listed(n):\n    return 2 * n\n"),
                 ("        self.count += 1\n        self.sum += n\n",
                  "        self.count, self.sum = self.count + 1, self.sum + n\n")),
    # production's list grows: the suite runs more, never less
    "a new case": (("CASES = [1, 2, 3, 4]", "CASES = [1, 2, 3, 4, 5]"), ("SIZES = [1, 2, 3]", "SIZES = [1, 2, 3, 4]")),
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_patches_are_admitted(suite: Path, name: str) -> None:
    assert_admitted(check(suite, agent_head(suite, f"honest-{name}", {"src/grid.py": grid_with(*HONEST[name])})))


# ---------------------------------------------------------------- the pure rule, case by case

def _row(items: dict[str, str] | None = None, cases: str = "", steps: str = "", status: str = "pass") -> diff.Row:
    logs = (diff.Decisions("t.py::t", cases, steps, sum(c in "io" for c in cases), steps.count("0")),)
    return diff.Row("prop.t", 11, status, items=tuple(sorted((items or {}).items())),
                    decisions=logs if cases or steps else ())


@pytest.mark.parametrize(("base", "head", "narrowed"), [
    (_row({"t[1]": "passed", "t[2]": "passed"}), _row({"t[1]": "passed"}), True),  # an item the base ran is gone
    (_row({"t[1]": "passed"}), _row({"t[1]": "skipped"}), True),  # ... turned into a skip
    (_row({"t[1]": "failed"}, status="fail"), _row({"t[1]": "xfailed"}), True),  # ... or an expected failure
    (_row({"t[1]": "passed"}), _row({"t[1]": "passed", "t[2]": "skipped"}), False),  # the head adds: never less
    (_row({"t[1]": "skipped"}), _row({"t[1]": "skipped"}), False),  # skipped on both (allow_skip decides)
    (_row(), _row(), False),  # rows that record no items (made elsewhere) compare nothing
    (_row(cases="vvvv"), _row(cases="vvivv"), True),  # an example the base completed is rejected on the head
    (_row(cases="vivv"), _row(cases="vvvv"), False),  # the head accepts one the base rejected: runs more
    (_row(cases="vivvvv"), _row(cases="vvvivi"), True),  # ... but then rejects more in all
    (_row(cases="vvvv"), _row(cases="vvvv"), False),  # the same answers: the same examples
    (_row(steps="1111"), _row(steps="1101"), True),  # a step the base ran is disabled on the head
    (_row(steps="1011"), _row(steps="1111"), False),
    (_row(steps="11|11", cases="vv"), _row(steps="11|01", cases="vv"), True),  # examples apart, a step disabled
    # a base that failed (a test for a bug the head fixes) ran only up to its failing example, then shrank:
    (_row(cases="vvx", status="fail"), _row(cases="vvi"), True),  # the head rejects the example that failed
    (_row(steps="11|11|1", cases="vvx", status="fail"), _row(steps="11|11|0", cases="vvv"), True),  # or its step
    (_row(steps="11|11|10|1111|11", cases="vvx", status="fail"),  # after the failure: shrinking, not compared
     _row(steps="11|11|11|0000|00", cases="vvvvvivi"), False),
    (_row(cases="vx", status="fail"), _row(cases="vvvvvvvviiii"), False),  # the head ran on: more, not less
    (_row(steps="11", status="fail"), _row(steps="00"), False),  # no failing example logged: nothing to compare
])
def test_narrowing_rule(base: diff.Row, head: diff.Row, narrowed: bool) -> None:
    assert (diff.narrowing(base, head) is not None) is narrowed
    result = diff.classify([base], [head], "prop.t", [11])
    if narrowed:
        assert result.reason == diff.NARROWED and result.decision == diff.REJECT
    else:
        assert result.reason != diff.NARROWED


def test_a_fix_is_admitted_and_a_fix_by_filtering_is_narrowed_when_the_base_fails(tmp_path: Path) -> None:
    """The trusted revision already fails (its state machine finds the Tally bug: a bug-fix task). The base stops
    at its failing example and shrinks, so it is compared only up to that example: a real fix is
    ``parent_fail_cleared`` and admitted; a "fix" whose precondition stops adding at the failing step is narrowed."""
    repo = adopted(tmp_path / "buggy", grid_with(BUG_TALLY))
    fixed = check(repo, agent_head(repo, "real fix", {"src/grid.py": GRID}))
    assert fixed.code == 0 and fixed.decision == "admit", fixed.explain()
    reasons = {p["prop"]: p["reason"] for p in fixed.data["properties"]}
    assert reasons["prop.tallies"] == "parent_fail_cleared", reasons
    hidden = grid_with(BUG_TALLY, ("def can_add(count):\n    return True", "def can_add(count):\n    return count < 2"))
    assert_narrowed(check(repo, agent_head(repo, "fix by filtering", {"src/grid.py": hidden})), "prop.tallies",
                    "filtered out on the head")
