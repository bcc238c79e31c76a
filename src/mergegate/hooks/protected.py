"""Which refs count as judged: the default branch and ``server.protected_refs``.

A commit is judged when a protected ref first gains it: the walk of a push to a
protected ref stops at the protected refs' tips before the push, not at every ref
the server holds.  A commit the server already has in ``refs/pull/*``, in another
branch, or in a ref made before the hook was installed, was never judged under
the policy of the ref it now lands on; fast-forwarding (or merging) it in judges it.
A push to an unprotected ref is judged as before: its commits new to the repository.
One ``for-each-ref`` per push lists the tips.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mergegate.git import core
from mergegate.records import policy
from mergegate.rules import globs


@dataclass(frozen=True)
class Tip:
    ref: str
    commit: str  # the ref's object peeled to a commit


def tips(cwd: str | Path | None = None) -> list[Tip]:
    """Every ref that points (directly, or through one annotated tag) at a commit."""
    data = core.out(["for-each-ref", "--format=%(objecttype) %(objectname) %(*objecttype) %(*objectname) "
                      "%(refname)"], cwd)
    found = []
    for line in data.decode(errors="surrogateescape").split("\n"):
        if not line:
            continue
        kind, sha, peeled_kind, peeled, ref = line.split(" ", 4)
        if kind == "commit":
            found.append(Tip(ref, sha))
        elif kind == "tag" and peeled_kind == "commit":
            found.append(Tip(ref, peeled))
    return found


def is_protected(ref: str, pol: policy.Policy, default_ref: str | None) -> bool:
    return ref == default_ref or globs.matches(ref, pol.server.protected_refs)


def judged_tips(all_tips: Sequence[Tip], pol: policy.Policy, default_ref: str | None) -> list[str]:
    """The commits every protected ref holds before the push: a push to one is judged beyond them."""
    return sorted({t.commit for t in all_tips if is_protected(t.ref, pol, default_ref)})
