"""All git access, in one module.

Rules: ``-z`` everywhere, ``--no-renames`` on every diff (a rename is a delete
plus an add, so it counts on both sides), batched object reads through one
``cat-file --batch`` process, and the caller's environment passed through so
``GIT_INDEX_FILE`` (``git commit -a``, ``git commit <paths>``) and a
pre-receive quarantine (``GIT_OBJECT_DIRECTORY`` ...) are honoured.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from mergegate.errors import InternalError, UsageError

SYMLINK_MODE = "120000"
GITLINK_MODE = "160000"


class GitFailed(InternalError):
    """A git command failed where it should not have."""


class Busy(UsageError):
    """Another git (another gate) holds a lock this command needs; we waited and it did not let go."""


LOCK_WAITS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)  # about 3 s in all, then "another gate is running"
_LOCKED = re.compile(rb"Unable to create '([^']*\.lock)': File exists")


def run(
    args: Sequence[str],
    cwd: str | Path | None = None,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git`` with ``args``; on failure raise GitFailed with git's own words.

    A lock another git holds (``index.lock``) is waited for, a few times; if it stays,
    ``Busy`` says another gate is running (never git's advice to delete the lock).
    """
    for wait in (*LOCK_WAITS, None):
        proc = _run_once(args, cwd, stdin, env)
        locked = _LOCKED.search(proc.stderr) if proc.returncode != 0 else None
        if locked is None:
            break
        if wait is None:
            raise Busy(f"another gate (or git) is running: {os.fsdecode(locked.group(1))} is held",
                       "wait for it to finish, then run this again")
        time.sleep(wait)
    if check and proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise GitFailed(f"git {' '.join(args[:3])} failed: {err[-1] if err else proc.returncode}")
    return proc


def _run_once(args: Sequence[str], cwd: str | Path | None, stdin: bytes | None,
              env: Mapping[str, str] | None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, input=stdin, capture_output=True,
            env=None if env is None else dict(env), check=False,
        )
    except FileNotFoundError:
        if cwd is not None and not os.path.isdir(cwd):
            raise UsageError(f"{cwd}: no such directory", "pass an existing repository path") from None
        raise UsageError("git is not installed or not on PATH", "install git") from None


def out(args: Sequence[str], cwd: str | Path | None = None, stdin: bytes | None = None) -> bytes:
    return run(args, cwd, stdin).stdout


def zsplit(data: bytes) -> list[str]:
    """Split NUL-terminated output into str paths (undecodable bytes survive the round trip)."""
    parts = data.split(b"\0")
    if parts and parts[-1] == b"":
        parts.pop()
    return [os.fsdecode(p) for p in parts]


# ---------------------------------------------------------------- repository

def toplevel(cwd: str | Path | None = None) -> Path:
    """The work tree root; a non-git directory is a usage error."""
    proc = run(["rev-parse", "--show-toplevel"], cwd, check=False)
    if proc.returncode != 0:
        where = os.path.abspath(cwd or os.getcwd())
        raise UsageError(f"{where}: not a git repository", "run inside a git work tree, or `git init`")
    return Path(os.fsdecode(proc.stdout.rstrip(b"\n")))


def ensure_repo(cwd: str | Path | None = None) -> None:
    """A usage error unless ``cwd`` is inside a repository (bare repositories count)."""
    if run(["rev-parse", "--git-dir"], cwd, check=False).returncode != 0:
        where = os.path.abspath(cwd or os.getcwd())
        raise UsageError(f"{where}: not a git repository", "run inside a git work tree, or `git init`")


def git_path(name: str, cwd: str | Path | None = None) -> Path:
    """``git rev-parse --git-path``: where hooks, caches and locks live (worktree-aware)."""
    raw = os.fsdecode(out(["rev-parse", "--git-path", name], cwd).rstrip(b"\n"))
    path = Path(raw)
    return path if path.is_absolute() else Path(cwd or os.getcwd()) / path


def resolve(rev: str, cwd: str | Path | None = None) -> str | None:
    """The object id of ``rev`` peeled to a commit, or None if it does not exist."""
    proc = run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], cwd, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def must_resolve(rev: str, cwd: str | Path | None = None) -> str:
    sha = resolve(rev, cwd)
    if sha is None:
        raise UsageError(f"revision {rev!r} does not exist", "pass a branch, tag or commit id; `git log` lists them")
    return sha


