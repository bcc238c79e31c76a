"""Signature normalisation: strip what would not identify the failure tomorrow, and no more."""

from __future__ import annotations

import pytest

from mergegate.runner.signature import normalise, signature

SITE = "AssertionError:oracles/properties/test_x.py:12"


@pytest.mark.parametrize(("left", "right"), [
    ("f(x=<Obj at 0x7f3a2b1c9d00>)", "f(x=<Obj at 0x55d0c0ffee00>)"),
    ("f(when='2026-11-30T01:02:03.123456+00:00')", "f(when='2027-01-01T09:08:07Z')"),
    ("f(path='/tmp/pytest-of-root/abc123/file.json')", "f(path='/tmp/gate-run-xyz/file.json')"),
    ("f(path='/work/trees/tree0/src/a.py')", "f(path='/work/trees/tree1/src/a.py')"),
])
def test_noise_is_stripped(left: str, right: str) -> None:
    roots = ["/work/trees/tree0", "/work/trees/tree1"]
    assert normalise(left, roots) == normalise(right, roots)
    assert signature("p", SITE, left, roots) == signature("p", SITE, right, roots)


@pytest.mark.parametrize(("left", "right"), [
    ("f(qty=2000)", "f(qty=2001)"),
    ("f(x=0x10)", "f(x=0x11)"),  # short hex literals are values, not addresses
    ("f(day='2026-11-30')", "f(day='2026-12-01')"),  # a date alone is data
])
def test_different_counterexamples_differ(left: str, right: str) -> None:
    assert signature("p", SITE, left) != signature("p", SITE, right)


def test_prop_and_site_are_part_of_the_identity() -> None:
    assert signature("p", SITE, "f(1)") != signature("q", SITE, "f(1)")
    assert signature("p", SITE, "f(1)") != signature("p", SITE.replace(":12", ":13"), "f(1)")


def test_data_draws_are_part_of_the_counterexample() -> None:
    """Two failures of a ``data()`` test that differ only in a draw keep different signatures."""
    from mergegate.runner.trusted.report import counterexample

    def failure(draw: int) -> AssertionError:
        exc = AssertionError()
        exc.add_note("Failing test case: t(\n    data=data(...),\n)")
        exc.add_note(f"Draw 1: {draw}")
        return exc

    assert counterexample(failure(50)) != counterexample(failure(51))
    assert signature("p", SITE, counterexample(failure(50))) != signature("p", SITE, counterexample(failure(51)))
