"""Commits a push brings (one streamed ``git log`` for many tips), their authors and signatures."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from mergegate.git.core import GitFailed, out, run
from mergegate.git.diffs import Change


@dataclass(frozen=True)
class LoggedCommit:
    """One commit of a push with its changes against its first parent (a root: the empty tree)."""

    sha: str
    parents: tuple[str, ...]
    author_email: str
    changes: tuple[Change, ...]


_LOG_FORMAT = "%x01%H %P%x00%ae"


def new_commits(tips: Sequence[str], cwd: str | Path | None = None) -> list[LoggedCommit]:
    """Commits reachable from ``tips`` but from no existing ref, newest first."""
    return list(iter_new_commits(tips, cwd))


def iter_new_commits(tips: Sequence[str], cwd: str | Path | None = None) -> Iterator[LoggedCommit]:
    """Stream the commits reachable from ``tips`` but from no existing ref, newest first.

    One ``git log`` for the whole push: ``--not --all`` leaves out what the
    repository already holds (pre-receive runs before any ref moves), and a merge
    is diffed against its first parent, i.e. by what it brings to the line it lands
    on.  No ``--topo-order``: it would make git walk everything before its first
    line, while streaming lets the caller judge commits as git produces them.
    """
    if not tips:
        return
    args = [
        "git", "-c", "log.showSignature=false", "log", "--stdin", "--not", "--all",
        "--root", "--raw", "-z", "--no-renames",
        "--diff-merges=first-parent", "--no-abbrev", "--no-color", "--no-ext-diff",
        f"--format={_LOG_FORMAT}",
    ]
    import tempfile

    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(b"".join(t.encode() + b"\n" for t in tips))
            proc.stdin.close()
            yield from parse_log_stream(_zchunks(proc.stdout))
        finally:
            proc.stdout.close()
            code = proc.wait()
        if code != 0:
            err.seek(0)
            lines = err.read().decode(errors="replace").strip().splitlines()
            raise GitFailed(f"git log failed: {lines[-1] if lines else code}")


def _zchunks(stream: IO[bytes]) -> Iterator[bytes]:
    """NUL-separated fields of a stream, as they arrive."""
    rest = b""
    while chunk := stream.read1(1 << 16):  # type: ignore[attr-defined]
        fields = (rest + chunk).split(b"\0")
        rest = fields.pop()
        yield from fields
    if rest:
        yield rest


def parse_log(data: bytes) -> list[LoggedCommit]:
    """Parse ``git log --raw -z --format=%x01%H %P%x00%ae`` output."""
    return list(parse_log_stream(iter(data.split(b"\0"))))


def parse_log_stream(fields: Iterator[bytes]) -> Iterator[LoggedCommit]:
    """Commits from the NUL-separated fields of ``git log --raw -z --format=%x01%H %P%x00%ae``.

    Fields are read in order, so a path holding \\x01 or a newline is never taken for a header.
    """
    field = next(fields, None)
    while field is not None:
        field = field.lstrip(b"\n")
        if not field:
            field = next(fields, None)
            continue
        email = next(fields, None)
        if not field.startswith(b"\x01") or email is None:
            raise GitFailed(f"git log: unexpected output near {field[:60]!r}")
        ids = field[1:].decode().split(" ")
        changes: list[Change] = []
        field = next(fields, None)
        while field is not None and field.lstrip(b"\n").startswith(b":"):
            path = next(fields, None)
            if path is None:
                raise GitFailed("git log: raw line without a path")
            old_mode, new_mode, old_sha, new_sha, status = field.lstrip(b"\n")[1:].decode().split(" ")
            changes.append(Change(old_mode, new_mode, old_sha, new_sha, status[:1], os.fsdecode(path)))
            field = next(fields, None)
        yield LoggedCommit(ids[0], tuple(p for p in ids[1:] if p), email.decode(errors="replace"),
                           tuple(changes))


def verify_commits(shas: Sequence[str], allowed_signers: str | Path, cwd: str | Path | None = None) -> set[str]:
    """The commits among ``shas`` whose signature ``git verify-commit`` does not accept.

    SSH signatures are checked against ``allowed_signers``; one process when all
    verify, one per commit only to name the culprits.
    """
    if not shas:
        return set()
    config = ["-c", f"gpg.ssh.allowedSignersFile={allowed_signers}"]
    if run([*config, "verify-commit", *shas], cwd, check=False).returncode == 0:
        return set()
    return {s for s in shas if run([*config, "verify-commit", s], cwd, check=False).returncode != 0}


def author_emails(base: str, head: str, cwd: str | Path | None = None) -> list[str]:
    """Author e-mails of the commits in ``base..head``."""
    return [e for e in out(["log", "--format=%ae", f"{base}..{head}", "--"], cwd).decode().split("\n") if e]
