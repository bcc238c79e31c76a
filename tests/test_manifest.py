"""MANIFEST.sha256: sign, verify, format, coverage, cache; and seed 000's fixture digest."""

from __future__ import annotations

import hashlib
import os
import pathlib
from pathlib import Path

import pytest

from mergegate.errors import ConfigError
from mergegate.records import manifest
from mergegate.records.digest import fixture_digest, fixture_digest_of
from tests.helpers import commit, gate, git, init_repo, sign_and_commit, write

M = "oracles/MANIFEST.sha256"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "r")


def test_init_manifest_verifies_and_covers_guarded_files_only(repo: Path) -> None:
    assert gate(repo, "manifest", "verify", check=0).stdout.strip() == f"{M}: OK (5 files)"
    paths = [r.path for r in manifest.parse((repo / M).read_bytes(), M)]
    assert "oracles/properties/.gitignore" in paths  # keeps bytecode out of the oracle tree
    assert paths == sorted(paths)
    assert "freeze_ledger.yaml" not in paths and M not in paths
    assert "gate.yaml" in paths


def test_hashes_are_of_the_committed_blob(repo: Path) -> None:
    git(repo, "config", "core.autocrlf", "true")
    sign_and_commit(repo, {"oracles/fixtures/a.txt": "one\r\ntwo\r\n"})
    blob = git(repo, "cat-file", "blob", "HEAD:oracles/fixtures/a.txt").stdout.encode()
    row = next(r for r in manifest.parse((repo / M).read_bytes(), M) if r.path == "oracles/fixtures/a.txt")
    assert row.sha256 == hashlib.sha256(blob).hexdigest()
    assert row.size == len(blob)
    gate(repo, "manifest", "verify", "--rev", "HEAD", check=0)


def test_verify_lists_missing_extra_and_changed(repo: Path) -> None:
    sign_and_commit(repo, {"oracles/fixtures/a.txt": "a", "oracles/fixtures/b.txt": "b"})
    write(repo, {"oracles/fixtures/a.txt": "A", "oracles/fixtures/b.txt": None, "oracles/fixtures/c.txt": "c"})
    git(repo, "add", "-A")
    proc = gate(repo, "manifest", "verify", "--staged", check=1)
    assert proc.stdout.splitlines()[:3] == [
        "missing: oracles/fixtures/c.txt",
        "extra: oracles/fixtures/b.txt",
        "changed: oracles/fixtures/a.txt",
    ]
    assert "fix:" in proc.stdout
    gate(repo, "manifest", "verify", "--rev", "HEAD", check=0)
    gate(repo, "manifest", "sign", "--staged", check=0)
    gate(repo, "manifest", "verify", check=0)


def test_worktree_verify_sees_unstaged_edits(repo: Path) -> None:
    write(repo, {"gate.yaml": (repo / "gate.yaml").read_text() + "\n"})
    proc = gate(repo, "manifest", "verify", "--worktree", check=1)
    assert "changed: gate.yaml" in proc.stdout
    gate(repo, "manifest", "verify", check=0)  # the index is untouched


