"""DESIGN.md "One pipeline": the per-property table row by row, and rule 3 field by field."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from mergegate.records.ledger import Entry
from mergegate.rules.differential import Row
from mergegate.rules.unified import RunContext, evaluate, per_property, verdict_map

P = "prop.order_total"
NOW = dt.datetime(2026, 9, 20, tzinfo=dt.UTC)
SEEDS = (11, 29)
CTX = RunContext("rev-9", "digest-1", "digest-1", ("src/orders.py",), agent=False, now=NOW)
FREEZE = Entry(
    id="FZ-1", prop_id=P, signature="sig-a", fixture_digest="digest-1", base_revision="rev-9",
    paths=("src/**",), reason="flaky clock", opened_by="pat", opened_at=NOW - dt.timedelta(days=1),
    expires_at=NOW + dt.timedelta(days=7), witness="AssertionError:total", allows_agent_rely=False,
)


def side(*statuses: str | None, sig: str = "sig-a", witness: str = "AssertionError:total") -> list[Row]:
    return [Row(P, seed, st, witness if st == "fail" else "", sig if st == "fail" else None)
            for seed, st in zip(SEEDS, statuses, strict=True) if st is not None]


def verdict(base: list[Row], head: list[Row], *, edited: bool = False, freezes: tuple[Entry, ...] = (FREEZE,),
            ctx: RunContext = CTX, canary: bool = False, eligible: bool = True) -> tuple[str, str, bool]:
    v = per_property(P, base, head, SEEDS, oracle_edited=edited, freezes=freezes, ctx=ctx,
                     canary=canary, quarantine_eligible=eligible)
    return v.verdict, v.reason, v.propose_freeze


# base | head | oracle edited | freeze matches | verdict / reason  (DESIGN.md, row by row)
@pytest.mark.parametrize(
    ("base", "head", "edited", "freezes", "expected"),
    [
        pytest.param(side("pass", "pass"), side("pass", "pass"), True, (FREEZE,),
                     ("fail", "oracle_moved", False), id="edited-pass-pass"),
        pytest.param(side("fail", "fail"), side("fail", "fail"), True, (FREEZE,),
                     ("fail", "oracle_moved", False), id="edited-frozen-fail"),
        pytest.param(side("pass", None), side("pass", "pass"), False, (FREEZE,),
                     ("fail", "missing_seed", False), id="base-missing"),
        pytest.param(side("fail", "fail"), side(None, "fail"), False, (FREEZE,),
                     ("fail", "missing_seed", False), id="head-missing"),
        pytest.param(side("pass", "pass"), side("pass", "pass"), False, (),
                     ("pass", "both_pass", False), id="pass-pass"),
        pytest.param(side("fail", "pass"), side("pass", "pass"), False, (),
                     ("pass", "parent_fail_cleared", False), id="fail-pass"),
        pytest.param(side("pass", "pass"), side("fail", "fail"), False, (FREEZE,),
                     ("fail", "regression", False), id="pass-fail-with-matching-freeze"),
        pytest.param(side("fail", "fail"), side("fail", "fail"), False, (FREEZE,),
                     ("inconclusive", "frozen", False), id="fail-fail-frozen"),
        pytest.param(side("fail", "pass"), side("fail", "fail"), False, (),
                     ("fail", "shared_variant_fail", True), id="fail-fail-no-freeze-split"),
        pytest.param(side("fail", "fail"), side("fail", "fail"), False, (),
                     ("fail", "uniform_fail", False), id="fail-fail-no-freeze-uniform"),
        pytest.param(side("fail", "pass"), side("fail", "pass", witness="KeyError"), False, (),
                     ("fail", "witness_mismatch", False), id="fail-fail-no-freeze-witness"),
    ],
)
def test_design_table(base: list[Row], head: list[Row], edited: bool, freezes: tuple[Entry, ...],
                      expected: tuple[str, str, bool]) -> None:
    assert verdict(base, head, edited=edited, freezes=freezes) == expected


def test_parent_fail_cleared_flags_review() -> None:
    v = per_property(P, side("fail", "pass"), side("pass", "pass"), SEEDS, oracle_edited=False,
                     freezes=(), ctx=CTX)
    assert v.review and v.verdict == "pass"


def test_frozen_names_the_entry() -> None:
    v = per_property(P, side("fail", "fail"), side("fail", "fail"), SEEDS, oracle_edited=False,
                     freezes=(FREEZE,), ctx=CTX, quarantine_eligible=True)
    assert v.freeze_id == "FZ-1" and v.differential == "uniform_fail"


# rule 3: drop any one condition and the fail stays a fail
BASE, HEAD = side("fail", "fail"), side("fail", "fail")


@pytest.mark.parametrize(
    ("change", "blocker"),
    [
        ({"canary": True}, "canary"),
        ({"eligible": False}, "not_quarantine_eligible"),
        ({"freeze": {"expires_at": NOW}}, "expired"),
        ({"freeze": {"expires_at": NOW - dt.timedelta(seconds=1)}}, "expired"),
        ({"freeze": {"signature": "sig-b"}}, "signature"),
        ({"freeze": {"fixture_digest": "digest-2"}}, "fixture_digest"),
        ({"ctx": {"head_fixture_digest": "digest-2"}}, "fixture_digest"),
        ({"ctx": {"base_fixture_digest": "digest-2"}}, "fixture_digest"),
        ({"ctx": {"head_fixture_digest": None, "base_fixture_digest": None}}, "fixture_digest"),
        ({"freeze": {"base_revision": "rev-8"}}, "base_revision"),
        ({"base": side("fail", "fail", sig="sig-z")}, "not_reproduced_on_base"),
        ({"head": side("fail", "fail", sig="sig-z")}, "signature"),
        ({"freeze": {"paths": ("docs/**",)}}, "paths"),
        ({"ctx": {"agent": True}}, "allows_agent_rely"),
    ],
)
def test_rule_3_every_condition_is_needed(change: dict[str, object], blocker: str) -> None:
    freeze = dataclasses.replace(FREEZE, **change.get("freeze", {}))  # type: ignore[arg-type]
    ctx = dataclasses.replace(CTX, **change.get("ctx", {}))  # type: ignore[arg-type]
    base = change.get("base", BASE)
    head = change.get("head", HEAD)
    v = per_property(P, base, head, SEEDS, oracle_edited=False, freezes=(freeze,), ctx=ctx,  # type: ignore[arg-type]
                     canary=bool(change.get("canary", False)), quarantine_eligible=bool(change.get("eligible", True)))
    assert v.verdict == "fail"
    assert v.freeze_id is None
    assert blocker in dict(v.blockers)["FZ-1"]


def test_freeze_for_another_property_is_not_consulted() -> None:
    other = dataclasses.replace(FREEZE, prop_id="prop.other")
    assert verdict(BASE, HEAD, freezes=(other,)) == ("fail", "uniform_fail", False)


def test_agent_may_rely_when_allowed() -> None:
    ctx = dataclasses.replace(CTX, agent=True)
    ok = dataclasses.replace(FREEZE, allows_agent_rely=True)
    assert verdict(BASE, HEAD, freezes=(ok,), ctx=ctx)[0] == "inconclusive"


def test_head_with_a_second_signature_stays_fail() -> None:
    head = [Row(P, 11, "fail", "AssertionError:total", "sig-a"), Row(P, 29, "fail", "AssertionError:total", "sig-b")]
    assert verdict(BASE, head)[0] == "fail"


def test_canary_never_proposes_a_freeze() -> None:
    assert verdict(side("fail", "pass"), side("fail", "fail"), freezes=(), canary=True) == (
        "fail", "shared_variant_fail", False)


def test_evaluate_and_verdict_map() -> None:
    results = evaluate([(P, False, True)], BASE, HEAD, SEEDS, oracle_edited=(), freezes=(FREEZE,), ctx=CTX)
    assert verdict_map(results) == {P: "inconclusive"}
    results = evaluate([(P, False, True)], BASE, HEAD, SEEDS, oracle_edited={P}, freezes=(FREEZE,), ctx=CTX)
    assert verdict_map(results) == {P: "fail"}
