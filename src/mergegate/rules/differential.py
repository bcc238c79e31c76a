"""Seed 003: the parent/patch differential decision (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

PASS, FAIL = "pass", "fail"


ACCEPT, REJECT, PROPOSE_FREEZE = "accept", "reject", "propose_freeze"


BOTH_PASS = "both_pass"


REGRESSION = "regression"


PARENT_FAIL_CLEARED = "parent_fail_cleared"


WITNESS_MISMATCH = "witness_mismatch"


UNIFORM_FAIL = "uniform_fail"


SHARED_VARIANT_FAIL = "shared_variant_fail"


MISSING_SEED = "missing_seed"


INCOMPLETE_CONTRACT = "incomplete_contract"


REASONS = (BOTH_PASS, REGRESSION, PARENT_FAIL_CLEARED, WITNESS_MISMATCH, UNIFORM_FAIL,
           SHARED_VARIANT_FAIL, MISSING_SEED, INCOMPLETE_CONTRACT)

# The gate's own addition to seed 003's reasons (docs/verdicts.md): the head ran less than the base at
# the same seed (an item the base ran missing, skipped or expected to fail; an example or a step the base
# ran filtered out), so its pass is not the base's test passing.
NARROWED = "narrowed"


@dataclass(frozen=True)
class Row:
    """One JSONL line: one property at one seed on one tree.

    ``signature`` and ``fixture_digest`` are optional extras a runner may add
    (seed 000's freeze match keys); ``decide`` reads only prop, seed, status, witness.
    """

    prop: str
    seed: int
    status: str
    witness: str = ""
    signature: str | None = None
    fixture_digest: str | None = None
    items: tuple[tuple[str, str], ...] = ()  # (node id, outcome) of every item the run collected
    decisions: tuple[Decisions, ...] = ()  # per Hypothesis item: its examples' and steps' logs


@dataclass(frozen=True)
class Decisions:
    """One item's logs: ``cases`` (a letter per generated example: v valid, i invalid, o overrun, x failing)
    and ``steps`` (a state machine's precondition answers: 1 enabled, 0 not), with the rejection counts."""

    nodeid: str
    cases: str = ""
    steps: str = ""
    rejected_cases: int = 0
    rejected_steps: int = 0


RAN = ("passed", "failed")


def _dropped(base: str, head: str, rejecting: str, base_count: int, head_count: int) -> int | None:
    """Where the head's log first drops what the base's ran (the first difference is a rejection on the
    head only), or -1 when the head rejected more in all; None if neither."""
    for index, (mine, theirs) in enumerate(zip(base, head, strict=False)):
        if mine != theirs:
            if theirs in rejecting and mine not in rejecting:
                return index
            break
    return -1 if head_count > base_count else None


def narrowing(base: Row, head: Row) -> str | None:
    """How the head's run at one seed ran less than the base's at that seed, or None (pure).

    Every item the base ran (passed or failed) must be collected and run on the head (not skipped, not
    an expected failure); for each Hypothesis item, the head must not reject an example or disable a
    step where the base's same-seed run went on, nor reject more in all.  Items the head adds, or
    examples it accepts that the base rejected, narrow nothing.
    """
    head_items = dict(head.items)
    for nodeid, outcome in base.items:
        if outcome in RAN and head_items.get(nodeid) not in RAN:
            got = head_items.get(nodeid)
            return f"{nodeid} {outcome} on the base, " + (f"{got} on the head" if got else "not collected on the head")
    head_logs = {d.nodeid: d for d in head.decisions}
    for mine in base.decisions:
        theirs = head_logs.get(mine.nodeid)
        if theirs is None:
            continue
        steps, cases = mine.steps, mine.cases
        if base.status != PASS:  # the base stopped at its first failure (then shrank): only what it ran before
            # counts, up to and with the failing example; its totals say nothing (it ran fewer)
            failed = cases.find("x")
            steps, cases = ("|".join(steps.split("|")[:failed + 1]), cases[:failed + 1]) if failed >= 0 else ("", "")
        for what, base_log, head_log, rejecting, counts in (  # a step first: a disabled rule can void an example
                ("step", steps, theirs.steps, "0", (mine.rejected_steps, theirs.rejected_steps)),
                ("example", cases, theirs.cases, "io", (mine.rejected_cases, theirs.rejected_cases))):
            where = _dropped(base_log, head_log, rejecting, *counts)
            if where is not None and where >= 0:
                return f"{mine.nodeid}: {what} {where + 1 - base_log.count('|', 0, where)} ran on the base, was " \
                       "filtered out on the head"
            if where is not None and base.status == PASS:
                return f"{mine.nodeid}: the head filtered out {counts[1]} {what}s, the base {counts[0]}"
    return None


def narrowed(parent: Sequence[Row], patch: Sequence[Row], prop: str, seeds: Sequence[int]) -> str | None:
    """The first seed at which ``prop``'s head run ran less than its base run, and how; None if none."""
    base = {r.seed: r for r in parent if r.prop == prop and r.seed in seeds}
    for r in patch:
        if r.prop == prop and r.seed in base:
            why = narrowing(base[r.seed], r)
            if why is not None:
                return f"seed {r.seed}: {why}"
    return None


@dataclass(frozen=True)
class PropResult:
    prop: str
    decision: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"prop": self.prop, "decision": self.decision, "reason": self.reason}


@dataclass(frozen=True)
class Decision:
    """Seed 003's decision object; ``reason`` only for ``incomplete_contract``."""

    decision: str
    results: tuple[PropResult, ...]
    reason: str | None = None

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"decision": self.decision}
        if self.reason is not None:
            data["reason"] = self.reason
        data["results"] = [r.to_dict() for r in self.results]
        return data


