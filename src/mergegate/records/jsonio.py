"""JSON the gate reads: strict UTF-8, finite numbers, bounded nesting, every error one line.

``json.loads`` alone turns a 5,000-digit integer or a 100,000-deep list into a
traceback, accepts ``NaN`` and ``Infinity``, and ``str.splitlines`` cuts a JSONL
row at a raw U+2028 that JSON allows inside a string.  ``loads`` and ``lines``
close those doors; the caller names the file (and line) in the ConfigError.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

from mergegate.errors import ConfigError


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a number JSON allows")


def loads(data: str | bytes, source: str, line: int | None = None, fix: str = "fix the JSON") -> Any:
    """One JSON value; a bad one is a ConfigError at ``source:line``."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(source, line, f"not UTF-8 (byte {exc.start})", "write the JSON in UTF-8") from None
    try:
        return json.loads(data, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ConfigError(source, line or exc.lineno, f"not JSON: {exc.msg}", fix) from None
    except RecursionError:
        raise ConfigError(source, line, "JSON nested too deep", fix) from None
    except ValueError as exc:  # an integer past Python's digit limit, NaN, Infinity
        raise ConfigError(source, line, f"not JSON the gate reads: {' '.join(str(exc).split())[:120]}", fix) from None


def lines(text: str) -> list[tuple[int, str]]:
    """JSONL rows split on ``\\n`` only (a raw U+2028 inside a string stays in its row); blanks skipped."""
    return [(number, row) for number, row in enumerate(text.split("\n"), 1) if row.strip(" \t\r")]
