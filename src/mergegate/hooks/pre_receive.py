"""``gate pre-receive``: judge every commit a push brings, by the server's trusted policy.

Order of work (each step one or a few git processes, never one per commit):
1. parse stdin (``pushlog``), check ids against the repository's hash;
2. resolve every old and new id in one ``cat-file --batch-check`` (tags peeled);
3. pick each ref's trusted side: a branch's own old tip, else the default branch
   (HEAD), and read gate.yaml there, never from the pushed commits;
4. per trusted side, one ``git log --not --all`` lists the new commits with their
   first-parent diffs; the pure rules in ``receive_rules`` judge them.
Anything unexpected raises, and the command turns that into a rejection.
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mergegate.errors import UsageError
from mergegate.git import blobs, core, diffs, history, merges, pushlog
from mergegate.hooks import push_manifest, server_state, trusted
from mergegate.hooks.installer import write_hook
from mergegate.hooks.receive_rules import NOT_A_COMMIT, CommitFacts, Refusal, judge_commit, judge_ref, short
from mergegate.records import policy
from mergegate.records.manifest import Report
from mergegate.rules import agents
from mergegate.rules.split import Split, split_paths

# Where servers put the pusher's login: ours, GitLab, GitHub Enterprise, Gitea.
PUSHER_VARS = ("GATE_PUSHER", "GL_USERNAME", "GITHUB_USER_LOGIN", "GITEA_PUSHER_NAME")
MARKER = "# mergegate pre-receive hook"
REPAIR_ONLY = "repair-only"
REPAIR_FIX = ("a person pushes first a commit that only repairs gate.yaml (re-signed: "
              "`gate manifest sign --staged`), then the rest (docs/server.md, Recovery)")


@dataclass(frozen=True)
class Target:
    """One ref update with its ids peeled to commits and the commit that holds its policy."""

    update: pushlog.RefUpdate
    old_commit: str | None
    new_commit: str | None
    trusted: str


@dataclass(frozen=True)
class Judgement:
    refusals: tuple[Refusal, ...]
    commits: int  # new commits judged (a commit judged under two policies counts twice)
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.refusals


def pushers(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Every identity the server names for the pusher (any one matching agents.pushers counts)."""
    return tuple(dict.fromkeys(environ[v] for v in PUSHER_VARS if environ.get(v)))


def agent_reason(pol: policy.Policy, environ: Mapping[str, str], email: str, who: tuple[str, ...]) -> str:
    """Why this commit (or ref update, with ``email`` empty) counts as an agent's; "" if it does not."""
    for pusher in who or (None,):
        if agents.is_agent(pol, environ, email, pusher):
            return agents.agent_reason(pol, environ, email, pusher)
    return ""


def judge_push(stdin: bytes, cwd: str | Path | None = None,
               environ: Mapping[str, str] | None = None) -> Judgement:
    """Judge one push; raises UsageError/ConfigError for input or a server that cannot be trusted."""
    env = os.environ if environ is None else environ
    updates = pushlog.parse(stdin)
    _check_hash(updates, cwd)
    targets, refusals = _resolve(updates, cwd)
    sides = trusted.load((t.trusted for t in targets), cwd)
    groups: dict[tuple[str, bytes | None], tuple[trusted.Side, list[Target]]] = {}
    for target in targets:
        side = sides[target.trusted]
        groups.setdefault(side.key, (side, []))[1].append(target)
    judged = 0
    found: list[Refusal] = list(refusals)
    for side, group in groups.values():
        more, count = _judge_group(side, group, cwd, env)
        found += more
        judged += count
    # What the push leaves on each branch judges the next push there: it must stay readable.
    found += server_state.refusals(
        [(t.update.ref, t.new_commit, t.trusted, None if sides[t.trusted].broken else sides[t.trusted].policy)
         for t in targets if t.update.is_branch and t.new_commit], cwd)
    warnings = [w for side in sides.values() if (w := identity_warning(side.policy))]
    return Judgement(tuple(dict.fromkeys(found)), judged, tuple(dict.fromkeys(warnings)))


def identity_warning(pol: policy.Policy) -> str:
    """The warning every push prints while the server cannot tell an agent from a person ("" when it can)."""
    gap = agents.identity_gap(pol)
    return f"warning: {gap}; fix: {agents.IDENTITY_FIX}" if gap else ""


def _check_hash(updates: list[pushlog.RefUpdate], cwd: str | Path | None) -> None:
    want = {"sha1": 40, "sha256": 64}.get(core.object_format(cwd))
    if want is not None and len(updates[0].old) != want:
        raise UsageError(f"stdin ids have {len(updates[0].old)} digits; this repository uses {want}",
                         pushlog.FIX_STDIN)


