"""Atomic file writes and a file lock: the ledger, manifest and queue never half-written."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path


def atomic_write(path: str | Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file, fsync and rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_temps(path)
    _write_replace(path, data, mode)
    _fsync_dir(path.parent)


def atomic_write_many(items: Iterable[tuple[Path, bytes, int | None]]) -> None:
    """``atomic_write`` of many files: each file written, fsynced and renamed on its own (a reader sees
    each whole or not at all), the folders' leftovers swept once and each folder synced once at the end,
    not per file (a catalog import writes a thousand entries into one folder)."""
    folders: dict[Path, None] = {}
    for path, data, mode in items:
        if path.parent not in folders:
            path.parent.mkdir(parents=True, exist_ok=True)
            sweep_folder(path.parent)
            folders[path.parent] = None
        _write_replace(path, data, mode)
    for folder in folders:
        _fsync_dir(folder)


def _write_replace(path: Path, data: bytes, mode: int | None) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        elif path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


STALE_S = 60.0  # a write takes milliseconds: a temporary file this old was left by a killed run


def sweep_temps(path: Path) -> None:
    """Remove the temporary files a killed ``atomic_write`` of ``path`` left beside it: any whose writer
    (the pid in its name) is gone, and any older than ``STALE_S`` (a pid reused since)."""
    import time

    prefix = f".{path.name}."
    with contextlib.suppress(OSError):
        for stale in path.parent.glob(f"{glob_escape(prefix)}*.tmp"):
            _sweep_one(stale, stale.name[len(prefix):].split("-", 1)[0], time.time())


def sweep_folder(folder: Path) -> None:
    """``sweep_temps`` for every file of ``folder`` at once (one listing, not one glob per file)."""
    import time

    now = time.time()
    with contextlib.suppress(OSError):
        for stale in folder.glob(".*.tmp"):
            # ``.<name>.<pid>-<random>.tmp``: the pid is the part after the last "." before the "-"
            head = stale.name[:-4].rpartition("-")[0]
            _sweep_one(stale, head.rpartition(".")[2], now)


def _sweep_one(stale: Path, writer: str, now: float) -> None:
    with contextlib.suppress(OSError):
        if (writer.isdigit() and len(writer) < 12 and not pid_alive(int(writer))) or \
                now - stale.lstat().st_mtime > STALE_S:
            stale.unlink()


def glob_escape(name: str) -> str:
    import glob

    return glob.escape(name)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


LOCK_WAIT_S = 30.0  # the gate's own writes under a lock take seconds; longer means a stuck gate


@contextlib.contextmanager
def locked(lock_path: str | Path, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """An exclusive advisory lock held for the block.

    Retried for up to ``wait_s`` (saying once, on stderr, that it waits); then a usage error:
    another gate is running.  Never a silent wait without end.
    """
    import sys
    import time

    from mergegate.errors import UsageError

    lock_path = Path(lock_path)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline, said = time.monotonic() + wait_s, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise UsageError(f"another gate is running: {lock_path} is held",
                                     "wait for it to finish, then run this again") from None
                if not said:
                    print(f"gate: another gate holds {lock_path}; waiting up to {wait_s:g}s", file=sys.stderr)
                    said = True
                time.sleep(0.05)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one we may not signal counts: it is alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


WORK_AREA = ".gate"


def work_area(top: Path) -> Path:
    """``<top>/.gate``: queue, evidence, tickets; it ignores itself, so it is never committed."""
    area = Path(top) / WORK_AREA
    area.mkdir(parents=True, exist_ok=True)
    ignore = area / ".gitignore"
    if not ignore.exists():
        atomic_write(ignore, b"# mergegate's work area: never committed\n*\n")
    return area
