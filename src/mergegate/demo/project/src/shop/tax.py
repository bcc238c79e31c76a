# mypy: ignore-errors
"""Tax on an amount, rounded half-up to the cent."""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def tax_for(amount: Decimal, rate: str) -> Decimal:
    """Tax on ``amount`` at ``rate`` (a decimal string such as "0.2"), rounded to the cent."""
    return (amount * Decimal(rate)).quantize(CENT, rounding=ROUND_HALF_UP)
