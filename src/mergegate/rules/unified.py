"""DESIGN.md "One pipeline", step 7: one property's verdict from both runs (pure).

| base    | head    | oracle edited | freeze applies | verdict / reason                         |
|---------|---------|---------------|----------------|------------------------------------------|
| any     | any     | yes           | any            | fail / oracle_moved                      |
| missing | any     | no            | any            | fail / missing_seed (also head missing)  |
| pass    | pass    | no            | -              | pass / both_pass                         |
| fail    | pass    | no            | -              | pass / parent_fail_cleared (review)      |
| pass    | fail    | no            | any            | fail / regression                        |
| any     | pass    | no            | any            | fail / narrowed (the head ran less)      |
| fail    | fail    | no            | yes            | inconclusive / frozen                    |
| fail    | fail    | no            | no             | fail / seed 003 reason (+propose_freeze) |

The differential reason comes from seed 003 (``differential.classify``); the
freeze goes through seed 000's ``apply_freeze`` only after every condition of
DESIGN.md rule 3 holds (``freeze_blockers`` lists those that do not).  The only
branches returning ``pass`` are the two where the head run passed every seed and
the oracle was not edited.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from mergegate.rules import differential as diff
from mergegate.rules.freezes import Entry
from mergegate.rules.verdicts import FAIL, INCONCLUSIVE, PASS, Freeze, Run, apply_freeze

ORACLE_MOVED = "oracle_moved"
FROZEN = "frozen"

# freeze_blockers() codes: each names one rule-3 condition that does not hold
CANARY = "canary"
NOT_ELIGIBLE = "not_quarantine_eligible"
EXPIRED = "expired"
PROP_MISMATCH = "prop_id"
SIGNATURE_MISMATCH = "signature"
DIGEST_MISMATCH = "fixture_digest"
BASE_MISMATCH = "base_revision"
NOT_REPRODUCED = "not_reproduced_on_base"
NO_PATH_OVERLAP = "paths"
AGENT_MAY_NOT_RELY = "allows_agent_rely"
FRESH_SEED = "fresh_seed"  # the head failed at a fresh seed where the base did not fail the same way


@dataclass(frozen=True)
class RunContext:
    """What one check knows about its two runs, shared by every property.

    ``touched_paths``: every path the patch changes.  ``agent``: the patch is an
    agent's.  Digests are seed 000's fixture digest of each tree (None: unknown,
    which voids every freeze).
    """

    base_revision: str
    base_fixture_digest: str | None
    head_fixture_digest: str | None
    touched_paths: tuple[str, ...]
    agent: bool
    now: dt.datetime


@dataclass(frozen=True)
class PropertyVerdict:
    """One property's verdict (``pass|fail|inconclusive``) and why.

    ``differential``: seed 003's reason for the pair of runs (``None`` when the
    oracle moved).  ``propose_freeze``: a review ticket may be written (never a
    ledger edit).  ``review``: a person should look at the spec (parent_fail_cleared).
    ``freeze_id``: the ledger entry that made it inconclusive.  ``blockers``: for
    each candidate freeze that did not apply, the rule-3 conditions it missed.
    """

    prop: str
    verdict: str
    reason: str
    differential: str | None = None
    propose_freeze: bool = False
    review: bool = False
    freeze_id: str | None = None
    blockers: tuple[tuple[str, tuple[str, ...]], ...] = ()
    detail: str = ""  # narrowed: the first item, example or step the head dropped

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "prop": self.prop, "verdict": self.verdict, "reason": self.reason,
            "differential": self.differential, "propose_freeze": self.propose_freeze,
            "review": self.review, "freeze_id": self.freeze_id,
            "freeze_blockers": {fid: list(codes) for fid, codes in self.blockers},
        }
        if self.detail:
            data["detail"] = self.detail
        return data


def fail_signatures(rows: Sequence[diff.Row], prop: str, seeds: Collection[int]) -> frozenset[str | None]:
    """The signatures of ``prop``'s failing rows (None where a runner gave none)."""
    return frozenset(r.signature for r in rows if r.prop == prop and r.seed in seeds and r.status == FAIL)


def fresh_only_on_head(base_rows: Sequence[diff.Row], head_rows: Sequence[diff.Row], prop: str,
                       fresh: Collection[int]) -> tuple[int, ...]:
    """Fresh seeds at which ``prop`` failed on the head but the base did not fail with the same signature."""
    base = {(r.seed, r.signature) for r in base_rows if r.prop == prop and r.seed in fresh and r.status == FAIL}
    return tuple(sorted({r.seed for r in head_rows if r.prop == prop and r.seed in fresh and r.status == FAIL
                         and (r.seed, r.signature) not in base}))


