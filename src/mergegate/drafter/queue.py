"""The candidate queue: ``.gate/queue/<id>/{candidate.py,meta.json}``, id = sha256 of the candidate.

Every change happens under one file lock; a new entry is written into a
temporary directory and renamed into place, so a reader sees all of it or none.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from mergegate.errors import EXIT_INTERNAL, ConfigError, UsageError
from mergegate.records import fsutil


class TamperedError(ConfigError):
    """A queued candidate whose bytes are not the ones its id names: exit 3, fail closed."""

    exit_code = EXIT_INTERNAL


QUEUE = Path(".gate") / "queue"
CANDIDATE = "candidate.py"
META = "meta.json"
STATUSES = ("pending", "accepted", "rejected")


@dataclass(frozen=True)
class Meta:
    """meta.json: where a candidate came from, what triage said, what a person decided."""

    id: str
    drafter: str
    model: str
    prompt_hash: str
    target: str
    target_path: str
    triage: dict[str, Any]
    created_at: str
    status: str = "pending"
    reason: str = ""
    decided_by: str = ""
    decided_at: str = ""
    installed_as: str = ""

    def to_bytes(self) -> bytes:
        return (json.dumps(asdict(self), indent=2, sort_keys=True) + "\n").encode()


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def root(top: Path) -> Path:
    return top / QUEUE


@contextlib.contextmanager
def locked(top: Path) -> Iterator[Path]:
    """The queue directory, held under its lock; git ignores everything under .gate/."""
    fsutil.work_area(top)
    qdir = root(top)
    qdir.mkdir(parents=True, exist_ok=True)
    with fsutil.locked(qdir / ".lock"):
        yield qdir


def put(top: Path, code: bytes, meta: Meta) -> bool:
    """Add a candidate; False when that exact candidate is already queued."""
    with locked(top) as qdir:
        dest = qdir / meta.id
        if dest.exists():
            return False
        tmp = Path(tempfile.mkdtemp(dir=qdir, prefix=".new-"))
        try:
            fsutil.atomic_write(tmp / CANDIDATE, code, mode=0o444)
            fsutil.atomic_write(tmp / META, meta.to_bytes(), mode=0o644)
            tmp.chmod(0o755)
            os.rename(tmp, dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return True


def _read_meta(path: Path) -> Meta:
    source = str(path)
    fix = "remove the entry directory; the drafter can make it again"
    from mergegate.records import jsonio

    raw = jsonio.loads(path.read_bytes(), source, fix=fix)
    try:
        meta = Meta(**raw)
    except TypeError as exc:
        raise ConfigError(source, None, f"unreadable queue entry ({exc})", fix) from None
    for name, value in asdict(meta).items():  # exact types: a null field is refused here, not a traceback later
        want = dict if name == "triage" else str
        if type(value) is not want:
            raise ConfigError(source, None, f"queue entry field {name!r} must be a {want.__name__}, not {value!r}",
                              fix)
    if meta.status not in STATUSES:
        raise ConfigError(source, None, f"unknown status {meta.status!r}", "write pending, accepted or rejected")
    return meta


def entries(top: Path) -> list[Meta]:
    """Every queued candidate, oldest first."""
    qdir = root(top)
    if not qdir.is_dir():
        return []
    metas = [_read_meta(d / META) for d in qdir.iterdir() if d.is_dir() and not d.name.startswith(".")]
    return sorted(metas, key=lambda m: (m.created_at, m.id))


def find(top: Path, prefix: str) -> Meta:
    """The one entry whose id starts with ``prefix`` (at least 4 hex digits)."""
    prefix = prefix.lower()
    if len(prefix) < 4 or any(c not in "0123456789abcdef" for c in prefix):
        raise UsageError(f"{prefix!r} is not a candidate id", "pass at least 4 hex digits; `gate queue list` shows ids")
    matches = [m for m in entries(top) if m.id.startswith(prefix)]
    if not matches:
        raise UsageError(f"no queued candidate {prefix}", "`gate queue list` shows the ids")
    if len(matches) > 1:
        raise UsageError(f"{prefix} names {len(matches)} candidates", "give more digits of the id")
    return matches[0]


def candidate_code(top: Path, meta: Meta) -> bytes:
    """The queued bytes, exactly as stored (``verified_code`` checks them)."""
    return (root(top) / meta.id / CANDIDATE).read_bytes()


def matches(meta: Meta, code: bytes) -> bool:
    """Whether ``code`` is the candidate the host hashed as it left the sandbox.  Pure."""
    return hashlib.sha256(code).hexdigest() == meta.id


def verified_code(top: Path, meta: Meta) -> bytes:
    """The queued bytes, refused unless their sha256 is the id they were queued under."""
    code = candidate_code(top, meta)
    if not matches(meta, code):
        raise TamperedError(str(root(top) / meta.id / CANDIDATE), None,
                            f"candidate {meta.id[:12]} changed since it was queued (its sha256 is no longer its id)",
                            "reject it, or draft again; never accept bytes nobody reviewed")
    return code


def decide(top: Path, candidate: str, status: str, reason: str, by: str,
           install: Callable[[Meta], str] | None = None) -> Meta:
    """Record a person's decision under the lock, re-reading the entry first.

    ``install`` (for accept) runs inside the lock and returns where the candidate went,
    so two concurrent accepts of one candidate cannot both install it.
    """
    from mergegate.drafter import journal

    with locked(top) as qdir:
        recover(top, qdir)
        meta = find(top, candidate)
        if meta.status != "pending":
            raise UsageError(f"candidate {meta.id[:12]} is already {meta.status}",
                             "`gate queue list` shows the pending ones")
        try:
            installed_as = install(meta) if install is not None else ""
        except BaseException:
            if journal.pending(qdir / meta.id):  # a failed write: nothing of this accept stays behind
                journal.rollback(top, qdir / meta.id)
            raise
        meta = replace(meta, status=status, reason=reason, decided_by=by, decided_at=now(), installed_as=installed_as)
        fsutil.atomic_write(qdir / meta.id / META, meta.to_bytes(), mode=0o644)  # the commit point
        journal.finish(qdir / meta.id)
    return meta


def recover(top: Path, qdir: Path) -> None:
    """Finish what a killed accept left (under the lock): roll back a pending one, forget an accepted one's journal."""
    from mergegate.drafter import journal

    for entry in sorted(qdir.iterdir()):
        if entry.name.startswith(".") or not journal.pending(entry):
            continue
        if _read_meta(entry / META).status == "accepted":
            journal.finish(entry)
        else:
            journal.rollback(top, entry)
