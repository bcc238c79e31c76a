"""What a push leaves on a branch must stay readable: the next push is judged by it.

gate.yaml, the allowed signers it names, the freeze ledger and the catalog (its node
ids resolving to tests) at each pushed branch tip are loaded with the same loaders
the client uses.  Only what the push changes is checked: a file already broken on
the server is the repair path's business (``trusted``), not a reason to refuse an
unrelated push.  One ``diff-tree --stdin`` finds the changes of every branch.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mergegate.errors import GateError
from mergegate.git import blobs, merges
from mergegate.hooks.receive_rules import Refusal
from mergegate.records import policy

BROKEN = "broken-config"
FIX = ("make the file valid in an oracle-only commit (`gate check` loads it locally) and push again; "
       "the server judges the next push by this branch's copy")


def refusals(branches: Sequence[tuple[str, str, str, policy.Policy | None]], cwd: str | Path | None
             ) -> list[Refusal]:
    """``(ref, new tip, trusted commit, its policy or None if unreadable)`` per pushed branch."""
    changed = merges.pair_diffs([(new, old) for _ref, new, old, _pol in branches], None, cwd)
    found = []
    for (ref, new, _old, trusted_policy), paths in zip(branches, changed, strict=True):
        problem = problem_at(new, paths, trusted_policy, cwd)
        if problem:
            found.append(Refusal(ref, BROKEN, (), f"{problem.fix}; {FIX}" if problem.fix else FIX,
                                 problem.message))
    return found


def problem_at(rev: str, changed: set[str], trusted_policy: policy.Policy | None,
               cwd: str | Path | None) -> GateError | None:
    """Why the files the next push would be judged by at ``rev`` cannot be read (None if they can).

    Only files among ``changed`` (or read by a changed gate.yaml) are loaded; an unchanged
    gate.yaml is the trusted one, already parsed (None: unreadable, the repair path's business).
    """
    policy_changed = policy.POLICY_FILE in changed
    if policy_changed:
        data = blobs.file_at(rev, policy.POLICY_FILE, cwd)
        if data is None:
            return GateError(f"{policy.POLICY_FILE} is missing at {rev[:12]}")
        try:
            pol = policy.parse(data, f"{policy.POLICY_FILE} (at {rev[:12]})")
        except GateError as exc:
            return exc
    elif trusted_policy is None or not changed:
        return None
    else:
        pol = trusted_policy
    try:
        if policy_changed or pol.server.allowed_signers in changed:
            _signers(pol, rev, cwd)
        if policy_changed or pol.paths.ledger in changed:
            from mergegate.records import ledger

            ledger.load_at(rev, pol.paths.ledger, cwd)
        prefix = pol.paths.catalog.rstrip("/") + "/"
        if policy_changed or any(p.startswith(prefix) or pol.classify(p) == policy.ORACLE for p in changed):
            _catalog(pol, rev, cwd)
    except GateError as exc:
        return exc
    return None


def _signers(pol: policy.Policy, rev: str, cwd: str | Path | None) -> None:
    if not pol.server.require_signed_oracle_commits:
        return
    name = pol.server.allowed_signers
    if not name or blobs.file_at(rev, name, cwd) is None:
        raise GateError(f"server.require_signed_oracle_commits is on but the allowed signers file "
                        f"{name or '(server.allowed_signers not set)'} is not at {rev[:12]}")


def _catalog(pol: policy.Policy, rev: str, cwd: str | Path | None) -> None:
    """A catalog that loads and whose every node id names a test in its oracle file."""
    from mergegate.pipeline import adopt
    from mergegate.records import catalog

    cat = catalog.load_at(rev, pol.paths.catalog, None if cwd is None else str(cwd))
    wanted = {p.oracle_file for p in cat.properties} | {p.source for p in cat.properties}
    files = blobs.files_at(rev, sorted(wanted), cwd)
    problems = adopt.unresolved(cat, files, adopt.entry_line(files))
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise GateError(f"catalog node id does not resolve: {problems[0]}{more}",
                        "point the entry's oracle: at a test that exists (`gate catalog adopt` lists them)")
