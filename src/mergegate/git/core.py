"""Running git: one command with lock waits and one-line errors; the repository, its revisions and work trees."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from mergegate.errors import InternalError, UsageError


class GitFailed(InternalError):
    """A git command failed where it should not have."""


class Busy(UsageError):
    """Another git (another gate) holds a lock this command needs; we waited and it did not let go."""


LOCK_WAITS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)  # about 3 s in all, then "another gate is running"


_LOCKED = re.compile(rb"Unable to create '([^']*\.lock)': File exists")


def run(
    args: Sequence[str],
    cwd: str | Path | None = None,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git`` with ``args``; on failure raise GitFailed with git's own words.

    A lock another git holds (``index.lock``) is waited for, a few times; if it stays,
    ``Busy`` says another gate is running (never git's advice to delete the lock).
    """
    for wait in (*LOCK_WAITS, None):
        proc = _run_once(args, cwd, stdin, env)
        locked = _LOCKED.search(proc.stderr) if proc.returncode != 0 else None
        if locked is None:
            break
        if wait is None:
            raise Busy(f"another gate (or git) is running: {os.fsdecode(locked.group(1))} is held",
                       "wait for it to finish, then run this again")
        time.sleep(wait)
    if check and proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise GitFailed(f"git {' '.join(args[:3])} failed: {err[-1] if err else proc.returncode}")
    return proc


def _run_once(args: Sequence[str], cwd: str | Path | None, stdin: bytes | None,
              env: Mapping[str, str] | None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, input=stdin, capture_output=True,
            env=None if env is None else dict(env), check=False,
        )
    except FileNotFoundError:
        if cwd is not None and not os.path.isdir(cwd):
            raise UsageError(f"{cwd}: no such directory", "pass an existing repository path") from None
        raise UsageError("git is not installed or not on PATH", "install git") from None


def out(args: Sequence[str], cwd: str | Path | None = None, stdin: bytes | None = None) -> bytes:
    return run(args, cwd, stdin).stdout


def zsplit(data: bytes) -> list[str]:
    """Split NUL-terminated output into str paths (undecodable bytes survive the round trip)."""
    parts = data.split(b"\0")
    if parts and parts[-1] == b"":
        parts.pop()
    return [os.fsdecode(p) for p in parts]


def toplevel(cwd: str | Path | None = None) -> Path:
    """The work tree root; a non-git directory is a usage error."""
    proc = run(["rev-parse", "--show-toplevel"], cwd, check=False)
    if proc.returncode != 0:
        where = os.path.abspath(cwd or os.getcwd())
        raise UsageError(f"{where}: not a git repository", "run inside a git work tree, or `git init`")
    return Path(os.fsdecode(proc.stdout.rstrip(b"\n")))


def ensure_repo(cwd: str | Path | None = None) -> None:
    """A usage error unless ``cwd`` is inside a repository (bare repositories count)."""
    if run(["rev-parse", "--git-dir"], cwd, check=False).returncode != 0:
        where = os.path.abspath(cwd or os.getcwd())
        raise UsageError(f"{where}: not a git repository", "run inside a git work tree, or `git init`")


def git_path(name: str, cwd: str | Path | None = None) -> Path:
    """``git rev-parse --git-path``: where hooks, caches and locks live (worktree-aware)."""
    raw = os.fsdecode(out(["rev-parse", "--git-path", name], cwd).rstrip(b"\n"))
    path = Path(raw)
    return path if path.is_absolute() else Path(cwd or os.getcwd()) / path


def resolve(rev: str, cwd: str | Path | None = None) -> str | None:
    """The object id of ``rev`` peeled to a commit, or None if it does not exist."""
    proc = run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], cwd, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def must_resolve(rev: str, cwd: str | Path | None = None) -> str:
    sha = resolve(rev, cwd)
    if sha is None:
        raise UsageError(f"revision {rev!r} does not exist", "pass a branch, tag or commit id; `git log` lists them")
    return sha


def empty_tree(cwd: str | Path | None = None) -> str:
    """The empty tree's id in this repository's hash (SHA-1 or SHA-256)."""
    return out(["hash-object", "-t", "tree", "--stdin"], cwd, b"").decode().strip()


def head(cwd: str | Path | None = None) -> str | None:
    """HEAD's commit, or None before the first commit."""
    return resolve("HEAD", cwd)


def merge_base(a: str, b: str, cwd: str | Path | None = None) -> str:
    proc = run(["merge-base", a, b], cwd, check=False)
    if proc.returncode != 0:
        raise UsageError(f"{a} and {b} have no common ancestor", "pass revisions from one history")
    return proc.stdout.decode().strip()


def author_email(cwd: str | Path | None = None) -> str:
    """The author of the commit being made (``GIT_AUTHOR_*`` and config honoured)."""
    proc = run(["var", "GIT_AUTHOR_IDENT"], cwd, check=False)
    ident = proc.stdout.decode(errors="replace")
    if "<" in ident and ">" in ident:
        return ident[ident.index("<") + 1 : ident.index(">")]
    return ""


def untracked(cwd: str | Path | None = None) -> list[str]:
    """Untracked, not ignored files (repository-relative)."""
    return zsplit(out(["ls-files", "-z", "--others", "--exclude-standard", "--full-name", ":/"], cwd))


def object_format(cwd: str | Path | None = None) -> str:
    """``sha1`` or ``sha256``: the repository's hash."""
    return out(["rev-parse", "--show-object-format"], cwd).decode().strip()


def symbolic_head(cwd: str | Path | None = None) -> str | None:
    """The ref HEAD names (a bare repository's default branch), or None when HEAD is detached."""
    proc = run(["symbolic-ref", "-q", "HEAD"], cwd, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def is_ancestor(ancestor: str, descendant: str, cwd: str | Path | None = None) -> bool:
    """``merge-base --is-ancestor``: is moving ``ancestor`` to ``descendant`` a fast-forward?"""
    proc = run(["merge-base", "--is-ancestor", ancestor, descendant], cwd, check=False)
    if proc.returncode not in (0, 1):
        raise GitFailed(f"git merge-base --is-ancestor failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.returncode == 0


def worktree_add(path: str | Path, rev: str, cwd: str | Path | None = None, omit: Sequence[str] = ()) -> None:
    """``git worktree add --detach`` of ``rev`` at ``path`` (no hooks, no checkout noise).

    ``omit``: folders (relative, literal) not written into the tree: the gate's own records, which
    it reads from git, never from a tree (a catalog of 1,000 entries is 1,000 files to write).
    """
    hooks_off = ["-c", "core.hooksPath=/dev/null"]
    skip = [f":(exclude,literal){d}" for d in (d.strip("/") for d in omit) if d and d != "."]
    run([*hooks_off, "worktree", "add", "--detach", "--quiet", "--force",
         *(["--no-checkout"] if skip else []), os.fspath(path), rev], cwd)
    if skip:
        run([*hooks_off, "checkout", "--quiet", "HEAD", "--", ".", *skip], path)


def worktree_remove(path: str | Path, cwd: str | Path | None = None) -> None:
    """Remove a worktree (forcefully: it holds the gate's scratch files), then prune."""
    run(["worktree", "remove", "--force", "--force", os.fspath(path)], cwd, check=False)
    run(["worktree", "prune"], cwd, check=False)


def worktree_list(cwd: str | Path | None = None) -> list[str]:
    """Paths of every registered worktree (the main one first)."""
    data = out(["worktree", "list", "--porcelain", "-z"], cwd)
    return [os.fsdecode(f[len(b"worktree "):]) for f in data.split(b"\0") if f.startswith(b"worktree ")]
