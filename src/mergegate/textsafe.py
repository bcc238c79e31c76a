"""Text for a person's terminal: every byte a patch, production code or a model chose is shown, not obeyed.

Control characters (C0 but tab, DEL, C1), line and paragraph separators, the
bidirectional overrides and isolates and the other invisible format characters
(zero-width joiners, soft hyphen, byte-order mark, tag characters), lone
surrogates and the interlinear annotation marks become visible escapes
(``\\x1b``, ``\\u202e``), so an error message or a drafted candidate cannot move
the cursor, erase a line, retitle the terminal, write the clipboard or reorder
what the reader sees.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Unicode's format characters (category Cf), spelled out so no table is built at import.
_FORMAT = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
           "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
           "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f")
_OTHER = "\\x7f-\\x9f\\u2028\\u2029\\ud800-\\udfff"
_UNSAFE_LINE = re.compile(f"[\\x00-\\x08\\x0a-\\x1f{_OTHER}{_FORMAT}]")
_UNSAFE_TEXT = re.compile(f"[\\x00-\\x08\\x0b-\\x1f{_OTHER}{_FORMAT}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def line(text: str) -> str:
    """One line: newlines too become ``\\x0a``."""
    return _UNSAFE_LINE.sub(_escape, text)


def text(value: str) -> str:
    """Several lines: newlines stay, everything else unsafe is escaped."""
    return _UNSAFE_TEXT.sub(_escape, value)


def first_unsafe(value: str) -> tuple[int, int, str] | None:
    """(line, column, escape) of the first character ``text`` would escape, else None.  Pure."""
    match = _UNSAFE_TEXT.search(value)
    if match is None:
        return None
    before = value[: match.start()]
    return before.count("\n") + 1, match.start() - before.rfind("\n"), _escape(match)


def dumps(value: Any, **kwargs: Any) -> str:
    """JSON for a terminal: ASCII only, and DEL (which JSON leaves raw) escaped too."""
    return json.dumps(value, ensure_ascii=True, **kwargs).replace("\x7f", "\\u007f")
