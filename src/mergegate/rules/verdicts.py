"""Seed 000: three verdicts, the freeze transform, promotion and the combiner (pure).

``apply_freeze`` and ``promote`` are the seed's functions unchanged in meaning.
``combine`` is the product's decision over many property verdicts: ``strict``
(the default: any inconclusive is ``hold``) or ``lenient`` (the seed's
``promote``: pass plus inconclusive may admit).  The freeze transform is the
same under both.  Nothing here maps anything to ``pass`` but a passing run
whose oracle was not edited.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
VERDICTS = (PASS, FAIL, INCONCLUSIVE)
ADMIT, HOLD, REJECT = "admit", "hold", "reject"
STRICT, LENIENT = "strict", "lenient"
COMBINERS = (STRICT, LENIENT)

# combine() reason codes
EMPTY_CLAIM_SET = "empty_claim_set"
MISSING_RUN = "missing_run"
FAILED = "fail"
ALL_INCONCLUSIVE = "all_inconclusive"
HELD_INCONCLUSIVE = "inconclusive"
ALL_PASS = "all_pass"
PROMOTED = "promoted"


@dataclass(frozen=True)
class Freeze:
    """The four match keys of a ledger entry (seed 000)."""

    prop_id: str
    signature: str
    fixture_digest: str
    base_revision: str


@dataclass(frozen=True)
class Run:
    """One property's run on the patched tree (seed 000)."""

    prop_id: str
    status: str
    signature: str | None
    fixture_digest: str
    base_revision: str
    oracle_edited: bool


def apply_freeze(run: Run, freeze: Freeze | None) -> str:
    """Seed 000's transform: ``fail -> inconclusive`` on an exact match, never ``-> pass``.

    An edited oracle or a status other than pass/fail (a missing run) is ``fail``.
    """
    if run.oracle_edited or run.status not in (PASS, FAIL):
        return FAIL
    if run.status == PASS:
        return PASS
    if freeze is None:
        return FAIL
    matched = (
        freeze.prop_id == run.prop_id
        and run.signature is not None
        and freeze.signature == run.signature
        and freeze.fixture_digest == run.fixture_digest
        and freeze.base_revision == run.base_revision
    )
    return INCONCLUSIVE if matched else FAIL


def promote(verdicts: Mapping[str, str], claimed: Collection[str]) -> bool:
    """Seed 000's ``promote``: claim set covered exactly, nothing fails, one real pass."""
    if set(verdicts) != set(claimed) or not claimed:
        return False
    if any(v not in (PASS, INCONCLUSIVE) for v in verdicts.values()):
        return False
    return any(v == PASS for v in verdicts.values())


@dataclass(frozen=True)
class Combined:
    """The patch-level decision: ``admit`` (exit 0), ``hold`` or ``reject`` (exit 1)."""

    decision: str
    reason: str
    failed: tuple[str, ...] = ()
    inconclusive: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()

    @property
    def admitted(self) -> bool:
        return self.decision == ADMIT

    def to_dict(self) -> dict[str, object]:
        return {
            "decision": self.decision,
            "reason": self.reason,
            "failed": list(self.failed),
            "inconclusive": list(self.inconclusive),
            "missing": list(self.missing),
        }


def combine(
    verdicts: Mapping[str, str], claimed: Collection[str], combiner: str = STRICT
) -> Combined:
    """One decision for a patch from per-property verdicts.

    - an empty claim set is ``reject/empty_claim_set``;
    - a claimed property without a verdict is a missing run: ``reject/missing_run``;
    - any ``fail`` (claimed or not: a regression anywhere rejects) is ``reject/fail``;
      an unknown verdict word counts as ``fail``;
    - ``strict``: any ``inconclusive`` is ``hold/inconclusive``; else ``admit/all_pass``;
    - ``lenient``: the seed's ``promote`` over the claimed verdicts decides ``admit/promoted``;
      a refusal without a fail (only inconclusive) is ``hold/all_inconclusive``.
    """
    if combiner not in COMBINERS:
        raise ValueError(f"unknown combiner {combiner!r}")
    claims = sorted(set(claimed))
    failed = tuple(sorted(p for p, v in verdicts.items() if v not in (PASS, INCONCLUSIVE)))
    inconclusive = tuple(sorted(p for p, v in verdicts.items() if v == INCONCLUSIVE))
    missing = tuple(p for p in claims if p not in verdicts)
    if not claims:
        return Combined(REJECT, EMPTY_CLAIM_SET, failed, inconclusive, missing)
    if missing:
        return Combined(REJECT, MISSING_RUN, failed, inconclusive, missing)
    if failed:
        return Combined(REJECT, FAILED, failed, inconclusive)
    if combiner == STRICT:
        if inconclusive:
            return Combined(HOLD, HELD_INCONCLUSIVE, (), inconclusive)
        return Combined(ADMIT, ALL_PASS)
    if promote({p: verdicts[p] for p in claims}, claims):
        return Combined(ADMIT, PROMOTED, (), inconclusive)
    return Combined(HOLD, ALL_INCONCLUSIVE, (), inconclusive)
