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
    """git's C-style quoted path (``"a/t\\303\\251st"``) back to bytes; a bad escape is a DiffError."""
    if not (raw.startswith(b'"') and raw.endswith(b'"') and len(raw) >= 2):
        return raw
    body, out, i = raw[1:-1], bytearray(), 0
    simple = {ord("n"): 10, ord("t"): 9, ord('"'): 34, ord("\\"): 92, ord("a"): 7, ord("b"): 8,
              ord("f"): 12, ord("r"): 13, ord("v"): 11}
    while i < len(body):
        c = body[i]
        if c != 92:
            out.append(c)
            i += 1
            continue
        digits = body[i + 1 : i + 4]
        if len(digits) == 3 and all(48 <= d <= 55 for d in digits) and int(digits, 8) <= 0o377:
            out.append(int(digits, 8))
            i += 4
        elif i + 1 < len(body) and body[i + 1] in simple:
            out.append(simple[body[i + 1]])
            i += 2
        else:
            raise DiffError(f"bad escape in the quoted path {raw[:60]!r}")
    return bytes(out)


def _check(path: bytes) -> str:
    if not path:
        raise DiffError("a file header names an empty path")
    text = path.decode("utf-8", "surrogateescape")
    if text.startswith("/") or ".." in text.split("/"):
        raise DiffError(f"path {text!r} leaves the repository")
    return text


UNKNOWN = ""  # a side whose name a 'diff --git' header leaves to the lines below it


@dataclass
class _Depth:
    """``git apply``'s ``-p`` value: 1, until a plain header with no directory makes git guess 0 for good."""

    p: int = 1
    known: bool = False

    def guess(self, old: bytes, new: bytes) -> None:
        if self.known:
            return
        guesses = [0 if b"/" not in name else -1 for name in (old, new) if name != b"/dev/null"]
        if guesses and all(g == 0 for g in guesses):
            self.p, self.known = 0, True


def _strip(path: bytes, p: int = 1) -> bytes:
    """Drop ``p`` leading components, whatever they are (a/, b/, x/), as ``git apply -p`` does."""
    for _ in range(p):
        if b"/" not in path:
            raise DiffError(f"path {path[:60]!r} has fewer than the {p} leading directory git strips")
        path = path.split(b"/", 1)[1]
    return path


def _raw(text: bytes) -> bytes:
    return _unquote(text.split(b"\t", 1)[0].rstrip(b"\r"))


def _side(raw: bytes, p: int = 1) -> str | None:
    path = _raw(raw)
    if path == b"/dev/null":
        return None
    if path.startswith(b"/"):
        _check(path)
    return _check(_strip(path, p))


def parse_diff(diff: bytes) -> ParsedDiff:
    """Parse a git diff; raise DiffError unless every file and hunk is well formed."""
    lines = diff.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    files: list[FilePatch] = []
    depth = _Depth()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(b"diff --git ") or line.startswith(b"--- "):
            i, patch = _file(lines, i, depth)
            files.append(patch)
        elif line == b"-- " and files:
            i += 1  # format-patch's mail signature: git reads on, to the next file header, and so do we
        elif line.startswith((b"@@", b"+", b"-")) and files:
            raise DiffError(f"line {i + 1}: stray hunk line outside a file")
        else:
            i += 1  # preamble (a mail header, a commit message) is allowed before a file
    if not files:
        raise DiffError("no file changes found")
    return ParsedDiff(tuple(files))


def _file(lines: list[bytes], i: int, depth: _Depth) -> tuple[int, FilePatch]:
    old: str | None = UNKNOWN
    new: str | None = UNKNOWN
    if lines[i].startswith(b"diff --git "):
        old, new = _git_header_paths(lines[i], depth.p)
        i += 1
        while i < len(lines) and lines[i].startswith(_META):
            old, new = _meta(lines[i], old, new)
            i += 1
        if i < len(lines) and lines[i].startswith((b"Binary files ", b"GIT binary patch")):
            return _binary(lines, i, _known(old, i), _known(new, i))
        if i >= len(lines) or not lines[i].startswith(b"--- "):
            return i, FilePatch(_known(old, i), _known(new, i))  # mode change, rename or empty file: no hunks
    else:
        if i + 1 < len(lines) and lines[i + 1].startswith(b"+++ "):
            depth.guess(_raw(lines[i][4:]), _raw(lines[i + 1][4:]))
    if not lines[i].startswith(b"--- ") or i + 1 >= len(lines) or not lines[i + 1].startswith(b"+++ "):
        raise DiffError(f"line {i + 1}: '---' must be followed by '+++'")
    old = _agree(old, _side(lines[i][4:], depth.p), i)
    new = _agree(new, _side(lines[i + 1][4:], depth.p), i + 1)
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


def _known(name: str | None, i: int) -> str | None:
    if name == UNKNOWN:
        raise DiffError(f"line {i}: a 'diff --git' header whose file names git cannot tell")
    return name


def _agree(known: str | None, line: str | None, i: int) -> str | None:
    """git's rule: a ``---``/``+++`` name must match what the header and rename lines said."""
    if known != UNKNOWN and known != line:
        raise DiffError(f"line {i + 1}: inconsistent file name ({line!r}, the header said {known!r})")
    return line


def _meta(line: bytes, old: str | None, new: str | None) -> tuple[str | None, str | None]:
    """Extended header lines: git takes the names of ``rename``/``copy`` lines over the header's."""
    if line.startswith(b"new file mode "):
        return None, new
    if line.startswith(b"deleted file mode "):
        return old, None
    for prefix, side in ((b"rename from ", 0), (b"copy from ", 0), (b"rename to ", 1), (b"copy to ", 1)):
        if line.startswith(prefix):
            name = _check(_unquote(line[len(prefix):].rstrip(b"\r")))
            return (name, new) if side == 0 else (old, name)
    return old, new


def _quote_end(text: bytes) -> int:
    """Index of the quote closing the quoted path that opens ``text``."""
    i = 1
    while i < len(text):
        if text[i] == 92:
            i += 2
            continue
        if text[i] == 34:
            return i
        i += 1
    raise DiffError("a 'diff --git' header with an unterminated quoted path")


def _git_header_paths(line: bytes, p: int = 1) -> tuple[str | None, str | None]:
    """The names of ``diff --git A B`` as git reads them: both sides, ``-p1`` stripped, must agree.

    When they do not (a rename's header), the names come from the lines below it.
    """
    rest = line[len(b"diff --git "):].rstrip(b"\r")
    if rest.startswith(b'"'):
        end = _quote_end(rest)
        halves = [(rest[: end + 1], rest[end + 1 :].lstrip(b" "))]
    else:
        halves = [(rest[:k], rest[k + 1 :]) for k in range(len(rest)) if rest[k : k + 1] == b" "]
    for left, right in halves:
        try:
            a, b = _strip(_unquote(left), p), _strip(_unquote(right), p)
        except DiffError:
            continue
        if a == b and a:
            name = _check(a)
            return name, name
    return UNKNOWN, UNKNOWN


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
    if old_left == 0 and new_left == 0:
        raise DiffError(f"line {i + 1}: an empty hunk")  # git calls it corrupt
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
