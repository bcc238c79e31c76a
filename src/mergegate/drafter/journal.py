"""``queue accept`` as one transaction: a journal of what the install will touch, written first.

Before the install writes anything, ``begin`` records every path it will touch
(its bytes and mode in the work tree, its entry in the index).  The queue entry's
``meta.json`` turning ``accepted`` is the commit point; ``finish`` then drops the
journal.  A run killed in between leaves the journal, and the next ``decide``
(accept or reject) calls ``recover``: a candidate still pending is rolled back
(files and index as they were), so a rerun installs it once and a reject leaves
nothing installed; an accepted one only loses its journal.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from mergegate.errors import ConfigError
from mergegate.git import core
from mergegate.records import fsutil

JOURNAL = "accept.journal"


def begin(top: Path, entry_dir: Path, paths: list[str]) -> None:
    state = {rel: _state(top, rel) for rel in dict.fromkeys(paths)}
    fsutil.atomic_write(entry_dir / JOURNAL, json.dumps({"version": 1, "paths": state}, sort_keys=True).encode())


def finish(entry_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(entry_dir / JOURNAL)
        fsutil._fsync_dir(entry_dir)


def pending(entry_dir: Path) -> bool:
    return (entry_dir / JOURNAL).is_file()


def rollback(top: Path, entry_dir: Path) -> None:
    """Put every journalled path back as it was, in the work tree and the index; then drop the journal."""
    paths = _load(entry_dir / JOURNAL)
    records = []
    zero = "0" * (64 if core.object_format(top) == "sha256" else 40)
    for rel, state in paths.items():
        path = top / rel
        fsutil.sweep_temps(path)  # the killed run's half-written file beside it (its writer is gone)
        if state["data"] is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        else:
            fsutil.atomic_write(path, state["data"], mode=state["mode"])
        index = state["index"]
        records.append(f"{index}\t{rel}" if index else f"0 {zero}\t{rel}")
    core.run(["update-index", "-z", "--index-info"], top, stdin="".join(r + "\0" for r in records).encode())
    finish(entry_dir)


_KINDS = {"data": str, "mode": int, "index": str}  # each may also be null (no file, or not in the index)


def _load(path: Path) -> dict[str, dict[str, Any]]:
    """The journalled paths; a journal that is not one this module wrote is a one-line error, not a traceback."""
    from mergegate.records import jsonio

    fix = f"put the oracle files back by hand (git status shows them), then remove {path}"
    data = jsonio.loads(path.read_bytes(), str(path), fix=fix)
    paths = data.get("paths") if isinstance(data, dict) and data.get("version") == 1 else None
    if not isinstance(paths, dict):
        raise ConfigError(str(path), None, "not an accept journal (version 1 with its paths)", fix)
    for rel, state in paths.items():
        if not (isinstance(state, dict) and set(state) == set(_KINDS) and all(
                state[k] is None or type(state[k]) is kind for k, kind in _KINDS.items())):
            raise ConfigError(str(path), None, f"journal entry for {rel[:80]!r} is not data, mode and index", fix)
        bad_index = state["index"] is not None and not re.fullmatch(r"[0-7]{6} [0-9a-f]{40}(?:[0-9a-f]{24})?",
                                                                     state["index"])
        if ((state["data"] is None) != (state["mode"] is None) or bad_index or "\0" in rel or rel.startswith("/")
                or ".." in rel.split("/")):
            raise ConfigError(str(path), None, f"journal entry for {rel[:80]!r} is not one an accept writes", fix)
        try:
            state["data"] = None if state["data"] is None else base64.b64decode(state["data"], validate=True)
        except ValueError:
            raise ConfigError(str(path), None, f"journal entry for {rel[:80]!r}: data is not base64", fix) from None
    return paths


def _state(top: Path, rel: str) -> dict[str, Any]:
    path = top / rel
    data = mode = None
    if path.is_file() and not path.is_symlink():
        data = base64.b64encode(path.read_bytes()).decode()
        mode = stat.S_IMODE(path.stat().st_mode)
    listed = core.out(["ls-files", "-s", "-z", "--", f":(literal,top){rel}"], top).split(b"\0")[0]
    index = None
    if listed:
        meta = listed.split(b"\t", 1)[0].decode().split(" ")
        index = f"{meta[0]} {meta[1]}"
    return {"data": data, "mode": mode, "index": index}
