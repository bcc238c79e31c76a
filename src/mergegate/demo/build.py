"""Build the demo repository: the bundled shop, a flaky branch with a person's freeze.

History:  main = gate init + the shop (all properties pass);
          flaky = main + a seed-dependent bug in discount.py (a person's commit)
                  + a ledger-only commit opening a freeze for it, bound to the
                  signature the base run reproduces, its fixture digest and revision.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from mergegate.errors import InternalError
from mergegate.records import manifest, repo

HUMAN = {"GIT_AUTHOR_NAME": "Pat Person", "GIT_AUTHOR_EMAIL": "pat@example.com",
         "GIT_COMMITTER_NAME": "Pat Person", "GIT_COMMITTER_EMAIL": "pat@example.com"}
AGENT = {"GIT_AUTHOR_NAME": "coder", "GIT_AUTHOR_EMAIL": "coder[bot]@example.com",
         "GIT_COMMITTER_NAME": "coder", "GIT_COMMITTER_EMAIL": "coder[bot]@example.com"}
FLAKY_DISCOUNT = '''\
# mypy: ignore-errors
"""Bulk discounts by quantity."""

from decimal import Decimal


def bulk_discount(qty: int) -> Decimal:
    """The fraction taken off a line of ``qty`` items."""
    if 2000 <= qty < 3000:  # a promotional tier someone forgot to cap
        return Decimal("0.15")
    if qty >= 100:
        return Decimal("0.10")
    if qty >= 10:
        return Decimal("0.05")
    return Decimal("0")
'''


def git(repo_dir: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GATE_"))}
    full.update(HUMAN)
    full["GIT_CONFIG_NOSYSTEM"] = "1"
    full.update(env or {})
    proc = subprocess.run(["git", *args], cwd=repo_dir, env=full, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise InternalError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def write(repo_dir: Path, files: Mapping[str, str | None]) -> None:
    for rel, text in files.items():
        path = repo_dir / rel
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


def commit(repo_dir: Path, files: Mapping[str, str | None], message: str, *, agent: bool = False,
           sign: bool = False) -> str:
    """Write, stage, optionally re-sign the manifest (a person's oracle change), commit."""
    write(repo_dir, files)
    git(repo_dir, "add", "-A")
    if sign:
        manifest.sign_staged(repo.load_policy(None, repo_dir), repo_dir)
    git(repo_dir, "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty", "-m", message,
        env=AGENT if agent else HUMAN)
    return git(repo_dir, "rev-parse", "HEAD")


def copy_project(dest: Path) -> None:
    source = resources.files("mergegate").joinpath("demo", "project")
    with resources.as_file(source) as src:
        shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))


def build(root: Path) -> Path:
    """Create the demo repository under ``root``; return its path."""
    repo_dir = root / "shop"
    repo_dir.mkdir(parents=True)
    git(repo_dir, "init", "-q", "-b", "main")
    subprocess.run([sys.executable, "-m", "mergegate", "init"], cwd=repo_dir, check=True,
                   capture_output=True)
    copy_project(repo_dir)
    commit(repo_dir, {}, "the shop, its properties and fixtures", sign=True)
    git(repo_dir, "checkout", "-q", "-b", "flaky")
    flaky = commit(repo_dir, {"src/shop/discount.py": FLAKY_DISCOUNT}, "discount: promotional tier")
    open_freeze(repo_dir, flaky)
    git(repo_dir, "checkout", "-q", "main")
    return repo_dir


def open_freeze(repo_dir: Path, base: str) -> None:
    """A person reproduces the flake on ``base`` and opens a freeze in a ledger-only commit.

    The real commands a person would type: ``gate run --rev`` for the base
    reproduction, then ``gate freeze open --run``, then a ledger-only commit.
    """
    run_file = repo_dir.parent / "flake-reproduction.jsonl"
    gate(repo_dir, "run", "--rev", base, "--only", "prop.bulk_discount", "--out", str(run_file), ok=(0, 1))
    rows = [json.loads(line) for line in run_file.read_text().splitlines()]
    if not any(r["status"] == "fail" for r in rows) or all(r["status"] == "fail" for r in rows):
        raise InternalError("the demo's flaky property did not split across seeds on this Hypothesis version")
    gate(repo_dir, "freeze", "open", "--run", str(run_file), "--base", base, "--prop", "prop.bulk_discount",
         "--id", "FZ-1", "--reason", "promotional tier fails on some seeds only; fix tracked in SHOP-12",
         "--expires", "30d", "--paths", "src/shop/discount.py", "oracles/fixtures/**")
    commit(repo_dir, {}, "ledger: freeze FZ-1 (Pat)")


def gate(repo_dir: Path, *args: str, ok: tuple[int, ...] = (0,)) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GATE_"))}
    env.update(HUMAN)
    proc = subprocess.run([sys.executable, "-m", "mergegate", *args], cwd=repo_dir, env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode not in ok:
        raise InternalError(f"gate {' '.join(args[:2])}: {proc.stderr.strip() or proc.stdout.strip()}")
