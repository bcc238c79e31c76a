# mypy: ignore-errors
"""Order totals are never negative and never below their subtotal."""

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from shop.orders import order_total, subtotal

RATES = Path(__file__).parents[1] / "fixtures" / "rates.json"
LINES = st.lists(st.tuples(st.integers(0, 500), st.integers(0, 100_000)), max_size=8)


@given(LINES, st.sampled_from(["standard", "reduced", "zero"]))
def test_total_at_least_subtotal(lines, rate_name):
    rate = json.loads(RATES.read_text())[rate_name]
    total = order_total(lines, rate)
    assert total >= subtotal(lines) >= 0
