"""What ``gate check`` judges: the target branch's current tip, and the head as it would land there.

The trusted side (policy, catalog, oracle files, ledger) and the base of the
differential run are the target's tip, never an older merge-base: a property a
person added to the target since the branch forked runs on the branch too.

A head that already contains the tip (the merge-base is the tip) is judged as it
is.  A stale head (forked before the tip) is, by default, judged as the merge
result: ``git merge-tree --write-tree`` of tip and head, recorded as a merge
commit (fixed author, committer and date, so the same pair always gives the same
commit) that the run checks out; a conflict stops the check (``merge_conflict``).
``verdict.stale_base: refuse`` in the target's gate.yaml (or ``gate check
--require-up-to-date``) refuses a stale head outright (``stale_base``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mergegate.git import core

UP_TO_DATE = "up_to_date"
MERGE_RESULT = "merge_result"
STALE_BASE = "stale_base"
MERGE_CONFLICT = "merge_conflict"
MERGE, REFUSE = "merge", "refuse"  # verdict.stale_base
FIX_STALE = ("bring the branch up to date with the target (git merge --no-edit TARGET, or git rebase TARGET), "
             "then check again")

_IDENT = {
    "GIT_AUTHOR_NAME": "mergegate", "GIT_AUTHOR_EMAIL": "gate@mergegate.invalid",
    "GIT_COMMITTER_NAME": "mergegate", "GIT_COMMITTER_EMAIL": "gate@mergegate.invalid",
    "GIT_AUTHOR_DATE": "@0 +0000", "GIT_COMMITTER_DATE": "@0 +0000",
}


@dataclass(frozen=True)
class Judged:
    """The two revisions a check compares, and how the head side was made."""

    target: str  # the target's tip: trusted side and base of the run
    patch_head: str  # the head as asked for
    merge_base: str  # git merge-base of the two
    head: str  # the revision judged as the head side: patch_head, or the merge-result commit
    mode: str  # up_to_date | merge_result | stale_base | merge_conflict
    merged_tree: str | None = None
    conflicts: tuple[str, ...] = ()

    @property
    def stopped(self) -> bool:
        return self.mode in (STALE_BASE, MERGE_CONFLICT)

    def to_json(self) -> dict[str, object]:
        return {"mode": self.mode, "target": self.target, "head": self.patch_head, "merge_base": self.merge_base,
                "judged_head": self.head, "merge_result_tree": self.merged_tree, "conflicts": list(self.conflicts)}

    def line(self, target_name: str) -> str:
        """One line for the console and the summary: which revisions were judged."""
        where = f"target {target_name} at {self.target[:12]}"
        if self.mode == UP_TO_DATE:
            return f"judged: head {self.patch_head[:12]} against {where} (up to date)"
        if self.mode == MERGE_RESULT:
            return (f"judged: the merge result of head {self.patch_head[:12]} into {where} (tree "
                    f"{(self.merged_tree or '')[:12]}, commit {self.head[:12]}; the head forked at "
                    f"{self.merge_base[:12]})")
        if self.mode == MERGE_CONFLICT:
            shown = ", ".join(self.conflicts[:4]) + (" ..." if len(self.conflicts) > 4 else "")
            return f"not judged: head {self.patch_head[:12]} conflicts with {where} ({shown}); fix: {FIX_STALE}"
        return (f"not judged: head {self.patch_head[:12]} forked at {self.merge_base[:12]}, before {where}; "
                f"fix: {FIX_STALE}")


def judge_pair(target: str, head: str, stale: str, cwd: str | Path | None = None) -> Judged:
    """The revisions to judge for the patch ``head`` aimed at the commit ``target``."""
    mb = core.merge_base(target, head, cwd)
    if mb == target:
        return Judged(target, head, mb, head, UP_TO_DATE)
    if stale == REFUSE:
        return Judged(target, head, mb, head, STALE_BASE)
    tree, conflicts = merge_tree(target, head, cwd)
    if conflicts:
        return Judged(target, head, mb, head, MERGE_CONFLICT, tree, conflicts)
    return Judged(target, head, mb, merge_commit(tree, target, head, cwd), MERGE_RESULT, tree)


def merge_tree(a: str, b: str, cwd: str | Path | None = None) -> tuple[str, tuple[str, ...]]:
    """``git merge-tree --write-tree`` of two commits: (tree, conflicted paths; empty when clean)."""
    proc = core.run(["merge-tree", "--write-tree", "--no-messages", "--name-only", "-z", a, b], cwd, check=False)
    if proc.returncode not in (0, 1):
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise core.GitFailed(f"git merge-tree failed: {err[-1] if err else proc.returncode}")
    fields = [os.fsdecode(f) for f in proc.stdout.split(b"\0") if f]
    if not fields:
        raise core.GitFailed("git merge-tree wrote no tree")
    tree, paths = fields[0].strip(), tuple(dict.fromkeys(fields[1:]))
    if proc.returncode == 1 and not paths:
        paths = ("(a conflict git did not name)",)
    return tree, paths if proc.returncode == 1 else ()


def merge_commit(tree: str, first: str, second: str, cwd: str | Path | None = None) -> str:
    """A merge commit of ``tree`` with parents ``first`` and ``second``: same inputs, same commit id."""
    env = {**os.environ, **_IDENT}
    msg = f"gate check: merge result of {second} into {first}\n".encode()
    proc = core.run(["commit-tree", "--no-gpg-sign", tree, "-p", first, "-p", second], cwd, msg, env)
    return proc.stdout.decode().strip()


def tree_of(rev: str, cwd: str | Path | None = None) -> str:
    """The tree id of a commit."""
    return core.out(["rev-parse", "--verify", "--end-of-options", f"{rev}^{{tree}}"], cwd).decode().strip()
