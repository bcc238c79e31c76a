"""The secret-marker scan in linear time, with a size cap and a clear reason above it.

A marker such as ``-----BEGIN .*PRIVATE KEY-----`` makes Python's backtracking
search quadratic on a long line full of ``-----BEGIN `` (each start runs to the
line's end).  We search fixed overlapping windows instead: every match up to
``STEP`` characters long lies whole in one window, and the work per window is
bounded, so the scan is linear in the text.  A match that only exists across a
window edge is not a key anyone would paste; a false hit at an edge (``$``,
``\\b``) fails closed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

WINDOW = 2048
STEP = 1024  # windows overlap by WINDOW - STEP: any match up to STEP characters is seen whole
MAX_SCAN_BYTES = 16 * 1024 * 1024  # added text plus binary files a patch may bring; above it the canary misses


def search(patterns: Iterable[re.Pattern[str]], text: str) -> re.Pattern[str] | None:
    """The first pattern with a match in ``text``, or None; time linear in ``len(text)``."""
    patterns = tuple(patterns)
    if len(text) <= WINDOW:
        return next((p for p in patterns if p.search(text)), None)
    for pattern in patterns:
        for start in range(0, len(text) - WINDOW + STEP, STEP):
            if pattern.search(text, start, start + WINDOW):
                return pattern
    return None


def over_cap(size: int, cap: int = MAX_SCAN_BYTES) -> str | None:
    """The reason a patch of ``size`` scanned bytes is refused unread, or None."""
    if size <= cap:
        return None
    return (f"the patch brings {size} bytes to scan for secret markers, over the {cap}-byte cap; "
            "split it into smaller patches")