def empty_tree(cwd: str | Path | None = None) -> str:
    """The empty tree's id in this repository's hash (SHA-1 or SHA-256)."""
    return out(["hash-object", "-t", "tree", "--stdin"], cwd, b"").decode().strip()


def head(cwd: str | Path | None = None) -> str | None:
    """HEAD's commit, or None before the first commit."""
    return resolve("HEAD", cwd)


def merge_base(a: str, b: str, cwd: str | Path | None = None) -> str:
    proc = run(["merge-base", a, b], cwd, check=False)
    if proc.returncode != 0:
        raise UsageError(f"{a} and {b} have no common ancestor", "pass revisions from one history")
    return proc.stdout.decode().strip()


# ---------------------------------------------------------------- diffs

@dataclass(frozen=True)
class Change:
    """One line of ``git diff --raw --no-renames``."""

    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str
    status: str  # A, D, M, T, U
    path: str

    @property
    def modes(self) -> tuple[str, str]:
        return self.old_mode, self.new_mode


def parse_raw(data: bytes) -> list[Change]:
    """Parse ``--raw -z --no-renames`` output."""
    fields = data.split(b"\0")
    changes: list[Change] = []
    i = 0
    while i + 1 < len(fields):
        head_ = fields[i]
        if not head_.startswith(b":"):
            i += 1  # a commit id line from diff-tree --stdin, or trailing noise
            continue
        old_mode, new_mode, old_sha, new_sha, status = head_[1:].decode().split(" ")
        changes.append(Change(old_mode, new_mode, old_sha, new_sha, status[:1], os.fsdecode(fields[i + 1])))
        i += 2
    return changes


def staged_changes(cwd: str | Path | None = None) -> list[Change]:
    """What the commit being made changes: the index git is about to commit against HEAD."""
    base = head(cwd) or empty_tree(cwd)
    return parse_raw(out(["diff-index", "--cached", "--raw", "-z", "--no-renames", "--no-ext-diff", base], cwd))


def merge_heads(cwd: str | Path | None = None) -> list[str]:
    """The other parents of a merge being committed (``MERGE_HEAD``), else []."""
    try:
        text = git_path("MERGE_HEAD", cwd).read_text()
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip()]


def staged_commit_changes(cwd: str | Path | None = None) -> list[Change]:
    """What the commit being made changes on its own account.

    For an ordinary commit that is the index against HEAD.  For a merge, the
    paths it takes unchanged from another parent that changed them since the
    merge base are left out (see ``merge_brought``): they were judged when that
    side was committed.  Everything else it changes against HEAD is its own.
    """
    changes = staged_changes(cwd)
    others = merge_heads(cwd)
    head_ = head(cwd)
    if not others or head_ is None:
        return changes
    brought = merge_brought(None, head_, others, [c.path for c in changes], cwd)
    return [c for c in changes if c.path not in brought]


MERGE_PATHS_MAX = 2000  # beyond this, judge the whole first-parent diff (conservative, never laxer)


def merge_brought(target: str | None, first_parent: str, others: Sequence[str], paths: Sequence[str],
                  cwd: str | Path | None = None) -> set[str]:
    """Paths a merge (``target``: a commit, None: the index) takes unchanged from another parent
    that changed them since its merge base with the first parent.

    Such a path was judged in that parent's own commits, just as a fast-forward
    would have been.  A path the merge makes anew (a conflict resolution, an
    evil merge) is not among them, and neither is a path taken from a parent
    that did not change it since the merge base: that would let a merge with an
    old ancestor quietly revert an oracle file.
    """
    if not paths or len(paths) > MERGE_PATHS_MAX:
        return set()
    specs = ["--", *(":(literal,top)" + p for p in paths)]
    brought: set[str] = set()
    for other in others:
        proc = run(["merge-base", first_parent, other], cwd, check=False)
        base = proc.stdout.decode().strip()
        if proc.returncode != 0 or not base:
            continue
        if target is None:
            differs = out(["diff-index", "--cached", "-z", "--name-only", "--no-renames", other, *specs], cwd)
        else:
            differs = out(["diff-tree", "-r", "-z", "--name-only", "--no-renames", target, other, *specs], cwd)
        side = out(["diff-tree", "-r", "-z", "--name-only", "--no-renames", base, other, *specs], cwd)
        brought |= set(zsplit(side)) - set(zsplit(differs))
    return brought & set(paths)


