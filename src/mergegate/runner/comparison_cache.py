"""The comparison rows of each production file, cached by its bytes (``runner/comparisons.py`` is slow on a big tree).

Reading sympy's 103 files that mention a comparison takes about 2.7 s; a check reads the
trusted revision's, which mostly have not changed since the last check.  Rows are kept under
the user's cache directory (``mergegate/comparisons``, beside the bytecode cache), keyed by the
sha256 of the reader's own source, the module's name and the file's bytes, written atomically.
Like the bytecode cache it is the gate's: a sandboxed subject cannot reach it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from mergegate.runner import comparisons


@functools.cache
def _reader_digest() -> bytes:
    from mergegate.runner import dataclass_rules

    return hashlib.sha256(b"".join(Path(str(m.__file__)).read_bytes() for m in (comparisons, dataclass_rules))).digest()


@functools.cache
def cache_root() -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base, "mergegate", "comparisons")
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return None
    return path


def read_module(module: str, source: bytes, package: bool = False) -> dict[str, Any]:
    """``comparisons.read_module``, from the cache where this file was read before."""
    root = cache_root()
    if root is None:
        return comparisons.read_module(module, source, package)
    digest = hashlib.sha256(_reader_digest() + f"{module}\0{package}\0".encode() + source).hexdigest()
    target = root / digest[:2] / f"{digest}.json"
    with contextlib.suppress(OSError, ValueError):
        cached = json.loads(target.read_bytes())
        if isinstance(cached, dict):
            return cached
    rows = comparisons.read_module(module, source, package)
    with contextlib.suppress(OSError):
        target.parent.mkdir(exist_ok=True)
        staged = target.with_suffix(f".{os.getpid()}.tmp")
        with open(staged, "wb") as f:
            f.write(json.dumps(rows).encode())
            f.flush()
            os.fsync(f.fileno())
        os.replace(staged, target)
    return rows
