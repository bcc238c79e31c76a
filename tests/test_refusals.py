"""A refusal of the gate's is a fail, never an answer (``trusted/faults.py``; end to end in
tests/test_sealed_mapping_attacks.py: a property's ``pytest.raises(TypeError)`` around a broken production call).

Each ``SealedCallError`` made is kept until the gate handles it itself; an example that completes with one left
fails with it.  The gate's own fallbacks (a snapshot it cannot compare is "not the same state"; a hash of state
it cannot hash falls back to the type's) handle theirs, so they never fail an example.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mergegate.runner.trusted import faults, snapshots
from mergegate.runner.trusted.faults import SealedCallError


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    faults.REFUSED.clear()
    yield
    faults.REFUSED.clear()


def test_a_refusal_caught_by_the_test_is_still_there_when_the_example_ends() -> None:
    with pytest.raises(TypeError):
        raise SealedCallError("cannot copy a value")
    refused = faults.went_on()
    assert isinstance(refused, SealedCallError) and "cannot copy a value" in str(refused)
    assert "went on after the gate refused" in str(refused)
    assert faults.went_on() is None and faults.REFUSED == []


def test_a_refusal_the_gate_handles_itself_is_not_one() -> None:
    try:
        raise SealedCallError("a fallback")
    except SealedCallError as exc:
        faults.handled(exc)
    assert faults.went_on() is None
    faults.handled(ValueError("never made here"))  # anything else: nothing to do
    assert faults.REFUSED == []


def test_production_s_own_type_error_is_not_a_refusal() -> None:
    with pytest.raises(TypeError):
        raise TypeError("unhashable type: 'Basket'")
    assert faults.went_on() is None


def test_the_snapshot_fallbacks_leave_no_refusal() -> None:
    opaque = snapshots.Snap("shop:Blob#1", frozenset(), "opaque", None)
    assert snapshots.same_state(opaque, opaque) is False  # any doubt is "not the same state"
    holds_an_opaque = snapshots.Snap("shop:Box#2", frozenset(), "fields", {"inner": opaque})
    assert isinstance(hash(holds_an_opaque), int)  # state it cannot hash: the type's hash
    assert faults.went_on() is None