def _resolve(updates: list[pushlog.RefUpdate], cwd: str | Path | None
             ) -> tuple[list[Target], list[Refusal]]:
    names = [n for u in updates for oid in (u.old, u.new) if not pushlog.is_zero(oid)
             for n in (oid, oid + "^{commit}")]
    default_ref = core.symbolic_head(cwd)
    if default_ref:
        names.append(default_ref + "^{commit}")
    found = blobs.batch_check(names, cwd)
    default = found.get(f"{default_ref}^{{commit}}") if default_ref else None
    targets: list[Target] = []
    refusals: list[Refusal] = []
    for u in updates:
        old_commit = new_commit = None
        if not u.created:
            if found[u.old] is None:
                raise UsageError(f"{u.ref}: old id {u.old[:12]} does not exist in this repository",
                                 "fetch, then push again; if it persists, the server's copy is damaged")
            old_commit = _peeled(found, u.old)
        if not u.deleted:
            if found[u.new] is None:
                raise UsageError(f"{u.ref}: new id {u.new[:12]} was not received",
                                 "push again; the pack was incomplete")
            new_commit = _peeled(found, u.new)
            if new_commit is None:
                refusals.append(Refusal(u.ref, NOT_A_COMMIT, (), "tag a commit instead",
                                        "points to a tree or blob; the gate judges commits only"))
        # A deletion has no commits; its only question (is the pusher an agent?) is the repository's.
        own = u.is_branch and not u.deleted and old_commit
        judge_at = old_commit if own else (default[0] if default else None)
        if judge_at is None:
            raise UsageError(f"no trusted policy for {u.ref}: the default branch "
                             f"{default_ref or 'HEAD'} does not exist on the server", trusted.BOOTSTRAP_FIX)
        targets.append(Target(u, old_commit, new_commit, judge_at))
    return targets, refusals


def _peeled(found: Mapping[str, tuple[str, str] | None], oid: str) -> str | None:
    hit = found.get(oid + "^{commit}")
    return hit[0] if hit else None


def _judge_group(side: trusted.Side, group: list[Target], cwd: str | Path | None,
                 env: Mapping[str, str]) -> tuple[list[Refusal], int]:
    pol = side.policy
    who = pushers(env)
    pusher_agent = agent_reason(pol, env, "", who)
    refusals: list[Refusal] = []
    for t in group:
        ff = None
        if pusher_agent and t.old_commit and t.new_commit:
            ff = core.is_ancestor(t.old_commit, t.new_commit, cwd)
        refusals += judge_ref(t.update.ref, t.update.deleted, ff, pusher_agent, pol.server.agent_force_push)
    tips = [t.new_commit for t in group if t.new_commit]
    with ThreadPoolExecutor(max_workers=2) as pool:
        walk = _walk(pol, env, who, tips, cwd, pool)
        # The merges' own changes are worked out (mostly by git, on another core) while the
        # manifests are checked here.
        graph = walk.ancestry
        taken = pool.submit(lambda: merges.brought(walk.doubtful, cwd, graph.result() if graph else None))
        reports, bad_signatures, signers = _manifests(side, walk, cwd)
        brought = taken.result()
    if side.broken:
        refusals += _repair_only(side, walk, env, who)
    required = pol.server.require_signed_oracle_commits and not side.broken
    for c in reversed(walk.commits):  # oldest first, as the pusher wrote them
        if c.sha not in walk.splits:
            continue
        own = walk.splits[c.sha]
        if brought.get(c.sha):
            own = walk.splitter.split(ch for ch in c.changes if ch.path not in brought[c.sha])
        facts = CommitFacts(c.sha, own, walk.agents[c.sha], reports.get(c.sha),
                            c.sha not in bad_signatures if required else None, signers,
                            merge=len(c.parents) > 1)
        refusals += judge_commit(facts)
    return refusals, len(walk.commits)


@dataclass
class _Walk:
    """The new commits of one group, and what the rules need of those touching a guarded path."""

    splitter: Splitter
    commits: list[history.LoggedCommit] = field(default_factory=list)
    splits: dict[str, Split] = field(default_factory=dict)  # no rule bites a commit not in here
    agents: dict[str, str] = field(default_factory=dict)
    doubtful: list[merges.Merge] = field(default_factory=list)  # merges to judge by their own changes
    ancestry: Future[merges.Graph] | None = None


def _walk(pol: policy.Policy, env: Mapping[str, str], who: tuple[str, ...], tips: list[str],
          cwd: str | Path | None, pool: ThreadPoolExecutor) -> _Walk:
    """Read the push's commits while git is still walking them.

    A merge whose first-parent diff would be refused may owe that to what its side
    brought; the first such merge starts the one ``rev-list --parents`` all of them need.
    """
    walk = _Walk(Splitter(pol))
    for c in history.iter_new_commits(tips, cwd):
        walk.commits.append(c)
        if not walk.splitter.touches_guarded(c.changes):
            continue
        split = walk.splits[c.sha] = walk.splitter.split(c.changes)
        agent = walk.agents[c.sha] = agent_reason(pol, env, c.author_email, who)
        if len(c.parents) > 1 and (split.mixed or (agent and split.guarded)):
            walk.doubtful.append(merges.Merge(c.sha, c.parents, tuple(ch.path for ch in c.changes)))
            if walk.ancestry is None:
                walk.ancestry = pool.submit(merges.ancestry, tips, cwd)
    return walk


