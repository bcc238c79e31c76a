"""Client-side checks of the commit being made: no-mix, manifest, guard.

Everything is judged on the index git is about to commit (``GIT_INDEX_FILE``
is honoured, so ``git commit -a`` and ``git commit <paths>`` are right), with
the path classes from HEAD's policy: a commit cannot reclassify itself.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mergegate.git import blobs as git_blobs
from mergegate.git import core, diffs
from mergegate.hooks import fast
from mergegate.records import manifest, repo
from mergegate.records.policy import Policy
from mergegate.rules import agents
from mergegate.rules.split import Split, split


@dataclass(frozen=True)
class Context:
    top: Path
    policy: Policy  # trusted: HEAD's (the index's only before the first commit)
    split: Split
    environ: Mapping[str, str]


@dataclass(frozen=True)
class Outcome:
    hook: str
    ok: bool
    message: str = ""


def gather(cwd: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Context:
    top = core.toplevel(cwd)
    pol = repo.trusted_policy(top)
    changes = diffs.staged_commit_changes(top)
    return Context(top, pol, split(changes, pol), environ if environ is not None else os.environ)


def _remember(ctx: Context, verified: bool) -> None:
    """Feed the fast path: HEAD's policy paths, and HEAD's tree when its manifest verified."""
    proc = core.run(["rev-parse", "--git-path", "mergegate", "HEAD^{tree}", "HEAD:gate.yaml"], ctx.top, check=False)
    lines = os.fsdecode(proc.stdout).split("\n")
    if proc.returncode != 0 or len(lines) < 3:
        return
    cache = str(ctx.top / lines[0]) if not os.path.isabs(lines[0]) else lines[0]
    paths = dataclasses.asdict(ctx.policy.paths)
    fast.remember(cache, lines[2], paths, lines[1] if verified else None)


def _q(paths: tuple[str, ...]) -> str:
    return " ".join(shlex.quote(p) for p in paths)


def _listing(label: str, paths: tuple[str, ...]) -> str:
    return "\n".join(f"  {label:<11} {p!r}" if "\n" in p else f"  {label:<11} {p}" for p in paths)


def no_mix(ctx: Context) -> Outcome:
    """Refuse a commit that touches guarded and production paths together."""
    s = ctx.split
    if not s.mixed:
        return Outcome("gate-no-mix", True)
    msg = (
        "gate-no-mix: this commit touches guarded (oracle) and production paths; commit them apart\n"
        f"{_listing('guarded:', s.guarded)}\n{_listing('production:', s.production)}\n"
        '  fix: gate commit --split -m "<message>"\n'
        "    (commits the oracle first, manifest re-signed, then production on top: the new test is on the base,"
        " so it judges the fix)\n"
        "  or by hand, the oracle first:\n"
        f"    git restore --staged -- {_q(s.production)}\n"
        '    gate manifest sign --staged && git commit -m "oracle: <message>"\n'
        f'    git add -- {_q(s.production)} && git commit -m "<message>"'
    )
    return Outcome("gate-no-mix", False, msg)


def manifest_hook(ctx: Context) -> Outcome:
    """Oracle-only commit: re-sign if stale (write the file, ask to stage it).  Else: verify."""
    name = "gate-manifest"
    index_policy = repo.load_policy(None, ctx.top)
    mpath = index_policy.paths.manifest
    if ctx.split.guarded:
        problems = catalog_problems(index_policy, ctx.top)
        if problems:
            return Outcome(name, False, "gate-manifest: the catalog does not load, or names a test that does not "
                           "exist; not signed\n"
                           + "\n".join(f"  {p}" for p in problems[:20])
                           + "\n  fix: point each entry's oracle: at a test its file defines, or delete the entry "
                           "(gate catalog status lists them)")
    if ctx.split.guarded and not ctx.split.production:
        expected = manifest.expected_at(None, index_policy, ctx.top)
        if git_blobs.file_at(None, mpath, ctx.top) == expected:
            return Outcome(name, True)
        manifest.sign(None, index_policy, ctx.top)
        return Outcome(name, False, f"gate-manifest: {mpath} re-signed, stage it: git add {shlex.quote(mpath)}")
    report = manifest.verify_at(None, index_policy, ctx.top)
    if report.ok:
        # No guarded path changes: the index has HEAD's signed files, so HEAD's tree verified too.
        _remember(ctx, verified=not ctx.split.guarded)
        return Outcome(name, True)
    details = "\n".join(f"  {line}" for line in report.lines())
    return Outcome(
        name, False,
        f"gate-manifest: {mpath} does not verify for this commit\n{details}\n"
        "  fix: a person commits the guarded change on its own; its commit re-signs the manifest "
        "(gate manifest sign --staged)",
    )


def catalog_problems(policy: Policy, top: Path) -> list[str]:
    """Catalog entries in the index whose node id names no test in the index's oracle file."""
    from mergegate.errors import ConfigError
    from mergegate.pipeline import adopt
    from mergegate.records import catalog

    try:
        cat = catalog.load_at(None, policy.paths.catalog, str(top))
    except ConfigError as exc:
        return [exc.render()]
    entries = {e.path: e for e in git_blobs.ls_index(top)}
    wanted = {p.oracle_file for p in cat.properties} | {p.source for p in cat.properties}
    shas = {path: entries[path].sha for path in wanted if path in entries}
    blobs = dict(git_blobs.read_blobs(shas.values(), top))
    files = {path: blobs[sha] for path, sha in shas.items()}
    return [str(p) for p in adopt.unresolved(cat, files, adopt.entry_line(files))]


def guard(ctx: Context) -> Outcome:
    """An agent's commit may not touch any guarded path, the ledger included."""
    email = core.author_email(ctx.top)
    if not agents.is_agent(ctx.policy, ctx.environ, email) or not ctx.split.guarded:
        return Outcome("gate-guard", True)
    why = agents.agent_reason(ctx.policy, ctx.environ, email)
    return Outcome(
        "gate-guard", False,
        f"gate-guard: an agent's commit ({why}) may not change guarded paths\n"
        f"{_listing('guarded:', ctx.split.guarded)}\n"
        f"  fix: git restore --staged -- {_q(ctx.split.guarded)}   (a person changes the oracle, "
        "fixtures, manifest, ledger and policy)",
    )


HOOKS: dict[str, Callable[[Context], Outcome]] = {
    "no-mix": no_mix,
    "manifest": manifest_hook,
    "guard": guard,
}


def run_hooks(names: list[str], cwd: str | Path | None = None, stop_early: bool = False) -> list[Outcome]:
    """Run the named checks on one gathered context; ``stop_early`` stops at the first refusal
    (so the manifest is not re-signed for a commit that is refused anyway)."""
    ctx = gather(cwd)
    outcomes = []
    for name in names:
        outcomes.append(HOOKS[name](ctx))
        if stop_early and not outcomes[-1].ok:
            break
    return outcomes
