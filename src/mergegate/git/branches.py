"""The repository's default branch: what ``--base`` means when it is not given."""

from __future__ import annotations

from pathlib import Path

from mergegate.errors import UsageError
from mergegate.git import core


def default_branch(cwd: str | Path | None = None) -> str:
    """``origin/HEAD``'s branch if set, else ``init.defaultBranch``, ``main`` or ``master`` (the first that exists)."""
    proc = core.run(["symbolic-ref", "-q", "refs/remotes/origin/HEAD"], cwd, check=False)
    ref = proc.stdout.decode().strip() if proc.returncode == 0 else ""
    if ref.startswith("refs/remotes/") and core.resolve(ref, cwd):
        return ref.removeprefix("refs/remotes/")
    configured = core.run(["config", "--get", "init.defaultBranch"], cwd, check=False).stdout.decode().strip()
    for name in dict.fromkeys(n for n in (configured, "main", "master") if n):
        if core.resolve(f"refs/heads/{name}", cwd):
            return name
    raise UsageError("no default branch: origin/HEAD is not set and there is no main or master branch",
                     "pass --base BRANCH (the branch the patch is for)")


def base_or_default(base: str | None, cwd: str | Path | None = None) -> str:
    return base if base else default_branch(cwd)
