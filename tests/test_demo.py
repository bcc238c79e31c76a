"""``gate demo``: every scenario gets its expected verdict, through the real CLI."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.helpers import clean_env, gate
from tests.readme import ROOT, commands


def quick_start(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The quick start's first command, in a copy of this repository, with ``~`` a fresh home."""
    clone, home = tmp_path / "clone", tmp_path / "home"
    skip = shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__", ".gate", ".*_cache")
    shutil.copytree(ROOT, clone, ignore=skip)
    home.mkdir()
    install = commands("Quick start")[0]
    env = clean_env({"HOME": str(home)})
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(["bash", "-c", install], cwd=clone, env=env, capture_output=True, text=True, check=False)


def test_demo_scenarios_all_match(tmp_path: Path) -> None:
    """Through the README's quick start, word for word: a fresh virtualenv, ``pip install .``, ``gate demo``."""
    proc = quick_start(tmp_path)
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
