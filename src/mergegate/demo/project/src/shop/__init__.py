# mypy: ignore-errors
"""A small shop: order totals, tax rounding, bulk discounts."""
