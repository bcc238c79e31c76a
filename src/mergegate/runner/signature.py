"""Witness and signature normalisation (seed 000 step 3, seed 003 step 3).

A signature hashes the property id, the assertion site and the minimized
counterexample, after stripping what would not identify the failure tomorrow:
memory addresses, timestamps, temporary and work-tree paths.  Strip no more:
two different failures must not share a hash.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{4,}\b")
_TIMESTAMP = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?\b"
)
_TEMP = re.compile(r"(?:/private)?/(?:tmp|var/folders|var/tmp)/[^\s'\",)\]]*")


def normalise(text: str, roots: Iterable[str] = ()) -> str:
    """``text`` with addresses, timestamps, the given roots and temp paths replaced."""
    for root in sorted((r.rstrip("/") for r in roots if r), key=len, reverse=True):
        text = text.replace(root, "<tree>")
    text = _TEMP.sub("<tmp>", text)
    text = _TIMESTAMP.sub("<time>", text)
    return _ADDRESS.sub("0x?", text)


def signature(prop: str, site: str, counterexample: str, roots: Iterable[str] = ()) -> str:
    """sha256 of prop id, assertion site and the normalised minimized counterexample."""
    hasher = hashlib.sha256()
    for part in (prop, site, normalise(counterexample, roots)):
        hasher.update(part.encode("utf-8", "surrogateescape"))
        hasher.update(b"\0")
    return hasher.hexdigest()
