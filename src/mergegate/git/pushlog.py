"""What git hands a ``pre-receive`` hook on stdin: one ``<old> <new> <ref>`` line per ref.

Pure: bytes in, frozen values out.  Anything that is not exactly such a line is
refused (a hook that guesses would accept by default).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mergegate.errors import UsageError

_HEX = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# git check-ref-format: no control characters, space, ~ ^ : ? * [ \ or DEL anywhere.
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
FIX_STDIN = "run this as git's pre-receive hook, which writes '<old-id> <new-id> <ref>' lines"


@dataclass(frozen=True)
class RefUpdate:
    """One line of pre-receive input."""

    old: str
    new: str
    ref: str

    @property
    def created(self) -> bool:
        return is_zero(self.old)

    @property
    def deleted(self) -> bool:
        return is_zero(self.new)

    @property
    def is_branch(self) -> bool:
        return self.ref.startswith("refs/heads/")


def is_zero(object_id: str) -> bool:
    """The all-zero id git uses for 'no object' (40 digits for SHA-1, 64 for SHA-256)."""
    return bool(object_id) and set(object_id) == {"0"}


def ref_name_problem(ref: str) -> str | None:
    """Why ``ref`` is not a full ref name git would accept (None when it is one)."""
    if not ref.startswith("refs/") or ref.count("/") < 2:
        return "not a full ref name under refs/ (like refs/heads/main)"
    if _BAD_CHARS.search(ref):
        return "holds a space, control character or one of ~ ^ : ? * [ \\"
    if ".." in ref or "@{" in ref or "//" in ref or ref.endswith(("/", ".")):
        return "holds '..', '@{', '//' or ends with '/' or '.'"
    for part in ref.split("/"):
        if part.startswith(".") or part.endswith(".lock"):
            return "has a component starting with '.' or ending with '.lock'"
    return None


def parse_line(line: str, number: int) -> RefUpdate:
    """One ``<old> <new> <ref>`` line; anything else is a UsageError naming the line."""
    fields = line.split(" ")
    if len(fields) != 3:
        raise UsageError(f"stdin line {number}: expected '<old-id> <new-id> <ref>', got {line[:120]!r}",
                         FIX_STDIN)
    old, new, ref = fields
    for name, value in (("old", old), ("new", new)):
        if not _HEX.fullmatch(value):
            raise UsageError(f"stdin line {number}: {name} id {value[:80]!r} is not a full object id",
                             FIX_STDIN)
    if len(old) != len(new):
        raise UsageError(f"stdin line {number}: old and new ids differ in length", FIX_STDIN)
    if is_zero(old) and is_zero(new):
        raise UsageError(f"stdin line {number}: both ids are all zero", FIX_STDIN)
    problem = ref_name_problem(ref)
    if problem:
        raise UsageError(f"stdin line {number}: ref {ref[:120]!r} {problem}",
                         "push to a branch (refs/heads/...) or a tag (refs/tags/...)")
    return RefUpdate(old, new, ref)


def parse(data: bytes) -> list[RefUpdate]:
    """Every line of pre-receive stdin, in order; empty input, a repeated ref or a bad line is refused."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("stdin is not UTF-8 text", FIX_STDIN) from None
    if text.endswith("\n"):
        text = text[:-1]
    if not text:
        raise UsageError("no ref updates on stdin", FIX_STDIN)
    updates = [parse_line(line, n) for n, line in enumerate(text.split("\n"), start=1)]
    lengths = {len(u.old) for u in updates}
    if len(lengths) != 1:
        raise UsageError("stdin mixes SHA-1 and SHA-256 ids", FIX_STDIN)
    seen: set[str] = set()
    for update in updates:
        if update.ref in seen:
            raise UsageError(f"ref {update.ref} appears twice on stdin", FIX_STDIN)
        seen.add(update.ref)
    return updates
