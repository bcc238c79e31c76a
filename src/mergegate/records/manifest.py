"""``MANIFEST.sha256``: the signed list of every guarded file but itself and the ledger.

One line per file, ``<sha256>  <size>  <path>``, sorted by path bytes, LF
endings.  Hashes are of the committed blob (what git stores), so CRLF settings
and the work tree cannot fool it.  A path holding a backslash, CR or LF is
written as ``sha256sum`` does: the line starts with ``\\`` and the path is
escaped.  A cache keyed by git blob id means a re-sign hashes only new blobs;
with no cache (a fresh clone), checked-out files whose git blob id is the blob's
are hashed on every core instead of reading each blob back through git
(``coldhash``).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mergegate.errors import ConfigError, UsageError
from mergegate.git import blobs, coldhash, core, diffs
from mergegate.records.fsutil import atomic_write
from mergegate.records.policy import SIGNED, Policy

_LINE = re.compile(rb"([0-9a-f]{64})  (0|[1-9][0-9]*)  (.+)", re.DOTALL)
FIX = "re-sign it with `gate manifest sign --staged` in an oracle-only commit"


@dataclass(frozen=True)
class Row:
    sha256: str
    size: int
    path: str


def _key(path: str) -> bytes:
    return os.fsencode(path)


def _escape(path: str) -> tuple[bool, str]:
    if not any(c in path for c in "\\\n\r"):
        return False, path
    return True, path.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def _unescape(path: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\r", "\\": "\\"}.get(m.group(1), "\0"), path)


def render(rows: Iterable[Row]) -> bytes:
    """The manifest text for ``rows`` (sorted by path bytes)."""
    lines = []
    for row in sorted(rows, key=lambda r: _key(r.path)):
        escaped, path = _escape(row.path)
        lines.append(("\\" if escaped else "") + f"{row.sha256}  {row.size}  {path}\n")
    return os.fsencode("".join(lines))


def parse(data: bytes, source: str) -> list[Row]:
    """Parse a manifest; any malformed line is a ConfigError naming it."""
    rows: list[Row] = []
    if data and not data.endswith(b"\n"):
        raise ConfigError(source, data.count(b"\n") + 1, "the last line has no newline", FIX)
    for number, raw in enumerate(data.split(b"\n")[:-1], start=1):
        if raw.endswith(b"\r"):
            raise ConfigError(source, number, "CRLF line ending", FIX)
        escaped = raw.startswith(b"\\")
        match = _LINE.fullmatch(raw[1:] if escaped else raw)
        if not match:
            raise ConfigError(source, number, f"not '<sha256>  <size>  <path>': {raw[:80]!r}", FIX)
        written = os.fsdecode(match.group(3))
        path = _unescape(written) if escaped else written
        if _escape(path) != (escaped, written):  # one text per manifest: `gate manifest sign` writes no other
            raise ConfigError(source, number, "a path escaped where it need not be, or not where it must", FIX)
        if "\0" in path or path.startswith("/") or ".." in path.split("/"):
            raise ConfigError(source, number, f"bad path {path!r}", FIX)
        rows.append(Row(match.group(1).decode(), int(match.group(2)), path))
    keys = [_key(r.path) for r in rows]
    for number, (a, b) in enumerate(itertools.pairwise(keys), start=2):
        if a == b:
            raise ConfigError(source, number, f"path listed twice: {os.fsdecode(b)!r}", FIX)
        if a > b:
            raise ConfigError(source, number, "lines are not sorted by path", FIX)
    return rows


# ---------------------------------------------------------------- blob hashing


class BlobCache:
    """git blob id -> (sha256, size); sound because a blob id fixes the bytes."""

    def __init__(self, cwd: str | Path | None = None) -> None:
        self.cwd = cwd
        self.path = core.git_path("mergegate/blob-sha256", cwd)
        self.known: dict[str, tuple[str, int]] = {}
        self._new: list[str] = []
        try:
            text = self.path.read_text()
        except OSError:
            return
        for line in text.splitlines():
            parts = line.split(" ")
            if len(parts) == 3 and len(parts[1]) == 64 and parts[2].isdigit():
                self.known[parts[0]] = (parts[1], int(parts[2]))

    def fill(self, blob_ids: Iterable[str], files: Iterable[tuple[str, Path]] = ()) -> None:
        """Hash every blob not known yet; ``files``: (blob id, work tree file) pairs that may hold
        them, hashed cold on every core (``coldhash``), git reading the rest."""
        missing = [b for b in dict.fromkeys(blob_ids) if b not in self.known]
        todo = set(missing)
        candidates = [(b, p) for b, p in files if b in todo]
        if len(candidates) >= coldhash.MIN_BLOBS:
            found = coldhash.hash_blobs(candidates)
            self.known.update(found)
            self._new += found
            missing = [b for b in missing if b not in found]
        for blob, data in blobs.read_blobs(missing, self.cwd):
            self.known[blob] = (hashlib.sha256(data).hexdigest(), len(data))
            self._new.append(blob)
        self.save()

    def save(self) -> None:
        if not self._new:
            return
        lines = "".join(f"{b} {self.known[b][0]} {self.known[b][1]}\n" for b in self._new)
        try:  # a cache: appending whole lines is enough, a torn line is skipped on load
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a") as handle:
                handle.write(lines)
        except OSError:
            pass  # read-only repository (a server quarantine): hash again next time
        self._new = []


def _signed(entries: Iterable[blobs.Entry], policy: Policy) -> list[blobs.Entry]:
    out = []
    for entry in entries:
        if policy.classify(entry.path) not in SIGNED:
            continue
        if entry.is_symlink or entry.is_submodule:
            kind = "a symlink" if entry.is_symlink else "a submodule"
            raise UsageError(
                f"{entry.path} is {kind} in a guarded tree; the oracle holds regular files only",
                f"replace it with a regular file: git rm --cached {entry.path!r}",
            )
        out.append(entry)
    return out


def rows_at(rev: str | None, policy: Policy, cwd: str | Path | None = None,
            cache: BlobCache | None = None) -> list[Row]:
    """The rows the manifest should hold for ``rev`` (None: the index in use)."""
    entries = blobs.ls_index(cwd) if rev is None else blobs.ls_tree(rev, cwd)
    signed = _signed(entries, policy)
    cache = cache or BlobCache(cwd)
    unknown = [e for e in signed if e.sha not in cache.known]
    top = _worktree(cwd) if len(unknown) >= coldhash.MIN_BLOBS else None
    cache.fill((e.sha for e in signed), [(e.sha, top / e.path) for e in unknown] if top else ())
    return [Row(*cache.known[e.sha], e.path) for e in signed]


def _worktree(cwd: str | Path | None) -> Path | None:
    """The work tree's root (None in a bare repository): its files may hold the blobs."""
    proc = core.run(["rev-parse", "--show-toplevel"], cwd, check=False)
    return Path(os.fsdecode(proc.stdout.rstrip(b"\n"))) if proc.returncode == 0 and proc.stdout.strip() else None


