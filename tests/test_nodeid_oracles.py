"""Catalog oracles as pytest node ids, end to end through the real ``gate check`` on real repositories.

A catalog entry's ``oracle:`` names a test the way pytest does: a function, a class's method, one
parametrization (``test_x[id]``) or all of them, a state machine's ``TestCase``, a plain test, a
``unittest.TestCase`` method.  The trusted evaluator runs it as a pytest session over the trusted
revision's oracle tree, with production behind stand-ins.  These tests build small repositories
(production under ``src/box``, oracles under ``oracles/properties``), commit patches by an agent
and by a person, run ``gate check --json --evidence DIR`` and read the verdicts and the evidence
(``base.jsonl``, ``patch.jsonl``, ``contract.json``).

Three repositories, each with the gate's default policy but one seed and small example counts:

- *kinds*: one property per node-id kind; a pass, a fail on both sides and a regression per kind;
  the repository's own pytest configuration (``pytest.ini``, ``pyproject.toml``, ``setup.cfg``,
  ``tox.ini``, ``conftest.py`` files outside the oracle paths) at the base and in a patch; on a
  base with two seeds, a plain test runs once per side and ``contract.json`` says seeds do not
  apply to it.
- *fixtured*: fixtures from a ``conftest.py`` in the oracle tree, read at the trusted revision.
- *tuned*: the test's own Hypothesis settings within the gate's bounds (a health check it
  suppresses, ``max_examples`` as a floor, ``stateful_step_count``, an explicit deadline), and node
  ids that collect nothing or tests that skip: a fail with a witness that says so, never a pass.

Checks are made once per test worker and shared by the tests that read them (``Lab.check``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import AGENT, commit, gate, git, init_repo, sign_and_commit

PROPS_DIR = "oracles/properties"
DEFAULT_SEEDS = "seeds: [11, 29, 47]"

# ---------------------------------------------------------------- a repository and its checks


def entry(pid: str, nodeid: str, max_examples: int = 10) -> str:
    return (f"id: {pid}\noracle: {nodeid}\nclaim: \"{pid} holds\"\ncanary: false\nquarantine_eligible: false\n"
            f"fixtures: []\nmax_examples: {max_examples}\ncovers: [\"src/box/**\"]\n")


def catalog(props: Mapping[str, tuple[str, int]]) -> dict[str, str | bytes | None]:
    """``{prop: (nodeid, max_examples)}`` -> catalog files, every property claimed."""
    files: dict[str, str | bytes | None] = {
        f"oracles/catalog/{pid}.yaml": entry(pid, nodeid, n) for pid, (nodeid, n) in props.items()}
    files["oracles/catalog/claimed.yaml"] = f"claimed: [{', '.join(sorted(props))}]\n"
    return files


@dataclass
class Checked:
    """One ``gate check --json``: exit code, decision JSON and the evidence packet."""

    code: int
    data: dict[str, Any]
    evidence: Path
    stderr: str
    plain_runs: int  # lines the counting plain test appended during this check

    @property
    def decision(self) -> str:
        return str(self.data.get("decision"))

    def verdicts(self) -> dict[str, tuple[str, str]]:
        return {p["prop"]: (p["verdict"], p["reason"]) for p in self.data.get("properties") or []}

    def rows(self, side: str, prop: str) -> list[dict[str, Any]]:
        path = self.evidence / ("base.jsonl" if side == "base" else "patch.jsonl")
        if not path.exists():
            return []
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [r for r in rows if r["prop"] == prop]

    def contract(self) -> dict[str, Any]:
        return dict(json.loads((self.evidence / "contract.json").read_text()))

    def explain(self, *props: str) -> str:
        lines = [f"exit {self.code}, decision {self.decision} ({self.data.get('reason')}), "
                 f"stopped_at {self.data.get('stopped_at')}, plain runs {self.plain_runs}",
                 f"verdicts: {self.verdicts()}"]
        for prop in props or sorted(self.verdicts()):
            for side in ("base", "head"):
                for r in self.rows(side, prop):
                    lines.append(f"  {side} {prop} seed={r['seed']} {r['status']} witness={r.get('witness')!r} "
                                 f"examples={r.get('examples')} error={str(r.get('error') or '')[:300]!r}")
        return "\n".join(lines) + f"\nstderr:\n{self.stderr[-2000:]}"


@dataclass
class Lab:
    """A repository whose patches and checks are made once (per test worker) and then reused."""

    repo: Path
    counter: Path | None = None
    heads: dict[str, str] = field(default_factory=dict)
    checks: dict[tuple[str, str], Checked] = field(default_factory=dict)

    def branch(self, name: str, base: str, files: Mapping[str, str | bytes | None], *, agent: bool = True,
               sign: bool = False) -> str:
        """A commit on ``t/<name>`` off ``base``: an agent's, or a person's (``sign``: manifest re-signed)."""
        if name not in self.heads:
            git(self.repo, "checkout", "-q", "-B", f"t/{name}", base)
            try:
                if sign:
                    self.heads[name] = sign_and_commit(self.repo, files, name)
                else:
                    self.heads[name] = commit(self.repo, files, name, env=AGENT if agent else None)
            finally:
                git(self.repo, "checkout", "-q", "-f", "main")
                git(self.repo, "clean", "-q", "-fdx", "-e", ".gate")
        return self.heads[name]

    def check(self, base: str, head: str) -> Checked:
        key = (base, head)
        if key not in self.checks:
            evidence = self.repo.parent / "evidence" / f"{len(self.checks)}-{head[:12]}"
            before = self.runs()
            proc = gate(self.repo, "check", "--base", base, "--head", head, "--json", "--evidence", str(evidence))
            try:
                data = json.loads(proc.stdout)
            except ValueError:
                data = {}
            self.checks[key] = Checked(proc.returncode, data, evidence, proc.stderr, self.runs() - before)
            assert proc.returncode in (0, 1), self.checks[key].explain()
        return self.checks[key]

    def runs(self) -> int:
        if self.counter is None or not self.counter.exists():
            return 0
        return len(self.counter.read_text().splitlines())


def with_seeds(policy: str, seeds: Sequence[int]) -> str:
    """Exactly this seed schedule: these seeds and no fresh ones (this file counts runs and rows per seed;
    fresh seeds have their own tests, tests/test_change_coverage.py)."""
    assert DEFAULT_SEEDS in policy
    return policy.replace(DEFAULT_SEEDS, f"seeds: {list(seeds)}, fresh_seeds: 0")


def make_lab(path: Path, files: Mapping[str, str | bytes | None], counter: Path | None = None) -> Lab:
    """``gate init``, one seed, then ``files`` committed by a person (manifest signed)."""
    repo = init_repo(path)
    all_files = dict(files)
    all_files["gate.yaml"] = with_seeds((repo / "gate.yaml").read_text(), [11]) + "runner: {timeout_s: 60}\n"
    sign_and_commit(repo, all_files, "production and oracles")
    return Lab(repo, counter)


def replace(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


# ---------------------------------------------------------------- the kinds repository

CALC = '''\
"""Small arithmetic: one function per property, so a patch can break exactly one."""


def add(a, b):
    return a + b


def double(x):
    return 2 * x


def scale(k, x):
    return k * x


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b
'''

STACK = '''\
"""A stack that counts its pushes."""


class Stack:
    def __init__(self):
        self._items = []
        self._pushes = 0

    def push(self, x):
        self._pushes += 1
        self._items.append(x)

    def pop(self):
        return self._items.pop()

    def size(self):
        return len(self._items)
'''

# A stateful bug: once the stack has seen four pushes, pop returns the top but forgets to remove it.
STACK_POP = "    def pop(self):\n        return self._items.pop()\n"
BROKEN_POP = ("    def pop(self):\n        if self._pushes >= 4:\n            return self._items[-1]\n"
              "        return self._items.pop()\n")

KINDS_ORACLE = '''\
# mypy: ignore-errors
"""One test of each node-id kind, each over its own production function."""

import unittest
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from box.calc import add, double, mul, scale, sub
from box.stack import Stack

INTS = st.integers(-1000, 1000)
COUNTER = Path(@COUNTER@)


@given(INTS, INTS)
def test_add(a, b):
    assert add(a, b) == a + b


class TestDouble:
    @given(INTS)
    def test_double(self, x):
        assert double(x) == x + x


@pytest.mark.parametrize("k", [1, 2, 3], ids=["one", "two", "three"])
@given(x=INTS)
def test_scale(k, x):
    assert scale(k, x) == k * x


class StackMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.stack = Stack()
        self.model = []

    @rule(x=INTS)
    def push(self, x):
        self.stack.push(x)
        self.model.append(x)

    @precondition(lambda self: self.model)
    @rule()
    def pop(self):
        assert self.stack.pop() == self.model.pop()

    @invariant()
    def sizes_agree(self):
        assert self.stack.size() == len(self.model)


StackMachine.TestCase.settings = settings(stateful_step_count=12)
TestStack = StackMachine.TestCase


def test_plain_sub():
    with COUNTER.open("a") as runs:  # the oracle is trusted: it may count its own runs
        runs.write("run\\n")
    assert sub(5, 3) == 2
    assert sub(3, 5) == -2


class TestPlainMul(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(mul(3, 4), 12)
        self.assertEqual(mul(-2, 5), -10)
'''

KINDS_FILE = f"{PROPS_DIR}/test_kinds.py"


@dataclass(frozen=True)
class Kind:
    name: str
    prop: str
    nodeid: str
    seeds_apply: bool
    path: str  # the production file its regression breaks
    old: str
    new: str
    also_fails: tuple[str, ...] = ()  # other properties the same regression fails


KINDS = [
    Kind("function", "prop.function", f"{KINDS_FILE}::test_add", True,
         "src/box/calc.py", "return a + b", "return a + b + 1"),
    Kind("class_method", "prop.class_method", f"{KINDS_FILE}::TestDouble::test_double", True,
         "src/box/calc.py", "return 2 * x", "return 2 * x + 1"),
    # Breaks scale only for k == 2: the parametrization 'two', and so the whole function.
    Kind("param_id", "prop.param_id", f"{KINDS_FILE}::test_scale[two]", True,
         "src/box/calc.py", "return k * x", "return k * x + (k == 2)", also_fails=("prop.all_params",)),
    # Breaks scale only for k == 3: the whole function fails, its parametrization 'two' does not.
    Kind("all_params", "prop.all_params", f"{KINDS_FILE}::test_scale", True,
         "src/box/calc.py", "return k * x", "return k * x + (k == 3)"),
    Kind("state_machine", "prop.state_machine", f"{KINDS_FILE}::TestStack", True,
         "src/box/stack.py", STACK_POP, BROKEN_POP),
    Kind("plain_function", "prop.plain_function", f"{KINDS_FILE}::test_plain_sub", False,
         "src/box/calc.py", "return a - b", "return abs(a - b)"),
    Kind("plain_unittest", "prop.plain_unittest", f"{KINDS_FILE}::TestPlainMul::test_mul", False,
         "src/box/calc.py", "return a * b", "return abs(a * b)"),
]
KIND_IDS = [k.name for k in KINDS]
BY_NAME = {k.name: k for k in KINDS}
PROD = {"src/box/__init__.py": "", "src/box/calc.py": CALC, "src/box/stack.py": STACK}


def broken(*kinds: Kind) -> dict[str, str | bytes | None]:
    """The production files each kind's regression changes, with all of them applied."""
    files: dict[str, str] = {"src/box/calc.py": CALC, "src/box/stack.py": STACK}
    for kind in kinds:
        files[kind.path] = replace(files[kind.path], kind.old, kind.new)
    return {p: t for p, t in files.items() if t != PROD[p]}


