"""Adopting a suite: node ids parsed and resolved statically, ``gate catalog import``/``status``, and the
commit hook refusing a catalog entry that names no test."""

from __future__ import annotations

from pathlib import Path

import pytest

from mergegate.pipeline import adopt
from mergegate.records import catalog, nodeids
from tests.helpers import gate, git, init_repo, sign_and_commit, write
from tests.test_runner import project_files

SUITE = b'''\
"""A suite as projects write them."""
import unittest

from hypothesis import given, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from shop.orders import order_total
from shop.tax import tax_for


@given(st.integers())
def test_prop(x):
    """Integers equal themselves."""
    assert x == x


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n


def test_plain_total():
    assert order_total


def helper():
    pass


class TestGroup:
    def test_method(self):
        assert tax_for

    @given(st.text())
    def test_given_method(self, s):
        assert s == s


class Base:
    def test_inherited(self):
        pass


class TestChild(Base):
    pass


class Machine(RuleBasedStateMachine):
    @rule()
    def step(self):
        pass


TestMachine = Machine.TestCase
MachineRuns = Machine.TestCase  # pytest collects a TestCase whatever its name


class CaseTest(unittest.TestCase):
    def test_case(self):
        self.assertTrue(True)
'''


@pytest.mark.parametrize(("text", "file", "names", "param"), [
    ("t/test_a.py::test_x", "t/test_a.py", ("test_x",), ""),
    ("t/test_a.py::TestX::test_y", "t/test_a.py", ("TestX", "test_y"), ""),
    ("t/test_a.py::test_x[1-a::b]", "t/test_a.py", ("test_x",), "[1-a::b]"),
    ("t/test_a.py::TestMachine", "t/test_a.py", ("TestMachine",), ""),
])
def test_parse_node_ids(text: str, file: str, names: tuple[str, ...], param: str) -> None:
    node = nodeids.parse(text)
    assert (node.file, node.names, node.param) == (file, names, param)
    assert str(node) == text


@pytest.mark.parametrize("text", [
    "t/test_a.py", "t/test_a.txt::x", "/abs/test_a.py::x", "t/test_a.py::", "t/test_a.py::1x",
    "t/test_a.py::x[unclosed", "t/test_a.py::a b", "t/test_a.py::x[\n]", "../test_a.py::x", "t/../test_a.py::x",
    "t//test_a.py::x", "./test_a.py::x",
])
def test_malformed_node_ids_are_refused(text: str) -> None:
    with pytest.raises(nodeids.NodeIdError):
        nodeids.parse(text)


@pytest.mark.parametrize(("rest", "kind"), [
    ("test_prop", nodeids.HYPOTHESIS), ("test_param", nodeids.PLAIN), ("test_param[1]", nodeids.PLAIN),
    ("test_plain_total", nodeids.PLAIN), ("TestGroup::test_method", nodeids.PLAIN),
    ("TestGroup::test_given_method", nodeids.HYPOTHESIS), ("TestGroup", nodeids.HYPOTHESIS),
    ("TestMachine", nodeids.HYPOTHESIS), ("TestMachine::runTest", nodeids.HYPOTHESIS),
    ("TestChild::test_inherited", nodeids.HYPOTHESIS),  # inherited: unknown statically, so every seed runs
    ("CaseTest::test_case", nodeids.PLAIN),
])
def test_resolve_gives_the_kind(rest: str, kind: str) -> None:
    assert nodeids.resolve(nodeids.parse(f"t/test_s.py::{rest}"), SUITE) == kind


@pytest.mark.parametrize(("rest", "message"), [
    ("test_gone", "has no test 'test_gone'"), ("TestGroup::test_gone", "TestGroup has no test 'test_gone'"),
    ("test_prop::inner", "'test_prop' is not a class"), ("Nothing::test_x", "has no test 'Nothing'"),
])
def test_resolve_refuses_what_is_not_there(rest: str, message: str) -> None:
    with pytest.raises(nodeids.NodeIdError, match=message):
        nodeids.resolve(nodeids.parse(f"t/test_s.py::{rest}"), SUITE)