def worktree_rows(policy: Policy, cwd: str | Path | None = None) -> list[Row]:
    """Rows for the files on disk: index blobs, re-hashed where the work tree differs."""
    top = core.toplevel(cwd)
    rows = {r.path: r for r in rows_at(None, policy, top)}
    changed = set(diffs.worktree_modified(top)) | set(core.untracked(top))
    for path in changed:
        if policy.classify(path) not in SIGNED:
            continue
        file_ = top / path
        if file_.is_symlink():
            raise UsageError(f"{path} is a symlink in a guarded tree", "replace it with a regular file")
        if not file_.is_file():
            rows.pop(path, None)
            continue
        data = file_.read_bytes()
        rows[path] = Row(hashlib.sha256(data).hexdigest(), len(data), path)
    return list(rows.values())


def expected_at(rev: str | None, policy: Policy, cwd: str | Path | None = None) -> bytes:
    """The manifest to sign for ``rev`` (None: the index); Python bytecode on a signed path is refused."""
    rows = rows_at(rev, policy, cwd)
    refuse_bytecode(r.path for r in rows)
    return render(rows)


def is_bytecode(path: str) -> bool:
    """A compiled Python file or a ``__pycache__`` folder's content: made by running the oracle, never its source."""
    return "__pycache__" in path.split("/") or path.endswith((".pyc", ".pyo"))


