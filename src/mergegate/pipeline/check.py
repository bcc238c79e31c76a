"""``gate check``: the whole pipeline, in DESIGN.md's "One pipeline" order.

1. merge-base; policy, catalog and ledger from it.  2. admission (blob id;
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
from mergegate.pipeline import diffrun
from mergegate.records import catalog, ledger, manifest, repo
from mergegate.records.policy import Policy
from mergegate.rules import admission, agents, coverage, differential, scorecard, split, unified, verdicts
from mergegate.rules.coverage import Report as CoverageReport
from mergegate.rules.verdicts import Combined
from mergegate.runner.pool import prestarted
from mergegate.runner.rows import SEALED, Row
from mergegate.runner.schedule import Progress, default_jobs
from mergegate.runner.specs import load_specs

REVIEW = "review"
MANIFEST_MISMATCH = "manifest_mismatch"
INDEPENDENCE = "independence"
UNSEALED_PASS = "unsealed_pass"


@dataclass(frozen=True)
class Outcome:
    """Everything one check decided and why (the evidence packet's content)."""

    decision: str  # admit | hold | reject | review
    reason: str
    base: str
    head: str
    merge_base: str
    base_revision: str  # the merge-base, before any ledger-only commits
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
          runs: tuple[Path, Path] | None = None, cwd: str | Path | None = None) -> Outcome:
    """Run the pipeline for the patch ``merge-base(base, head)..head``.

    ``runs``: (base, head) JSONL files made elsewhere (CI shards merged with
    ``gate merge-runs``) used instead of running the properties here.
    """
    now = now or ledger.utcnow()
    head_sha = core.must_resolve(head, cwd)
    mb = core.merge_base(core.must_resolve(base, cwd), head_sha, cwd)
    policy = repo.load_policy(mb, cwd)
    with prestarted(0 if runs is not None else jobs or default_jobs(policy)):
        return _check(base, head_sha, mb, policy, environ=environ, jobs=jobs, progress=progress, now=now, runs=runs,
                      cwd=cwd)


def _check(base: str, head_sha: str, mb: str, policy: Policy, *, environ: Mapping[str, str], jobs: int | None,
           progress: Progress | None, now: dt.datetime, runs: tuple[Path, Path] | None,
           cwd: str | Path | None) -> Outcome:
    cat, specs = load_specs(mb, policy, cwd)
    base_ledger = with_props(ledger.load_at(mb, policy.paths.ledger, cwd), cat)
    start = Outcome(
        verdicts.REJECT, "", base, head_sha, mb, effective_base(mb, policy, cwd), policy.verdict.seeds,
        cat.properties, cat.claimed,
    )
    diff = diffs.diff_bytes(mb, head_sha, cwd)
    blob = admission.admit(diff, [], set())
    if blob.get("reason") == "empty_blob":
        return _stop(start, "empty_blob", "admission")
    start = _with(start, blob=admission.blob_id(diff))
    canaries = the_canaries.run_canaries(diff, mb, policy, cwd)
    start = _with(start, canaries=canaries)
    if not all(c.ok for c in canaries):
        return _stop(start, "canary_bad", "canaries")
    start = _independence(start, policy, base_ledger, now, environ, cwd)
    if start.stopped_at is not None:
        return start
    if runs is not None:
        seeds = start.seeds
        pair = diffrun.pair_from_rows(
            start.merge_base, start.head, policy, cat, specs, seeds, diffrun.load_rows(runs[0], seeds),
            diffrun.load_rows(runs[1], seeds), skip_head=start.oracle_edited, cwd=cwd)
        return _differential(start, pair, policy, base_ledger, now)
    fresh = change_coverage.fresh_seeds(policy.verdict.fresh_seeds, start.seeds)
    changed = change_coverage.changed_lines(start.merge_base, start.head, policy, cwd)
    pair = diffrun.run_pair(start.merge_base, start.head, policy, cat, specs, start.seeds,
                            skip_head=start.oracle_edited, jobs=jobs, progress=progress, cwd=cwd, fresh=fresh,
                            trace=sorted(changed))
    start = _with(start, fresh_seeds=fresh)
    return _differential(start, pair, policy, base_ledger, now,
                         change_coverage.measure(changed, start.head, pair.head_rows, policy, cwd))


def _with(outcome: Outcome, **changes: object) -> Outcome:
    from dataclasses import replace

    return replace(outcome, **changes)  # type: ignore[arg-type]


def _stop(outcome: Outcome, reason: str, stage: str, decision: str = verdicts.REJECT) -> Outcome:
    return _with(outcome, decision=decision, reason=reason, stopped_at=stage)


def _independence(o: Outcome, policy: Policy, base_ledger: ledger.Ledger, now: dt.datetime,
                  environ: Mapping[str, str], cwd: str | Path | None) -> Outcome:
    """Seed 004: split, agent, scorecard, manifest at head."""
    sp = split.split(diffs.tree_changes(o.merge_base, o.head, cwd), policy)
    cat = catalog.Catalog(o.properties, o.claimed)
    edited = split.oracle_edited(cat, sp)
    emails = history.author_emails(o.merge_base, o.head, cwd)
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


def _differential(o: Outcome, pair: diffrun.Pair, policy: Policy, base_ledger: ledger.Ledger,
                  now: dt.datetime, cov: CoverageReport | None = None) -> Outcome:
    broken = sorted({r.prop for r in pair.base_rows if r.load_error})
    if broken:
        first = next(r for r in pair.base_rows if r.load_error)
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
    if final == verdicts.ADMIT and o.agent and policy.runner.unsealed_pass == REVIEW \
            and unsealed_passes(results, pair.head_rows):
        # The pass came from a run where production shared the property's process: a person looks.
        final, reason = REVIEW, UNSEALED_PASS
    # The properties held; did they look at the change?  (The subject's own report.)
    final, reason = coverage.decide(final, reason, cov, policy.coverage.action)
    return _with(o, pair=pair, oracle_edited=edited, verdicts=results, combined=combined,
                 differential=decision, decision=final, reason=reason, coverage=cov)


def unsealed_passes(results: Sequence[unified.PropertyVerdict], head_rows: Sequence[Row]) -> list[str]:
    """Properties whose pass rests on a head run that was not sealed (``isolation: shared``)."""
    passed = {v.prop for v in results if v.verdict == verdicts.PASS}
    return sorted({r.prop for r in head_rows if r.prop in passed and r.isolation != SEALED})


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
    return differential.Row(row.prop, row.seed, row.status, row.witness, row.signature, row.fixture_digest)
