"""``gate commit --split -m MESSAGE``: a staged fix and its test as two commits, the oracle first.

The staged change (the index against HEAD) touches guarded and production
paths, which no commit may do.  This makes (1) HEAD plus only the staged
guarded paths, with ``MANIFEST.sha256`` re-signed for that tree, then (2) the
rest of the staged change on top.  Judged as ``--base (1) --head (2)``, the new
test is on the base: it fails there and passes on the head (``parent_fail_cleared``).

Both commits are real ``git commit`` runs on private indexes (``GIT_INDEX_FILE``),
so the installed hooks judge each one.  The real index stays locked
(``index.lock``) and untouched until both commits exist; any failure moves HEAD
back and leaves the index as it was.  The work tree is never written, except
the manifest when it had no unstaged change of its own.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mergegate.errors import EXIT_NO, GateError, UsageError
from mergegate.git import blobs, core, diffs
from mergegate.records import manifest, repo
from mergegate.records.fsutil import atomic_write
from mergegate.records.policy import GUARDED, Policy
from mergegate.rules import agents
from mergegate.rules.split import split

IN_PROGRESS = (("MERGE_HEAD", "a merge"), ("rebase-merge", "a rebase"), ("rebase-apply", "a rebase"),
               ("CHERRY_PICK_HEAD", "a cherry-pick"), ("REVERT_HEAD", "a revert"))


class Refused(GateError):
    """A commit did not happen (a hook said no): exit 1, HEAD and the index as before."""

    exit_code = EXIT_NO


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--split", action="store_true",
                        help="commit the staged guarded paths first (manifest re-signed), then the rest on top")
    parser.add_argument("-m", "--message", metavar="MESSAGE", help="message of the production commit")
    parser.add_argument("--oracle-message", metavar="MSG", help="message of the oracle commit "
                        "(default: 'oracle: ' + the first line of MESSAGE)")


def run(args: argparse.Namespace) -> int:
    message, oracle_message = _messages(args)
    top = core.toplevel()
    _refuse_in_progress(top)
    pol = repo.trusted_policy(top)
    _refuse_agent(pol, top)
    plan = _plan(top, pol)
    first, second = _execute(plan, oracle_message, message)
    print(f"oracle commit:     {first}  {oracle_message.splitlines()[0]}")
    if second is None:
        print("production commit: none (nothing staged beyond the guarded paths)")
        return 0
    print(f"production commit: {second}  {message.splitlines()[0]}")
    print(f"judge the fix with its test on the base: gate check --base {first} --head {second}")
    return 0


# ---------------------------------------------------------------- preconditions


def _messages(args: argparse.Namespace) -> tuple[str, str]:
    if not args.split:
        raise UsageError("gate commit only splits a staged change", 'use gate commit --split -m "<message>"')
    message = (args.message or "").strip()
    if not message:
        raise UsageError("-m MESSAGE is missing (gate commit never opens an editor)",
                         'gate commit --split -m "<message>"')
    oracle = (args.oracle_message or "").strip() or f"oracle: {message.splitlines()[0]}"
    return message, oracle


def _refuse_in_progress(top: Path) -> None:
    for name, what in IN_PROGRESS:
        if core.git_path(name, top).exists():
            raise UsageError(f"{what} is in progress; its commit is not a fix to split",
                             "finish it (git commit --no-edit, or GIT_EDITOR=true git rebase --continue) "
                             "or abort it first")


def _refuse_agent(pol: Policy, top: Path) -> None:
    email = core.author_email(top)
    if agents.is_agent(pol, os.environ, email):
        why = agents.agent_reason(pol, os.environ, email)
        raise UsageError(f"an agent ({why}) may not make the oracle commit",
                         "a person commits the test and its catalog entry; the agent commits production only")


@dataclass(frozen=True)
class Plan:
    top: Path
    head: str | None  # None before the first commit
    oracle: tuple[diffs.Change, ...]  # staged guarded paths
    rest: tuple[diffs.Change, ...]  # everything else staged


def _plan(top: Path, pol: Policy) -> Plan:
    changes = diffs.staged_changes(top)
    if not changes:
        raise UsageError("nothing staged", 'git add the fix and its test, then gate commit --split -m "<message>"')
    unmerged = [c.path for c in changes if c.status == "U"]
    if unmerged:
        raise UsageError(f"unmerged path staged: {unmerged[0]}", "resolve the conflict and git add it first")
    if not split(changes, pol).mixed:
        raise UsageError("the staged change does not mix guarded and production paths; there is nothing to split",
                         'just git commit -m "<message>"')
    oracle = tuple(c for c in changes if pol.classify(c.path) in GUARDED)
    rest = tuple(c for c in changes if pol.classify(c.path) not in GUARDED)
    return Plan(top, core.head(top), oracle, rest)


# ---------------------------------------------------------------- the two commits


def _execute(plan: Plan, oracle_message: str, message: str) -> tuple[str, str | None]:
    real_index = _index_path(plan.top)
    with _IndexLock(real_index) as lock, _scratch(plan.top) as tmp:
        first_index, second_index = tmp / "oracle-index", tmp / "commit-index"
        tree1, pol1, signed = _oracle_index(plan, real_index, first_index)
        old_manifest = blobs.file_at(None, pol1.paths.manifest, plan.top)  # the real index's, still locked
        tree2 = _rest_index(plan, real_index, second_index, pol1.paths.manifest, signed)
        _check_trees(plan, tree1, tree2, pol1)
        try:
            first = _commit(plan, first_index, oracle_message, tree1, plan.head, "oracle")
            second = _commit(plan, second_index, message, tree2, first, "production") if tree2 != tree1 else None
            lock.replace_with(second_index if second else first_index)
        except BaseException:
            _roll_back(plan)
            raise
    _refresh_worktree_manifest(plan.top / pol1.paths.manifest, old_manifest, signed)
    return first, second


def _oracle_index(plan: Plan, real_index: Path, index: Path) -> tuple[str, Policy, bytes]:
    """HEAD plus the staged guarded paths, the manifest re-signed: (tree, its policy, the manifest)."""
    shutil.copyfile(real_index, index)  # a copy keeps the stat data of every unchanged file
    with _using_index(index):
        _update_index(plan.top, ((c.old_mode, c.old_sha, c.path) for c in plan.rest))  # the rest as at HEAD
        pol1 = repo.load_policy(None, plan.top)  # the policy commit 1 will have (the hook signs with it)
        signed = manifest.expected_at(None, pol1, plan.top)
        _set_manifest(plan.top, pol1.paths.manifest, signed)
        tree = core.out(["write-tree"], plan.top).decode().strip()
    return tree, pol1, signed


def _rest_index(plan: Plan, real_index: Path, index: Path, manifest_path: str, signed: bytes) -> str:
    """The whole staged change with commit 1's manifest: the tree of commit 2."""
    shutil.copyfile(real_index, index)
    with _using_index(index):
        _set_manifest(plan.top, manifest_path, signed)
        return core.out(["write-tree"], plan.top).decode().strip()


