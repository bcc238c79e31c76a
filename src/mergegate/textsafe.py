"""Text for a person's terminal: every byte a patch, production code or a model chose is shown, not obeyed.

Control characters (C0 but tab, DEL, C1), line and paragraph separators and the
bidirectional overrides become visible escapes (``\\x1b``, ``\\u202e``), so an
error message cannot move the cursor, retitle the terminal, write the clipboard
or reorder what the reader sees.
"""

from __future__ import annotations

import re

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE_LINE = re.compile(f"[\\x00-\\x08\\x0a-\\x1f\\x7f-\\x9f\\u2028\\u2029{_BIDI}]")
_UNSAFE_TEXT = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029{_BIDI}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def line(text: str) -> str:
    """One line: newlines too become ``\\x0a``."""
    return _UNSAFE_LINE.sub(_escape, text)


def text(value: str) -> str:
    """Several lines: newlines stay, everything else unsafe is escaped."""
    return _UNSAFE_TEXT.sub(_escape, value)
