"""Bytecode for a subject, compiled by the gate and read-only in the sandbox.

Parent side.  A subject imports production once per run of the gate, but without
bytecode it compiles every source file first (a second per side for a large
package).  Here the gate compiles the tree's production sources into
*checked-hash* ``.pyc`` files (PEP 552: on import, Python checks the source's hash
and recompiles in memory on any mismatch), keeps them in a cache keyed by the
source's sha256, and lays them out as a ``sys.pycache_prefix`` the sandbox sees
read-only.  Compiling runs no code; it still parses hostile source, so it happens
in a short-lived process with its own limits, and a failure there only means the
subject compiles for itself.  Links are never followed: a production symlink
cannot make the gate read a file outside the tree.

The subject can never write bytecode that another side (or a later check) loads:
only this compiler writes the cache, and the sandbox sees a read-only copy.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import py_compile
import resource
import stat
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

MAX_SOURCE = 8 << 20  # larger sources are left to the subject
TIMEOUT_S = 300
BUDGET_S = 20.0  # compiling new files stops here (a cold cache on a monorepo); cached ones are still laid out


def cache_root() -> Path | None:
    """The gate's bytecode cache for this interpreter, under the user's cache directory."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base, "mergegate", "pyc", importlib.util.MAGIC_NUMBER.hex())
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return None
    return path


def prepare(tree: str, roots: Sequence[str], dest: Path, first: Sequence[str] = ()) -> Path | None:
    """Lay out bytecode for the production sources under ``roots`` as a pycache prefix at ``dest``.

    ``first``: top-level names the oracles import, compiled before the rest while the budget
    lasts.  Returns ``dest``, or None when nothing could be prepared (the subject compiles itself).
    """
    cache = cache_root()
    if cache is None:
        return None
    job = {"tree": tree, "roots": list(roots), "cache": str(cache), "dest": str(dest), "first": list(first)}
    try:
        proc = subprocess.run([sys.executable, "-s", "-S", "-P", __file__, json.dumps(job)],
                              capture_output=True, timeout=TIMEOUT_S, check=False, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    return dest if proc.returncode == 0 and dest.is_dir() else None


# ---------------------------------------------------------------- the compiler process


def regular_sources(tree: str, roots: Sequence[str]) -> list[str]:
    """Regular ``.py`` files under ``roots`` inside ``tree``; no link is followed, in or out."""
    top = os.path.realpath(tree).rstrip("/") + "/"
    found = []
    for root in roots:
        if not os.path.realpath(root).startswith(top) or os.path.islink(root):
            continue
        for here, dirs, files in os.walk(root, followlinks=False):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", ".git")]
            for name in files:
                path = os.path.join(here, name)
                with contextlib.suppress(OSError):
                    info = os.lstat(path)
                    if name.endswith(".py") and stat.S_ISREG(info.st_mode) and info.st_size <= MAX_SOURCE:
                        found.append(path)
    return found


def compiled(source: str, cache: Path, may_compile: bool = True) -> Path | None:
    """The cached checked-hash pyc for ``source``'s bytes, compiling it (if allowed) when it is not there."""
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_SOURCE + 1)
    key = hashlib.sha256(data).hexdigest()
    target = cache / key[:2] / f"{key}.pyc"
    if target.is_file():
        return target
    if not may_compile:
        return None
    target.parent.mkdir(exist_ok=True)
    staged = target.with_suffix(f".{os.getpid()}.tmp")
    with contextlib.suppress(py_compile.PyCompileError, SyntaxError, ValueError, OSError, RecursionError,
                             MemoryError):
        # Compiled from the bytes just read (never reopened by path): what is cached is what was hashed.
        staged_source = staged.with_suffix(".src")
        staged_source.write_bytes(data)
        try:
            py_compile.compile(str(staged_source), cfile=str(staged), dfile=source, doraise=True,
                               invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
        finally:
            staged_source.unlink()
        os.replace(staged, target)
        return target
    return None


def lay_out(sources: Sequence[str], cache: Path, dest: Path) -> None:
    """``dest`` + each source's directory + ``name.<tag>.pyc``, as ``sys.pycache_prefix`` looks it up."""
    tag = sys.implementation.cache_tag
    deadline = time.monotonic() + BUDGET_S
    for source in sources:
        pyc = compiled(source, cache, may_compile=time.monotonic() < deadline)
        if pyc is None:
            continue
        head, name = os.path.split(source)
        target = Path(str(dest) + head) / f"{name[:-3]}.{tag}.pyc"
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(pyc, target)
        except OSError:
            target.write_bytes(pyc.read_bytes())


def main() -> None:
    job = json.loads(sys.argv[1])
    for which, limit in ((resource.RLIMIT_AS, 4 << 30), (resource.RLIMIT_CPU, TIMEOUT_S)):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (limit, limit))
    dest = Path(job["dest"])
    dest.mkdir(parents=True)
    sources = regular_sources(job["tree"], job["roots"])
    first = tuple(f"/{name}/" for name in job.get("first", ())) + tuple(f"/{name}.py" for name in job.get("first", ()))
    sources.sort(key=lambda path: not any(part in path for part in first))  # the oracles' imports first
    lay_out(sources, Path(job["cache"]), dest)


if __name__ == "__main__":
    main()
