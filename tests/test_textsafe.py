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


@pytest.mark.parametrize("raw", [
    "\u2066isolate\u2069", "zero\u200bwidth", "soft\u00adhyphen", "bom\ufeff", "tag\U000e0041",
    "del\x7f", "nel\x85", "lone\ud800surrogate", "annot\ufff9ation", "\x00nul",
])
def test_invisible_and_format_characters_are_escaped(raw: str) -> None:
    shown = textsafe.text(raw)
    assert shown.isascii() and shown.isprintable(), shown
    assert textsafe.first_unsafe(raw) is not None


def test_first_unsafe_names_line_and_column() -> None:
    assert textsafe.first_unsafe("ok\n\tfine\n") is None
    assert textsafe.first_unsafe("a = 1\nb = 2  \x1b[2K# hidden\n") == (2, 8, "\\x1b")


def test_dumps_escapes_del_and_every_non_ascii_character() -> None:
    out = textsafe.dumps({"k": "a\x7f\x1b\u202e\x9b"})
    assert out.isascii() and "\x7f" not in out and "\x1b" not in out
    import json

    assert json.loads(out) == {"k": "a\x7f\x1b\u202e\x9b"}
