# mypy: ignore-errors
"""Order totals: lines of (quantity, unit price in cents)."""

from decimal import Decimal

from shop.discount import bulk_discount
from shop.tax import CENT, tax_for


def subtotal(lines: list[tuple[int, int]]) -> Decimal:
    """Sum of the lines after bulk discount, in currency units."""
    total = Decimal(0)
    for qty, cents in lines:
        gross = Decimal(qty) * Decimal(cents) / 100
        total += (gross * (1 - bulk_discount(qty))).quantize(CENT)
    return total


def order_total(lines: list[tuple[int, int]], rate: str) -> Decimal:
    """Subtotal plus tax."""
    sub = subtotal(lines)
    return sub + tax_for(sub, rate)
