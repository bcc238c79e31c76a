"""``gate test``: the properties run locally on the work tree, production importable, no bytecode left."""

from __future__ import annotations

from pathlib import Path

from mergegate.demo import build
from tests.helpers import gate, git


def _shop(tmp_path: Path) -> Path:
    return build.build(tmp_path)


def _pycache(repo: Path) -> list[Path]:
    return [p for p in (repo / "oracles").rglob("*") if p.name == "__pycache__" or p.suffix == ".pyc"]


def test_gate_test_runs_the_work_trees_properties(tmp_path: Path) -> None:
    repo = _shop(tmp_path)
    proc = gate(repo, "test")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout and "gate check gives the verdict" in proc.stderr
    assert _pycache(repo) == [] and git(repo, "status", "--porcelain").stdout == ""
    # A property being written (not committed) fails on the work tree's production, with Hypothesis's example.
    (repo / "oracles/properties/test_new.py").write_text(
        "from hypothesis import given, strategies as st\nfrom shop.orders import subtotal\n\n\n"
        "@given(st.integers(1, 5))\ndef test_total_is_never_zero(q):\n    assert subtotal([(q, 0)]) != 0\n")
    proc = gate(repo, "test", "--", "-k", "never_zero")
    assert proc.returncode == 1 and ("Falsifying example" in proc.stdout or "Failing test case" in proc.stdout)
    assert "1 failed" in proc.stdout and "3 deselected" in proc.stdout
    assert _pycache(repo) == []


def test_gate_test_sealed_runs_the_catalog_as_check_does(tmp_path: Path) -> None:
    repo = _shop(tmp_path)
    tax = repo / "src/shop/tax.py"
    tax.write_text(tax.read_text().replace("ROUND_HALF_UP)", "ROUND_HALF_UP).quantize(1)"))  # uncommitted
    proc = gate(repo, "test", "--sealed", "--only", "prop.tax_round", "--seeds", "11")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "fail  prop.tax_round seed=11" in proc.stderr and "1 rows: 0 pass, 1 fail" in proc.stdout
    assert "--only prop.tax_round --seeds 11" not in proc.stdout  # the rows were not written anywhere
    assert gate(repo, "test", "--sealed", "--", "-x").returncode == 2