def test_sign_rev_writes_that_revisions_manifest(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD").stdout.strip()
    sign_and_commit(repo, {"oracles/fixtures/a.txt": "a"})
    gate(repo, "manifest", "sign", "--rev", first, check=0)
    assert (repo / M).read_bytes() == git(repo, "show", f"{first}:{M}").stdout.encode()


@pytest.mark.parametrize("name", ["new\nline.txt", "back\\slash.txt", "sp ace ü.txt", "cr\rx.txt"])
def test_odd_paths_round_trip(repo: Path, name: str) -> None:
    sign_and_commit(repo, {f"oracles/fixtures/{name}": "x"})
    rows = manifest.parse((repo / M).read_bytes(), M)
    assert f"oracles/fixtures/{name}" in [r.path for r in rows]
    gate(repo, "manifest", "verify", "--rev", "HEAD", check=0)


def test_symlink_in_oracle_tree_is_refused(repo: Path) -> None:
    commit(repo, {"src/prod.py": "x = 1\n"})
    os.symlink("../../src/prod.py", repo / "oracles/properties/sneaky.py")
    git(repo, "add", "-A")
    proc = gate(repo, "manifest", "sign", "--staged", check=2)
    assert "oracles/properties/sneaky.py is a symlink in a guarded tree" in proc.stderr


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (b"zz  1  gate.yaml\n", 1, "not '<sha256>  <size>  <path>'"),
        (b"a" * 64 + b"  x  gate.yaml\n", 1, "not '<sha256>  <size>  <path>'"),
        (b"a" * 64 + b"  1  b\n" + b"a" * 64 + b"  1  a\n", 2, "not sorted"),
        (b"a" * 64 + b"  1  a\n" + b"a" * 64 + b"  1  a\n", 2, "listed twice"),
        (b"a" * 64 + b"  1  a\r\n", 1, "CRLF"),
        (b"a" * 64 + b"  1  ../etc/passwd\n", 1, "bad path"),
    ],
)
def test_malformed_manifest_names_line_and_fix(text: bytes, line: int, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        manifest.parse(text, M)
    assert info.value.line == line
    assert words in info.value.render()
    assert "gate manifest sign --staged" in info.value.render()


def test_malformed_manifest_through_the_cli(repo: Path) -> None:
    write(repo, {M: "not a manifest\n"})
    git(repo, "add", M)
    proc = gate(repo, "manifest", "verify", check=2)
    assert f"{M}:1: not '<sha256>  <size>  <path>'" in proc.stderr


def test_missing_policy_is_a_usage_error(tmp_path: Path) -> None:
    r = init_repo(tmp_path / "bare", gate_init=False)
    proc = gate(r, "manifest", "verify", check=2)
    assert "no gate.yaml" in proc.stderr and "gate init" in proc.stderr


def test_resign_hashes_only_new_blobs(repo: Path) -> None:
    write(repo, {f"oracles/fixtures/f{i}.txt": f"{i}" for i in range(50)})
    git(repo, "add", "-A")
    gate(repo, "manifest", "sign", check=0)
    cache = repo / ".git/mergegate/blob-sha256"
    before = len(cache.read_text().splitlines())
    write(repo, {"oracles/fixtures/f7.txt": "changed"})
    git(repo, "add", "-A")
    gate(repo, "manifest", "sign", check=0)
    assert len(cache.read_text().splitlines()) == before + 1


def test_corrupt_cache_lines_are_ignored(repo: Path) -> None:
    cache = repo / ".git/mergegate/blob-sha256"
    cache.parent.mkdir(exist_ok=True)
    cache.write_text("garbage\nabc def\n")
    gate(repo, "manifest", "verify", check=0)


def test_init_never_overwrites(repo: Path) -> None:
    write(repo, {"gate.yaml": (repo / "gate.yaml").read_text() + "# mine\n"})
    out = gate(repo, "init", check=0).stdout
    assert "kept     gate.yaml (exists)" in out
    assert (repo / "gate.yaml").read_text().endswith("# mine\n")
    gate(repo, "init", "--pre-commit-config", check=0)
    assert "id: gate-checks" in (repo / ".pre-commit-config.yaml").read_text()


def test_init_work_area_ignores_itself(repo: Path) -> None:
    assert (repo / ".gate/.gitignore").is_file()
    (repo / ".gate/evidence").mkdir()
    (repo / ".gate/evidence/x.json").write_text("{}")
    assert git(repo, "status", "--porcelain", "--untracked-files=all").stdout == ""
    assert ".gate" not in git(repo, "ls-files").stdout


def seed_fixture_digest(root: pathlib.Path) -> str:
    """Seed 000's function, verbatim."""
    hasher = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        hasher.update(path.relative_to(root).as_posix().encode())
        hasher.update(b"\0")
        hasher.update(path.read_bytes())
        hasher.update(b"\0")
    return hasher.hexdigest()


def test_digest_is_the_seeds_algorithm(tmp_path: Path) -> None:
    root = tmp_path / "fx"
    files = {"a.json": b"{}", "b/c.txt": b"x\0y", "b-c/d": b"", "b/a b.txt": "ü".encode()}
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    expected = seed_fixture_digest(root)
    assert fixture_digest(root) == expected
    assert fixture_digest_of(files) == expected
    assert gate(tmp_path, "digest", str(root), check=0).stdout.strip() == expected
    (root / "b/c.txt").write_bytes(b"x\0z")
    assert gate(tmp_path, "digest", str(root), check=0).stdout.strip() != expected