def tree_changes(old: str, new: str, cwd: str | Path | None = None) -> list[Change]:
    """Changes between two trees or commits (recursive, no rename detection)."""
    return parse_raw(out(["diff-tree", "-r", "--raw", "-z", "--no-renames", "--no-ext-diff", old, new], cwd))


def diff_bytes(old: str, new: str, cwd: str | Path | None = None) -> bytes:
    """The patch text between two revisions, as `git apply` reads it (binary-safe)."""
    return out(["diff", "--no-ext-diff", "--no-renames", "--binary", "--no-color", old, new, "--"], cwd)


def change_bytes(old: str, new: str, cwd: str | Path | None = None) -> int:
    """What ``git diff`` reads for the change: the larger side of each file it touches, summed (bytes)."""
    changes = tree_changes(old, new, cwd)
    shas = sorted({sha for c in changes for sha in (c.old_sha, c.new_sha) if sha.strip("0")})
    if not shas:
        return 0
    data = out(["cat-file", "--batch-check=%(objectname) %(objectsize)"], cwd, "".join(f"{s}\n" for s in shas).encode())
    size = {p[0]: int(p[1]) for p in (ln.split() for ln in data.decode().splitlines())
            if len(p) == 2 and p[1].isdigit() and len(p[1]) < 20}
    return sum(max(size.get(c.old_sha, 0), size.get(c.new_sha, 0)) for c in changes)


