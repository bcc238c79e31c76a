"""Shared builders for the benchmarks: big repositories made fast with git fast-import."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers import clean_env, gate, git  # noqa: E402


def fast_import(repo: Path, files: dict[str, bytes], message: str = "bulk") -> None:
    """One commit holding ``files`` on top of HEAD, via fast-import (seconds, not minutes)."""
    parent = git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False).stdout.strip()
    chunks = [b"commit refs/heads/main\n", b"committer Bench <b@example.com> 1700000000 +0000\n",
              b"data %d\n%s\n" % (len(message), message.encode())]
    if parent:
        chunks.append(b"from %s\n" % parent.encode())
    for path, data in files.items():
        chunks.append(b"M 100644 inline %s\ndata %d\n" % (path.encode(), len(data)))
        chunks.append(data + b"\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(chunks), check=True,
                   env=clean_env())
    git(repo, "reset", "-q", "--hard", "main")


def temp_dir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))


def median(values: list[float]) -> float:
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


__all__ = ["clean_env", "fast_import", "gate", "git", "median", "os", "temp_dir"]


def version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def mergegate_rev() -> str:
    """The commit of the mergegate under test, and whether its src/ has uncommitted changes."""
    import mergegate

    root = Path(mergegate.__file__).resolve().parents[2]
    rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         check=False).stdout.strip()
    if not rev:
        return f"{version('mergegate')} from {root} (not a git checkout)"
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "src"], capture_output=True,
                           text=True, check=False).stdout.strip()
    return f"{rev}{' + uncommitted changes in src/' if dirty else ''} ({root})"
