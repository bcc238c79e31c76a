"""The property runner on real repositories: rows, isolation, attacks, bad input, shards."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import pytest

from tests.helpers import commit, gate, git, init_repo, sign_and_commit, write

BROKEN_TAX = '''\
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def tax_for(amount, rate):
    return (amount * Decimal(rate)).quantize(Decimal(1), rounding=ROUND_HALF_UP)
'''


def project_files() -> dict[str, str]:
    root = resources.files("mergegate").joinpath("demo", "project")
    with resources.as_file(root) as src:
        return {p.relative_to(src).as_posix(): p.read_text() for p in Path(src).rglob("*")
                if p.is_file() and "__pycache__" not in p.parts}


def catalog_entry(pid: str, func: str, file: str = "oracles/properties/test_extra.py", **extra: object) -> str:
    lines = [f"id: {pid}", f"oracle: {file}::{func}", 'claim: "test"', "max_examples: 10"]
    lines += [f"{k}: {json.dumps(v)}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


EXTRA = '''\
import json
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st


@given(st.nothing())
def test_nothing(x):
    pass


@given(st.integers())
def test_sleeps(n):
    time.sleep(30)


@given(st.integers(0, 3))
def test_reads_holidays(n):
    json.loads((Path(__file__).parents[1] / "fixtures" / "holidays.json").read_text())


@given(st.integers(0, 3))
def test_crashes(n):
    from shop.crash import boom
    boom()


@given(st.integers(0, 3))
def test_kills_runner(n):
    from shop.crash import kill_parent
    kill_parent()
'''


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = init_repo(tmp_path_factory.mktemp("shop"))
    files: dict[str, str | bytes | None] = dict(project_files())
    files["oracles/properties/test_extra.py"] = EXTRA
    files["oracles/catalog/prop.nothing.yaml"] = catalog_entry("prop.nothing", "test_nothing")
    files["oracles/catalog/prop.sleeps.yaml"] = catalog_entry("prop.sleeps", "test_sleeps")
    files["oracles/catalog/prop.reads.yaml"] = catalog_entry("prop.reads", "test_reads_holidays")
    files["oracles/catalog/prop.crashes.yaml"] = catalog_entry("prop.crashes", "test_crashes")
    files["oracles/catalog/prop.kills.yaml"] = catalog_entry("prop.kills", "test_kills_runner")
    files["oracles/catalog/claimed.yaml"] = "claimed: [prop.order_total, prop.tax_round, prop.bulk_discount]\n"
    policy = (repo / "gate.yaml").read_text() + "runner: {timeout_s: 4}\n"
    files["gate.yaml"] = policy
    files["src/shop/crash.py"] = ("import os, signal, sys\n\ndef boom():\n    sys.stderr.write('about to die\\n')\n"
                                  "    sys.stderr.flush()\n    os.kill(os.getpid(), signal.SIGKILL)\n\n"
                                  "def kill_parent():\n    os.kill(os.getppid(), signal.SIGKILL)\n"
                                  "    import time\n    time.sleep(2)\n")
    sign_and_commit(repo, files, "the shop")
    return repo


def run_rows(repo: Path, *args: str, code: int | None = None) -> list[dict[str, object]]:
    out = repo.parent / "rows.jsonl"
    proc = gate(repo, "run", "--tree", ".", "--trusted", "HEAD", "--out", str(out), *args)
    if code is not None:
        assert proc.returncode == code, proc.stdout + proc.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_row_fields_and_pass(shop: Path) -> None:
    rows = run_rows(shop, "--only", "prop.order_total", "--seeds", "11,29", code=0)
    assert [(r["prop"], r["seed"], r["status"]) for r in rows] == [
        ("prop.order_total", 11, "pass"), ("prop.order_total", 29, "pass")]
    row = rows[0]
    assert set(row) >= {"prop", "seed", "status", "witness", "signature", "spec_hash", "fixture_closure",
                        "examples", "duration_s"}
    assert row["examples"] == 30  # the catalog's max_examples, counted by the runner itself
    assert row["fixtures_opened"] == ["oracles/fixtures/rates.json"]
    assert len(str(row["spec_hash"])) == 64 and len(str(row["fixture_closure"])) == 64
    # Where a sealed run's time went: its requests of production, and the seconds inside them.
    assert isinstance(row["production_calls"], int) and row["production_calls"] >= row["examples"], row
    assert isinstance(row["production_s"], float) and 0 < row["production_s"] <= row["duration_s"], row


def test_failure_witness_signature_deterministic(shop: Path) -> None:
    write(shop, {"src/shop/tax.py": BROKEN_TAX})
    try:
        first = run_rows(shop, "--only", "prop.tax_round", code=1)
        second = run_rows(shop, "--only", "prop.tax_round", code=1)
    finally:
        git(shop, "checkout", "--", "src/shop/tax.py")
    assert all(r["status"] == "fail" for r in first)
    assert {r["witness"] for r in first} == {"AssertionError:oracles/properties/test_tax.py:17"}
    assert [(r["signature"], r["examples"]) for r in first] == [(r["signature"], r["examples"]) for r in second]


def test_zero_examples_is_a_fail(shop: Path) -> None:
    rows = run_rows(shop, "--only", "prop.nothing", "--seeds", "11", code=1)
    assert rows[0]["status"] == "fail" and rows[0]["examples"] == 0


def test_timeout_and_crash_are_fails(shop: Path) -> None:
    rows = run_rows(shop, "--only", "prop.sleeps", "--only", "prop.crashes", "--seeds", "11", code=1)
    by = {r["prop"]: r for r in rows}
    assert by["prop.sleeps"]["status"] == "fail" and by["prop.sleeps"]["witness"] == "Timeout:runner"
    assert by["prop.crashes"]["status"] == "fail" and by["prop.crashes"]["witness"] == "Crash:subject"
    assert "subject log: about to die" in str(by["prop.crashes"]["error"])  # the crash says why


def test_a_killed_subject_is_a_crash_and_the_run_goes_on(shop: Path) -> None:
    """Production killing its own fork server fails that run; the next run gets a fresh subject."""
    rows = run_rows(shop, "--only", "prop.kills", "--only", "prop.order_total", "-j", "1", code=1)
    by = {(r["prop"], r["seed"]): r for r in rows}
    seen = [(k, r["status"], r["witness"], r.get("error")) for k, r in by.items()]
    assert all(by[("prop.kills", s)]["witness"] == "Crash:subject" for s in (11, 29, 47)), seen
    assert all(by[("prop.order_total", s)]["status"] == "pass" for s in (11, 29, 47)), seen


HELPER = "from decimal import Decimal\n\n\ndef close(a, b):\n    return abs(a - b) <= Decimal('0.005')\n"
HELPED = ("from shop.tax import tax_for", "from shop.tax import tax_for\nfrom taxhelp import close",
          "assert abs(tax - amount * Decimal(rate)) <= Decimal(\"0.005\")", "assert close(tax, amount * Decimal(rate))")


@pytest.mark.parametrize("planted", [
    {"src/taxhelp.py": "def close(a, b):\n    return True\n"},  # shadow the helper
    {"src/shop/__init__.py": "import taxhelp\ntaxhelp.close = lambda a, b: True\n"},  # patch it at import
])
def test_production_cannot_shadow_or_patch_an_oracle_helper(shop: Path, planted: dict[str, str]) -> None:
    """Oracle helpers resolve from the oracle's own directory first and load before production."""
    oracle = (shop / "oracles/properties/test_tax.py").read_text()
    for old, new in zip(HELPED[::2], HELPED[1::2], strict=True):
        assert old in oracle
        oracle = oracle.replace(old, new)
    sign_and_commit(shop, {"oracles/properties/taxhelp.py": HELPER, "oracles/properties/test_tax.py": oracle},
                    "oracle helper")
    write(shop, {**planted, "src/shop/tax.py": BROKEN_TAX})
    try:
        rows = run_rows(shop, "--only", "prop.tax_round", "--seeds", "11", code=1)
    finally:
        write(shop, {"src/taxhelp.py": None})
        git(shop, "reset", "-q", "--hard", "HEAD~1")
    assert rows[0]["status"] == "fail"


