"""``gate check``: the whole pipeline, in DESIGN.md's "One pipeline" order.

1. the target's tip (``judged``: a stale head is judged as its merge result, or refused);
policy, catalog and ledger from the tip.  2. admission (blob id;
empty diff => reject/empty_blob).  3. canaries in fixed order => reject/canary_bad.
4. independence (seed 004 scorecard; manifest must verify at head).  5-6. the
differential run (fixture digests of both trees, contract).  7. per-property
verdict and freezes (``unified``).  8. combine.  Every stage's result lands in
one frozen ``Outcome``; ``evidence`` writes it down.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mergegate.errors import UsageError
from mergegate.git import blobs, core, diffs, history
from mergegate.pipeline import canaries as the_canaries
from mergegate.pipeline import coverage as change_coverage
from mergegate.pipeline import diffrun, judged
from mergegate.records import catalog, ledger, manifest, repo
from mergegate.records.policy import PRODUCTION, Policy
from mergegate.rules import (
    admission,
    agents,
    coverage,
    differential,
    scorecard,
    sealed_evidence,
    split,
    unified,
    verdicts,
)
from mergegate.rules.coverage import Report as CoverageReport
from mergegate.rules.verdicts import Combined
from mergegate.runner.pool import prestarted
from mergegate.runner.rows import SEALED, Row
from mergegate.runner.schedule import Progress, default_jobs
from mergegate.runner.specs import load_specs

REVIEW = "review"
MANIFEST_MISMATCH = "manifest_mismatch"
INDEPENDENCE = "independence"
WORKFLOW_CHANGED = "workflow_changed"  # the patch changes the CI file that defined this very job


@dataclass(frozen=True)
class Outcome:
    """Everything one check decided and why (the evidence packet's content)."""

    decision: str  # admit | hold | reject | review
    reason: str
    base: str  # the target as named
    head: str  # the revision judged as the head side (the merge result of a stale head)
    merge_base: str  # git merge-base of the target's tip and the head
    base_revision: str  # the target's tip, before any ledger-only commits
    seeds: tuple[int, ...]
    properties: tuple[catalog.Property, ...]
    claimed: tuple[str, ...]
    blob: str | None = None
    canaries: tuple[admission.CanaryResult, ...] = ()
    score: scorecard.Score | None = None
    manifest_lines: tuple[str, ...] = ()
    split_json: Mapping[str, object] = field(default_factory=dict)
    oracle_edited: tuple[str, ...] = ()
    pair: diffrun.Pair | None = None
    verdicts: tuple[unified.PropertyVerdict, ...] = ()
    combined: Combined | None = None
    differential: differential.Decision | None = None
    agent: bool = False
    stopped_at: str | None = None
    target: str = ""  # the target's tip: trusted side and base of the run
    pair_of: judged.Judged | None = None  # how the head side was made (up to date, merge result, ...)
    shared: tuple[str, ...] = ()  # entries that ran isolation: shared (they could only reject)
    uncovered: tuple[str, ...] = ()  # touched production paths only shared entries covered (review/shared_only)
    dependency_files: tuple[str, ...] = ()  # dependency declarations the head changes (then: review)
    fresh_seeds: tuple[int, ...] = ()  # drawn from the OS for this check, run on both sides after ``seeds``
    coverage: CoverageReport | None = None  # the changed production lines the head's runs reached

    @property
    def admitted(self) -> bool:
        return self.decision == verdicts.ADMIT


def with_props(led: ledger.Ledger, cat: catalog.Catalog) -> ledger.Ledger:
    """Seed 004's ``test_nodeid`` entries, named by the catalog entry whose node id it is."""
    return ledger.with_props(led, cat.by_nodeid(), cat.by_id())


def effective_base(merge_base: str, policy: Policy, cwd: str | Path | None = None) -> str:
    """The merge-base, stepping back over ledger-only commits.

    A person opens a freeze in a ledger-only commit on top of the revision the
    flake was reproduced on; that commit changes nothing a run depends on, so
    the freeze's ``base_revision`` names the commit below it.
    """
    rev = merge_base
    for _ in range(100):
        parent = core.resolve(f"{rev}^", cwd)
        if parent is None:
            return rev
        paths = {c.path for c in diffs.tree_changes(parent, rev, cwd)}
        if not paths or paths != {policy.paths.ledger}:
            return rev
        rev = parent
    return rev


def check(base: str, head: str, *, environ: Mapping[str, str], jobs: int | None = None,
          progress: Progress | None = None, now: dt.datetime | None = None,
          runs: tuple[Path, Path] | None = None, cwd: str | Path | None = None,
          require_up_to_date: bool = False, fresh: Sequence[int] = ()) -> Outcome:
    """Run the pipeline for the patch ``head`` aimed at the target ``base`` (its current tip).

    ``runs``: (base, head) JSONL files made elsewhere (CI shards merged with
    ``gate merge-runs``) used instead of running the properties here; their rows
    must name the trees judged here; ``fresh``: the fresh seeds those runs drew
    (``gate run --fresh-seeds``), judged like the fresh seeds a check draws itself.
    ``require_up_to_date``: refuse a stale head
    (``stale_base``) even where the target's policy would judge its merge result.
    """
    now = now or ledger.utcnow()
    head_sha = core.must_resolve(head, cwd)
    tip = core.must_resolve(base, cwd)
    policy = repo.load_policy(tip, cwd)
    stale = judged.REFUSE if require_up_to_date else policy.verdict.stale_base
    if set(fresh) & set(policy.verdict.seeds):
        raise UsageError(f"fresh seed {sorted(set(fresh) & set(policy.verdict.seeds))[0]} is one of the policy's "
                         "seeds", "draw fresh seeds with gate seeds --fresh")
    pair_of = judged.judge_pair(tip, head_sha, stale, cwd)
    with prestarted(0 if runs is not None or pair_of.stopped else jobs or default_jobs(policy)):
        return _check(base, pair_of, policy, environ=environ, jobs=jobs, progress=progress, now=now, runs=runs,
                      cwd=cwd, fresh=tuple(fresh))


def _check(base: str, pair_of: judged.Judged, policy: Policy, *, environ: Mapping[str, str], jobs: int | None,
           progress: Progress | None, now: dt.datetime, runs: tuple[Path, Path] | None,
           cwd: str | Path | None, fresh: tuple[int, ...] = ()) -> Outcome:
    tip = pair_of.target
    cat, specs = load_specs(tip, policy, cwd)
    base_ledger = with_props(ledger.load_at(tip, policy.paths.ledger, cwd), cat)
    start = Outcome(
        verdicts.REJECT, "", base, pair_of.head, pair_of.merge_base, effective_base(tip, policy, cwd),
        policy.verdict.seeds, cat.properties, cat.claimed, target=tip, pair_of=pair_of,
    )
    if pair_of.stopped:
        return _stop(start, pair_of.mode, "target")
    # Too big to read: a canary miss, never the memory reading it would take (git's diff of a 100 MB file
    # takes 2 GB; each line parsed about 300 bytes): files over the cap are not diffed, a diff over it not kept.
    brought = diffs.change_bytes(tip, start.head, cwd)
    diff, digest, size = (None, "", brought) if brought > admission.MAX_PATCH_BYTES else \
        diffs.diff_capped(tip, start.head, admission.MAX_PATCH_BYTES, cwd)
    why = admission.too_big(size) if diff is None else admission.too_many_lines(diff)
    if diff is None or why is not None:
        too_big = admission.CanaryResult("parse_diff", False, why or admission.too_big(size))
        return _stop(_with(start, blob=digest, canaries=(too_big,)), "canary_bad", "canaries")
    blob = admission.admit(diff, [], set())
    if blob.get("reason") == "empty_blob":
        return _stop(start, "empty_blob", "admission")
    start = _with(start, blob=digest)
    canaries = the_canaries.run_canaries(diff, tip, policy, cwd)
    start = _with(start, canaries=canaries)
    if not all(c.ok for c in canaries):
        return _stop(start, "canary_bad", "canaries")
    start = _independence(start, policy, base_ledger, now, environ, cwd)
    if start.stopped_at is not None:
        return start
    if runs is not None:
        schedule = (*start.seeds, *fresh)
        trees = (judged.tree_of(tip, cwd), judged.tree_of(start.head, cwd))
        pair = diffrun.pair_from_rows(
            tip, start.head, policy, cat, specs, start.seeds,
            diffrun.load_rows(runs[0], schedule, trees[0], "base", tip),
            diffrun.load_rows(runs[1], schedule, trees[1], "head", start.head), skip_head=start.oracle_edited,
            cwd=cwd, fresh=fresh)
        start = _with(start, fresh_seeds=fresh)
        # The head's shards record which lines ran (gate run --coverage-base); rows without that record
        # count as unmeasured runs, so an unmeasured change is never an admit.
        changed = change_coverage.changed_lines(tip, start.head, policy, cwd)
        outcome = _differential(start, pair, policy, base_ledger, now,
                                change_coverage.measure(changed, start.head, pair.head_rows, policy, cwd))
    else:
        fresh = change_coverage.fresh_seeds(policy.verdict.fresh_seeds, start.seeds)
        changed = change_coverage.changed_lines(tip, start.head, policy, cwd)
        pair = diffrun.run_pair(tip, start.head, policy, cat, specs, start.seeds,
                                skip_head=start.oracle_edited, jobs=jobs, progress=progress, cwd=cwd, fresh=fresh,
                                trace=sorted(changed))
        start = _with(start, fresh_seeds=fresh)
        outcome = _differential(start, pair, policy, base_ledger, now,
                                change_coverage.measure(changed, start.head, pair.head_rows, policy, cwd))
    outcome = _dependencies(outcome, cwd)
    return _own_definition(outcome, environ)


def _own_definition(o: Outcome, environ: Mapping[str, str]) -> Outcome:
    """Never ``admit`` from a job whose definition the patch changed (it may have written its own judge)."""
    from mergegate import ci

    if o.decision == verdicts.ADMIT and ci.changed_definition(environ, _touched(o)) is not None:
        return _with(o, decision=REVIEW, reason=WORKFLOW_CHANGED)
    return o


def _dependencies(o: Outcome, cwd: str | Path | None) -> Outcome:
    """A head that changes its dependency declarations ran against the base's: ``review``, whatever it did."""
    from mergegate.ci import deps

    touched = _touched(o)
    files = deps.declaration_paths(touched)
    files += [p for p in touched if deps.judged_by_content(p) and deps.content_changed(
        p, blobs.file_at(o.merge_base, p, cwd), blobs.file_at(o.head, p, cwd))]
    if not files:
        return o
    return _with(o, decision=REVIEW, reason=deps.DEPENDENCY_CHANGE, dependency_files=tuple(sorted(files)))


def _with(outcome: Outcome, **changes: object) -> Outcome:
    from dataclasses import replace

    return replace(outcome, **changes)  # type: ignore[arg-type]


def _stop(outcome: Outcome, reason: str, stage: str, decision: str = verdicts.REJECT) -> Outcome:
    return _with(outcome, decision=decision, reason=reason, stopped_at=stage)


def _independence(o: Outcome, policy: Policy, base_ledger: ledger.Ledger, now: dt.datetime,
                  environ: Mapping[str, str], cwd: str | Path | None) -> Outcome:
    """Seed 004: split, agent, scorecard, manifest at head."""
    sp = split.split(diffs.tree_changes(o.target, o.head, cwd), policy)
    cat = catalog.Catalog(o.properties, o.claimed)
    edited = split.oracle_edited(cat, sp)
    # The patch's own commits: those of the head the target lacks (never the merge-result commit).
    emails = history.author_emails(o.target, o.pair_of.patch_head if o.pair_of else o.head, cwd)
    agent = agents.is_agent(policy, environ) or any(agents.is_agent(policy, {}, e) for e in emails)
    head_ledger = None
    if policy.paths.ledger in sp.paths:
        try:
            head_ledger = with_props(ledger.load_at(o.head, policy.paths.ledger, cwd),
                                     catalog.Catalog(o.properties, o.claimed))
        except UsageError:
            head_ledger = None
    report = manifest.verify_at(o.head, policy, cwd)
    data = blobs.file_at(o.head, policy.paths.manifest, cwd)
    score = scorecard.score(
        sp.paths, policy, agent=agent, base_ledger=base_ledger, head_ledger=head_ledger, now=now,
        manifest_ok=report.ok, manifest_sha256=hashlib.sha256(data).hexdigest() if data is not None else None,
    )
    o = _with(o, score=score, agent=agent, oracle_edited=edited, manifest_lines=tuple(report.lines()),
              split_json=split.to_json(sp, edited))
    if score.verdict == scorecard.REJECT:
        return _stop(o, INDEPENDENCE, "independence")
    if not report.ok:
        return _stop(o, MANIFEST_MISMATCH, "independence")
    return o


def unloadable(base_rows: Sequence[Row], head_rows: Sequence[Row]) -> set[str]:
    """The properties whose oracle loads on neither side: the maintainer's configuration error (exit 2, named with its
    fix).  One that cannot load at the base and loads on the head is a failure at the base, judged as any: its test
    imports what the patch adds (``gate commit --split`` of a fix and the test that imports it), and the base is the
    trusted revision, which no patch can make fail to load."""
    loads_on_head = {r.prop for r in head_rows if not r.load_error}
    return {r.prop for r in base_rows if r.load_error and r.prop not in loads_on_head}


def _differential(o: Outcome, pair: diffrun.Pair, policy: Policy, base_ledger: ledger.Ledger,
                  now: dt.datetime, cov: CoverageReport | None = None) -> Outcome:
    broken = unloadable(pair.base_rows, pair.head_rows)
    if broken:
        first = next(r for r in pair.base_rows if r.prop in broken)
        raise UsageError(f"{first.prop} cannot load its oracle at the base revision: {first.error}",
                         "fix the property's imports in an oracle-only commit, then check again")
    edited = tuple(sorted(set(o.oracle_edited) | contract_moved(pair.contract)))
    base_rows = [to_diff_row(r) for r in pair.base_rows]
    head_rows = [to_diff_row(r) for r in pair.head_rows]
    ctx = unified.RunContext(
        base_revision=o.base_revision,
        base_fixture_digest=pair.contract["fixture_digest"]["base"],
        head_fixture_digest=pair.contract["fixture_digest"]["head"],
        touched_paths=_touched(o),
        agent=o.agent, now=now,
    )
    results = unified.evaluate(
        ((p.id, p.canary, p.quarantine_eligible) for p in o.properties), base_rows, head_rows, o.seeds,
        oracle_edited=edited, freezes=base_ledger.entries, ctx=ctx, fresh=o.fresh_seeds,
    )
    combined = verdicts.combine(unified.verdict_map(results), o.claimed, policy.verdict.combiner)
    decision = differential.decide(base_rows, head_rows, o.seeds, [p.id for p in o.properties], o.fresh_seeds)
    final, reason = combined.decision, combined.reason
    if o.score is not None and o.score.verdict == scorecard.REVIEW and final != verdicts.REJECT:
        final, reason = REVIEW, ",".join(o.score.reasons)
    shared = tuple(sorted({r.prop for r in (*pair.base_rows, *pair.head_rows) if r.isolation != SEALED}))
    gaps: tuple[str, ...] = ()
    if final == verdicts.ADMIT and o.agent and policy.runner.unsealed_pass == REVIEW and shared:
        # A shared pass is no evidence (production shared its process): what only shared entries cover,
        # a person looks at.
        gaps = sealed_evidence.uncovered(o.split_json.get(PRODUCTION, ()) or (),  # type: ignore[arg-type]
                                         evidence(o.properties, results, shared))
        if gaps:
            final, reason = REVIEW, sealed_evidence.SHARED_ONLY
    # The properties held; did they look at the change?  (The subject's own report.)
    final, reason = coverage.decide(final, reason, cov, policy.coverage.action)
    return _with(o, pair=pair, oracle_edited=edited, verdicts=results, combined=combined,
                 differential=decision, decision=final, reason=reason, shared=shared, uncovered=gaps, coverage=cov)


def evidence(props: Sequence[catalog.Property], results: Sequence[unified.PropertyVerdict],
             shared: Sequence[str]) -> list[sealed_evidence.Evidence]:
    """Each entry as this check saw it: shared or sealed, passed or not, what its catalog entry covers."""
    passed = {v.prop for v in results if v.verdict == verdicts.PASS}
    return [sealed_evidence.Evidence(p.id, p.id in shared, p.id in passed, p.covers) for p in props]


def _touched(o: Outcome) -> tuple[str, ...]:
    from mergegate.records.policy import CLASSES

    return tuple(sorted(p for cls in CLASSES for p in o.split_json.get(cls, ()) or ()))  # type: ignore[attr-defined]


def contract_moved(contract: Mapping[str, object]) -> set[str]:
    """Properties whose spec or fixture closure hash differs between the sides."""
    moved = set()
    for key in ("spec_hash", "fixture_closure_hash"):
        sides = contract[key]
        assert isinstance(sides, dict)
        base, head = sides["base"], sides["head"]
        moved |= {p for p in base if base.get(p) != head.get(p)}
    return moved


def to_diff_row(row: Row) -> differential.Row:
    return differential.Row(row.prop, row.seed, row.status, row.witness, row.signature, row.fixture_digest,
                            row.items, row.decisions)
