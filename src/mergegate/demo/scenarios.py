"""The demo's scenario patches and the verdict each must get from ``gate check``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mergegate.demo import build
from mergegate.errors import InternalError


@dataclass(frozen=True)
class Scenario:
    name: str
    base: str  # branch the patch starts from
    files: dict[str, str | None] = field(default_factory=dict)
    agent: bool = True
    sign: bool = False  # a person's oracle-only change re-signs the manifest
    expected: str = "admit"
    reason: str = "all_pass"
    edit: str | None = None  # "ledger": extend the freeze in place


def _replace(repo_dir: Path, path: str, old: str, new: str) -> str:
    text = (repo_dir / path).read_text()
    if old not in text:
        raise InternalError(f"demo scenario: {old!r} not in {path}")
    return text.replace(old, new)


def scenarios(repo_dir: Path) -> list[Scenario]:
    """Built against the current files of ``repo_dir`` (on main)."""
    tax = "src/shop/tax.py"
    return [
        Scenario("clean fix", "main", {tax: _replace(
            repo_dir, tax, "Decimal(rate)", "Decimal(str(rate))")}, reason="all_pass"),
        Scenario("regression", "main", {tax: _replace(
            repo_dir, tax, "ROUND_HALF_UP)", "ROUND_HALF_UP).quantize(Decimal(1))")},
            expected="reject", reason="fail"),
        Scenario("production and oracle edited together", "main", {
            tax: _replace(repo_dir, tax, "ROUND_HALF_UP)", "ROUND_HALF_UP).quantize(Decimal(1))"),
            "oracles/properties/test_tax.py": _replace(
                repo_dir, "oracles/properties/test_tax.py", 'Decimal("0.005")', 'Decimal("1")')},
            expected="reject", reason="independence"),
        Scenario("fixture rewritten", "main", {"oracles/fixtures/rates.json":
                 '{"standard": "-0.5", "reduced": "0.05", "zero": "0"}\n'},
                 agent=False, sign=True, expected="reject", reason="fail"),
        Scenario("shared flake covered by the freeze", "flaky", {"src/shop/discount.py":
                 build.FLAKY_DISCOUNT.replace("by quantity.", "by quantity (see SHOP-12).")},
                 agent=False, expected="hold", reason="inconclusive"),
        Scenario("same flake after a fixture digest change", "flaky", {"oracles/fixtures/holidays.json":
                 '["2026-12-25", "2026-12-26", "2027-01-01"]\n'},
                 agent=False, sign=True, expected="reject", reason="fail"),
        Scenario("canary miss (a secret in the diff)", "main", {"src/shop/orders.py": _replace(
            repo_dir, "src/shop/orders.py", "from decimal import Decimal\n",
            'from decimal import Decimal\n\nPAYMENT_KEY = "AKIAIOSFODNN7EXAMPLE"\n')},
            expected="reject", reason="canary_bad"),
        Scenario("empty patch", "main", {}, expected="reject", reason="empty_blob"),
        Scenario("agent patch editing the ledger", "flaky", edit="ledger",
                 expected="reject", reason="independence"),
    ]
