"""Seed 000's ``fixture_digest``, byte for byte."""

from __future__ import annotations

import hashlib
import pathlib


def fixture_digest(root: pathlib.Path) -> str:
    """sha256 over each file's relative POSIX path, NUL, bytes, NUL, in sorted path order.

    This is the seed's algorithm unchanged (sorted ``rglob`` of files, ``is_file``
    following symlinks), so two machines agree or fail the match.
    """
    hasher = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        hasher.update(path.relative_to(root).as_posix().encode())
        hasher.update(b"\0")
        hasher.update(path.read_bytes())
        hasher.update(b"\0")
    return hasher.hexdigest()


def fixture_digest_of(files: dict[str, bytes]) -> str:
    """The same digest computed from ``{relative path: bytes}`` (e.g. blobs at a revision).

    ``sorted(Path)`` orders by path parts, which is what sorting the part tuples gives.
    """
    hasher = hashlib.sha256()
    for rel in sorted(files, key=lambda p: tuple(pathlib.PurePosixPath(p).parts)):
        hasher.update(rel.encode(errors="surrogateescape"))
        hasher.update(b"\0")
        hasher.update(files[rel])
        hasher.update(b"\0")
    return hasher.hexdigest()
