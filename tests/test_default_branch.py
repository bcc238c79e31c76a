"""``--base`` defaults to the repository's default branch: origin/HEAD, else init.defaultBranch, main, master."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import commit, gate, git


def _repo(path: Path, branch: str) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", branch)
    gate(path, "init", check=0)
    commit(path, {"src/app.py": "X = 1\n"}, "gate init")
    git(path, "checkout", "-q", "-b", "feature")
    commit(path, {"src/app.py": "X = 2\n"}, "feature")
    return path


def _base_of(repo: Path, *extra: str) -> str:
    proc = gate(repo, "check", "--json", *extra)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["reason"] != "empty_blob", data  # the feature commit was judged against the default branch
    return str(data["merge_base"])


def test_master_is_the_default_base(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r", "master")
    assert _base_of(repo) == git(repo, "rev-parse", "master").stdout.strip()


def test_origin_head_wins_over_local_names(tmp_path: Path) -> None:
    upstream = _repo(tmp_path / "up", "trunk")
    git(upstream, "checkout", "-q", "trunk")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream), str(clone))
    git(clone, "checkout", "-q", "-b", "master", "origin/feature")  # a local master that is not the default
    git(clone, "checkout", "-q", "-b", "work")
    commit(clone, {"src/app.py": "X = 3\n"}, "work")
    assert _base_of(clone) == git(clone, "rev-parse", "origin/trunk").stdout.strip()


def test_no_default_branch_is_a_usage_error(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r", "trunk")
    proc = gate(repo, "check")
    assert proc.returncode == 2
    assert "no default branch" in proc.stderr and "--base" in proc.stderr