def test_discover_follows_pytest_conventions() -> None:
    found = {t.nodeid.rest: t.kind for t in nodeids.discover("t/test_s.py", SUITE)}
    assert found == {
        "test_prop": nodeids.HYPOTHESIS, "test_param": nodeids.PLAIN, "test_plain_total": nodeids.PLAIN,
        "TestGroup::test_method": nodeids.PLAIN, "TestGroup::test_given_method": nodeids.HYPOTHESIS,
        "TestMachine": nodeids.HYPOTHESIS, "MachineRuns": nodeids.HYPOTHESIS, "CaseTest::test_case": nodeids.PLAIN,
    }


def test_claims_ids_and_covers() -> None:
    tests = {t.nodeid.rest: t for t in nodeids.discover("oracles/properties/test_s.py", SUITE)}
    assert adopt.claim_for(tests["test_prop"]) == "Integers equal themselves."
    assert adopt.claim_for(tests["TestGroup::test_method"]) == "Group: method"
    taken = {"s.prop"}
    assert adopt.entry_id(tests["test_prop"], taken) == "s.prop-2"
    assert adopt.entry_id(tests["TestGroup::test_method"], set()) == "s.TestGroup.method"
    production = ["src/shop/__init__.py", "src/shop/orders.py", "src/shop/tax.py"]
    assert adopt.covers_for(SUITE, production, ["src"]) == ["src/shop/orders.py", "src/shop/tax.py"]
    assert adopt.covers_for(b"import shop\nfrom shop import tax\n", production, ["src"]) == ["src/shop/**"]


def test_status_counts_an_entry_for_what_it_selects() -> None:
    tests = nodeids.discover("t/test_s.py", SUITE)
    entry = catalog.parse_entry(b'id: g\noracle: "t/test_s.py::TestGroup"\nclaim: c\n', "c/g.yaml")
    entry2 = catalog.parse_entry(b'id: p\noracle: "t/test_s.py::test_param[1]"\nclaim: c\n', "c/p.yaml")
    missing = {t.nodeid.rest for t in adopt.status(catalog.Catalog((entry, entry2), ("g", "p")), tests)}
    assert "TestGroup::test_method" not in missing and "test_param" not in missing
    assert "test_prop" in missing and "TestMachine" in missing


# ---------------------------------------------------------------- the CLI on a real repository


NEW_TESTS = '''\
from decimal import Decimal

from hypothesis import given, strategies as st

from shop.tax import tax_for


class TestTaxExtras:
    def test_zero_has_no_tax(self):
        """No tax on nothing."""
        assert tax_for(Decimal("0"), "0.2") == Decimal("0")

    @given(st.integers(min_value=0, max_value=10**6))
    def test_tax_is_not_negative(self, cents):
        assert tax_for(Decimal(cents) / 100, "0.2") >= 0
'''


def shop(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "shop")
    sign_and_commit(repo, dict(project_files()), "the shop")
    return repo