def comment() -> dict[str, str | bytes | None]:
    """A production patch that changes no behaviour (whatever the base's production is)."""
    return {"src/box/notes.py": "# reviewed: nothing to change\n"}


@pytest.fixture(scope="module")
def kinds(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    root = tmp_path_factory.mktemp("kinds")
    counter = root / "plain-runs.txt"
    files: dict[str, str | bytes | None] = dict(PROD)
    files[KINDS_FILE] = KINDS_ORACLE.replace("@COUNTER@", repr(str(counter)))
    files.update(catalog({k.prop: (k.nodeid, 10) for k in KINDS}))
    lab = make_lab(root / "repo", files, counter)
    # A base where every kind already fails: a person's production commit.
    lab.branch("broken", "main", broken(*KINDS), agent=False)
    # A base whose policy schedules two seeds: a person's policy commit.
    policy = replace((lab.repo / "gate.yaml").read_text(), "seeds: [11]", "seeds: [11, 29]")
    lab.branch("two-seeds", "main", {"gate.yaml": policy}, agent=False, sign=True)
    return lab


def noop(lab: Lab, base: str = "main") -> Checked:
    """An agent's production patch that changes no behaviour, on ``base``."""
    return lab.check(lab.heads.get(base, base), lab.branch(f"noop-on-{base}", lab.heads.get(base, base), comment()))


def assert_caught(res: Checked, baseline: Checked, *kinds: Kind) -> None:
    """Each kind's property (and the ones its break also reaches) regressed and the patch is rejected;
    every other property has the verdict it has under a patch that changes nothing."""
    failing = {p for k in kinds for p in (k.prop, *k.also_fails)}
    verdicts = res.verdicts()
    assert res.code == 1 and res.decision == "reject", res.explain()
    for prop in sorted(failing):
        assert verdicts[prop] == ("fail", "regression"), res.explain(prop)
        assert res.rows("head", prop) and all(
            r["status"] == "fail" and r["witness"].startswith(f"AssertionError:{KINDS_FILE}:")
            for r in res.rows("head", prop)), res.explain(prop)
        assert res.rows("base", prop) and all(r["status"] == "pass" for r in res.rows("base", prop)), \
            res.explain(prop)
    others = {p: v for p, v in verdicts.items() if p not in failing}
    expected = {p: v for p, v in baseline.verdicts().items() if p not in failing}
    assert others == expected, res.explain(*sorted(set(others) | set(expected)))


# ---- 1. every kind: pass on both sides, fail on both sides, regression


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_kind_passes_on_both_sides(kinds: Lab, kind: Kind) -> None:
    res = noop(kinds)
    assert res.verdicts()[kind.prop] == ("pass", "both_pass"), res.explain(kind.prop)
    for side in ("base", "head"):
        rows = res.rows(side, kind.prop)
        assert [r["seed"] for r in rows] == [11], res.explain(kind.prop)
        assert all(r["status"] == "pass" and r["examples"] >= 1 and r["isolation"] == "sealed" for r in rows), \
            res.explain(kind.prop)


def test_a_patch_that_changes_nothing_is_admitted(kinds: Lab) -> None:
    res = noop(kinds)
    assert res.code == 0 and res.decision == "admit", res.explain()


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_kind_fails_on_both_sides(kinds: Lab, kind: Kind) -> None:
    res = noop(kinds, "broken")
    assert res.code == 1 and res.decision == "reject", res.explain()
    assert res.verdicts()[kind.prop] == ("fail", "uniform_fail"), res.explain(kind.prop)
    for side in ("base", "head"):
        rows = res.rows(side, kind.prop)
        assert rows and all(r["status"] == "fail" and r["witness"].startswith(f"AssertionError:{KINDS_FILE}:")
                            for r in rows), res.explain(kind.prop)


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_kind_catches_a_regression(kinds: Lab, kind: Kind) -> None:
    """Among them a state machine catching a stateful bug (pop goes wrong only after four pushes)
    and two plain tests (a function, a unittest method) catching theirs."""
    res = kinds.check("main", kinds.branch(f"break-{kind.name}", "main", broken(kind)))
    assert_caught(res, noop(kinds), kind)


def test_a_parametrization_id_selects_only_that_parametrization(kinds: Lab) -> None:
    """Breaking scale for k == 3 fails ``test_scale`` (all three) but not ``test_scale[two]``."""
    res = kinds.check("main", kinds.branch("break-all_params", "main", broken(BY_NAME["all_params"])))
    assert res.verdicts()["prop.param_id"] == ("pass", "both_pass"), res.explain("prop.param_id")
    assert res.verdicts()["prop.all_params"] == ("fail", "regression"), res.explain("prop.all_params")
    # The whole function runs its three parametrizations: three times the one's completed examples.
    one = [r["examples"] for r in noop(kinds).rows("base", "prop.param_id")]
    three = [r["examples"] for r in noop(kinds).rows("base", "prop.all_params")]
    assert one == [10] and three == [30], (one, three)


# ---- 6. a plain test runs once per side; the contract says seeds do not apply to it


def two_seeds(lab: Lab) -> Checked:
    """On the base with two seeds, an agent's patch that breaks the plain function test."""
    base = lab.heads["two-seeds"]
    return lab.check(base, lab.branch("two-seeds-break-plain", base, broken(BY_NAME["plain_function"])))


def test_contract_says_which_properties_seeds_apply_to(kinds: Lab) -> None:
    contract = two_seeds(kinds).contract()
    assert contract["seeds"] == [11, 29], contract
    assert contract["seeds_apply"] == {k.prop: k.seeds_apply for k in KINDS}, contract


def test_a_plain_test_runs_once_per_side(kinds: Lab) -> None:
    res = two_seeds(kinds)
    # test_plain_sub appends a line per run to a file outside the repository: two seeds, two
    # sides, and it ran exactly twice, once per side.
    assert res.plain_runs == 2, res.explain("prop.plain_function")
    for kind in KINDS:
        for side in ("base", "head"):
            rows = res.rows(side, kind.prop)
            assert [r["seed"] for r in rows] == [11, 29], res.explain(kind.prop)
            if kind.seeds_apply:  # a run per seed
                assert all(r["examples"] >= 10 for r in rows), res.explain(kind.prop)
            else:  # one run whose row stands for both seeds
                assert len({(r["status"], r["examples"], r["duration_s"], r["witness"]) for r in rows}) == 1, \
                    res.explain(kind.prop)


def test_a_plain_regression_fails_every_seed_from_one_run(kinds: Lab) -> None:
    plain = BY_NAME["plain_function"]
    res = two_seeds(kinds)
    assert res.code == 1 and res.decision == "reject", res.explain()
    assert res.verdicts()[plain.prop] == ("fail", "regression"), res.explain(plain.prop)
    base, head = res.rows("base", plain.prop), res.rows("head", plain.prop)
    assert [(r["seed"], r["status"], r["examples"]) for r in base] == [(11, "pass", 1), (29, "pass", 1)], \
        res.explain(plain.prop)
    assert [(r["seed"], r["status"]) for r in head] == [(11, "fail"), (29, "fail")], res.explain(plain.prop)
    assert len({r["signature"] for r in head}) == 1, res.explain(plain.prop)


# ---- 4. the repository's own pytest configuration is never read


ROOT_CONFTEST = '''\
import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.skip(reason="a repository conftest skips everything"))


@pytest.fixture(autouse=True)
def _everything_breaks():
    raise RuntimeError("a repository conftest's autouse fixture ran")
'''
ADDOPTS = "-p no:python -k no_such_test --deselect oracles/properties/test_kinds.py::test_add"
PYTEST_CONFIG: dict[str, str | bytes | None] = {
    "pytest.ini": f"[pytest]\naddopts = {ADDOPTS}\n",
    "pyproject.toml": f'[project]\nname = "box"\nversion = "0"\n\n[tool.pytest.ini_options]\naddopts = "{ADDOPTS}"\n',
    "setup.cfg": f"[tool:pytest]\naddopts = {ADDOPTS}\n",
    "tox.ini": f"[pytest]\naddopts = {ADDOPTS}\n",
}
# 'other': not guarded (pytest.ini is policy; tox.ini too, since CI calls it to run the gate: tox -e gate)
OTHER_CONFIG = {p: t for p, t in PYTEST_CONFIG.items() if p not in ("pytest.ini", "tox.ini")}
CONFIGURED: dict[str, dict[str, str | bytes | None]] = {
    "config_files": PYTEST_CONFIG,
}
# at the root, and in a directory above the oracle paths (not in them): guarded policy files
OUTER_CONFTESTS: dict[str, str | bytes | None] = {"conftest.py": ROOT_CONFTEST, "oracles/conftest.py": ROOT_CONFTEST}


@pytest.mark.parametrize("config", sorted(CONFIGURED))
def test_repository_pytest_configuration_at_the_base_is_not_read(kinds: Lab, config: str) -> None:
    """A person commits pytest configuration on main (a conftest.py that skips every test and has an
    autouse fixture that raises; addopts that deselect everything); an agent's patch on it breaks
    the state machine and the plain function.  Nothing of it reaches the trusted session: exactly
    those two regress, and every other property has the verdict it has on main."""
    base = kinds.branch(f"configured-{config}", "main", CONFIGURED[config], agent=False, sign=True)
    res = kinds.check(base, kinds.branch(f"{config}-break", base,
                                         broken(BY_NAME["state_machine"], BY_NAME["plain_function"])))
    assert_caught(res, noop(kinds), BY_NAME["state_machine"], BY_NAME["plain_function"])


def test_a_persons_conftest_above_the_oracle_tree_is_trusted_and_a_skip_it_causes_is_a_fail(kinds: Lab) -> None:
    """Every guarded conftest.py is read at the trusted revision (its fixtures are the suite's), wherever
    it sits; one a person committed that skips every test therefore applies on both sides, and a skip is
    never a pass: every property fails on both sides and the patch is rejected."""
    base = kinds.branch("configured-outer", "main", OUTER_CONFTESTS, agent=False, sign=True)
    res = kinds.check(base, kinds.branch("outer-break", base,
                                         broken(BY_NAME["state_machine"], BY_NAME["plain_function"])))
    assert res.decision == "reject", res.explain()
    verdicts = res.verdicts()
    assert verdicts and all(v[0] == "fail" for v in verdicts.values()), res.explain()


def test_pytest_configuration_in_a_patch_is_not_read(kinds: Lab) -> None:
    """pyproject.toml and setup.cfg are 'other' paths: an agent may commit them with production."""
    res = kinds.check("main", kinds.branch("config-in-patch", "main", {**broken(BY_NAME["function"]),
                                                                       **OTHER_CONFIG}))
    assert res.data.get("stopped_at") is None, res.explain()
    assert_caught(res, noop(kinds), BY_NAME["function"])


@pytest.mark.parametrize("where", ["conftest.py", "src/conftest.py", "oracles/properties/conftest.py", "pytest.ini",
                                   "tox.ini"])
def test_a_patch_adding_a_conftest_or_pytest_ini_is_rejected(kinds: Lab, where: str) -> None:
    """Every conftest.py, pytest.ini and tox.ini is a guarded policy path: an agent's patch that adds one next
    to a regression (a conftest that skips everything) is rejected, never admitted."""
    content = PYTEST_CONFIG.get(where, ROOT_CONFTEST)
    res = kinds.check("main", kinds.branch(f"adds-{where.replace('/', '-')}", "main",
                                           {**broken(BY_NAME["function"]), where: content}))
    assert res.code == 1 and res.decision == "reject", res.explain()
    assert res.verdicts().get("prop.function", ("fail", ""))[0] == "fail", res.explain()


# ---------------------------------------------------------------- 4. fixtures from the oracle tree's conftest.py

FIX_CONFTEST = '''\
import pytest


@pytest.fixture(scope="module")
def factor():
    return 3


@pytest.fixture
def samples():
    return [-4, 0, 7]
'''

FIX_ORACLE = '''\
# mypy: ignore-errors
from hypothesis import given
from hypothesis import strategies as st

from box.calc import triple


@given(st.integers(-1000, 1000))
def test_triple(factor, x):
    assert triple(x) == factor * x


def test_plain_triple(samples, factor):
    assert [triple(v) for v in samples] == [factor * v for v in samples]
'''
TRIPLE = "def triple(x):\n    return 3 * x\n"
FIX_FILE = f"{PROPS_DIR}/test_fixtured.py"
FIX_CONFTEST_PATH = f"{PROPS_DIR}/conftest.py"
FIX_PROPS = {"prop.fixture_given": (f"{FIX_FILE}::test_triple", 10),
             "prop.fixture_plain": (f"{FIX_FILE}::test_plain_triple", 10)}


@pytest.fixture(scope="module")
def fixtured(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    files: dict[str, str | bytes | None] = {"src/box/__init__.py": "", "src/box/calc.py": TRIPLE,
                                            FIX_CONFTEST_PATH: FIX_CONFTEST, FIX_FILE: FIX_ORACLE}
    files.update(catalog(FIX_PROPS))
    return make_lab(tmp_path_factory.mktemp("fixtured") / "repo", files)


def test_conftest_fixtures_in_the_oracle_tree_are_used(fixtured: Lab) -> None:
    res = fixtured.check("main", fixtured.branch("noop", "main", {"src/box/calc.py": TRIPLE + "\n# ok\n"}))
    assert res.code == 0 and res.decision == "admit", res.explain()
    assert set(res.verdicts().values()) == {("pass", "both_pass")}, res.explain()


def test_conftest_fixtures_at_the_base_catch_a_production_regression(fixtured: Lab) -> None:
    """An agent's production-only patch: the base's fixtures judge it."""
    calc = TRIPLE.replace("3 * x", "3 * x + (x == 7) + (x > 100)")
    res = fixtured.check("main", fixtured.branch("break", "main", {"src/box/calc.py": calc}))
    assert res.code == 1 and res.decision == "reject", res.explain()
    for prop in FIX_PROPS:
        assert res.verdicts()[prop] == ("fail", "regression"), res.explain(prop)
        assert all(r["witness"].startswith(f"AssertionError:{FIX_FILE}:") for r in res.rows("head", prop)), \
            res.explain(prop)


def test_an_agent_cannot_change_the_oracle_conftest(fixtured: Lab) -> None:
    """The conftest is guarded: an agent's patch that bends the fixture to fit its change is rejected."""
    files = {"src/box/calc.py": TRIPLE.replace("3 * x", "4 * x"),
             FIX_CONFTEST_PATH: FIX_CONFTEST.replace("return 3", "return 4")}
    res = fixtured.check("main", fixtured.branch("agent-edits-conftest", "main", files))
    assert res.code == 1 and res.decision == "reject", res.explain()
    assert "pass" not in {v for v, _ in res.verdicts().values()}, res.explain()


def test_the_head_runs_with_the_trusted_revisions_conftest(fixtured: Lab) -> None:
    """A person's conftest-only patch (factor 5): the head still runs with the base's fixture (factor 3),
    so the unchanged triple() still passes there."""
    files = {FIX_CONFTEST_PATH: FIX_CONFTEST.replace("return 3", "return 5")}
    res = fixtured.check("main", fixtured.branch("person-edits-conftest", "main", files, agent=False, sign=True))
    for prop in FIX_PROPS:
        head = res.rows("head", prop)
        assert head and all(r["status"] == "pass" for r in head), res.explain(prop)


# ---------------------------------------------------------------- 3. the test's own settings; 5. never a pass

SETTINGS_ORACLE = '''\
# mypy: ignore-errors
import time

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from box.calc import add, ident

WIDE = st.integers(0, 10**9)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(WIDE)
def test_filtered_suppressed(x):
    assume(x % 20 == 7)
    assert add(x, 1) == x + 1


@given(WIDE)
def test_filtered_unsuppressed(x):
    assume(x % 20 == 7)
    assert add(x, 1) == x + 1


@settings(max_examples=1)
@given(st.integers())
def test_one_example(x):
    assert ident(x) == x


@settings(max_examples=60)
@given(st.integers())
def test_sixty_examples(x):
    assert add(0, x) == x


@settings(deadline=10)
@given(st.integers(0, 3))
def test_slow_with_a_deadline(x):
    time.sleep(0.05)
    assert add(x, x) == 2 * x


class ShortMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.steps = 0

    @rule(x=st.integers(0, 100))
    def step(self, x):
        self.steps += 1
        assert add(x, 1) == x + 1

    @invariant()
    def at_most_three_steps(self):
        assert self.steps <= 3


ShortMachine.TestCase.settings = settings(stateful_step_count=3)
TestShort = ShortMachine.TestCase


class LongMachine(ShortMachine):
    pass


TestLong = LongMachine.TestCase
'''

ODD_ORACLE = '''\
# mypy: ignore-errors
import unittest

import pytest

from box.calc import add


@pytest.mark.parametrize("n", [1, 2], ids=["one", "two"])
def test_param_plain(n):
    assert add(n, 0) == n


def test_skips_itself():
    pytest.skip("not today")


@pytest.mark.skip(reason="marked")
def test_marked_skip():
    assert add(1, 1) == 2


class TestSkippedCase(unittest.TestCase):
    @unittest.skip("unittest skip")
    def test_skipped(self):
        self.assertEqual(add(1, 1), 2)

    def test_fine(self):
        self.assertEqual(add(1, 1), 2)
'''

SETTINGS_CALC = "def add(a, b):\n    return a + b\n\n\ndef ident(x):\n    return x\n"
SET_FILE, ODD_FILE = f"{PROPS_DIR}/test_settings.py", f"{PROPS_DIR}/test_odd.py"
FLOOR = 20
SETTINGS_PROPS = {
    "prop.hc_suppressed": (f"{SET_FILE}::test_filtered_suppressed", 10),
    "prop.hc_unsuppressed": (f"{SET_FILE}::test_filtered_unsuppressed", FLOOR),
    "prop.one_example": (f"{SET_FILE}::test_one_example", FLOOR),
    "prop.sixty_examples": (f"{SET_FILE}::test_sixty_examples", FLOOR),
    "prop.deadline": (f"{SET_FILE}::test_slow_with_a_deadline", 3),
    "prop.short_machine": (f"{SET_FILE}::TestShort", FLOOR),
    "prop.long_machine": (f"{SET_FILE}::TestLong", FLOOR),
    "prop.param_plain": (f"{ODD_FILE}::test_param_plain[two]", 10),
    "prop.missing_param": (f"{ODD_FILE}::test_param_plain[three]", 10),
    "prop.missing_method": (f"{ODD_FILE}::TestSkippedCase::test_nope", 10),
    "prop.skips_itself": (f"{ODD_FILE}::test_skips_itself", 10),
    "prop.marked_skip": (f"{ODD_FILE}::test_marked_skip", 10),
    "prop.unittest_skip": (f"{ODD_FILE}::TestSkippedCase::test_skipped", 10),
    "prop.unittest_fine": (f"{ODD_FILE}::TestSkippedCase::test_fine", 10),
}


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    files: dict[str, str | bytes | None] = {"src/box/__init__.py": "", "src/box/calc.py": SETTINGS_CALC,
                                            SET_FILE: SETTINGS_ORACLE, ODD_FILE: ODD_ORACLE}
    files.update(catalog(SETTINGS_PROPS))
    return make_lab(tmp_path_factory.mktemp("tuned") / "repo", files)


def tuned_noop(lab: Lab) -> Checked:
    return lab.check("main", lab.branch("noop", "main", {"src/box/calc.py": SETTINGS_CALC + "\n# ok\n"}))


def both_sides(res: Checked, prop: str) -> list[dict[str, Any]]:
    rows = res.rows("base", prop) + res.rows("head", prop)
    assert len(rows) == 2, res.explain(prop)
    return rows


def test_a_health_check_the_test_suppresses_is_suppressed(tuned: Lab) -> None:
    res = tuned_noop(tuned)
    assert res.verdicts()["prop.hc_suppressed"] == ("pass", "both_pass"), res.explain("prop.hc_suppressed")
    # The control: the same test without the suppression fails its health check.
    assert res.verdicts()["prop.hc_unsuppressed"] == ("fail", "uniform_fail"), res.explain("prop.hc_unsuppressed")
    for row in both_sides(res, "prop.hc_unsuppressed"):
        assert row["witness"].startswith(f"FailedHealthCheck:{SET_FILE}"), res.explain("prop.hc_unsuppressed")
        assert "filter" in str(row.get("error")), res.explain("prop.hc_unsuppressed")


def test_max_examples_below_the_catalog_floor_is_not_honoured(tuned: Lab) -> None:
    res = tuned_noop(tuned)
    assert res.verdicts()["prop.one_example"] == ("pass", "both_pass"), res.explain("prop.one_example")
    assert all(r["examples"] >= FLOOR for r in both_sides(res, "prop.one_example")), res.explain("prop.one_example")


def test_max_examples_above_the_catalog_floor_is_honoured(tuned: Lab) -> None:
    res = tuned_noop(tuned)
    assert res.verdicts()["prop.sixty_examples"] == ("pass", "both_pass"), res.explain("prop.sixty_examples")
    assert all(r["examples"] >= 60 for r in both_sides(res, "prop.sixty_examples")), \
        res.explain("prop.sixty_examples")


def test_max_examples_one_still_catches_a_regression_its_first_example_misses(tuned: Lab) -> None:
    """ident is wrong only for |x| >= 1000: Hypothesis's first example (0) passes; the floor finds it."""
    calc = replace(SETTINGS_CALC, "    return x\n", "    return x if abs(x) < 1000 else x + 1\n")
    res = tuned.check("main", tuned.branch("break-ident", "main", {"src/box/calc.py": calc}))
    assert res.code == 1 and res.decision == "reject", res.explain()
    assert res.verdicts()["prop.one_example"] == ("fail", "regression"), res.explain("prop.one_example")
    assert all(r["witness"].startswith(f"AssertionError:{SET_FILE}:") for r in res.rows("head", "prop.one_example"))
    others = {p: v for p, v in res.verdicts().items() if p != "prop.one_example"}
    assert others == {p: v for p, v in tuned_noop(tuned).verdicts().items() if p != "prop.one_example"}, \
        res.explain()


def test_stateful_step_count_is_honoured(tuned: Lab) -> None:
    res = tuned_noop(tuned)
    assert res.verdicts()["prop.short_machine"] == ("pass", "both_pass"), res.explain("prop.short_machine")
    assert all(r["examples"] >= FLOOR for r in both_sides(res, "prop.short_machine")), \
        res.explain("prop.short_machine")
    # The control: the same machine at the default step count takes a fourth step.
    assert res.verdicts()["prop.long_machine"] == ("fail", "uniform_fail"), res.explain("prop.long_machine")
    assert all(r["witness"].startswith(f"AssertionError:{SET_FILE}:") for r in both_sides(res, "prop.long_machine")), \
        res.explain("prop.long_machine")


def test_an_explicit_deadline_is_honoured(tuned: Lab) -> None:
    res = tuned_noop(tuned)
    assert res.verdicts()["prop.deadline"] == ("fail", "uniform_fail"), res.explain("prop.deadline")
    assert all(r["witness"].startswith(f"DeadlineExceeded:{SET_FILE}") for r in both_sides(res, "prop.deadline")), \
        res.explain("prop.deadline")


@pytest.mark.parametrize("prop", ["prop.param_plain", "prop.unittest_fine"])
def test_a_plain_parametrization_and_a_plain_unittest_method_pass_once(tuned: Lab, prop: str) -> None:
    res = tuned_noop(tuned)
    assert res.verdicts()[prop] == ("pass", "both_pass"), res.explain(prop)
    assert [r["examples"] for r in both_sides(res, prop)] == [1, 1], res.explain(prop)
    seeds_apply = res.contract()["seeds_apply"]
    assert seeds_apply[prop] is False, seeds_apply
    assert (seeds_apply["prop.short_machine"], seeds_apply["prop.one_example"]) == (True, True), seeds_apply


# ---- 5. a node id that collects nothing, or a test that skips, is a fail whose witness says so

NEVER_PASS = [
    ("prop.missing_param", "NotCollected", "test_param_plain[three]"),
    ("prop.missing_method", "NotCollected", "test_nope"),
    ("prop.skips_itself", "Skipped", "not today"),
    ("prop.marked_skip", "Skipped", "marked"),
    ("prop.unittest_skip", "Skipped", "unittest skip"),
]


@pytest.mark.parametrize(("prop", "witness", "says"), NEVER_PASS, ids=[p[0] for p in NEVER_PASS])
def test_no_test_run_is_never_a_pass(tuned: Lab, prop: str, witness: str, says: str) -> None:
    res = tuned_noop(tuned)
    assert res.verdicts()[prop] == ("fail", "uniform_fail"), res.explain(prop)
    for row in both_sides(res, prop):
        assert row["status"] == "fail" and row["examples"] == 0, res.explain(prop)
        assert row["witness"].startswith(f"{witness}:{ODD_FILE}"), res.explain(prop)
        assert says in str(row.get("error")), res.explain(prop)
