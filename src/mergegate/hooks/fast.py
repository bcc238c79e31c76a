"""The client hooks' fast path: accept an ordinary production commit in milliseconds.

It only ever answers "certainly fine".  Anything else (a guarded path in the
change, no HEAD, a cold cache, an odd repository, any error) returns False and
the full check in ``pre_commit`` runs.  Lean on purpose: no argparse,
dataclasses, yaml or typing on this path, and two git calls at most.

Caches under ``$GIT_DIR/mergegate/`` (written by the full check):
- ``policy-paths``: HEAD's gate.yaml blob id and its ``paths`` section;
- ``verified-trees``: tree ids whose manifest verified.  Sound because a
  commit that touches no guarded path has the same signed files, manifest
  and policy as HEAD, so it verifies exactly when HEAD's tree does.  By the
  same argument HEAD's tree is verified when its first parent's tree is and
  HEAD's own diff touches no guarded path, so the cache follows a branch of
  production commits without a full check;
- ``hook-ok``: the stamp of the last index all three checks accepted, so
  pre-commit's second and third hook process do not repeat the work.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

STAMP, POLICY_CACHE, VERIFIED = "hook-ok", "policy-paths", "verified-trees"


def _git(*args: str) -> str | None:
    """Run git, return stdout or None on failure (posix_spawn: subprocess costs 4 ms to import)."""
    read, write = os.pipe()
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        pid = os.posix_spawnp("git", ["git", *args], os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, write, 1), (os.POSIX_SPAWN_DUP2, devnull, 2), (os.POSIX_SPAWN_CLOSE, read),
        ])
    finally:
        os.close(write)
        os.close(devnull)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    return os.fsdecode(b"".join(chunks)) if os.waitstatus_to_exitcode(status) == 0 else None


def _dump(blob: str, paths: dict[str, object]) -> str:
    """The policy cache as text: the blob id, then one NUL-separated line per field."""
    lines = [blob]
    for name, value in paths.items():
        values = [value] if isinstance(value, str) else list(value)  # type: ignore[call-overload]
        lines.append("\0".join([name, *values]))
    return "\n".join(lines) + "\n"


def _load(text: str, blob: str) -> dict[str, Any] | None:
    lines = text.split("\n")
    if not lines or lines[0] != blob:
        return None
    paths: dict[str, Any] = {}
    for line in lines[1:]:
        if line:
            name, *values = line.split("\0")
            paths[name] = values[0] if name in ("catalog", "manifest", "ledger") else tuple(values)
    return paths


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def accept() -> bool:
    """True only when guard, no-mix and manifest would all accept the commit being made."""
    try:
        return _accept()
    except Exception:  # any doubt: let the full check decide
        return False


def _accept() -> bool:
    ask = ["rev-parse", "--git-path", "mergegate", "--git-path", "index", "HEAD", "HEAD^{tree}", "HEAD:gate.yaml"]
    out = _git(*ask, "HEAD^1^{tree}") or _git(*ask)  # the second form for a root commit
    lines = (out or "").split("\n")
    if len(lines) < 5:
        return False
    cache, index, head, tree, policy_blob = lines[:5]
    if os.path.exists(os.path.join(os.path.dirname(cache), "MERGE_HEAD")):
        return False  # a merge: the full check judges it against every parent
    parent = lines[5] if len(lines) > 6 else None
    index = os.environ.get("GIT_INDEX_FILE") or index
    st = os.stat(index)
    key = f"{head} {tree} {os.path.abspath(index)} {st.st_mtime_ns} {st.st_ctime_ns} {st.st_size} {st.st_ino}\n"
    stamp = os.path.join(cache, STAMP)
    if _read(stamp) == key:
        return True
    from mergegate.rules import pathclass

    paths = _load(_read(os.path.join(cache, POLICY_CACHE)), policy_blob)
    if not paths:
        return False

    def unguarded(names: str | None) -> bool:
        return names is not None and not any(
            pathclass.classify(p, **paths) in pathclass.GUARDED for p in names.split("\0") if p
        )

    verified = _read(os.path.join(cache, VERIFIED)).split("\n")
    if tree not in verified:
        if parent is None or parent not in verified:
            return False
        if not unguarded(_git("diff-tree", "-r", "-z", "--name-only", "--no-renames", "HEAD^1", "HEAD")):
            return False
        remember(cache, verified_tree=tree)
    if not unguarded(_git("diff-index", "--cached", "--name-only", "--no-renames", "-z", "HEAD")):
        return False
    _replace(stamp, key)
    return True


def remember(cache: str, policy_blob: str | None = None, paths: dict[str, object] | None = None,
             verified_tree: str | None = None) -> None:
    """Record what the full check established, for the next commit's fast path (best effort)."""
    try:
        os.makedirs(cache, exist_ok=True)
        if policy_blob and paths is not None:
            text = _dump(policy_blob, paths)  # only HEAD's policy matters
            if _read(os.path.join(cache, POLICY_CACHE)) != text:
                _replace(os.path.join(cache, POLICY_CACHE), text)
        if verified_tree:
            trees = _read(os.path.join(cache, VERIFIED)).split("\n")
            if verified_tree not in trees:
                keep = [*[t for t in trees if t][-63:], verified_tree]
                _replace(os.path.join(cache, VERIFIED), "\n".join(keep) + "\n")
    except OSError:
        pass


def _replace(path: str, text: str) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)