@dataclass(frozen=True)
class Contract:
    """What both runs must share.  Only ``seeds`` is required."""

    seeds: tuple[int, ...]
    properties: tuple[str, ...] = ()
    raw: tuple[tuple[str, Any], ...] = ()


def group(rows: Iterable[Row]) -> dict[str, list[Row]]:
    """Rows by property, in their original order (so one pass, not one scan per property)."""
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(r.prop, []).append(r)
    return out


def seed_split(statuses: Iterable[str]) -> bool:
    """Both pass and fail in one side's schedule."""
    seen = set(statuses)
    return PASS in seen and FAIL in seen


def side(rows: Sequence[Row], prop: str, seeds: Sequence[int]) -> list[str] | None:
    """The status per seed of ``prop`` (fail if any duplicate failed), or None if a seed is missing."""
    by_seed: dict[int, str] = {}
    for r in rows:
        if r.prop == prop and r.seed in seeds:
            by_seed[r.seed] = FAIL if FAIL in (by_seed.get(r.seed), r.status) else r.status
    if any(s not in by_seed for s in seeds):
        return None
    return [by_seed[s] for s in seeds]


def witnesses(rows: Sequence[Row], prop: str, seeds: Sequence[int]) -> list[str]:
    return sorted({r.witness for r in rows if r.prop == prop and r.seed in seeds and r.status == FAIL})


def classify(parent: Sequence[Row], patch: Sequence[Row], prop: str, seeds: Sequence[int],
             fresh: Sequence[int] = ()) -> PropResult:
    """Seed 003's table for one property.

    ``fresh``: seeds drawn for this check only, run on both sides besides the policy's
    ``seeds``.  They count like any seed for pass, fail, regression and the witness; the
    seed split (flake evidence) is read from the policy's schedule alone, the one a person
    reproduces a freeze on: a split that only an unrepeatable draw shows proposes nothing.
    """
    schedule = [*seeds, *(s for s in fresh if s not in seeds)]
    p_st, c_st = side(parent, prop, schedule), side(patch, prop, schedule)
    if p_st is None or c_st is None or not seeds:
        return PropResult(prop, REJECT, MISSING_SEED)
    p_status = FAIL if FAIL in p_st else PASS
    c_status = FAIL if FAIL in c_st else PASS
    if c_status == PASS and narrowed(parent, patch, prop, seeds) is not None:
        return PropResult(prop, REJECT, NARROWED)
    if p_status == PASS and c_status == PASS:
        return PropResult(prop, ACCEPT, BOTH_PASS)
    if p_status == PASS:
        return PropResult(prop, REJECT, REGRESSION)
    if c_status == PASS:
        return PropResult(prop, ACCEPT, PARENT_FAIL_CLEARED)
    if witnesses(parent, prop, schedule) != witnesses(patch, prop, schedule):
        return PropResult(prop, REJECT, WITNESS_MISMATCH)
    policy = len(seeds)
    if not (seed_split(p_st[:policy]) or seed_split(c_st[:policy])):
        return PropResult(prop, REJECT, UNIFORM_FAIL)
    return PropResult(prop, PROPOSE_FREEZE, SHARED_VARIANT_FAIL)


def decide(parent: Sequence[Row], patch: Sequence[Row], seeds: Sequence[int],
           properties: Iterable[str] = (), fresh: Sequence[int] = ()) -> Decision:
    """Seed 003's ``decide``: one regression (or any reject) rejects the whole patch.

    An empty side is ``reject/incomplete_contract``.  Invariant under row order.
    """
    if not parent or not patch:
        return Decision(REJECT, (), INCOMPLETE_CONTRACT)
    seeds = list(dict.fromkeys(int(s) for s in seeds))
    by_parent, by_patch = group(parent), group(patch)
    props = sorted(set(by_parent) | set(by_patch) | set(properties))
    results = tuple(classify(by_parent.get(p, ()), by_patch.get(p, ()), p, seeds, fresh) for p in props)
    if any(r.decision == REJECT for r in results):
        return Decision(REJECT, results)
    if any(r.decision == PROPOSE_FREEZE for r in results):
        return Decision(PROPOSE_FREEZE, results)
    return Decision(ACCEPT, results)


def side_digest(contract: dict[str, Any], side_name: str) -> str | None:
    """A side's fixture digest from a contract: ``fixture_digest`` as a string or ``{"base","head"}``,
    or ``<side>_fixture_digest``."""
    value = contract.get(f"{side_name}_fixture_digest")
    if isinstance(value, str) and value:
        return value
    value = contract.get("fixture_digest")
    if isinstance(value, dict):
        value = value.get(side_name)
    return value if isinstance(value, str) and value else None