def refuse_bytecode(paths: Iterable[str]) -> None:
    found = sorted(p for p in paths if is_bytecode(p))
    if found:
        folder = found[0].rsplit("/", 1)[0] if "/" in found[0] else found[0]
        raise UsageError(
            f"{found[0]} is Python bytecode in a guarded tree ({len(found)} such file(s)); it is never signed",
            f"unstage it: git rm -r --cached -q -- {folder!r}, and ignore it: "
            "echo '__pycache__/' >> .gitignore (gate init writes one in the oracle tree)",
        )


# ---------------------------------------------------------------- verification


@dataclass(frozen=True)
class Report:
    """How a recorded manifest differs from the tree it should describe."""

    missing: tuple[str, ...] = ()  # in the tree, not in the manifest
    extra: tuple[str, ...] = ()  # in the manifest, not in the tree
    changed: tuple[str, ...] = ()  # listed with another hash or size
    problems: tuple[str, ...] = field(default=())  # the manifest itself is absent or malformed

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.changed or self.problems)

    def lines(self) -> list[str]:
        out = list(self.problems)
        out += [f"missing: {p!r}" if "\n" in p else f"missing: {p}" for p in self.missing]
        out += [f"extra: {p!r}" if "\n" in p else f"extra: {p}" for p in self.extra]
        out += [f"changed: {p!r}" if "\n" in p else f"changed: {p}" for p in self.changed]
        return out


def compare(recorded: Iterable[Row], actual: Iterable[Row]) -> Report:
    rec = {r.path: r for r in recorded}
    act = {r.path: r for r in actual}
    return Report(
        missing=tuple(sorted(set(act) - set(rec), key=_key)),
        extra=tuple(sorted(set(rec) - set(act), key=_key)),
        changed=tuple(sorted((p for p in set(rec) & set(act) if rec[p] != act[p]), key=_key)),
    )


def recorded_at(rev: str | None, policy: Policy, cwd: str | Path | None = None) -> list[Row] | None:
    """The manifest file's rows at ``rev`` (None: the index), or None when absent."""
    data = blobs.file_at(rev, policy.paths.manifest, cwd)
    if data is None:
        return None
    where = policy.paths.manifest if rev is None else f"{policy.paths.manifest} (at {rev})"
    return parse(data, where)


def verify_at(rev: str | None, policy: Policy, cwd: str | Path | None = None) -> Report:
    """Compare the manifest stored at ``rev`` (None: the index) with that tree's files."""
    recorded = recorded_at(rev, policy, cwd)
    if recorded is None:
        return Report(problems=(f"no {policy.paths.manifest}",))
    return compare(recorded, rows_at(rev, policy, cwd))


def sign(rev: str | None, policy: Policy, cwd: str | Path | None = None, stage: bool = False) -> bool:
    """Write the manifest for ``rev`` (None: the index) into the work tree; True if it changed."""
    top = core.toplevel(cwd)
    text = expected_at(rev, policy, top)
    target = top / policy.paths.manifest
    try:
        current = target.read_bytes()
    except OSError:
        current = None
    if current != text:
        atomic_write(target, text)
    staged = blobs.file_at(None, policy.paths.manifest, top)
    if stage and staged != text:
        core.out(["add", "--", f":(literal,top){policy.paths.manifest}"], top)
    return current != text or (stage and staged != text)


def sign_staged(policy: Policy, cwd: str | Path | None = None) -> bool:
    """Re-sign for the index, write the file and stage it; True if anything changed."""
    return sign(None, policy, cwd, stage=True)
