"""The repository at HEAD, minus every guarded path, written into a fresh folder for the sandbox.

A hostile commit can hold any tree: entries named ``..``, ``.``, empty names,
absolute or duplicate paths, a symlink and a file below it.  Every path is checked
before anything is written (``check_paths``, pure), and the writer creates each
directory and file itself, never following a link (``O_NOFOLLOW | O_EXCL``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from mergegate.errors import UsageError
from mergegate.git import blobs as git_blobs
from mergegate.git import core
from mergegate.records.policy import GUARDED, Policy

NAME_MAX = 255


def path_problem(path: str) -> str | None:
    """Why one tree path cannot be written under a folder, or None.  Pure."""
    if not path or path.startswith("/"):
        return "is empty or absolute"
    for part in path.split("/"):
        if part in ("", ".", ".."):
            return f"has a {part or 'empty'!r} component"
        if len(os.fsencode(part)) > NAME_MAX:
            return f"has a component over {NAME_MAX} bytes"
    return None


def check_paths(paths: Iterable[str]) -> tuple[str, str] | None:
    """The first (path, problem) of a tree's paths: unsafe, duplicate, or a file with entries below it."""
    leaves: set[str] = set()
    parents: set[str] = set()
    for path in paths:
        problem = path_problem(path)
        if problem is None and path in leaves:
            problem = "is listed twice"
        if problem is None and path in parents:
            problem = "is both a file and a directory"
        parts = path.split("/")
        prefixes = {"/".join(parts[:i]) for i in range(1, len(parts))}
        if problem is None and prefixes & leaves:
            problem = f"lies below the file {sorted(prefixes & leaves)[0]!r}"
        if problem is not None:
            return path, problem
        leaves.add(path)
        parents |= prefixes
    return None


def _mkdirs(dest: Path, rel_parts: list[str], made: list[Path]) -> Path:
    here = dest
    for part in rel_parts:
        here = here / part
        try:
            os.mkdir(here, 0o700)
            made.append(here)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(here).st_mode):  # never walk through a link or a file
                raise UsageError(f"export: {here} is not a directory", "report this tree") from None
    return here


def write_tree(dest: Path, files: Iterable[tuple[str, str, bytes]]) -> int:
    """Write (path, mode, bytes) entries under ``dest``; paths must have passed ``check_paths``."""
    made: list[Path] = []
    count = 0
    for path, mode, data in files:
        parts = path.split("/")
        target = _mkdirs(dest, parts[:-1], made) / parts[-1]
        if mode == git_blobs.SYMLINK_MODE:
            os.symlink(os.fsdecode(data), target)
        else:
            perm = 0o555 if mode == "100755" else 0o444
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                os.fchmod(handle.fileno(), perm)
        count += 1
    for directory in made:
        os.chmod(directory, 0o755)
    return count


def export_head(policy: Policy, dest: Path, cwd: str | Path | None = None) -> int:
    """Write HEAD's tree, minus every guarded path, into the empty folder ``dest``; the file count.

    A filtered copy rather than the work tree: triage runs against HEAD, and the
    oracle tree, fixtures, catalog, manifest, ledger and policy are simply absent.
    """
    head = core.head(cwd)
    if head is None:
        raise UsageError("the repository has no commit yet", "commit the production code first")
    everything = git_blobs.ls_tree(head, cwd)
    bad = check_paths(e.path for e in everything)
    if bad is not None:
        raise UsageError(f"HEAD's tree holds the path {bad[0]!r}, which {bad[1]}; nothing was exported",
                         "rewrite the commit without it (git itself never writes such a tree)")
    entries = [e for e in everything if not e.is_submodule and policy.classify(e.path) not in GUARDED]
    blobs = dict(git_blobs.read_blobs((e.sha for e in entries), cwd))
    return write_tree(dest, ((e.path, e.mode, blobs[e.sha]) for e in entries))
