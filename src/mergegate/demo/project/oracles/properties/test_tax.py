# mypy: ignore-errors
"""Tax is rounded to the cent and within half a cent of the exact amount."""

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st
from shop.tax import tax_for

AMOUNTS = st.decimals(min_value=0, max_value=100_000, places=2)


@given(AMOUNTS, st.sampled_from(["0.2", "0.05", "0.07"]))
def test_tax_rounds_to_cent(amount, rate):
    tax = tax_for(amount, rate)
    assert tax == tax.quantize(Decimal("0.01"))
    assert abs(tax - amount * Decimal(rate)) <= Decimal("0.005")
