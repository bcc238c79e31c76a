"""Seed 000: the table row by row, the four negative tests, the walkthrough; the combiner."""

from __future__ import annotations

import pytest

from mergegate.rules.verdicts import (
    ADMIT,
    FAIL,
    HOLD,
    INCONCLUSIVE,
    PASS,
    REJECT,
    Freeze,
    Run,
    apply_freeze,
    combine,
    promote,
)

P = "prop.order_total"
MATCH = Freeze(P, "sig-a", "digest-1", "rev-9")


def run(status: str | None, edited: bool = False, sig: str | None = "sig-a", digest: str = "digest-1",
        rev: str = "rev-9") -> Run:
    return Run(P, status if status is not None else "missing", sig, digest, rev, edited)


# Runner status | Freeze match | Oracle edited | Emitted verdict (seed 000's table, row by row)
@pytest.mark.parametrize(
    ("status", "freeze", "edited", "expected"),
    [
        pytest.param(PASS, None, False, PASS, id="pass-irrelevant-unedited"),
        pytest.param(PASS, MATCH, False, PASS, id="pass-irrelevant-unedited-with-freeze"),
        pytest.param(FAIL, None, False, FAIL, id="fail-no-match"),
        pytest.param(FAIL, Freeze(P, "sig-b", "digest-1", "rev-9"), False, FAIL, id="fail-other-signature"),
        pytest.param(FAIL, MATCH, False, INCONCLUSIVE, id="fail-match-unedited"),
        pytest.param(FAIL, MATCH, True, FAIL, id="fail-match-edited-freeze-void"),
        pytest.param(PASS, None, True, FAIL, id="pass-edited-catalog-drift"),
        pytest.param(PASS, MATCH, True, FAIL, id="pass-edited-with-freeze"),
        pytest.param(None, None, False, FAIL, id="missing-run"),
        pytest.param(None, MATCH, False, FAIL, id="missing-run-with-freeze"),
        pytest.param(None, MATCH, True, FAIL, id="missing-run-edited"),
    ],
)
def test_seed_000_table(status: str | None, freeze: Freeze | None, edited: bool, expected: str) -> None:
    assert apply_freeze(run(status, edited), freeze) == expected


@pytest.mark.parametrize(
    "freeze",
    [
        Freeze("prop.tax_round", "sig-a", "digest-1", "rev-9"),
        Freeze(P, "sig-b", "digest-1", "rev-9"),
        Freeze(P, "sig-a", "digest-2", "rev-9"),
        Freeze(P, "sig-a", "digest-1", "rev-8"),
    ],
    ids=["prop_id", "signature", "fixture_digest", "base_revision"],
)
def test_every_match_key_is_needed(freeze: Freeze) -> None:
    assert apply_freeze(run(FAIL), freeze) == FAIL


def test_a_run_without_signature_never_matches() -> None:
    assert apply_freeze(run(FAIL, sig=None), Freeze(P, "", "digest-1", "rev-9")) == FAIL


# --- the seed's four negative tests, verbatim
def test_freeze_cannot_mint_pass() -> None:
    r = Run("prop.order_total", FAIL, "sig-a", "digest-1", "rev-9", False)
    freeze = Freeze("prop.order_total", "sig-a", "digest-1", "rev-9")
    assert apply_freeze(r, freeze) == INCONCLUSIVE


def test_edited_oracle_voids_freeze() -> None:
    r = Run("prop.order_total", FAIL, "sig-a", "digest-1", "rev-9", True)
    freeze = Freeze("prop.order_total", "sig-a", "digest-1", "rev-9")
    assert apply_freeze(r, freeze) == FAIL


def test_digest_mismatch_stays_fail() -> None:
    r = Run("prop.order_total", FAIL, "sig-a", "digest-2", "rev-9", False)
    freeze = Freeze("prop.order_total", "sig-a", "digest-1", "rev-9")
    assert apply_freeze(r, freeze) == FAIL


