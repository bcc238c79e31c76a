"""git's own reading of a patch: what ``git apply`` really does to the base.

Our strict parser (``patchparse``) is the ``parse_diff`` canary, but the other
canaries read the patch as git applied it: the patch goes into a temporary index
from the base (``blobs.patched_tree``), and the file set, paths and added lines
come from git's diff of the base tree against that result.  A line our parser
would read differently (a mail signature, an odd path prefix, a rename whose
header disagrees with its ``rename from``/``rename to`` lines) cannot hide a
file from the later canaries: they never see our reading, only git's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mergegate.git import blobs, core
from mergegate.rules.patchparse import ParsedDiff, parse_diff


@dataclass(frozen=True)
class Reading:
    ok: bool
    message: str  # git's words when the patch does not apply
    tree: str | None  # the base tree with the patch applied
    parsed: ParsedDiff | None  # the change base -> tree, as git writes it


def read(diff: bytes, base: str, cwd: str | Path | None = None) -> Reading:
    """Apply ``diff`` to ``base`` in a temporary index; the change as git made it."""
    ok, message, tree = blobs.patched_tree(diff, base, cwd)
    if tree is None:
        return Reading(ok, message, None, None)
    return Reading(ok, message, tree, changes(base, tree, cwd))


def changes(old: str, new: str, cwd: str | Path | None = None) -> ParsedDiff:
    """The patch between two trees in git's own plumbing format (no user diff config, no renames)."""
    text = core.out(["diff-tree", "-p", "-r", "--binary", "--full-index", "--no-renames", "--no-ext-diff",
                      "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", old, new, "--"], cwd)
    return parse_diff(text) if text.strip() else ParsedDiff(())
