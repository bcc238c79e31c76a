"""`gate split`: every changed path in its class, on real repositories."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import commit, gate, git, init_repo, sign_and_commit

CATALOG_ENTRY = """id: prop.total
oracle: oracles/properties/test_total.py::test_total
claim: totals add up
quarantine_eligible: true
fixtures: [oracles/fixtures/orders/**]
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "r")
    commit(r, {"src/shop.py": "def total(xs):\n    return sum(xs)\n"}, "production")
    sign_and_commit(r, {
        "oracles/properties/test_total.py": "def test_total():\n    pass\n",
        "oracles/properties/helpers.py": "X = 1\n",
        "oracles/fixtures/orders/a.json": "[]\n",
        "oracles/catalog/prop.total.yaml": CATALOG_ENTRY,
        "oracles/catalog/prop.other.yaml": (
            "id: prop.other\noracle: oracles/properties/test_other.py::test_o\nclaim: c\n"
        ),
        "oracles/properties/test_other.py": "def test_o():\n    pass\n",
    })
    return r


def split(repo: Path, *args: str) -> dict[str, object]:
    proc = gate(repo, "split", *args, check=0)
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_rename_from_src_into_oracles_counts_on_both_sides(repo: Path) -> None:
    git(repo, "mv", "src/shop.py", "oracles/properties/shop.py")
    data = split(repo, "--staged")
    assert data["production"] == ["src/shop.py"]
    assert data["oracle"] == ["oracles/properties/shop.py"]
    assert data["mixed"] is True


def test_range_forms_and_oracle_edited(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").stdout.strip()
    commit(repo, {"oracles/fixtures/orders/a.json": "[1]\n", "src/shop.py": "x = 1\n"})
    for spec in (f"{base}...HEAD", f"{base}..HEAD", "HEAD"):
        data = split(repo, spec)
        assert data["fixture"] == ["oracles/fixtures/orders/a.json"]
        assert data["production"] == ["src/shop.py"]
        assert data["oracle_edited"] == ["prop.total"], spec


def test_shared_oracle_helper_moves_every_property(repo: Path) -> None:
    commit(repo, {"oracles/properties/helpers.py": "X = 2\n"})
    assert split(repo, "HEAD")["oracle_edited"] == ["prop.other", "prop.total"]


def test_catalog_entry_and_oracle_file_edits(repo: Path) -> None:
    commit(repo, {"oracles/catalog/prop.other.yaml": None})
    assert split(repo, "HEAD")["oracle_edited"] == ["prop.other"]
    commit(repo, {"oracles/properties/test_total.py": "def test_total():\n    assert True\n"})
    assert split(repo, "HEAD")["oracle_edited"] == ["prop.total"]


def test_deletion_and_mode_change_on_guarded_paths(repo: Path) -> None:
    git(repo, "rm", "-q", "oracles/fixtures/orders/a.json")
    git(repo, "update-index", "--chmod=+x", "oracles/properties/test_total.py")
    data = split(repo, "--staged")
    assert data["fixture"] == ["oracles/fixtures/orders/a.json"]
    assert data["oracle"] == ["oracles/properties/test_total.py"]
    assert data["oracle_edited"] == ["prop.total"]


def test_symlink_and_submodule_on_guarded_paths(repo: Path, tmp_path: Path) -> None:
    os.symlink("../../src/shop.py", repo / "oracles/properties/link.py")
    sub = init_repo(tmp_path / "sub", gate_init=False)
    commit(sub, {"x": "1"})
    sha = git(sub, "rev-parse", "HEAD").stdout.strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sha},oracles/fixtures/sub")
    git(repo, "add", "oracles/properties/link.py")
    data = split(repo, "--staged")
    assert "oracles/properties/link.py" in data["oracle"]  # type: ignore[operator]
    assert data["fixture"] == ["oracles/fixtures/sub"]


@pytest.mark.parametrize(
    "name",
    ["with space.py", "quote\"d'.py", "ünïcødé.py", "new\nline.py", "tab\there.py", "back\\slash.py"],
)
def test_odd_paths(repo: Path, name: str) -> None:
    commit(repo, {f"src/{name}": "1\n", f"oracles/properties/{name}": "2\n"})
    data = split(repo, "HEAD")
    assert data["production"] == [f"src/{name}"]
    assert data["oracle"] == [f"oracles/properties/{name}"]


def test_first_commit_has_no_parent(tmp_path: Path) -> None:
    r = init_repo(tmp_path / "fresh")
    data = split(r, "HEAD")
    assert "gate.yaml" in data["policy"]  # type: ignore[operator]
    assert data["manifest"] == ["oracles/MANIFEST.sha256"]


def test_staged_before_first_commit(tmp_path: Path) -> None:
    r = init_repo(tmp_path / "fresh", gate_init=False)
    gate(r, "init", check=0)
    git(r, "add", "-A")
    assert "gate.yaml" in split(r, "--staged")["policy"]  # type: ignore[operator]


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["nope...HEAD"], 2, "revision 'nope' does not exist"),
        ([], 2, "give a range or --staged"),
    ],
)
def test_bad_usage(repo: Path, args: list[str], code: int, words: str) -> None:
    proc = gate(repo, "split", *args)
    assert proc.returncode == code
    assert words in proc.stderr
    assert proc.stderr.count("\n") == 1


@pytest.mark.parametrize("args", [["split", "--staged"], ["hook", "all"], ["manifest", "verify"]])
def test_not_a_git_repository(tmp_path: Path, args: list[str]) -> None:
    proc = gate(tmp_path, *args)
    assert proc.returncode == 2
    assert "not a git repository" in proc.stderr
