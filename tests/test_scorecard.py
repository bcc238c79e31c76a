"""Seed 004: the decision table row by row, the debt weights, allows_agent_rely, the budget."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from mergegate.records.ledger import Budget, Entry, Ledger
from mergegate.records.policy import Policy
from mergegate.rules.scorecard import allows_agent_rely, budget, could_rely, score

NOW = dt.datetime(2026, 9, 20, tzinfo=dt.UTC)
FZ = Entry(id="FZ-014", prop_id="prop.roundtrip", signature="s", fixture_digest="d", base_revision="r",
           paths=("src/parser/**",), reason="clock skew", opened_by="human", opened_at=NOW - dt.timedelta(days=8),
           expires_at=NOW + dt.timedelta(days=6), allows_agent_rely=False)
BASE = Ledger(budget=Budget(3, 1), entries=(FZ,))
NEW = dataclasses.replace(FZ, id="FZ-015", prop_id="prop.other")
HEAD_ADDED = dataclasses.replace(BASE, entries=(FZ, NEW))
POLICY = Policy()


def card(changed: list[str], *, agent: bool = False, head: Ledger | None = None, manifest_ok: bool = True,
         relied: tuple[str, ...] = (), base: Ledger = BASE) -> tuple[str, int]:
    result = score(changed, POLICY, agent=agent, base_ledger=base, head_ledger=head, now=NOW,
                   manifest_ok=manifest_ok, manifest_sha256="abc", relied_on=relied)
    return result.verdict, result.debt


# Patch touches | Freeze ledger | Property hash | Fixture digest | Verdict  (seed 004's table, row by row)
@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param({"changed": ["src/parser/lexer.py"], "agent": True}, ("accept", 0),
                     id="production-only-no-rely"),
        pytest.param({"changed": ["src/parser/lexer.py"], "agent": True, "relied": ("FZ-014",)}, ("reject", 0),
                     id="production-only-relies-on-no-rely-freeze"),
        pytest.param({"changed": ["src/parser/lexer.py", "tests/test_lexer.py"], "agent": True}, ("review", 0),
                     id="production-plus-tests"),
        pytest.param({"changed": ["src/parser/lexer.py", "oracles/properties/p.py"], "agent": False},
                     ("reject", 4), id="production-plus-oracles"),
        pytest.param({"changed": ["freeze_ledger.yaml"], "agent": False, "head": HEAD_ADDED}, ("accept", 5),
                     id="ledger-only-human-within-budget"),
        pytest.param({"changed": ["freeze_ledger.yaml"], "agent": True, "head": HEAD_ADDED}, ("reject", 5),
                     id="ledger-extended-by-agent"),
        pytest.param({"changed": ["oracles/fixtures/corpus/001.json"], "agent": False, "manifest_ok": False},
                     ("reject", 7), id="fixtures-only-not-resigned"),
    ],
)
def test_seed_004_table(kwargs: dict[str, object], expected: tuple[str, int]) -> None:
    assert card(**kwargs) == expected  # type: ignore[arg-type]


def test_fixtures_resigned_by_a_person_is_accepted_with_debt() -> None:
    assert card(["oracles/fixtures/corpus/001.json", "oracles/MANIFEST.sha256"]) == ("accept", 7)


def test_fixtures_by_agent_rejected_even_resigned() -> None:
    assert card(["oracles/fixtures/corpus/001.json", "oracles/MANIFEST.sha256"], agent=True)[0] == "reject"


@pytest.mark.parametrize(
    ("changed", "debt"),
    [
        (["oracles/properties/p.py"], 4),
        (["oracles/fixtures/a.json"], 4 + 3),
        (["freeze_ledger.yaml"], 5),
        (["oracles/properties/p.py", "oracles/fixtures/a.json", "freeze_ledger.yaml"], 4 + 3 + 5),
        (["gate.yaml"], 4),
        (["oracles/catalog/p.yaml"], 4),
        (["README.md"], 0),
    ],
)
def test_debt_weights(changed: list[str], debt: int) -> None:
    head = BASE if "freeze_ledger.yaml" in changed else None
    assert card(changed, head=head)[1] == debt


def test_over_budget_adds_two_and_rejects() -> None:
    crowded = Ledger(budget=Budget(1, 0), entries=(FZ, dataclasses.replace(FZ, id="FZ-2")))
    assert card(["src/a.py"], base=crowded) == ("reject", 2)


def test_ledger_addition_over_budget_is_rejected() -> None:
    tight = dataclasses.replace(BASE, budget=Budget(3, 0))
    assert card(["freeze_ledger.yaml"], head=dataclasses.replace(HEAD_ADDED, budget=Budget(3, 0)), base=tight)[0] == (
        "reject")


def test_unreadable_ledger_is_rejected() -> None:
    assert card(["freeze_ledger.yaml"], head=None)[0] == "reject"


def test_ledger_mixed_with_production_is_rejected() -> None:
    assert card(["freeze_ledger.yaml", "src/a.py"], head=HEAD_ADDED)[0] == "reject"


def test_seed_fields_verbatim() -> None:
    result = score(["src/a.py"], POLICY, agent=False, base_ledger=BASE, head_ledger=None, now=NOW,
                   manifest_ok=True, manifest_sha256="abc")
    data = result.to_dict()
    assert list(data)[:7] == ["verdict", "debt", "oracle_hits", "fixture_hits", "freeze_ledger_touched",
                              "active_no_rely_freezes", "manifest_sha256"]
    assert data["active_no_rely_freezes"] == ["FZ-014"]


def test_allows_agent_rely() -> None:
    assert allows_agent_rely(FZ, agent=False) is True
    assert allows_agent_rely(FZ, agent=True) is False
    assert allows_agent_rely(dataclasses.replace(FZ, allows_agent_rely=True), agent=True) is True


def test_person_may_rely_on_no_rely_freeze() -> None:
    assert card(["src/parser/lexer.py"], relied=("FZ-014",))[0] == "accept"


def test_could_rely_and_budget() -> None:
    assert could_rely(BASE, ["src/parser/x.py"], NOW) == ("FZ-014",)
    assert could_rely(BASE, ["src/other.py"], NOW) == ()
    assert could_rely(BASE, ["src/parser/x.py"], FZ.expires_at) == ()  # expired freezes lend nothing
    use = budget(BASE, HEAD_ADDED, NOW)
    assert (use.active, use.added, use.over_active, use.over_added) == (2, ("FZ-015",), False, False)


def test_policy_classes_not_prefixes() -> None:
    from mergegate.records.policy import Paths

    policy = Policy(paths=Paths(production=("lib/**",), oracle=("spec/**",)))
    result = score(["lib/a.py", "spec/p.py"], policy, agent=False, base_ledger=BASE, head_ledger=None, now=NOW,
                   manifest_ok=True, manifest_sha256=None)
    assert result.verdict == "reject" and result.oracle_hits == ("spec/p.py",)
