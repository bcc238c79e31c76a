"""What changed, as git reports it with ``-z``: staged, in a commit, between trees, what a merge brought."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mergegate.git.core import empty_tree, git_path, head, out, run, zsplit


@dataclass(frozen=True)
class Change:
    """One line of ``git diff --raw --no-renames``."""

    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str
    status: str  # A, D, M, T, U
    path: str

    @property
    def modes(self) -> tuple[str, str]:
        return self.old_mode, self.new_mode


def parse_raw(data: bytes) -> list[Change]:
    """Parse ``--raw -z --no-renames`` output."""
    fields = data.split(b"\0")
    changes: list[Change] = []
    i = 0
    while i + 1 < len(fields):
        head_ = fields[i]
        if not head_.startswith(b":"):
            i += 1  # a commit id line from diff-tree --stdin, or trailing noise
            continue
        old_mode, new_mode, old_sha, new_sha, status = head_[1:].decode().split(" ")
        changes.append(Change(old_mode, new_mode, old_sha, new_sha, status[:1], os.fsdecode(fields[i + 1])))
        i += 2
    return changes


def staged_changes(cwd: str | Path | None = None) -> list[Change]:
    """What the commit being made changes: the index git is about to commit against HEAD."""
    base = head(cwd) or empty_tree(cwd)
    return parse_raw(out(["diff-index", "--cached", "--raw", "-z", "--no-renames", "--no-ext-diff", base], cwd))


def merge_heads(cwd: str | Path | None = None) -> list[str]:
    """The other parents of a merge being committed (``MERGE_HEAD``), else []."""
    try:
        text = git_path("MERGE_HEAD", cwd).read_text()
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip()]


def staged_commit_changes(cwd: str | Path | None = None) -> list[Change]:
    """What the commit being made changes on its own account.

    For an ordinary commit that is the index against HEAD.  For a merge, the
    paths it takes unchanged from another parent that changed them since the
    merge base are left out (see ``merge_brought``): they were judged when that
    side was committed.  Everything else it changes against HEAD is its own.
    """
    changes = staged_changes(cwd)
    others = merge_heads(cwd)
    head_ = head(cwd)
    if not others or head_ is None:
        return changes
    brought = merge_brought(None, head_, others, [c.path for c in changes], cwd)
    return [c for c in changes if c.path not in brought]


MERGE_PATHS_MAX = 2000  # beyond this, judge the whole first-parent diff (conservative, never laxer)


def merge_brought(target: str | None, first_parent: str, others: Sequence[str], paths: Sequence[str],
                  cwd: str | Path | None = None) -> set[str]:
    """Paths a merge (``target``: a commit, None: the index) takes unchanged from another parent
    that changed them since its merge base with the first parent.

    Such a path was judged in that parent's own commits, just as a fast-forward
    would have been.  A path the merge makes anew (a conflict resolution, an
    evil merge) is not among them, and neither is a path taken from a parent
    that did not change it since the merge base: that would let a merge with an
    old ancestor quietly revert an oracle file.
    """
    if not paths or len(paths) > MERGE_PATHS_MAX:
        return set()
    specs = ["--", *(":(literal,top)" + p for p in paths)]
    brought: set[str] = set()
    for other in others:
        proc = run(["merge-base", first_parent, other], cwd, check=False)
        base = proc.stdout.decode().strip()
        if proc.returncode != 0 or not base:
            continue
        if target is None:
            differs = out(["diff-index", "--cached", "-z", "--name-only", "--no-renames", other, *specs], cwd)
        else:
            differs = out(["diff-tree", "-r", "-z", "--name-only", "--no-renames", target, other, *specs], cwd)
        side = out(["diff-tree", "-r", "-z", "--name-only", "--no-renames", base, other, *specs], cwd)
        brought |= set(zsplit(side)) - set(zsplit(differs))
    return brought & set(paths)


def tree_changes(old: str, new: str, cwd: str | Path | None = None) -> list[Change]:
    """Changes between two trees or commits (recursive, no rename detection)."""
    return parse_raw(out(["diff-tree", "-r", "--raw", "-z", "--no-renames", "--no-ext-diff", old, new], cwd))


def diff_bytes(old: str, new: str, cwd: str | Path | None = None) -> bytes:
    """The patch text between two revisions, as `git apply` reads it (binary-safe)."""
    return out(["diff", "--no-ext-diff", "--no-renames", "--binary", "--no-color", old, new, "--"], cwd)


def worktree_modified(cwd: str | Path | None = None) -> list[str]:
    """Paths whose work tree file differs from the index (stat-based, cheap)."""
    return zsplit(out(["diff-files", "--name-only", "-z", "--no-ext-diff"], cwd))


def tracked_changes(cwd: str | Path | None = None) -> list[str]:
    """Tracked paths whose work tree or index differs from HEAD."""
    return zsplit(out(["diff", "HEAD", "--name-only", "-z", "--no-ext-diff", "--no-renames"], cwd))
