"""Terminal-safe text: what production or a model wrote is shown, never obeyed."""

from __future__ import annotations

import pytest

from mergegate import textsafe


@pytest.mark.parametrize(("raw", "shown"), [
    ("plain text", "plain text"),
    ("\x1b[2K\x1b[1G# looks harmless", "\\x1b[2K\\x1b[1G# looks harmless"),
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
    ("\x1b]52;c;ZXZpbA==\x07", "\\x1b]52;c;ZXZpbA==\\x07"),  # OSC 52: write the clipboard
    ("\x9b2J", "\\x9b2J"),  # a C1 control sequence introducer
    ("abc\u202edcba", "abc\\u202edcba"),  # a bidirectional override
    ("tab\tstays", "tab\tstays"),
    ("two\nlines\r", "two\\x0alines\\x0d"),
    ("sep\u2028arator", "sep\\u2028arator"),
])
def test_unsafe_characters_become_visible_escapes(raw: str, shown: str) -> None:
    assert textsafe.line(raw) == shown
    assert "\x1b" not in textsafe.text(raw) and "\u202e" not in textsafe.text(raw)


def test_text_keeps_its_newlines() -> None:
    assert textsafe.text("a\nb\x1b") == "a\nb\\x1b"
