"""A failing property shows Hypothesis's falsifying example and a command that reproduces it.

End to end through ``gate check`` on the demo shop: the console, ``summary.md``, the JUnit
failure and the evidence row carry Hypothesis's own text, and the printed command, run as
printed, fails the same way.
"""

from __future__ import annotations

import json
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mergegate.demo import build
from mergegate.runner.trusted import report
from tests.helpers import gate

BROKEN_TAX = "ROUND_HALF_UP).quantize(Decimal(1))"
PREFIXES = report.FALSIFYING


@pytest.fixture(scope="module")
def regression(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """The shop, an agent's patch breaking tax rounding, and one ``gate check`` of it (its evidence dir)."""
    repo = build.build(tmp_path_factory.mktemp("falsify"))
    build.git(repo, "checkout", "-q", "-b", "t/regress", "main")
    tax = (repo / "src/shop/tax.py").read_text().replace("ROUND_HALF_UP)", BROKEN_TAX)
    head = build.commit(repo, {"src/shop/tax.py": tax}, "tax: whole units", agent=True)
    build.git(repo, "checkout", "-q", "main")
    return repo, head, tmp_path_factory.mktemp("out")


def _check(repo: Path, head: str, out: Path) -> str:
    proc = gate(repo, "check", "--base", "main", "--head", head, "--evidence", str(out / "ev"),
                "--junit", str(out / "j.xml"), "--markdown", str(out / "s.md"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return proc.stdout


def test_falsifying_example_everywhere(regression: tuple[Path, str, Path]) -> None:
    repo, head, out = regression
    stdout = _check(repo, head, out)
    rows = [json.loads(ln) for ln in (out / "ev" / "patch.jsonl").read_text().splitlines()]
    failed = [r for r in rows if r["prop"] == "prop.tax_round"]
    assert failed and all(r["status"] == "fail" for r in failed)
    row = min(failed, key=lambda r: r["seed"])
    example = row["falsifying_example"]
    assert example.startswith(PREFIXES) and "test_tax_rounds_to_cent(" in example and "amount=" in example
    assert row["error"].startswith("AssertionError") and row["witness"].startswith("AssertionError:")  # kept
    assert row["reproduce"] == (f"gate run --rev {head[:12]} --trusted {_main(repo)[:12]} "
                                f"--only prop.tax_round --seeds {row['seed']}")
    first_line = example.splitlines()[0]
    assert first_line in stdout and f"reproduce: {row['reproduce']}" in stdout
    summary = (out / "ev" / "summary.md").read_text()
    assert first_line in summary and row["reproduce"] in summary
    assert (out / "s.md").read_text() == summary
    failure = next(c for c in ET.parse(out / "j.xml").getroot().iter("testcase")
                   if c.get("name") == "prop.tax_round").find("failure")
    assert failure is not None
    assert first_line in failure.get("message", "") and row["reproduce"] in (failure.text or "")
    assert "amount=" in (failure.text or "")


def test_reproduce_command_runs_as_printed(regression: tuple[Path, str, Path]) -> None:
    repo, head, out = regression
    rows = [json.loads(ln) for ln in (out / "ev" / "patch.jsonl").read_text().splitlines()]
    if not rows:
        _check(repo, head, out)
        rows = [json.loads(ln) for ln in (out / "ev" / "patch.jsonl").read_text().splitlines()]
    row = next(r for r in rows if r["prop"] == "prop.tax_round")
    argv = shlex.split(row["reproduce"])
    assert argv[0] == "gate"
    proc = gate(repo, *argv[1:])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert row["falsifying_example"].splitlines()[0] in proc.stderr
    assert "1 rows: 0 pass, 1 fail" in proc.stdout


def _main(repo: Path) -> str:
    return build.git(repo, "rev-parse", "main")


def test_notes_are_read_from_the_exception_itself() -> None:
    """An exception whose missing attributes come from elsewhere (production's stand-in) lends no notes."""

    class Forwarding(Exception):
        def __getattr__(self, name: str) -> object:
            return ["Falsifying example: forged(x=1)"]

    assert report.falsifying_example(Forwarding("x")) == ""
    real = AssertionError("x")
    real.add_note("Falsifying example: test_it(\n    x=0,\n)")
    real.add_note("Draw 1: 5")
    assert report.falsifying_example(real) == "Falsifying example: test_it(\n    x=0,\n)\nDraw 1: 5"
    assert report.falsifying_example(AssertionError("plain")) == ""


def test_markdown_fence_cannot_be_closed_by_the_example() -> None:
    from mergegate.pipeline import evidence

    block = ["Falsifying example: test_x(", "    s='```\\n# injected',", ")"]
    fenced = evidence._fenced(block)
    assert fenced[0] == fenced[-1] == "````" and fenced[1:-1] == block
    assert evidence._fenced(["plain"])[0] == "```"
