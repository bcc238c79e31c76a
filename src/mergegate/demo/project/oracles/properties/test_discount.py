# mypy: ignore-errors
"""A bulk discount never exceeds ten percent."""

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st
from shop.discount import bulk_discount


@given(st.integers(min_value=0, max_value=10_000))
def test_discount_bounded(qty):
    assert Decimal(0) <= bulk_discount(qty) <= Decimal("0.10")