def test_all_inconclusive_does_not_promote() -> None:
    assert promote({"prop.order_total": INCONCLUSIVE}, {"prop.order_total"}) is False


# --- the walkthrough
def walkthrough(digest: str = "digest-1", edited: bool = False) -> dict[str, str]:
    order = Run(P, FAIL, "sig-a", digest, "rev-9", edited)
    tax = Run("prop.tax_round", PASS, None, digest, "rev-9", False)
    return {P: apply_freeze(order, MATCH), "prop.tax_round": apply_freeze(tax, None)}


def test_walkthrough_promotes() -> None:
    verdicts = walkthrough()
    assert verdicts == {P: INCONCLUSIVE, "prop.tax_round": PASS}
    assert promote(verdicts, {P, "prop.tax_round"}) is True
    assert combine(verdicts, {P, "prop.tax_round"}, "lenient").decision == ADMIT
    assert combine(verdicts, {P, "prop.tax_round"}, "strict").decision == HOLD


def test_walkthrough_digest_2_stops_promotion() -> None:
    verdicts = walkthrough(digest="digest-2")
    assert verdicts[P] == FAIL
    assert promote(verdicts, {P, "prop.tax_round"}) is False
    assert combine(verdicts, {P, "prop.tax_round"}, "lenient").decision == REJECT


def test_walkthrough_oracle_in_diff_voids_freeze() -> None:
    verdicts = walkthrough(edited=True)
    assert verdicts[P] == FAIL
    assert promote(verdicts, {P, "prop.tax_round"}) is False


def test_walkthrough_claim_set_without_passing_property() -> None:
    verdicts = walkthrough()
    assert promote(verdicts, {P}) is False  # claim set no longer matches the verdicts
    assert promote({P: verdicts[P]}, {P}) is False  # a single inconclusive is silence
    assert combine({P: verdicts[P]}, {P}, "lenient").decision == HOLD
    assert combine({P: verdicts[P]}, {P}, "strict").decision == HOLD


# --- promote and the combiner
def test_promote_refuses_empty_claims() -> None:
    assert promote({}, set()) is False


def test_promote_refuses_fail() -> None:
    assert promote({P: PASS, "b": FAIL}, {P, "b"}) is False


@pytest.mark.parametrize(
    ("verdicts", "claimed", "combiner", "decision", "reason"),
    [
        ({P: PASS}, {P}, "strict", ADMIT, "all_pass"),
        ({P: PASS}, {P}, "lenient", ADMIT, "promoted"),
        ({P: PASS, "b": INCONCLUSIVE}, {P, "b"}, "strict", HOLD, "inconclusive"),
        ({P: PASS, "b": INCONCLUSIVE}, {P, "b"}, "lenient", ADMIT, "promoted"),
        ({P: INCONCLUSIVE}, {P}, "lenient", HOLD, "all_inconclusive"),
        ({P: PASS, "b": FAIL}, {P, "b"}, "lenient", REJECT, "fail"),
        ({P: PASS, "b": FAIL}, {P}, "strict", REJECT, "fail"),  # an unclaimed regression still rejects
        ({P: PASS}, set(), "strict", REJECT, "empty_claim_set"),
        ({}, set(), "lenient", REJECT, "empty_claim_set"),
        ({P: PASS}, {P, "b"}, "strict", REJECT, "missing_run"),
        ({P: "error"}, {P}, "strict", REJECT, "fail"),
    ],
)
def test_combine(verdicts: dict[str, str], claimed: set[str], combiner: str, decision: str, reason: str) -> None:
    result = combine(verdicts, claimed, combiner)
    assert (result.decision, result.reason) == (decision, reason)
    assert result.admitted == (decision == ADMIT)


def test_combine_unknown_combiner() -> None:
    with pytest.raises(ValueError):
        combine({P: PASS}, {P}, "generous")
