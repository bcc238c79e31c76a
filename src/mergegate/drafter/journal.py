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
import stat
from pathlib import Path
from typing import Any

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
    data = json.loads((entry_dir / JOURNAL).read_bytes())
    paths: dict[str, Any] = data["paths"]
    records = []
    zero = "0" * (64 if core.object_format(top) == "sha256" else 40)
    for rel, state in paths.items():
        path = top / rel
        if state["data"] is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        else:
            fsutil.atomic_write(path, base64.b64decode(state["data"]), mode=state["mode"])
        index = state["index"]
        records.append(f"{index}\t{rel}" if index else f"0 {zero}\t{rel}")
    core.run(["update-index", "-z", "--index-info"], top, stdin="".join(r + "\0" for r in records).encode())
    finish(entry_dir)


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