def diff_capped(old: str, new: str, cap: int, cwd: str | Path | None = None) -> tuple[bytes | None, str, int]:
    """``diff_bytes`` in bounded memory: (the patch, or None when it is over ``cap`` bytes; its sha256; its size).

    An over-long patch is read to its end in chunks for its sha256 and size, never kept whole.
    """
    import hashlib

    proc = subprocess.Popen(["git", "diff", "--no-ext-diff", "--no-renames", "--binary", "--no-color", old, new, "--"],
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    digest, size, kept = hashlib.sha256(), 0, bytearray()
    try:
        while chunk := proc.stdout.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
            if size <= cap:
                kept += chunk
            elif kept:
                kept = bytearray()  # over the cap: nothing more is kept
        err = proc.stderr.read(1 << 16)
    finally:
        proc.stdout.close()
        proc.stderr.close()
        code = proc.wait()
    if code != 0:
        lines = err.decode(errors="replace").strip().splitlines()
        raise GitFailed(f"git diff failed: {lines[-1] if lines else code}")
    return (bytes(kept) if size <= cap else None), digest.hexdigest(), size


# ---------------------------------------------------------------- trees, index, blobs

@dataclass(frozen=True)
class Entry:
    """One file of a tree or of the index."""

    mode: str
    sha: str
    path: str

    @property
    def is_symlink(self) -> bool:
        return self.mode == SYMLINK_MODE

    @property
    def is_submodule(self) -> bool:
        return self.mode == GITLINK_MODE


def ls_tree(rev: str, cwd: str | Path | None = None) -> list[Entry]:
    """Every file of ``rev`` (recursive, full tree)."""
    entries = []
    for record in zsplit(out(["ls-tree", "-r", "-z", "--full-tree", rev], cwd)):
        meta, path = record.split("\t", 1)
        mode, _type, sha = meta.split(" ")
        entries.append(Entry(mode, sha, path))
    return entries


def ls_index(cwd: str | Path | None = None) -> list[Entry]:
    """Every file of the index in use (``GIT_INDEX_FILE`` honoured); stage 0 only."""
    entries = []
    for record in zsplit(out(["ls-files", "--stage", "-z"], cwd)):
        meta, path = record.split("\t", 1)
        mode, sha, stage = meta.split(" ")
        if stage == "0":
            entries.append(Entry(mode, sha, path))
    return entries


def worktree_modified(cwd: str | Path | None = None) -> list[str]:
    """Paths whose work tree file differs from the index (stat-based, cheap)."""
    return zsplit(out(["diff-files", "--name-only", "-z", "--no-ext-diff"], cwd))


def read_blobs(shas: Iterable[str], cwd: str | Path | None = None) -> Iterator[tuple[str, bytes]]:
    """Stream ``(sha, content)`` for many blobs through one ``cat-file --batch``."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return
    proc = subprocess.Popen(
        ["git", "cat-file", "--batch"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        # Feeding all ids up front can deadlock once both pipes fill; a writer thread avoids it.
        import threading

        def feed() -> None:
            assert proc.stdin is not None
            try:
                proc.stdin.write(b"".join(s.encode() + b"\n" for s in wanted))
                proc.stdin.close()
            except BrokenPipeError:
                pass

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        for sha in wanted:
            header = proc.stdout.readline().split()
            if len(header) != 3:
                raise GitFailed(f"git cat-file: object {sha} is missing")
            size = int(header[2])
            data = proc.stdout.read(size)
            proc.stdout.read(1)
            yield sha, data
        writer.join()
    finally:
        proc.stdout.close()
        proc.wait()


def read_blob(sha: str, cwd: str | Path | None = None) -> bytes:
    return out(["cat-file", "blob", sha], cwd)


def file_at(rev: str | None, path: str, cwd: str | Path | None = None) -> bytes | None:
    """A file's bytes at ``rev`` (None: the index in use); None when it is not there."""
    if rev is None:
        entries = {e.path: e for e in _ls_index_paths([path], cwd)}
    else:
        entries = {e.path: e for e in _ls_tree_paths(rev, [path], cwd)}
    entry = entries.get(path)
    if entry is None or entry.is_submodule:
        return None
    return read_blob(entry.sha, cwd)


def _ls_tree_paths(rev: str, paths: Sequence[str], cwd: str | Path | None) -> list[Entry]:
    records = zsplit(out(["ls-tree", "-z", "--full-tree", rev, "--", *paths], cwd))
    result = []
    for record in records:
        meta, path = record.split("\t", 1)
        mode, _type, sha = meta.split(" ")
        result.append(Entry(mode, sha, path))
    return result


def _ls_index_paths(paths: Sequence[str], cwd: str | Path | None) -> list[Entry]:
    specs = [":(literal,top)" + p for p in paths]
    records = zsplit(out(["ls-files", "--stage", "-z", "--full-name", "--", *specs], cwd))
    result = []
    for record in records:
        meta, path = record.split("\t", 1)
        mode, sha, stage = meta.split(" ")
        if stage == "0":
            result.append(Entry(mode, sha, path))
    return result


def author_email(cwd: str | Path | None = None) -> str:
    """The author of the commit being made (``GIT_AUTHOR_*`` and config honoured)."""
    proc = run(["var", "GIT_AUTHOR_IDENT"], cwd, check=False)
    ident = proc.stdout.decode(errors="replace")
    if "<" in ident and ">" in ident:
        return ident[ident.index("<") + 1 : ident.index(">")]
    return ""


def untracked(cwd: str | Path | None = None) -> list[str]:
    """Untracked, not ignored files (repository-relative)."""
    return zsplit(out(["ls-files", "-z", "--others", "--exclude-standard", "--full-name", ":/"], cwd))


# ---- admission (issue 3): apply a patch to a base tree in a private index, no work tree

def patched_tree(diff: bytes, base: str, cwd: str | Path | None = None) -> tuple[bool, str, str | None]:
    """``git read-tree BASE`` into a temporary ``GIT_INDEX_FILE``, then ``git apply --check
    --cached``; on success apply it there and ``write-tree``.

    Returns ``(ok, git's message, tree id or None)``.  The work tree, the real
    index and the object store's refs are untouched (``write-tree`` only adds objects).
    """
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gate-apply-") as tmp:
        env = dict(os.environ)
        env["GIT_INDEX_FILE"] = os.path.join(tmp, "index")
        run(["read-tree", base], cwd, env=env)
        check = run(["apply", "--check", "--cached", "-"], cwd, stdin=diff, env=env, check=False)
        if check.returncode != 0:
            lines = check.stderr.decode(errors="replace").strip().splitlines()
            return False, (lines[-1] if lines else f"git apply exited {check.returncode}"), None
        run(["apply", "--cached", "-"], cwd, stdin=diff, env=env)
        tree = run(["write-tree"], cwd, env=env).stdout.decode().strip()
        return True, "applies cleanly", tree


def files_at(treeish: str, paths: Sequence[str], cwd: str | Path | None = None) -> dict[str, bytes]:
    """``{path: bytes}`` of the regular files among ``paths`` in a tree or commit (absent ones left out)."""
    if not paths:
        return {}
    entries = [e for e in _ls_tree_paths(treeish, list(paths), cwd) if not e.is_submodule and not e.is_symlink]
    blobs = dict(read_blobs((e.sha for e in entries), cwd))
    return {e.path: blobs[e.sha] for e in entries}


# ---- pre-receive

def object_format(cwd: str | Path | None = None) -> str:
    """``sha1`` or ``sha256``: the repository's hash."""
    return out(["rev-parse", "--show-object-format"], cwd).decode().strip()


def batch_check(names: Sequence[str], cwd: str | Path | None = None) -> dict[str, tuple[str, str] | None]:
    """``cat-file --batch-check`` for many object names at once: name -> (id, type), None if absent.

    A name may carry a peel suffix (``<id>^{commit}``); one process for all of them.
    """
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return {}
    data = out(["cat-file", "--batch-check"], cwd, b"".join(n.encode() + b"\n" for n in wanted))
    lines = data.decode(errors="replace").split("\n")
    result: dict[str, tuple[str, str] | None] = {}
    for name, line in zip(wanted, lines, strict=False):
        fields = line.split(" ")
        ok = len(fields) == 3 and fields[2].isdigit()
        result[name] = (fields[0], fields[1]) if ok else None
    return result


def symbolic_head(cwd: str | Path | None = None) -> str | None:
    """The ref HEAD names (a bare repository's default branch), or None when HEAD is detached."""
    proc = run(["symbolic-ref", "-q", "HEAD"], cwd, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def is_ancestor(ancestor: str, descendant: str, cwd: str | Path | None = None) -> bool:
    """``merge-base --is-ancestor``: is moving ``ancestor`` to ``descendant`` a fast-forward?"""
    proc = run(["merge-base", "--is-ancestor", ancestor, descendant], cwd, check=False)
    if proc.returncode not in (0, 1):
        raise GitFailed(f"git merge-base --is-ancestor failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.returncode == 0


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


# ---- runner: worktrees for the differential run (issue 4)

def worktree_add(path: str | Path, rev: str, cwd: str | Path | None = None) -> None:
    """``git worktree add --detach`` of ``rev`` at ``path`` (no hooks, no checkout noise)."""
    run(["-c", "core.hooksPath=/dev/null", "worktree", "add", "--detach", "--quiet", "--force",
         os.fspath(path), rev], cwd)


def worktree_remove(path: str | Path, cwd: str | Path | None = None) -> None:
    """Remove a worktree (forcefully: it holds the gate's scratch files), then prune."""
    run(["worktree", "remove", "--force", "--force", os.fspath(path)], cwd, check=False)
    run(["worktree", "prune"], cwd, check=False)


def worktree_list(cwd: str | Path | None = None) -> list[str]:
    """Paths of every registered worktree (the main one first)."""
    data = out(["worktree", "list", "--porcelain", "-z"], cwd)
    return [os.fsdecode(f[len(b"worktree "):]) for f in data.split(b"\0") if f.startswith(b"worktree ")]


def author_emails(base: str, head: str, cwd: str | Path | None = None) -> list[str]:
    """Author e-mails of the commits in ``base..head``."""
    return [e for e in out(["log", "--format=%ae", f"{base}..{head}", "--"], cwd).decode().split("\n") if e]


def tracked_changes(cwd: str | Path | None = None) -> list[str]:
    """Tracked paths whose work tree or index differs from HEAD."""
    return zsplit(out(["diff", "HEAD", "--name-only", "-z", "--no-ext-diff", "--no-renames"], cwd))
