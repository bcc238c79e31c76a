"""Cold hashing from the work tree: every core, and never a hash of bytes that are not the blob."""

from __future__ import annotations

import hashlib
from pathlib import Path

from mergegate.git import coldhash
from mergegate.records import manifest, policy
from tests.helpers import commit, gate, git, init_repo, write

FIX = "oracles/fixtures/cold"


def _many(repo: Path, n: int = coldhash.MIN_BLOBS + 6) -> dict[str, bytes]:
    files = {f"{FIX}/f{i:03d}.bin": (b"%d-" % i) * (50 + i * 40) for i in range(n)}
    commit(repo, files)
    return files


def _rows(repo: Path, rev: str | None = None) -> dict[str, manifest.Row]:
    return {r.path: r for r in manifest.rows_at(rev, policy.Policy(), repo)}


def test_cold_rows_from_the_work_tree_are_the_blobs_hashes(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    files = _many(repo)
    trace = tmp_path / "trace"
    gate(repo, "manifest", "sign", "--staged", check=0, env={"GIT_TRACE2": str(trace)})
    # Every unhashed blob came from its checked-out file: git read none of them.
    assert "cat-file --batch" not in trace.read_text()
    rows = _rows(repo)
    for path, data in files.items():
        assert rows[path] == manifest.Row(hashlib.sha256(data).hexdigest(), len(data), path)


def test_a_file_that_is_not_its_blob_is_read_from_git(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    files = _many(repo)
    changed, gone = f"{FIX}/f001.bin", f"{FIX}/f002.bin"
    write(repo, {changed: b"not what was committed\n", gone: None})  # on disk only
    (repo / f"{FIX}/f003.bin").unlink()
    (repo / f"{FIX}/f003.bin").symlink_to(repo / f"{FIX}/f004.bin")  # a symlink to other bytes
    rows = _rows(repo)
    for path in (changed, gone, f"{FIX}/f003.bin"):
        assert rows[path].sha256 == hashlib.sha256(files[path]).hexdigest()


def test_crlf_checkouts_still_hash_the_committed_blob(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    write(repo, {".gitattributes": "*.txt text eol=crlf\n"})
    files = {f"{FIX}/t{i:03d}.txt": f"line {i}\nnext\n" for i in range(coldhash.MIN_BLOBS + 2)}
    commit(repo, files)
    for path in files:
        (repo / path).unlink()
    git(repo, "checkout", "--", ".")
    assert (repo / f"{FIX}/t000.txt").read_bytes() == b"line 0\r\nnext\r\n"
    rows = _rows(repo, "HEAD")
    for path, text in files.items():
        assert rows[path].sha256 == hashlib.sha256(text.encode()).hexdigest()


def test_hash_blobs_uses_a_pool_and_drops_mismatches(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.write_bytes(b"x" * 5000)
    blob = hashlib.sha1(b"blob 5000\0" + b"x" * 5000).hexdigest()
    got = coldhash.hash_blobs([(blob, good), ("0" * 40, good), ("1" * 40, tmp_path / "absent")])
    assert got == {blob: (hashlib.sha256(b"x" * 5000).hexdigest(), 5000)}