def test_undeclared_fixture_is_flagged_and_fails(shop: Path) -> None:
    rows = run_rows(shop, "--only", "prop.reads", "--seeds", "11", code=1)
    assert rows[0]["status"] == "fail"
    assert rows[0]["undeclared_fixtures"] == ["oracles/fixtures/holidays.json"]


# Each attack sits at import time in the production module the failing property imports.
ATTACKS = {
    "settings profile": "from hypothesis import settings, Phase\n"
                        "settings.register_profile('quiet', max_examples=1, phases=[Phase.explicit])\n"
                        "settings.load_profile('quiet')\n",
    "given is a no-op": "import hypothesis\nhypothesis.given = lambda *a, **k: (lambda f: (lambda *x, **y: None))\n",
    "strategies replaced": "import hypothesis.strategies as st\nfrom decimal import Decimal as _D\n"
                           "st.decimals = lambda *a, **k: st.just(_D(0))\n",
    "builtins patched": "import builtins\nbuiltins.abs = lambda x: 0\n",
    # the trusted side is a pytest session: its reports must not be production's to rewrite
    "pytest reports patched": "import _pytest.reports as _r\n_r.TestReport.failed = property(lambda self: False)\n"
                              "_r.TestReport.passed = property(lambda self: True)\n",
    "pytest runner patched": "import _pytest.runner as _r\n_orig = _r.call_and_report\n"
                             "def _quiet(item, when, log=True, **kw):\n    report = _orig(item, when, log, **kw)\n"
                             "    report.outcome = 'passed'\n    return report\n_r.call_and_report = _quiet\n",
    "hypothesis module swapped": "import sys, types\nfake = types.ModuleType('hypothesis')\n"
                                 "fake.given = lambda *a, **k: (lambda f: f)\nsys.modules['hypothesis'] = fake\n",
    "os._exit(0)": "import os\nos._exit(0)\n",
    "sys.exit(0)": "import sys\nsys.exit(0)\n",
    "atexit exit 0": "import atexit, os\natexit.register(lambda: os._exit(0))\n",
    "skip exception": "import unittest\nraise unittest.SkipTest('skipped by production')\n",
    "settrace": "import sys\nsys.settrace(lambda *a: None)\n",
    "stdlib class method patched": "import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\n",
    "engine limits lowered": "import hypothesis.internal.conjecture.engine as e\n"
                             "e.BUFFER_SIZE = 1\ne.MIN_TEST_CALLS = 0\n",
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_production_cannot_neuter_a_failing_property(shop: Path, attack: str) -> None:
    write(shop, {"src/shop/tax.py": ATTACKS[attack] + BROKEN_TAX})
    try:
        rows = run_rows(shop, "--only", "prop.tax_round", "--seeds", "11")
    finally:
        git(shop, "checkout", "--", "src/shop/tax.py")
    assert rows and all(r["status"] == "fail" for r in rows), rows


def run_planted(shop: Path, planted: dict[str, str | bytes | None]) -> list[dict[str, object]]:
    """Run prop.tax_round (broken tax) with ``planted`` files in the tree, then remove them."""
    write(shop, planted)
    try:
        return run_rows(shop, "--only", "prop.tax_round", "--seeds", "11", code=1)
    finally:
        write(shop, {p: None for p in planted if p != "src/shop/tax.py"})
        git(shop, "checkout", "--", "src/shop/tax.py")


def test_conftest_sitecustomize_pth_and_pycache_are_not_loaded(shop: Path) -> None:
    exit_now = "import os\nos._exit(0)\n"
    skipper = "import pytest\n\ndef pytest_collection_modifyitems(items):\n" \
              "    for i in items:\n        i.add_marker(pytest.mark.skip)\n"
    planted = {"conftest.py": skipper, "oracles/conftest.py": skipper, "src/sitecustomize.py": exit_now,
               "src/usercustomize.py": exit_now, "src/evil.pth": "import os; os._exit(0)\n",
               "pytest.ini": "[pytest]\naddopts = -p no:hypothesispytest\n",
               "src/shop/tax.py": BROKEN_TAX}
    rows = run_planted(shop, planted)
    assert rows[0]["status"] == "fail"
    assert rows[0]["witness"] == "AssertionError:oracles/properties/test_tax.py:17"


def test_trusted_oracle_bytes_run_not_the_trees(shop: Path) -> None:
    """An oracle weakened in the tree is not what runs: the trusted revision's bytes are."""
    weak = (shop / "oracles/properties/test_tax.py").read_text().replace('Decimal("0.005")', 'Decimal("9")')
    write(shop, {"src/shop/tax.py": BROKEN_TAX, "oracles/properties/test_tax.py": weak})
    try:
        rows = run_rows(shop, "--only", "prop.tax_round", "--seeds", "11", code=1)
    finally:
        git(shop, "checkout", "--", "src/shop/tax.py", "oracles/properties/test_tax.py")
    assert rows[0]["status"] == "fail"


def test_shards_merge_back_to_the_whole(shop: Path, tmp_path: Path) -> None:
    args = ("--rev", "HEAD", "--only", "prop.order_total", "--only", "prop.tax_round", "--seeds", "11,29")
    gate(shop, "run", *args, "--out", str(tmp_path / "all.jsonl"), check=0)
    for k in (1, 2, 3):
        gate(shop, "run", *args, "--shard", f"{k}/3", "--out", str(tmp_path / f"s{k}.jsonl"), check=0)
    gate(shop, "merge-runs", *(str(tmp_path / f"s{k}.jsonl") for k in (1, 2, 3)),
         "--out", str(tmp_path / "merged.jsonl"), "--seeds", "11,29", check=0)

    def keyed(name: str) -> list[tuple[object, ...]]:
        rows = [json.loads(x) for x in (tmp_path / name).read_text().splitlines()]
        return [(r["prop"], r["seed"], r["status"], r["spec_hash"], r["examples"]) for r in rows]

    assert keyed("merged.jsonl") == keyed("all.jsonl") and len(keyed("all.jsonl")) == 4
    dup = gate(shop, "merge-runs", str(tmp_path / "s1.jsonl"), str(tmp_path / "s1.jsonl"),
               "--out", str(tmp_path / "bad.jsonl"))
    assert dup.returncode == 2 and "also in another shard" in dup.stderr


# ---------------------------------------------------------------- bad input


def test_bad_inputs_are_clear_errors(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    files: dict[str, str | bytes | None] = dict(project_files())
    files["oracles/catalog/prop.ghost.yaml"] = catalog_entry("prop.ghost", "test_x", file="oracles/properties/none.py")
    sign_and_commit(repo, files, "missing oracle file")
    proc = gate(repo, "run", "--rev", "HEAD", "--out", str(tmp_path / "o.jsonl"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr and "fix:" in proc.stderr

    sign_and_commit(repo, {"oracles/catalog/prop.ghost.yaml": catalog_entry(
        "prop.ghost", "test_missing", file="oracles/properties/test_tax.py")}, "missing function")
    proc = gate(repo, "run", "--rev", "HEAD", "--out", str(tmp_path / "o.jsonl"))
    assert proc.returncode == 2 and "has no test 'test_missing'" in proc.stderr

    sign_and_commit(repo, {"oracles/properties/test_ghost.py": "import no_such_module_anywhere\n\n"
                           "def test_x():\n    pass\n",
                           "oracles/catalog/prop.ghost.yaml": catalog_entry(
                               "prop.ghost", "test_x", file="oracles/properties/test_ghost.py")}, "bad import")
    proc = gate(repo, "run", "--rev", "HEAD", "--only", "prop.ghost", "--seeds", "11",
                "--out", str(tmp_path / "o.jsonl"))
    assert proc.returncode == 2 and "could not load its oracle" in proc.stderr
    row = json.loads((tmp_path / "o.jsonl").read_text())
    assert row["status"] == "fail" and "no_such_module_anywhere" in row["error"]

    proc = gate(repo, "run", "--rev", "no-such-rev", "--out", str(tmp_path / "o.jsonl"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    commit(repo, {}, "empty")
    assert shutil.which("git")


def test_shadowing_hypothesis_or_stdlib_from_production_roots(shop: Path) -> None:
    """A patch planting src/hypothesis or src/decimal cannot replace what the oracle imports."""
    planted = {"src/hypothesis/__init__.py": "def given(*a, **k):\n    return lambda f: (lambda *x, **y: None)\n",
               "src/decimal.py": "raise SystemExit(0)\n", "src/shop/tax.py": BROKEN_TAX}
    rows = run_planted(shop, planted)
    assert rows[0]["witness"] == "AssertionError:oracles/properties/test_tax.py:17"


def test_gate_diff_writes_contract_and_decides(shop: Path, tmp_path: Path) -> None:
    base = git(shop, "rev-parse", "HEAD").stdout.strip()
    head = commit(shop, {"src/shop/tax.py": BROKEN_TAX}, "break tax")
    try:
        proc = gate(shop, "diff", "--base", base, "--head", head, "--out", str(tmp_path / "d"), "--json")
    finally:
        git(shop, "reset", "-q", "--hard", base)
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["decision"] == "reject"
    assert {r["prop"]: r["reason"] for r in data["results"]}["prop.tax_round"] == "regression"
    contract = json.loads((tmp_path / "d" / "contract.json").read_text())
    assert contract["base"] == base and contract["head"] == head and contract["seeds"] == [11, 29, 47]
    assert contract["spec_hash"]["base"] == contract["spec_hash"]["head"]
    assert set(contract["fixture_digest"]) == {"base", "head"}
    assert len((tmp_path / "d" / "patch.jsonl").read_text().splitlines()) == 3 * len(contract["properties"])


def test_runs_leave_the_tree_untouched(shop: Path) -> None:
    """No __pycache__, no .hypothesis directory: the tree under test is read, never written."""
    before = git(shop, "status", "--porcelain", "--ignored", "--untracked-files=all").stdout
    assert "__pycache__" not in before and ".hypothesis" not in before
    run_rows(shop, "--only", "prop.order_total", "--only", "prop.tax_round", "--seeds", "11", code=0)
    assert git(shop, "status", "--porcelain", "--ignored", "--untracked-files=all").stdout == before
    assert not list(shop.rglob("__pycache__")) and not (shop / ".hypothesis").exists()


def test_oracle_in_a_package_with_relative_imports(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "pkg")
    files: dict[str, str | bytes | None] = dict(project_files())
    files["oracles/__init__.py"] = ""
    files["oracles/properties/__init__.py"] = ""
    files["oracles/properties/limits.py"] = "from decimal import Decimal\n\nHALF_CENT = Decimal('0.005')\n"
    files["oracles/properties/test_tax.py"] = files["oracles/properties/test_tax.py"].replace(  # type: ignore[union-attr]
        "from shop.tax import tax_for", "from shop.tax import tax_for\n\nfrom .limits import HALF_CENT").replace(
        'Decimal("0.005")', "HALF_CENT")
    sign_and_commit(repo, files, "packaged oracles")
    proc = gate(repo, "run", "--rev", "HEAD", "--only", "prop.tax_round", "--seeds", "11",
                "--out", str(tmp_path / "o.jsonl"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---------------------------------------------------------------- bad input on the production side

TAX_IMPORT = "from shop.tax import tax_for"


@pytest.mark.parametrize(("tax", "witness", "error"), [
    ("def tax_for(amount, rate:\n", "ProductionImportError:oracles/properties/test_tax.py:8",
     "production module shop.tax failed to import in the subject: SyntaxError"),
    ("import no_such_dependency\n", "ProductionModuleNotFound:oracles/properties/test_tax.py:8",  # importorskip's
     "No module named 'no_such_dependency'"),
    ("def tax_for(amount, rate):\n    x = []\n    x.append(x)\n    return x\n",
     "CodecError:oracles/properties/test_tax.py:15", "nested deeper than"),  # the subject's own error
    ("def tax_for(amount, rate):\n    import threading\n    return threading.Lock()\n",
     "AttributeError:oracles/properties/test_tax.py:16", "quantize"),
    ("import time\n\ndef tax_for(amount, rate):\n    time.sleep(60)\n", "Timeout:runner", "timed out after 4s"),
])
def test_production_that_cannot_import_hangs_or_returns_the_uncarriable_fails(
        shop: Path, tax: str, witness: str, error: str) -> None:
    write(shop, {"src/shop/tax.py": tax})
    try:
        rows = run_rows(shop, "--only", "prop.tax_round", "--seeds", "11", code=1)
    finally:
        git(shop, "checkout", "--", "src/shop/tax.py")
    assert rows[0]["status"] == "fail"
    assert rows[0]["witness"] == witness, rows[0]
    assert error in str(rows[0]["error"]), rows[0]


def test_production_text_reaches_the_terminal_escaped(shop: Path, tmp_path: Path) -> None:
    """An exception message with terminal controls is shown as escapes by gate run and gate check."""
    evil = ("def tax_for(amount, rate):\n"
            "    raise ValueError('\\x1b]0;owned\\x07\\x1b[2K\\x1b[1Gall good\\u202e')\n")
    base = git(shop, "rev-parse", "HEAD").stdout.strip()
    head = commit(shop, {"src/shop/tax.py": evil}, "evil message")
    try:
        proc = gate(shop, "run", "--rev", head, "--trusted", base, "--only", "prop.tax_round", "--seeds", "11",
                    "--out", str(tmp_path / "o.jsonl"))
        table = gate(shop, "check", "--base", base, "--head", head)
    finally:
        git(shop, "reset", "-q", "--hard", base)
    assert proc.returncode == 1 and table.returncode == 1
    for out in (proc.stderr, table.stdout, (tmp_path / "o.jsonl").read_text()):
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b]0;owned\\x07" in proc.stderr and "\\x1b]0;owned\\x07" in table.stdout


@pytest.fixture(scope="module")
def shared_shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo shop with prop.tax_round marked isolation: shared (production in the property's process)."""
    repo = init_repo(tmp_path_factory.mktemp("shared"))
    files: dict[str, str | bytes | None] = dict(project_files())
    files["oracles/catalog/prop.tax_round.yaml"] = files["oracles/catalog/prop.tax_round.yaml"] + "isolation: shared\n"  # type: ignore[operator]
    sign_and_commit(repo, files, "tax_round runs shared")
    return repo


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_the_shared_runner_keeps_its_guards(shared_shop: Path, attack: str) -> None:
    """isolation: shared has no boundary, only in-process guards: each attack still ends in a fail."""
    write(shared_shop, {"src/shop/tax.py": ATTACKS[attack] + BROKEN_TAX})
    try:
        rows = run_rows(shared_shop, "--only", "prop.tax_round", "--seeds", "11")
    finally:
        git(shared_shop, "checkout", "--", "src/shop/tax.py")
    assert rows and all(r["status"] == "fail" and r["isolation"] == "shared" for r in rows), rows