def _check_trees(plan: Plan, tree1: str, tree2: str, pol1: Policy) -> None:
    base_tree = core.out(["rev-parse", f"{plan.head}^{{tree}}"], plan.top).decode().strip() if plan.head \
        else core.empty_tree(plan.top)
    if tree1 == base_tree:
        raise UsageError("the only guarded change staged is the manifest, and HEAD's already verifies",
                         f"git restore --staged -- {shlex.quote(pol1.paths.manifest)}, then git commit -m ...")
    moved = split(diffs.tree_changes(tree1, tree2, plan.top), pol1).guarded
    if moved:
        raise UsageError(f"the staged {pol1.source} makes {moved[0]} guarded, so no split into two commits "
                         "keeps both apart", "commit the policy change on its own first, then split the rest")


def _commit(plan: Plan, index: Path, message: str, tree: str, parent: str | None, which: str) -> str:
    """``git commit`` of ``index`` (the installed hooks run); the new commit's id."""
    env = dict(os.environ, GIT_INDEX_FILE=str(index), GIT_EDITOR=":")
    proc = core.run(["commit", "-q", "--no-edit", "-m", message], plan.top, env=env, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace"))
        raise Refused(f"the {which} commit was refused (git commit exited {proc.returncode}); "
                      "HEAD and the index are as before", "fix what the hook says and run gate commit --split again")
    made = core.out(["rev-parse", "HEAD", "HEAD^{tree}"], plan.top).decode().split()
    parents = core.out(["rev-list", "--parents", "-n", "1", made[0]], plan.top).decode().split()[1:]
    if made[1] != tree or parents != ([parent] if parent else []):
        raise Refused(f"the {which} commit is not the one planned (a hook changed it); "
                      "HEAD and the index are as before", "commit without that hook's changes, or split by hand")
    return made[0]


def _roll_back(plan: Plan) -> None:
    """Move HEAD back to where it was (best effort: the caller's error is the one reported)."""
    now = core.head(plan.top)
    if now == plan.head:
        return
    if plan.head is None:
        core.run(["update-ref", "-d", "HEAD"], plan.top, check=False)
    else:
        core.run(["update-ref", "-m", "gate commit --split: rolled back", "HEAD", plan.head], plan.top, check=False)


def _refresh_worktree_manifest(path: Path, old_staged: bytes | None, signed: bytes) -> None:
    """Write the re-signed manifest unless the work tree holds an unstaged change of it."""
    try:
        current: bytes | None = path.read_bytes()
    except OSError:
        current = None
    if current == old_staged and current != signed:
        try:
            atomic_write(path, signed)
        except OSError as exc:
            print(f"gate commit: could not refresh {path}: {exc}; git restore it", file=sys.stderr)


# ---------------------------------------------------------------- index plumbing


def _index_path(top: Path) -> Path:
    given = os.environ.get("GIT_INDEX_FILE")
    return Path(given).absolute() if given else core.git_path("index", top)


@contextlib.contextmanager
def _using_index(index: Path) -> Iterator[None]:
    """Point every git call of this process (``mergegate.git`` inherits the environment) at ``index``."""
    saved = os.environ.get("GIT_INDEX_FILE")
    os.environ["GIT_INDEX_FILE"] = str(index)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("GIT_INDEX_FILE", None)
        else:
            os.environ["GIT_INDEX_FILE"] = saved


@contextlib.contextmanager
def _scratch(top: Path) -> Iterator[Path]:
    parent = core.git_path("mergegate", top)
    parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="split-", dir=parent) as tmp:
        yield Path(tmp)