def _repair_only(side: trusted.Side, walk: _Walk, env: Mapping[str, str], who: tuple[str, ...]
                 ) -> list[Refusal]:
    """On a branch whose gate.yaml the server cannot read, only a person's repair gets through:
    commits changing nothing but the policy files and the manifest (judged by the last readable
    gate.yaml); the state it leaves is then checked like any push's (``server_state``)."""
    pol = side.policy
    allowed = {policy.POLICY, policy.MANIFEST}
    found = []
    for c in reversed(walk.commits):
        agent = agent_reason(pol, env, c.author_email, who)
        other = tuple(ch.path for ch in c.changes if walk.splitter.classify(ch.path) not in allowed
                      and ch.path != pol.server.allowed_signers)
        if agent or other:
            why = (f"the server cannot judge this branch ({side.broken}); "
                   + (f"an agent's commit ({agent}) cannot repair it" if agent
                      else "a repair changes only the policy files and the manifest"))
            found.append(Refusal(short(c.sha), REPAIR_ONLY, other, REPAIR_FIX, why))
    return found


def _manifests(side: trusted.Side, walk: _Walk, cwd: str | Path | None
               ) -> tuple[dict[str, Report], set[str], str]:
    """Manifest reports of the commits touching guarded paths, and the badly signed ones."""
    if not walk.splits:
        return {}, set(), ""
    pol = side.policy
    trees = push_manifest.SignedTrees(pol, cwd)
    trees.build(walk.commits)
    reports = push_manifest.verify(trees, list(walk.splits), side.policy_blob)
    if not pol.server.require_signed_oracle_commits or side.broken:  # broken: no signers to trust
        return reports, set(), ""
    return reports, _verify_signatures(side, list(walk.splits), cwd), pol.server.allowed_signers or ""


class Splitter:
    """``split.split`` with each path classified once per push (thousands of commits, few paths)."""

    def __init__(self, pol: policy.Policy) -> None:
        self.policy = pol
        self.memo: dict[str, str] = {}

    def classify(self, path: str) -> str:
        cls = self.memo.get(path)
        if cls is None:
            cls = self.memo[path] = self.policy.classify(path)
        return cls

    def touches_guarded(self, changes: Iterable[diffs.Change]) -> bool:
        return any(self.classify(c.path) in policy.GUARDED for c in changes)

    def split(self, changes: Iterable[diffs.Change]) -> Split:
        return split_paths((c.path for c in changes), self.policy, self.classify)


def _verify_signatures(side: trusted.Side, shas: list[str], cwd: str | Path | None) -> set[str]:
    """``git verify-commit`` with the allowed signers the server had before the push."""
    with tempfile.TemporaryDirectory(prefix="gate-signers-") as tmp:
        path = Path(tmp) / "allowed_signers"
        path.write_bytes(side.signers or b"")
        return history.verify_commits(shas, path, cwd)


# ---------------------------------------------------------------- install


def hook_script(python: str, fmt: str = "plain") -> str:
    """The pre-receive script: this interpreter, absolute, so the server's PATH does not matter."""
    return (f"#!/bin/sh\n{MARKER} (gate install --pre-receive); any failure rejects the push\n"
            f"exec {shlex.quote(python)} -m mergegate pre-receive --format {fmt}\n")


def install_pre_receive(bare_repo: Path, force: bool = False, fmt: str = "plain") -> Path:
    """Write an executable ``hooks/pre-receive`` into ``bare_repo``; returns its path.

    A hook that is not ours is kept unless ``force``: a server may already chain hooks.
    """
    if fmt not in ("plain", "gitlab"):
        raise UsageError(f"unknown format {fmt!r}", "use plain or gitlab")
    bare = Path(bare_repo).absolute()
    if not bare.is_dir():  # checked here: core.run would blame a missing git for a missing cwd
        raise UsageError(f"{bare}: not a git repository", "pass a bare repository (git init --bare)")
    proc = core.run(["rev-parse", "--is-bare-repository"], bare, check=False)
    if proc.returncode != 0:
        raise UsageError(f"{bare}: not a git repository", "pass a bare repository (git init --bare)")
    if proc.stdout.strip() != b"true":
        raise UsageError(f"{bare}: not a bare repository",
                         "pass the server's bare repository; for a work tree use `gate install`")
    hook = core.git_path("hooks", bare) / "pre-receive"
    write_hook(hook, hook_script(sys.executable, fmt), MARKER, force,
               "chain it by hand (docs/server.md), or pass --force to replace it")
    return hook
