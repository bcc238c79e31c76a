"""Values that are text underneath: a compiled regular expression and pathlib's own paths (``codec.py``'s part).

Standard library only (the subject loads this folder as a private package).  Each travels as its text (and a
pattern's flags) and is made again by the receiving side's own ``re`` and ``pathlib``; only exactly these types
are plain data (a subclass stays a handle: ``codec.EXACT``).
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Callable
from typing import Any

MAX_PATTERN = 1 << 16  # characters of one regular expression's source
MAX_PATH = 1 << 16  # characters of one path

# pathlib's own path classes (not subclasses): a path is its text; the receiving side's class holds it
PATHS: dict[str, type] = {c.__name__: c for c in (pathlib.PurePath, pathlib.PurePosixPath, pathlib.PureWindowsPath,
                                                  pathlib.Path, pathlib.PosixPath, pathlib.WindowsPath)}


def encoders(encode: Callable[[Any, Any, int], Any]) -> dict[type, Callable[[Any, Any, int], Any]]:
    """The encoders of ``re.Pattern`` and the path classes, given the codec's ``encode(value, other, depth)``."""
    out: dict[type, Callable[[Any, Any, int], Any]] = {
        re.Pattern: lambda v, o, d: ["re", encode(v.pattern, o, d), v.flags]}
    out.update({c: lambda v, o, d: ["p", type(v).__name__, str(v)] for c in PATHS.values()})
    return out


def decoders(decode: Callable[[Any, Any, int], Any], error: type[Exception]) -> dict[str, Callable[..., Any]]:
    """Their decoders, given the codec's ``decode(data, resolve, depth)`` and its error."""

    def pattern(data: list[Any], resolve: Any, depth: int) -> re.Pattern[Any]:
        """A compiled regular expression: its source and flags, compiled by this side's own ``re``."""
        source: Any = decode(data[1], resolve, depth) if len(data) == 3 else None
        if type(source) not in (str, bytes) or type(data[2]) is not int or len(source) > MAX_PATTERN:
            raise error("malformed regular expression")
        try:
            return re.compile(source, data[2])
        except (re.error, ValueError, OverflowError) as exc:
            raise error(f"malformed regular expression: {exc}") from None

    def path(data: list[Any], resolve: Any, depth: int) -> pathlib.PurePath:
        cls = PATHS.get(data[1]) if len(data) == 3 and type(data[1]) is str else None
        text = data[2] if len(data) == 3 and type(data[2]) is str else None
        if cls is None or text is None or len(text) > MAX_PATH:
            raise error("malformed path")
        try:
            return cls(text)  # type: ignore[no-any-return]
        except NotImplementedError:  # a Windows path on POSIX (or the reverse): this side cannot make one
            raise error(f"cannot make a {data[1]} here") from None

    return {"re": pattern, "p": path}