def test_import_writes_entries_that_run_and_never_overwrites(tmp_path: Path) -> None:
    repo = shop(tmp_path)
    proc = gate(repo, "catalog", "status")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    write(repo, {"oracles/properties/test_tax_extras.py": NEW_TESTS})
    proc = gate(repo, "catalog", "status")
    assert proc.returncode == 1
    assert "no entry   oracles/properties/test_tax_extras.py::TestTaxExtras::test_zero_has_no_tax  (plain)" \
        in proc.stdout
    claimed_before = (repo / "oracles/catalog/claimed.yaml").read_text()
    # an entry file already there under the id import would choose is never overwritten
    write(repo, {"oracles/catalog/tax_extras.TestTaxExtras.zero_has_no_tax.yaml":
                 'id: mine\noracle: "oracles/properties/test_tax.py::test_tax_rounds_to_cents"\nclaim: mine\n'})
    proc = gate(repo, "catalog", "import", "oracles/properties/test_tax_extras.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "mine" in (repo / "oracles/catalog/tax_extras.TestTaxExtras.zero_has_no_tax.yaml").read_text()
    written = sorted(p.name for p in (repo / "oracles/catalog").glob("tax_extras*"))
    assert written == ["tax_extras.TestTaxExtras.tax_is_not_negative.yaml",
                       "tax_extras.TestTaxExtras.zero_has_no_tax-2.yaml",
                       "tax_extras.TestTaxExtras.zero_has_no_tax.yaml"]
    entry = (repo / "oracles/catalog/tax_extras.TestTaxExtras.zero_has_no_tax-2.yaml").read_text()
    assert 'oracle: "oracles/properties/test_tax_extras.py::TestTaxExtras::test_zero_has_no_tax"' in entry
    assert 'claim: "No tax on nothing."' in entry and 'covers: ["src/shop/tax.py"]' in entry
    claimed = (repo / "oracles/catalog/claimed.yaml").read_text()
    assert claimed.startswith(claimed_before.split("claimed:")[0]) and "zero_has_no_tax-2" in claimed
    assert gate(repo, "catalog", "import").stdout.startswith("every test under the oracle paths")
    # committed by a person, the new entries run through the gate
    (repo / "oracles/catalog/tax_extras.TestTaxExtras.zero_has_no_tax.yaml").unlink()
    git(repo, "add", "-A")
    assert gate(repo, "hook", "manifest").returncode == 1  # re-signed: stage it
    git(repo, "add", "-A")
    assert gate(repo, "hook", "manifest").returncode == 0
    git(repo, "commit", "-q", "--no-verify", "-m", "adopt")
    proc = gate(repo, "run", "--rev", "HEAD", "--seeds", "3,5", "--out", str(tmp_path / "rows.jsonl"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = (tmp_path / "rows.jsonl").read_text()
    assert rows.count('"prop": "tax_extras.TestTaxExtras.zero_has_no_tax-2"') == 2  # one run, both seeds


def test_only_files_pytest_collects_are_adopted(tmp_path: Path) -> None:
    """A helper or benchmark module under the oracle paths is not a test file: pytest never collects it."""
    repo = shop(tmp_path)
    write(repo, {"oracles/properties/microbenchmarks.py": "def test_speed(benchmark):\n    benchmark(len, [])\n",
                 "oracles/properties/orders_test.py": "def test_suffix_style():\n    pass\n"})
    proc = gate(repo, "catalog", "import", "--dry-run")
    assert "microbenchmarks" not in proc.stdout and "orders_test.py::test_suffix_style" in proc.stdout
    assert "microbenchmarks" not in gate(repo, "catalog", "status").stdout


def test_import_refuses_paths_outside_the_oracle(tmp_path: Path) -> None:
    repo = shop(tmp_path)
    proc = gate(repo, "catalog", "import", "src/shop")
    assert proc.returncode == 2 and "not under an oracle path" in proc.stderr and "fix:" in proc.stderr


def test_status_lists_entries_whose_test_is_gone(tmp_path: Path) -> None:
    repo = shop(tmp_path)
    source = (repo / "oracles/properties/test_tax.py").read_text()
    write(repo, {"oracles/properties/test_tax.py": source.replace("def test_", "def check_")})
    proc = gate(repo, "catalog", "status")
    assert proc.returncode == 1 and "gone       oracles/catalog/prop.tax_round.yaml:2:" in proc.stdout
    assert gate(repo, "catalog", "status", "--rev", "HEAD").returncode == 0


@pytest.mark.parametrize("oracle", [
    "oracles/properties/test_tax.py::test_no_such_test",
    "oracles/properties/test_tax.py::TestNone::test_x",
    "oracles/properties/test_none.py::test_x",
])
def test_commit_hook_refuses_an_entry_that_does_not_resolve(tmp_path: Path, oracle: str) -> None:
    repo = shop(tmp_path)
    git(repo, "config", "core.hooksPath", ".git/no-hooks")
    write(repo, {"oracles/catalog/prop.ghost.yaml": f'id: prop.ghost\noracle: "{oracle}"\nclaim: ghost\n'})
    git(repo, "add", "-A")
    for hook in ("manifest", "all"):
        proc = gate(repo, "hook", hook)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "oracles/catalog/prop.ghost.yaml:2:" in proc.stdout + proc.stderr
    assert b"prop.ghost" not in (repo / "oracles/MANIFEST.sha256").read_bytes()  # not signed over it
