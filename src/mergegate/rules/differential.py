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
