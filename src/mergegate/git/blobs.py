"""Trees, the index and blobs, read in batches: ls-tree and ls-files entries, cat-file --batch, a private index."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from mergegate.git.core import GitFailed, out, run, zsplit

SYMLINK_MODE = "120000"


GITLINK_MODE = "160000"


@dataclass(frozen=True)
class Entry:
    """One file of a tree or of the index."""

    mode: str
    sha: str
    path: str

    @property
    def is_symlink(self) -> bool:
        return self.mode == SYMLINK_MODE

    @property
    def is_submodule(self) -> bool:
        return self.mode == GITLINK_MODE


def ls_tree(rev: str, cwd: str | Path | None = None) -> list[Entry]:
    """Every file of ``rev`` (recursive, full tree)."""
    entries = []
    for record in zsplit(out(["ls-tree", "-r", "-z", "--full-tree", rev], cwd)):
        meta, path = record.split("\t", 1)
        mode, _type, sha = meta.split(" ")
        entries.append(Entry(mode, sha, path))
    return entries


def ls_index(cwd: str | Path | None = None) -> list[Entry]:
    """Every file of the index in use (``GIT_INDEX_FILE`` honoured); stage 0 only."""
    entries = []
    for record in zsplit(out(["ls-files", "--stage", "-z"], cwd)):
        meta, path = record.split("\t", 1)
        mode, sha, stage = meta.split(" ")
        if stage == "0":
            entries.append(Entry(mode, sha, path))
    return entries


# Blobs this process has read, by repository and id: a check reads its catalog's entries and oracle files
# three times (the catalog, the specs, each side's spec hashes).  An id names its content, so a kept blob
# is the blob; keyed by the repository too, so a blob missing from one repository is still an error there.
_KEPT: dict[tuple[str, str], bytes] = {}
_KEPT_BYTES = [0]
KEEP_BLOB, KEEP_ALL = 1 << 20, 64 << 20  # a blob over 1 MiB is never kept; past 64 MiB in all, start again


def read_blobs(shas: Iterable[str], cwd: str | Path | None = None) -> Iterator[tuple[str, bytes]]:
    """Stream ``(sha, content)`` for many blobs through one ``cat-file --batch`` (those read before: kept)."""
    where = os.path.abspath(cwd if cwd is not None else os.curdir)
    wanted = []
    for sha in dict.fromkeys(shas):
        kept = _KEPT.get((where, sha))
        if kept is None:
            wanted.append(sha)
        else:
            yield sha, kept
    for sha, data in _cat_file(wanted, cwd):
        if len(data) <= KEEP_BLOB:
            if _KEPT_BYTES[0] + len(data) > KEEP_ALL:
                _KEPT.clear()
                _KEPT_BYTES[0] = 0
            _KEPT[(where, sha)] = data
            _KEPT_BYTES[0] += len(data)
        yield sha, data


def _cat_file(wanted: list[str], cwd: str | Path | None) -> Iterator[tuple[str, bytes]]:
    if not wanted:
        return
    proc = subprocess.Popen(
        ["git", "cat-file", "--batch"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        # Feeding all ids up front can deadlock once both pipes fill; a writer thread avoids it.
        import threading

        def feed() -> None:
            assert proc.stdin is not None
            try:
                proc.stdin.write(b"".join(s.encode() + b"\n" for s in wanted))
                proc.stdin.close()
            except BrokenPipeError:
                pass

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        for sha in wanted:
            header = proc.stdout.readline().split()
            if len(header) != 3:
                raise GitFailed(f"git cat-file: object {sha} is missing")
            size = int(header[2])
            data = proc.stdout.read(size)
            proc.stdout.read(1)
            yield sha, data
        writer.join()
    finally:
        proc.stdout.close()
        proc.wait()


def read_blob(sha: str, cwd: str | Path | None = None) -> bytes:
    return out(["cat-file", "blob", sha], cwd)


def file_at(rev: str | None, path: str, cwd: str | Path | None = None) -> bytes | None:
    """A file's bytes at ``rev`` (None: the index in use); None when it is not there."""
    if rev is None:
        entries = {e.path: e for e in _ls_index_paths([path], cwd)}
    else:
        entries = {e.path: e for e in _ls_tree_paths(rev, [path], cwd)}
    entry = entries.get(path)
    if entry is None or entry.is_submodule:
        return None
    return read_blob(entry.sha, cwd)


def _ls_tree_paths(rev: str, paths: Sequence[str], cwd: str | Path | None) -> list[Entry]:
    records = zsplit(out(["ls-tree", "-z", "--full-tree", rev, "--", *paths], cwd))
    result = []
    for record in records:
        meta, path = record.split("\t", 1)
        mode, _type, sha = meta.split(" ")
        result.append(Entry(mode, sha, path))
    return result


def _ls_index_paths(paths: Sequence[str], cwd: str | Path | None) -> list[Entry]:
    specs = [":(literal,top)" + p for p in paths]
    records = zsplit(out(["ls-files", "--stage", "-z", "--full-name", "--", *specs], cwd))
    result = []
    for record in records:
        meta, path = record.split("\t", 1)
        mode, sha, stage = meta.split(" ")
        if stage == "0":
            result.append(Entry(mode, sha, path))
    return result


def patched_tree(diff: bytes, base: str, cwd: str | Path | None = None) -> tuple[bool, str, str | None]:
    """``git read-tree BASE`` into a temporary ``GIT_INDEX_FILE``, then ``git apply --check
    --cached``; on success apply it there and ``write-tree``.

    Returns ``(ok, git's message, tree id or None)``.  The work tree, the real
    index and the object store's refs are untouched (``write-tree`` only adds objects).
    """
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gate-apply-") as tmp:
        env = dict(os.environ)
        env["GIT_INDEX_FILE"] = os.path.join(tmp, "index")
        run(["read-tree", base], cwd, env=env)
        check = run(["apply", "--check", "--cached", "-"], cwd, stdin=diff, env=env, check=False)
        if check.returncode != 0:
            lines = check.stderr.decode(errors="replace").strip().splitlines()
            return False, (lines[-1] if lines else f"git apply exited {check.returncode}"), None
        run(["apply", "--cached", "-"], cwd, stdin=diff, env=env)
        tree = run(["write-tree"], cwd, env=env).stdout.decode().strip()
        return True, "applies cleanly", tree


def files_at(treeish: str, paths: Sequence[str], cwd: str | Path | None = None) -> dict[str, bytes]:
    """``{path: bytes}`` of the regular files among ``paths`` in a tree or commit (absent ones left out)."""
    if not paths:
        return {}
    entries = [e for e in _ls_tree_paths(treeish, list(paths), cwd) if not e.is_submodule and not e.is_symlink]
    blobs = dict(read_blobs((e.sha for e in entries), cwd))
    return {e.path: blobs[e.sha] for e in entries}


def batch_check(names: Sequence[str], cwd: str | Path | None = None) -> dict[str, tuple[str, str] | None]:
    """``cat-file --batch-check`` for many object names at once: name -> (id, type), None if absent.

    A name may carry a peel suffix (``<id>^{commit}``); one process for all of them.
    """
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return {}
    data = out(["cat-file", "--batch-check"], cwd, b"".join(n.encode() + b"\n" for n in wanted))
    lines = data.decode(errors="replace").split("\n")
    result: dict[str, tuple[str, str] | None] = {}
    for name, line in zip(wanted, lines, strict=False):
        fields = line.split(" ")
        ok = len(fields) == 3 and fields[2].isdigit()
        result[name] = (fields[0], fields[1]) if ok else None
    return result
