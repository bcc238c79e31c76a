"""Path globs as gate.yaml writes them.

``*`` and ``?`` stay inside one path segment, ``**`` spans any number of
segments, ``[...]`` is a character class.  A pattern without a ``/`` matches a
file name at any depth (as in ``.gitignore``): ``conftest.py`` guards every
conftest the runner could pick up, not only the one at the root.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from functools import lru_cache


@lru_cache(maxsize=512)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """Translate one glob to an anchored regular expression."""
    anchored = "/" in pattern.rstrip("/")
    pattern = pattern.strip("/")
    body = _translate(pattern)
    if not (pattern.endswith("/**") or pattern == "**"):
        body += "(?:/.*)?"  # a directory pattern also covers everything below it
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(prefix + body + r"\Z", re.DOTALL)


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pattern.find("]", i + 2)
            if j == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1 : j].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def matches(path: str, patterns: Iterable[str]) -> bool:
    """True when ``path`` (repository-relative, ``/``-separated) matches any pattern."""
    return compile_many(tuple(patterns)).match(path) is not None


@lru_cache(maxsize=256)
def compile_many(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One alternation for a pattern list: one regex call per path, not one per pattern."""
    if not patterns:
        return re.compile(r"(?!)")
    return re.compile("|".join(f"(?:{compile_glob(p).pattern})" for p in patterns), re.DOTALL)


def is_valid(pattern: str) -> bool:
    try:
        compile_glob(pattern)
    except re.error:
        return False
    return bool(pattern.strip("/"))


def globs_match_any(text: str, patterns: tuple[str, ...]) -> bool:
    """Match a whole identity (an e-mail, a login) against globs, case-insensitively.

    Only ``*`` and ``?`` are wildcards: ``*[bot]@*`` means a literal ``[bot]``, as
    GitHub spells its app accounts; under fnmatch it would be a character class
    matching almost every address.
    """
    return any(_identity_glob(p).fullmatch(text) for p in patterns)


@functools.lru_cache(maxsize=128)
def _identity_glob(pattern: str) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(body, re.IGNORECASE | re.DOTALL)