def freeze_blockers(
    entry: Entry,
    prop: str,
    *,
    head_signatures: frozenset[str | None],
    base_signatures: frozenset[str | None],
    canary: bool,
    quarantine_eligible: bool,
    ctx: RunContext,
    fresh_failures: Collection[int] = (),
) -> tuple[str, ...]:
    """Every rule-3 condition ``entry`` fails for ``prop``; empty means it applies.

    The head's failures at the policy's seeds must all carry the frozen signature,
    and the base run of *this* check must have reproduced it under the same fixture
    digest.  A freeze never matches a fresh-seed row: ``fresh_failures`` (fresh seeds
    where the head failed and the base did not fail the same way) blocks it.
    """
    checks = (
        (CANARY, not canary),
        (NOT_ELIGIBLE, quarantine_eligible),
        (EXPIRED, not entry.expired(ctx.now)),
        (PROP_MISMATCH, entry.prop_id == prop),
        (SIGNATURE_MISMATCH, head_signatures == frozenset({entry.signature})),
        (DIGEST_MISMATCH, ctx.head_fixture_digest is not None
         and entry.fixture_digest == ctx.head_fixture_digest == ctx.base_fixture_digest),
        (BASE_MISMATCH, entry.base_revision == ctx.base_revision),
        (NOT_REPRODUCED, entry.signature in base_signatures),
        (NO_PATH_OVERLAP, entry.covers_any(ctx.touched_paths)),
        (AGENT_MAY_NOT_RELY, entry.allows_agent_rely or not ctx.agent),
        (FRESH_SEED, not fresh_failures),
    )
    return tuple(code for code, ok in checks if not ok)


def per_property(
    prop: str,
    base_rows: Sequence[diff.Row],
    head_rows: Sequence[diff.Row],
    seeds: Sequence[int],
    *,
    oracle_edited: bool,
    freezes: Iterable[Entry],
    ctx: RunContext,
    canary: bool = False,
    quarantine_eligible: bool = False,
    fresh: Sequence[int] = (),
) -> PropertyVerdict:
    """The unified table for one property.  ``freezes``: ledger entries from the trusted side.

    Rows of other properties in ``base_rows``/``head_rows`` are ignored.  ``fresh``: this
    check's fresh seeds (``differential.classify``); a freeze is matched on the policy's seeds only.
    """
    if oracle_edited:
        return PropertyVerdict(prop, FAIL, ORACLE_MOVED)
    result = diff.classify(base_rows, head_rows, prop, seeds, fresh)
    reason = result.reason
    if reason == diff.BOTH_PASS:
        return PropertyVerdict(prop, PASS, reason, reason)
    if reason == diff.PARENT_FAIL_CLEARED:
        return PropertyVerdict(prop, PASS, reason, reason, review=True)
    if reason in (diff.MISSING_SEED, diff.REGRESSION):
        return PropertyVerdict(prop, FAIL, reason, reason)
    if reason == diff.NARROWED:
        detail = diff.narrowed(base_rows, head_rows, prop, seeds) or ""
        return PropertyVerdict(prop, FAIL, reason, reason, detail=detail)
    # both sides fail: only here may a freeze soften the verdict, and only to inconclusive
    head_sigs = fail_signatures(head_rows, prop, seeds)
    base_sigs = fail_signatures(base_rows, prop, seeds)
    fresh_failures = fresh_only_on_head(base_rows, head_rows, prop, set(fresh) - set(seeds))
    blockers: list[tuple[str, tuple[str, ...]]] = []
    for entry in sorted(freezes, key=lambda e: e.id):
        if entry.prop_id != prop:
            continue
        missed = freeze_blockers(entry, prop, head_signatures=head_sigs, base_signatures=base_sigs,
                                 canary=canary, quarantine_eligible=quarantine_eligible, ctx=ctx,
                                 fresh_failures=fresh_failures)
        if missed:
            blockers.append((entry.id, missed))
            continue
        run = Run(prop, FAIL, entry.signature, ctx.head_fixture_digest or "", ctx.base_revision, False)
        freeze = Freeze(entry.prop_id, entry.signature, entry.fixture_digest, entry.base_revision)
        if apply_freeze(run, freeze) == INCONCLUSIVE:
            return PropertyVerdict(prop, INCONCLUSIVE, FROZEN, reason, freeze_id=entry.id,
                                   blockers=tuple(blockers))
    propose = reason == diff.SHARED_VARIANT_FAIL and not canary and quarantine_eligible
    return PropertyVerdict(prop, FAIL, reason, reason, propose_freeze=propose, blockers=tuple(blockers))


def evaluate(
    props: Iterable[tuple[str, bool, bool]],
    base_rows: Sequence[diff.Row],
    head_rows: Sequence[diff.Row],
    seeds: Sequence[int],
    *,
    oracle_edited: Collection[str],
    freezes: Sequence[Entry],
    ctx: RunContext,
    fresh: Sequence[int] = (),
) -> tuple[PropertyVerdict, ...]:
    """``per_property`` for each ``(id, canary, quarantine_eligible)``, in the order given."""
    by_base, by_head = diff.group(base_rows), diff.group(head_rows)
    by_prop: dict[str, list[Entry]] = {}
    for entry in freezes:
        by_prop.setdefault(entry.prop_id, []).append(entry)
    return tuple(
        per_property(pid, by_base.get(pid, []), by_head.get(pid, []), seeds, oracle_edited=pid in oracle_edited,
                     freezes=by_prop.get(pid, ()), ctx=ctx, canary=canary, quarantine_eligible=eligible,
                     fresh=fresh)
        for pid, canary, eligible in props
    )


def verdict_map(results: Iterable[PropertyVerdict]) -> dict[str, str]:
    """``{prop: verdict}`` for ``verdicts.combine``."""
    return {r.prop: r.verdict for r in results}
