"""``git.blobs.read_blobs`` keeps what it read: the second read of a blob starts no git, and a kept blob never
answers for a repository that does not have it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from mergegate.git import blobs
from mergegate.git.core import GitFailed


def _repo(path: Path, files: dict[str, bytes]) -> dict[str, str]:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    shas = {}
    for name, data in files.items():
        (path / name).write_bytes(data)
        shas[name] = subprocess.run(["git", "hash-object", "-w", name], cwd=path, check=True,
                                    capture_output=True, text=True).stdout.strip()
    return shas


@pytest.fixture
def popen_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    real = subprocess.Popen

    def counting(*args: Any, **kwargs: Any) -> Any:
        if list(args[0][:2]) == ["git", "cat-file"]:  # the module is subprocess itself: count only its reads
            calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(blobs.subprocess, "Popen", counting)
    return calls


def test_a_blob_read_twice_is_read_from_git_once(tmp_path: Path, popen_calls: list[Any]) -> None:
    shas = _repo(tmp_path / "r", {"a.txt": b"alpha\n", "b.txt": b"beta\n"})
    first = dict(blobs.read_blobs(shas.values(), tmp_path / "r"))
    assert first == {shas["a.txt"]: b"alpha\n", shas["b.txt"]: b"beta\n"}
    assert len(popen_calls) == 1
    again = dict(blobs.read_blobs([shas["b.txt"], shas["a.txt"], shas["a.txt"]], tmp_path / "r"))
    assert again == first
    assert len(popen_calls) == 1  # both kept: no git this time
    c = _repo_add(tmp_path / "r", "c.txt", b"gamma\n")
    mixed = dict(blobs.read_blobs([shas["a.txt"], c], tmp_path / "r"))
    assert mixed == {shas["a.txt"]: b"alpha\n", c: b"gamma\n"}
    assert len(popen_calls) == 2  # only the new one asked of git


def _repo_add(path: Path, name: str, data: bytes) -> str:
    (path / name).write_bytes(data)
    return subprocess.run(["git", "hash-object", "-w", name], cwd=path, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_a_kept_blob_does_not_answer_for_a_repository_without_it(tmp_path: Path) -> None:
    shas = _repo(tmp_path / "r", {"a.txt": b"only here\n"})
    assert dict(blobs.read_blobs(shas.values(), tmp_path / "r")) == {shas["a.txt"]: b"only here\n"}
    _repo(tmp_path / "other", {})
    with pytest.raises(GitFailed, match="is missing"):
        dict(blobs.read_blobs(shas.values(), tmp_path / "other"))


def test_a_large_blob_is_not_kept_and_the_total_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           popen_calls: list[Any]) -> None:
    monkeypatch.setattr(blobs, "KEEP_BLOB", 10)
    monkeypatch.setattr(blobs, "KEEP_ALL", 12)
    monkeypatch.setattr(blobs, "_KEPT", {})
    monkeypatch.setattr(blobs, "_KEPT_BYTES", [0])
    shas = _repo(tmp_path / "r", {"big": b"x" * 11, "s1": b"12345678", "s2": b"abcdefgh"})
    dict(blobs.read_blobs([shas["big"]], tmp_path / "r"))
    assert blobs._KEPT == {}  # over KEEP_BLOB
    dict(blobs.read_blobs([shas["s1"], shas["s2"]], tmp_path / "r"))
    assert list(blobs._KEPT.values()) == [b"abcdefgh"] and blobs._KEPT_BYTES == [8]  # 16 > 12: started again
    assert dict(blobs.read_blobs([shas["s1"]], tmp_path / "r")) == {shas["s1"]: b"12345678"}
    assert len(popen_calls) == 3
