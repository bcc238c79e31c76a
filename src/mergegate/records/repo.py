"""Load the policy from the trusted side of a repository."""

from __future__ import annotations

from pathlib import Path

from mergegate.errors import UsageError
from mergegate.git import blobs, core
from mergegate.records import policy


def load_policy(rev: str | None, cwd: str | Path | None = None) -> policy.Policy:
    """gate.yaml at ``rev`` (None: the index in use), validated."""
    core.ensure_repo(cwd)  # outside a repository: "not a git repository" (exit 2), not a git failure
    data = blobs.file_at(rev, policy.POLICY_FILE, cwd)
    where = "the index" if rev is None else rev
    if data is None:
        raise UsageError(
            f"no {policy.POLICY_FILE} in {where}",
            "run `gate init`, then commit gate.yaml in an oracle-only commit",
        )
    source = policy.POLICY_FILE if rev is None else f"{policy.POLICY_FILE} (at {rev})"
    return policy.parse(data, source)


def trusted_policy(cwd: str | Path | None = None) -> policy.Policy:
    """HEAD's policy: what the commit being made cannot rewrite for itself.

    Before the first commit there is no HEAD; then the index's policy is all there is.
    """
    core.ensure_repo(cwd)
    head = core.head(cwd)
    if head is not None and blobs.file_at(head, policy.POLICY_FILE, cwd) is not None:
        return load_policy(head, cwd)
    return load_policy(None, cwd)
