"""A strict reader of git's unified diff format, for the ``parse_diff`` canary (pure).

It checks what ``git apply`` would need (file headers, hunk headers whose line
counts add up) and keeps what the other canaries read: the touched paths and
the added lines with their new line numbers.  Anything it cannot account for
is a ``DiffError``: a patch the judge cannot read is not admitted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HUNK = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_META = (
    b"index ", b"new file mode ", b"deleted file mode ", b"old mode ", b"new mode ",
    b"similarity index ", b"dissimilarity index ", b"rename from ", b"rename to ",
    b"copy from ", b"copy to ",
)


class DiffError(ValueError):
    """The text is not a patch git could apply."""


@dataclass(frozen=True)
class FilePatch:
    """One file of a patch; ``None`` stands for /dev/null (added or deleted file)."""

    old_path: str | None
    new_path: str | None
    added: tuple[tuple[int, bytes], ...] = ()  # (new line number, text without the '+')
    binary: bool = False

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for p in (self.old_path, self.new_path) if p is not None))


@dataclass(frozen=True)
class ParsedDiff:
    files: tuple[FilePatch, ...]

    @property
    def touched(self) -> tuple[str, ...]:
        """Every path the patch changes (old and new side: a rename counts on both)."""
        return tuple(sorted({p for f in self.files for p in f.paths}))


def _unquote(raw: bytes) -> bytes:
    """git's C-style quoted path (``"a/t\\303\\251st"``) back to bytes."""
    if not (raw.startswith(b'"') and raw.endswith(b'"') and len(raw) >= 2):
        return raw
    body, out, i = raw[1:-1], bytearray(), 0
    simple = {ord("n"): 10, ord("t"): 9, ord('"'): 34, ord("\\"): 92, ord("a"): 7, ord("b"): 8,
              ord("f"): 12, ord("r"): 13, ord("v"): 11}
    while i < len(body):
        c = body[i]
        if c == 92 and i + 1 < len(body):
            nxt = body[i + 1]
            if 48 <= nxt <= 55 and i + 3 < len(body) + 1:
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out.append(simple.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return bytes(out)


def _side(raw: bytes) -> str | None:
    path = _unquote(raw.split(b"\t", 1)[0].rstrip(b"\r"))
    if path == b"/dev/null":
        return None
    if path[:2] in (b"a/", b"b/"):
        path = path[2:]
    if not path:
        raise DiffError("a file header names an empty path")
    text = path.decode("utf-8", "surrogateescape")
    if text.startswith("/") or ".." in text.split("/"):
        raise DiffError(f"path {text!r} leaves the repository")
    return text


def parse_diff(diff: bytes) -> ParsedDiff:
    """Parse a git diff; raise DiffError unless every file and hunk is well formed."""
    lines = diff.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    files: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(b"diff --git ") or line.startswith(b"--- "):
            i, patch = _file(lines, i)
            files.append(patch)
        elif line == b"-- " and files:
            break  # format-patch's mail signature ("-- ", then the git version) ends the patch
        elif line.startswith((b"@@", b"+", b"-")) and files:
            raise DiffError(f"line {i + 1}: stray hunk line outside a file")
        else:
            i += 1  # preamble (a mail header, a commit message) is allowed before a file
    if not files:
        raise DiffError("no file changes found")
    return ParsedDiff(tuple(files))


def _file(lines: list[bytes], i: int) -> tuple[int, FilePatch]:
    old = new = None
    git_header = lines[i].startswith(b"diff --git ")
    if git_header:
        old, new = _git_header_paths(lines[i])
        i += 1
        while i < len(lines) and lines[i].startswith(_META):
            if lines[i].startswith(b"new file mode "):
                old = None
            elif lines[i].startswith(b"deleted file mode "):
                new = None
            i += 1
        if i < len(lines) and lines[i].startswith((b"Binary files ", b"GIT binary patch")):
            return _binary(lines, i, old, new)
        if i >= len(lines) or not lines[i].startswith(b"--- "):
            return i, FilePatch(old, new)  # mode change or empty file: no hunks
    if not lines[i].startswith(b"--- ") or i + 1 >= len(lines) or not lines[i + 1].startswith(b"+++ "):
        raise DiffError(f"line {i + 1}: '---' must be followed by '+++'")
    old, new = _side(lines[i][4:]), _side(lines[i + 1][4:])
    if old is None and new is None:
        raise DiffError(f"line {i + 1}: both sides are /dev/null")
    i += 2
    added: list[tuple[int, bytes]] = []
    hunks = 0
    while i < len(lines) and lines[i].startswith(b"@@"):
        i = _hunk(lines, i, added)
        hunks += 1
    if hunks == 0:
        raise DiffError(f"line {i}: a file header without any hunk")
    return i, FilePatch(old, new, tuple(added))


def _git_header_paths(line: bytes) -> tuple[str | None, str | None]:
    rest = line[len(b"diff --git "):]
    if rest.startswith(b'"'):
        end = rest.index(b'"', 1) + 1 if b'"' in rest[1:] else len(rest)
        return _side(rest[:end]), _side(rest[end:].strip())
    half = rest.find(b" b/")
    if half < 0:
        raise DiffError("a 'diff --git' header without a/ and b/ paths")
    return _side(rest[:half]), _side(rest[half + 1 :])


def _binary(lines: list[bytes], i: int, old: str | None, new: str | None) -> tuple[int, FilePatch]:
    if lines[i].startswith(b"Binary files "):
        return i + 1, FilePatch(old, new, binary=True)
    i += 1
    while i < len(lines) and not lines[i].startswith(b"diff --git "):
        i += 1  # literal/delta blocks: base85 lines and blank separators
    return i, FilePatch(old, new, binary=True)


def _hunk(lines: list[bytes], i: int, added: list[tuple[int, bytes]]) -> int:
    match = _HUNK.match(lines[i])
    if not match:
        raise DiffError(f"line {i + 1}: malformed hunk header {lines[i][:40]!r}")
    old_left = int(match.group(2)) if match.group(2) is not None else 1
    new_left = int(match.group(4)) if match.group(4) is not None else 1
    number = int(match.group(3))
    i += 1
    while old_left > 0 or new_left > 0:
        if i >= len(lines):
            raise DiffError("the patch ends inside a hunk")
        line = lines[i]
        tag = line[:1]
        if tag in (b" ", b""):  # some tools strip the space of an empty context line
            old_left, new_left, number = old_left - 1, new_left - 1, number + 1
        elif tag == b"-":
            old_left -= 1
        elif tag == b"+":
            added.append((number, line[1:]))
            new_left, number = new_left - 1, number + 1
        elif tag != b"\\":
            raise DiffError(f"line {i + 1}: unexpected line inside a hunk")
        if old_left < 0 or new_left < 0:
            raise DiffError(f"line {i + 1}: hunk longer than its header says")
        i += 1
    while i < len(lines) and lines[i].startswith(b"\\"):
        i += 1  # "\ No newline at end of file"
    return i
