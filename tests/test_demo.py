"""``gate demo``: every scenario gets its expected verdict, through the real CLI."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import gate


def test_demo_scenarios_all_match(tmp_path: Path) -> None:
    proc = gate(tmp_path, "demo")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    for name in ("clean fix", "regression", "production and oracle edited together", "fixture rewritten",
                 "shared flake covered by the freeze", "same flake after a fixture digest change",
                 "canary miss", "empty patch", "agent patch editing the ledger"):
        row = next(ln for ln in lines if ln.startswith(name))
        assert row.rstrip().endswith("yes"), row
    assert "all scenarios matched" in proc.stdout


def test_demo_only_and_keep(tmp_path: Path) -> None:
    """--only runs one scenario; --keep leaves the demo repository for inspection."""
    proc = gate(tmp_path, "demo", "--only", "empty patch", "--keep", str(tmp_path / "kept"))
    assert proc.returncode == 0 and (tmp_path / "kept" / "shop" / ".git").exists()
    assert "empty patch" in proc.stdout and "clean fix" not in proc.stdout
