"""``gate catalog import`` tries each new entry on the work tree before it writes it (issue 21 item 3):
sealed if it passes sealed, ``isolation: shared`` with the reason if it passes only in-process, left out
and listed if it fails both ways; nothing it writes makes a later check exit 2 or fail on both sides."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mergegate.pipeline import trial
from mergegate.records import catalog
from tests.helpers import AGENT, commit, gate, git, init_repo, sign_and_commit, write
from tests.test_runner import project_files

CART = "class Cart:\n    def __init__(self):\n        self.items = []\n"

# One test per outcome: sealed as is; only in-process (a list read off a production object is a copy
# when sealed); failing here both ways (a wrong expectation).
TESTS = '''\
from decimal import Decimal

from hypothesis import given, strategies as st

from shop.cart import Cart
from shop.tax import tax_for


def test_no_tax_on_nothing():
    assert tax_for(Decimal("0"), "0.2") == Decimal("0")


@given(st.integers(0, 5))
def test_items_alias(n):
    cart = Cart()
    for i in range(n):
        cart.items.append(i)
    assert len(cart.items) == n


def test_wrong_expectation():
    assert tax_for(Decimal("10"), "0.2") == Decimal("3")
'''
# An oracle that cannot load at all (its production import does not exist).
BROKEN = "from shop.no_such_module import thing\n\n\ndef test_thing():\n    assert thing\n"

NEW = {"oracles/properties/test_trial.py": TESTS, "oracles/properties/test_broken.py": BROKEN}
CAT = "oracles/catalog"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    path = init_repo(tmp_path / "shop")
    files: dict[str, str | bytes | None] = dict(project_files())
    files["src/shop/cart.py"] = CART
    sign_and_commit(path, files, "the shop")
    write(path, dict(NEW))
    return path


def test_each_new_entry_is_written_as_the_trial_found_it_runs(repo: Path) -> None:
    proc = gate(repo, "catalog", "import")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "trying 4 new entries on the work tree" in proc.stderr
    assert "test_trial.py::test_no_tax_on_nothing  (plain test, sealed)" in out
    assert "test_trial.py::test_items_alias  (hypothesis, shared: fails sealed (" in out
    assert "left out  oracles/properties/test_trial.py::test_wrong_expectation  (plain test): fails sealed (" in out
    assert "left out  oracles/properties/test_broken.py::test_thing  (plain test): fails sealed (" in out
    assert "and in-process (cannot load its oracle" in out
    assert "2 tests left out" in out and "2 entries written (1 sealed, 1 shared" in out
    names = sorted(p.name for p in (repo / CAT).glob("trial.*"))
    assert names == ["trial.items_alias.yaml", "trial.no_tax_on_nothing.yaml"]
    assert not list((repo / CAT).glob("broken*"))
    shared = (repo / CAT / "trial.items_alias.yaml").read_bytes()
    assert b"# gate catalog import: fails sealed on the work tree (" in shared
    assert catalog.parse_entry(shared, "x.yaml").isolation == "shared"
    assert catalog.parse_entry((repo / CAT / "trial.no_tax_on_nothing.yaml").read_bytes(), "y.yaml").isolation \
        == "sealed"
    claimed = (repo / CAT / "claimed.yaml").read_text()
    assert "trial.items_alias" in claimed and "wrong_expectation" not in claimed
    # a second import offers the left-out tests again (they still have no entry) and leaves them out again
    again = gate(repo, "catalog", "import")
    assert again.returncode == 1 and "2 tests left out" in again.stdout and "written" not in again.stdout


def test_what_the_import_writes_never_breaks_a_later_check(repo: Path) -> None:
    """Committed as written, a clean agent patch is judged (no exit 2, no uniform_fail) and admitted: the
    changed file is covered by the entry that passes sealed; a real bug is rejected as a regression."""
    assert gate(repo, "catalog", "import").returncode == 0
    base = sign_and_commit(repo, {}, "catalog: adopt the suite")
    tax = (repo / "src/shop/tax.py").read_text()
    clean = commit(repo, {"src/shop/tax.py": tax + "\n# tidy\n"}, "tidy", env=AGENT)
    proc = gate(repo, "check", "--base", base, "--head", clean, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert (data["decision"], data["reason"]) == ("admit", "all_pass"), data
    git(repo, "reset", "-q", "--hard", base)
    cart = commit(repo, {"src/shop/cart.py": CART.replace("self.items = []", "self.items = [0]")}, "cart",
                  env=AGENT)
    proc = gate(repo, "check", "--base", base, "--head", cart, "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    reasons = {p["prop"]: p["reason"] for p in data["properties"] if p["prop"].startswith("trial.")}
    assert data["decision"] == "reject" and reasons == {"trial.items_alias": "regression",
                                                        "trial.no_tax_on_nothing": "both_pass"}, data


def test_no_trial_writes_every_entry_untried(repo: Path) -> None:
    proc = gate(repo, "catalog", "import", "--no-trial")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "trying" not in proc.stderr and proc.stdout.count("untried)") == 4
    assert len(list((repo / CAT).glob("trial.*"))) == 3 and len(list((repo / CAT).glob("broken.*"))) == 1


@pytest.mark.parametrize(("sealed", "shared", "how"), [
    ([], None, trial.SEALED),
    (["fail AssertionError"], [], trial.SHARED),
    (["fail AssertionError"], ["fail AssertionError"], trial.LEFT_OUT),
    (["cannot load its oracle"], None, trial.LEFT_OUT),  # not run in-process: never written
])
def test_decide(sealed: list[str], shared: list[str] | None, how: str) -> None:
    assert trial.decide(sealed, shared).how == how


def _spec(pid: str, hypothesis: bool) -> Any:
    return SimpleNamespace(prop=SimpleNamespace(id=pid), seeds_apply=hypothesis)


def test_in_process_runs_every_seed_only_for_a_hypothesis_entry_that_passed_the_first() -> None:
    """An in-process run is a pytest session of its own: what fails at the first seed is left out without its other
    seeds (it fails both ways whatever they give); a Hypothesis entry that passed there is run at every seed, and its
    failure at a later seed still counts; a plain test runs at the first seed only."""
    # (entry, seeds asked) -> (reasons, skip reason)
    answers = {
        ("fails_first", (11,)): (["fail AssertionError"], ""),
        ("fails_later", (11,)): ([], ""), ("fails_later", (11, 29, 47)): (["fail Falsified at 29"], ""),
        ("passes", (11,)): ([], "skipped at 11"), ("passes", (11, 29, 47)): ([], "skipped at 47"),
        ("plain_passes", (11,)): ([], "a plain skip"),
    }
    asked: list[tuple[tuple[str, ...], tuple[int, ...]]] = []

    def attempt(chosen: list[Any], at: Any) -> trial.Failing:
        asked.append((tuple(s.prop.id for s in chosen), tuple(at)))
        got = {s.prop.id: answers[(s.prop.id, tuple(at))] for s in chosen}
        return {p: r for p, (r, _) in got.items()}, {p: why for p, (_, why) in got.items() if why}

    retry = [_spec("fails_first", True), _spec("fails_later", True), _spec("passes", True),
             _spec("plain_passes", False)]
    failing, skips = trial.in_process(retry, [11, 29, 47], attempt)
    assert asked == [(("fails_first", "fails_later", "passes", "plain_passes"), (11,)),
                     (("fails_later", "passes"), (11, 29, 47))]
    assert failing == {"fails_first": ["fail AssertionError"], "fails_later": ["fail Falsified at 29"],
                       "passes": [], "plain_passes": []}
    assert skips == {"passes": "skipped at 47", "plain_passes": "a plain skip"}
    assert {p: trial.decide(["sealed"], r).how for p, r in failing.items()} == {
        "fails_first": trial.LEFT_OUT, "fails_later": trial.LEFT_OUT, "passes": trial.SHARED,
        "plain_passes": trial.SHARED}
    asked.clear()  # one seed in the policy: one attempt; nothing to retry: none
    assert trial.in_process(retry[:2], [11], attempt)[0] == {"fails_first": ["fail AssertionError"],
                                                             "fails_later": []}
    assert asked == [(("fails_first", "fails_later"), (11,))]
    assert trial.in_process([], [11, 29], attempt) == ({}, {}) and len(asked) == 1


def test_the_reason_is_one_short_line_and_the_shared_entry_still_parses() -> None:
    reason = trial.reason_of("fail", "AssertionError", "Traceback\n  x\nAssertionError: \x1b[2Jboom\n" + "y" * 500,
                             False)
    assert "\n" not in reason and "\x1b" not in reason and len(reason) <= trial.REASON_MAX
    text = trial.shared_text(b'id: a\noracle: "t/test_a.py::test_a"\nclaim: "a"\n',
                             trial.Outcome(trial.SHARED, "fail x: a # b: c\r\nd"))
    prop = catalog.parse_entry(text, "a.yaml")
    assert prop.isolation == "shared" and text.count(b"\n") == 5
    both = trial.allow_skip_text(text, trial.decide(["fail x"], [], skips="fail Skipped:t: skipped # x\r\ny: z"))
    prop = catalog.parse_entry(both, "a.yaml")
    assert prop.isolation == "shared" and prop.allow_skip is True and both.count(b"\n") == 7
    assert trial.decide([], None, skips="why").skips == "why" and not trial.decide(["a"], ["b"], skips="why").skips


# Found adopting priority (docs/adoption.md, G1): ``@given`` above ``@settings`` is valid Hypothesis, and
# plain pytest runs it; the gate rebuilt the test and applied the settings twice (InvalidArgument).
DECORATED = '''\
from decimal import Decimal

from hypothesis import given, settings, strategies as st

from shop.tax import tax_for


@given(st.integers(0, 10_000))
@settings(deadline=None, max_examples=7)
def test_given_above_settings(cents):
    assert tax_for(Decimal(cents) / 100, "0") == Decimal("0")


@settings(deadline=None, max_examples=7)
@given(st.integers(0, 10_000))
def test_settings_above_given(cents):
    assert tax_for(Decimal(cents) / 100, "0") == Decimal("0")
'''


@pytest.mark.parametrize("test", ["given_above_settings", "settings_above_given"])
def test_given_above_settings_runs_sealed_with_its_own_settings(tmp_path: Path, test: str) -> None:
    path = init_repo(tmp_path / "shop")
    sign_and_commit(path, dict(project_files()), "the shop")
    write(path, {"oracles/properties/test_decorators.py": DECORATED})
    proc = gate(path, "catalog", "import")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"test_decorators.py::test_{test}  (hypothesis, sealed)" in proc.stdout, proc.stdout
    base = sign_and_commit(path, {}, "catalog: adopt")
    rows = tmp_path / "rows.jsonl"
    assert gate(path, "run", "--rev", base, "--only", f"decorators.{test}", "--out", str(rows)).returncode == 0
    got = [json.loads(line) for line in rows.read_text().splitlines()]
    # its settings apply within the bounds: the catalog's max_examples (100) is a floor it cannot lower
    assert {r["status"] for r in got} == {"pass"} and {r["examples"] for r in got} == {100}, got
    tax = (path / "src/shop/tax.py").read_text()
    assert "def tax_for(" in tax
    bug = tax.replace("def tax_for(", "def _tax_for(") + (
        "\n\ndef tax_for(amount, rate):\n    return _tax_for(amount, rate) + (Decimal('0.01') if amount > 50 else 0)\n")
    reasons = rejected(path, base, {"src/shop/tax.py": bug}, "tax: off by a cent")
    assert reasons[f"decorators.{test}"] == "regression", reasons


def rejected(path: Path, base: str, files: dict[str, str | bytes | None], message: str) -> dict[str, str]:
    """An agent's commit of ``files`` on ``base``, checked: rejected (exit 1); each entry's reason."""
    git(path, "reset", "-q", "--hard", base)
    head = commit(path, files, message, env=AGENT)
    proc = gate(path, "check", "--base", base, "--head", head, "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return {p["prop"]: p["reason"] for p in json.loads(proc.stdout)["properties"]}


# Found adopting pyrsistent: its vector tests take a fixture with one instance per implementation, and the C one
# is not built here (``pytest.importorskip`` in the fixture). Each such test skipped one instance, so the import
# left all 101 out and a real bug in the vector code went unexercised (``review``, never a reject).
SKIPPING = '''\
from decimal import Decimal

import pytest

from shop.tax import tax_for


@pytest.fixture(params=["shop.tax", "shop.rates", "shop._ctax"])
def impl(request):
    return pytest.importorskip(request.param)


def test_each_implementation(impl):
    assert impl.tax_for(Decimal("0"), "0.2") == Decimal("0")


@pytest.mark.parametrize("rate", ["0", pytest.param("0.5", marks=pytest.mark.skipif(True, reason="other platform"))])
def test_each_rate(rate):
    assert tax_for(Decimal("0"), rate) == Decimal("0")


@pytest.mark.skip(reason="never here")
def test_never_here():
    assert tax_for(Decimal("0"), "0.2") == Decimal("0")
'''


def test_an_entry_whose_some_tests_skip_here_is_written_with_allow_skip_and_judges(tmp_path: Path) -> None:
    path = init_repo(tmp_path / "shop")
    sign_and_commit(path, {**project_files(), "src/shop/rates.py": "from shop.tax import tax_for\n"}, "the shop")
    write(path, {"oracles/properties/test_skipping.py": SKIPPING})
    proc = gate(path, "catalog", "import")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for test in ("each_implementation", "each_rate"):
        assert f"test_skipping.py::test_{test}  (plain test, sealed; allow_skip: some of its tests skip here (" \
            in proc.stdout, proc.stdout
        text = (path / CAT / f"skipping.{test}.yaml").read_bytes()
        assert b"# gate catalog import: some of its tests skip on the work tree (" in text
        assert catalog.parse_entry(text, "x.yaml").allow_skip is True
    assert "left out  oracles/properties/test_skipping.py::test_never_here  (plain test)" in proc.stdout
    assert "2 entries written (2 sealed, 0 shared" in proc.stdout
    base = sign_and_commit(path, {}, "catalog: adopt")
    tax = (path / "src/shop/tax.py").read_text()
    clean = commit(path, {"src/shop/tax.py": tax + "\n# tidy\n"}, "tidy", env=AGENT)
    proc = gate(path, "check", "--base", base, "--head", clean, "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["decision"] == "admit", proc.stdout + proc.stderr
    bug = tax.replace("def tax_for(", "def _tax_for(") + (
        "\n\ndef tax_for(amount, rate):\n    return _tax_for(amount, rate) + Decimal('0.01')\n")
    reasons = rejected(path, base, {"src/shop/tax.py": bug}, "tax: a cent more")
    assert reasons["skipping.each_implementation"] == reasons["skipping.each_rate"] == "regression", reasons
    # allow_skip never hides an instance the base ran: production that makes one skip is rejected (narrowed)
    gone = "raise ModuleNotFoundError(\"No module named 'shop.rates'\", name='shop.rates')\n"
    reasons = rejected(path, base, {"src/shop/rates.py": gone}, "rates: not built here")
    assert reasons["skipping.each_implementation"] == "narrowed", reasons


JOBS = '''\
class Job:
    def __init__(self, number, weight):
        self.number, self.weight = number, weight

    def __eq__(self, other):
        if not isinstance(other, Job):
            return NotImplemented
        return self.number == other.number

    def __lt__(self, other):
        if not isinstance(other, Job):
            return NotImplemented
        return self.number < other.number
'''
JOB_TESTS = '''\
from shop.jobs import Job


def test_jobs_are_one_job_whatever_their_weight():
    assert Job(1, 5) == Job(1, 6) and Job(1, 5) != Job(2, 5)
    assert [j.weight for j in sorted([Job(3, 1), Job(1, 2), Job(2, 3)])] == [2, 3, 1]
'''


def test_a_test_relying_on_its_class_own_comparison_is_written_sealed(tmp_path: Path) -> None:
    # the trial follows the work tree's own rule for Job (compare numbers), as gate check follows the trusted
    # revision's: the entry runs sealed, not shared
    path = init_repo(tmp_path / "shop")
    files: dict[str, str | bytes | None] = dict(project_files())
    files["src/shop/jobs.py"] = JOBS
    sign_and_commit(path, files, "the shop, with jobs")
    write(path, {"oracles/properties/test_jobs.py": JOB_TESTS})
    proc = gate(path, "catalog", "import")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "test_jobs.py::test_jobs_are_one_job_whatever_their_weight  (plain test, sealed)" in proc.stdout, \
        proc.stdout + proc.stderr
