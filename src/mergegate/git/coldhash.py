"""Hash many blobs cold on every core, reading the work tree's copies where they are the blobs.

A fresh clone has no blob-hash cache.  Reading each blob back through git costs an
inflate (and delta resolution) per blob before it is hashed; the checked-out file
holds the same bytes without that work.  Each file is read in large chunks in a
thread pool (hashlib releases the GIL on large buffers) and hashed twice in one
pass: sha256 for the manifest and git's own blob id.  A file counts only when that
id is the blob's, so a file changed on disk, a CRLF or smudge filter, or a file
swapped under us is simply left for git to read: never a wrong hash.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CHUNK = 1 << 20
MIN_BLOBS = 64  # below this many unhashed blobs, git reads them (the pool is not worth it)


def workers() -> int:
    """Threads to hash with: two per core this process may use (a cold read waits on the disk;
    the other thread of the pair hashes meanwhile)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    return 2 * max(1, cores)


def hash_file(path: Path, blob_id: str) -> tuple[str, int] | None:
    """``(sha256, size)`` of the file at ``path`` if its bytes are the blob ``blob_id``, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        size = info.st_size
        git_id = hashlib.new("sha1" if len(blob_id) == 40 else "sha256", b"blob %d\0" % size)
        digest = hashlib.sha256()
        buf = bytearray(min(CHUNK, max(size, 1)))
        view = memoryview(buf)
        seen = 0
        while n := os.readv(fd, [buf]):
            seen += n
            git_id.update(view[:n])
            digest.update(view[:n])
        if seen != size or git_id.hexdigest() != blob_id:
            return None
        return digest.hexdigest(), size
    except OSError:
        return None
    finally:
        os.close(fd)


def hash_blobs(wanted: Sequence[tuple[str, Path]]) -> dict[str, tuple[str, int]]:
    """blob id -> ``(sha256, size)`` for each ``(blob id, file)`` whose file holds that blob.

    Files are spread over ``workers()`` threads; the ones that do not match are left out.
    """
    unique = list(dict(wanted).items())
    if not unique:
        return {}
    n = workers()
    if len(unique) < 2:
        pairs = [(b, hash_file(p, b)) for b, p in unique]
    else:
        with ThreadPoolExecutor(max_workers=n) as pool:
            pairs = list(zip((b for b, _p in unique),
                             pool.map(lambda item: hash_file(item[1], item[0]), unique), strict=True))
    return {b: hit for b, hit in pairs if hit is not None}
