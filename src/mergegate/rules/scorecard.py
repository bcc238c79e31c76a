"""Seed 004: the merge scorecard (pure).  A freeze is merge debt with a due date.

Debt weights are the seed's: oracle paths 4, fixtures 3, the ledger 5, an
over-budget ledger 2.  The verdict follows the seed's decision table (so a
person's ledger-only change within budget is accepted *with* its debt logged),
with the policy's path classes in place of hard-coded prefixes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from mergegate.rules import globs
from mergegate.rules.freezes import Entry, Ledger, added
from mergegate.rules.pathclass import FIXTURE, GUARDED, LEDGER, OTHER, PRODUCTION
from mergegate.rules.shapes import Classifies

ACCEPT, REJECT, REVIEW = "accept", "reject", "review"
DEBT_ORACLE, DEBT_FIXTURE, DEBT_LEDGER, DEBT_OVER_BUDGET = 4, 3, 5, 2
# "plain tests": files outside every policy class that look like tests (seed 004 row 3)
TEST_GLOBS = ("tests/**", "test/**", "test_*.py", "*_test.py")


@dataclass(frozen=True)
class BudgetUse:
    active: int
    max_active: int
    added: tuple[str, ...]
    max_added_per_patch: int

    @property
    def over_active(self) -> bool:
        return self.active > self.max_active

    @property
    def over_added(self) -> bool:
        return len(self.added) > self.max_added_per_patch


@dataclass(frozen=True)
class Score:
    """The scorecard; ``to_dict`` has the seed's fields first, verbatim."""

    verdict: str
    debt: int
    oracle_hits: tuple[str, ...]
    fixture_hits: tuple[str, ...]
    freeze_ledger_touched: bool
    active_no_rely_freezes: tuple[str, ...]
    manifest_sha256: str | None
    reasons: tuple[str, ...]
    agent: bool
    relied_on: tuple[str, ...] = ()
    budget: BudgetUse | None = None

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "verdict": self.verdict, "debt": self.debt, "oracle_hits": list(self.oracle_hits),
            "fixture_hits": list(self.fixture_hits), "freeze_ledger_touched": self.freeze_ledger_touched,
            "active_no_rely_freezes": list(self.active_no_rely_freezes),
            "manifest_sha256": self.manifest_sha256,
            "reasons": list(self.reasons), "agent": self.agent, "relied_on": list(self.relied_on),
        }
        if self.budget is not None:
            data["budget"] = {"active": self.budget.active, "max_active": self.budget.max_active,
                              "added": list(self.budget.added),
                              "max_added_per_patch": self.budget.max_added_per_patch}
        return data


def allows_agent_rely(entry: Entry, agent: bool) -> bool:
    """A person may rely on any freeze; an agent only on one marked ``allows_agent_rely``."""
    return entry.allows_agent_rely or not agent


def could_rely(ledger: Ledger, touched: Iterable[str], now: dt.datetime) -> tuple[str, ...]:
    """Active freezes whose paths overlap the patch: the ones a green run might be leaning on."""
    touched = tuple(touched)
    return tuple(e.id for e in ledger.active(now) if e.covers_any(touched))


def budget(base: Ledger, head: Ledger | None, now: dt.datetime) -> BudgetUse:
    """Budget use after the patch, against the trusted (base) ledger's limits."""
    after = head if head is not None else base
    new = added(base, head) if head is not None else ()
    return BudgetUse(len(after.active(now)), base.budget.max_active, tuple(e.id for e in new),
                     base.budget.max_added_per_patch)


def score(
    changed: Sequence[str],
    policy: Classifies,
    *,
    agent: bool,
    base_ledger: Ledger,
    head_ledger: Ledger | None,
    now: dt.datetime,
    manifest_ok: bool,
    manifest_sha256: str | None,
    relied_on: Collection[str] = (),
) -> Score:
    """Score one patch.

    ``changed``: every path it touches.  ``base_ledger``: the trusted ledger (budget,
    entries).  ``head_ledger``: the patch's ledger when it changed it (None: unchanged
    or unreadable; an unreadable changed ledger is rejected).  ``manifest_ok``: the
    manifest verifies at head.  ``relied_on``: freeze ids the patch's green run used.
    """
    classes = {p: policy.classify(p) for p in changed}
    oracle_hits = tuple(sorted(p for p, c in classes.items() if c in GUARDED and c != LEDGER))
    fixture_hits = tuple(sorted(p for p, c in classes.items() if c == FIXTURE))
    production = [p for p, c in classes.items() if c == PRODUCTION]
    tests = [p for p, c in classes.items() if c == OTHER and globs.matches(p, TEST_GLOBS)]
    touched_ledger = LEDGER in classes.values()
    use = budget(base_ledger, head_ledger, now)
    no_rely = tuple(e.id for e in base_ledger.active(now) if not e.allows_agent_rely)
    entries = base_ledger.by_id()
    bad_rely = tuple(sorted(i for i in relied_on if i in entries and not allows_agent_rely(entries[i], agent)))

    debt = (DEBT_ORACLE * bool(oracle_hits) + DEBT_FIXTURE * bool(fixture_hits)
            + DEBT_LEDGER * touched_ledger + DEBT_OVER_BUDGET * use.over_active)
    reasons = _rejections(agent, oracle_hits, production, touched_ledger, head_ledger, use, bad_rely,
                          manifest_ok)
    if reasons:
        verdict = REJECT
    elif production and tests:
        verdict, reasons = REVIEW, ["tests_are_not_oracles"]
    else:
        verdict = ACCEPT
        reasons = ["accepted_with_debt_log"] if debt else ["production_only" if production else "no_guarded_change"]
    return Score(verdict, debt, oracle_hits, fixture_hits, touched_ledger, no_rely, manifest_sha256,
                 tuple(reasons), agent, tuple(sorted(relied_on)), use)


def _rejections(agent: bool, oracle_hits: Sequence[str], production: Sequence[str], touched_ledger: bool,
                head_ledger: Ledger | None, use: BudgetUse, bad_rely: Sequence[str],
                manifest_ok: bool) -> list[str]:
    reasons = []
    if agent and touched_ledger:
        reasons.append("ledger_extended_by_agent")
    if agent and oracle_hits:
        reasons.append("oracle_edited_by_agent")
    if (oracle_hits or touched_ledger) and production:
        reasons.append("oracle_and_production_mixed")
    if use.over_active:
        reasons.append("over_budget")
    if bad_rely:
        reasons.append("relies_on_no_rely_freeze")
    if touched_ledger and head_ledger is None:
        reasons.append("ledger_unreadable")
    if touched_ledger and use.over_added:
        reasons.append("added_over_budget")
    if oracle_hits and not manifest_ok:
        reasons.append("manifest_not_resigned")
    return reasons