def _update_index(top: Path, entries: Iterable[tuple[str, str, str]]) -> None:
    """``update-index --index-info``: (mode, object id, path); mode 000000 removes the path."""
    data = b"".join(f"{mode} {sha}\t".encode() + os.fsencode(path) + b"\0" for mode, sha, path in entries)
    if data:
        core.out(["update-index", "-z", "--index-info"], top, data)


def _set_manifest(top: Path, path: str, text: bytes) -> None:
    blob = core.out(["hash-object", "-w", "--no-filters", "--stdin"], top, text).decode().strip()
    _update_index(top, [("100644", blob, path)])


class _IndexLock:
    """Hold ``index.lock`` as git does: nobody changes the index meanwhile; ``replace_with`` commits it."""

    def __init__(self, index: Path) -> None:
        self.index = index
        self.lock = index.with_name(index.name + ".lock")
        self.fd: int | None = None
        self.done = False

    def __enter__(self) -> _IndexLock:
        try:
            self.fd = os.open(self.lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            raise UsageError(f"{self.lock} exists: another git process is using the index",
                             "wait for it to finish, or remove the lock file if no git process runs") from None
        return self

    def replace_with(self, source: Path) -> None:
        assert self.fd is not None
        data = memoryview(source.read_bytes())
        while data:
            data = data[os.write(self.fd, data):]
        os.fsync(self.fd)
        os.replace(self.lock, self.index)
        self.done = True

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
        if not self.done:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.lock)
