"""The repository export for the sandbox: every tree path checked, no link ever followed.

A hostile commit's tree is built byte by byte (``git hash-object -t tree --literally``),
since git itself never writes ``..`` entries, duplicates or a file below a symlink.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mergegate.drafter import export
from mergegate.errors import UsageError
from mergegate.records.policy import Policy
from tests.helpers import commit, gate, git, init_repo


def obj(repo: Path, kind: str, data: bytes) -> str:
    proc = subprocess.run(["git", "hash-object", "-t", kind, "--literally", "-w", "--stdin"], cwd=repo, input=data,
                          capture_output=True, check=True)
    return proc.stdout.decode().strip()


def tree(repo: Path, entries: list[tuple[str, str, str]]) -> str:
    """A tree object of (mode, name, sha) exactly as given: any name, any order, duplicates."""
    data = b"".join(f"{mode} {name}".encode() + b"\0" + bytes.fromhex(sha) for mode, name, sha in entries)
    return obj(repo, "tree", data)


def point_head(repo: Path, root: str) -> None:
    sha = git(repo, "commit-tree", root, "-p", "HEAD", "-m", "hostile tree").stdout.strip()
    git(repo, "update-ref", "HEAD", sha)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "r")
    commit(r, {"src/calc/__init__.py": "def add(a: int, b: int) -> int:\n    return a + b\n"}, "production")
    return r


def hostile_roots(repo: Path) -> dict[str, str]:
    """Root trees that keep HEAD's own entries and add one hostile shape each."""
    listing = git(repo, "ls-tree", "HEAD").stdout.splitlines()
    head_entries = [(m, n, s) for m, _t, s, n in (line.replace("\t", " ").split(" ", 3) for line in listing)]
    pwned = obj(repo, "blob", b"pwned\n")
    link = obj(repo, "blob", b"/tmp")
    inner = tree(repo, [("100644", "escaped.txt", pwned)])
    up = tree(repo, [("40000", "..", inner)])
    below = tree(repo, [("100644", "b.txt", pwned)])
    return {
        "dotdot": tree(repo, [*head_entries, ("40000", "..", inner)]),
        "nested dotdot": tree(repo, [*head_entries, ("40000", "sub", tree(repo, [("40000", "..", up)]))]),
        "dot": tree(repo, [*head_entries, ("40000", ".", inner)]),
        "duplicate": tree(repo, [*head_entries, ("100644", "x.txt", pwned), ("100644", "x.txt", pwned)]),
        "file below a link": tree(repo, [*head_entries, ("120000", "a", link), ("40000", "a", below)]),
    }


@pytest.mark.parametrize("shape", ["dotdot", "nested dotdot", "dot", "duplicate", "file below a link"])
def test_a_hostile_tree_is_refused_before_anything_is_written(repo: Path, tmp_path: Path, shape: str) -> None:
    point_head(repo, hostile_roots(repo)[shape])
    area = tmp_path / "area"
    dest = area / "export" / "repo"
    dest.mkdir(parents=True)
    with pytest.raises(UsageError, match="HEAD's tree holds the path"):
        export.export_head(Policy(), dest, repo)
    written = sorted(str(p.relative_to(area)) for p in area.rglob("*"))
    assert written == ["export", "export/repo"]  # nothing inside, nothing beside
    assert not (repo / "escaped.txt").exists() and not Path("/tmp/b.txt").exists()


@pytest.mark.docker
@pytest.mark.usefixtures("docker_engine")
def test_draft_props_on_a_hostile_tree_is_one_clear_line(repo: Path) -> None:
    point_head(repo, hostile_roots(repo)["dotdot"])
    proc = gate(repo, "draft-props", check=2)
    assert proc.stderr.count("\n") == 1 and "'../escaped.txt', which has a '..' component" in proc.stderr
    assert not (repo.parent / "escaped.txt").exists()


@pytest.mark.parametrize(("paths", "problem"), [
    (["a/b.py", "c.py"], None),
    (["/etc/passwd"], "absolute"),
    (["a//b"], "'empty' component"),
    (["a/./b"], "'.' component"),
    (["a/../../b"], "'..' component"),
    (["x" * 256], "over 255 bytes"),
    (["a.py", "a.py"], "listed twice"),
    (["a", "a/b"], "below the file 'a'"),
    (["a/b", "a"], "both a file and a directory"),
])
def test_check_paths(paths: list[str], problem: str | None) -> None:
    got = export.check_paths(paths)
    assert (got is None) if problem is None else (got is not None and problem in got[1])


def test_the_writer_never_follows_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "a").symlink_to(outside)  # as if an earlier entry had been a link
    with pytest.raises(UsageError, match="is not a directory"):
        export.write_tree(dest, [("a/b.txt", "100644", b"x")])
    (dest / "c.txt").symlink_to(outside / "c.txt")
    with pytest.raises(FileExistsError):
        export.write_tree(dest, [("c.txt", "100644", b"x")])
    assert list(outside.iterdir()) == []
    assert export.write_tree(dest, [("d/e.py", "100755", b"y"), ("f", "120000", b"d/e.py")]) == 2
    assert (dest / "d/e.py").stat().st_mode & 0o777 == 0o555 and (dest / "f").is_symlink()
