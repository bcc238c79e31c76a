# mypy: ignore-errors
"""Bulk discounts by quantity."""

from decimal import Decimal


def bulk_discount(qty: int) -> Decimal:
    """The fraction taken off a line of ``qty`` items."""
    if qty >= 100:
        return Decimal("0.10")
    if qty >= 10:
        return Decimal("0.05")
    return Decimal("0")
