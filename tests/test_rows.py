"""``rows.replaced``: the rows a check copies (to each seed, with their revision and tree) equal what
``dataclasses.replace`` makes, field for field, and the original row is left as it was."""

from __future__ import annotations

import dataclasses

import pytest

from mergegate.rules.differential import Decisions
from mergegate.runner import rows as rowlib
from mergegate.runner.rows import Row, replaced

FULL = Row(
    prop="mod.prop", seed=11, status="fail", witness="AssertionError:tests/test_x.py:3", signature="abc",
    spec_hash="s", fixture_closure="f", fixture_digest="d", examples=7, duration_s=0.5, error="boom",
    fixtures_opened=("oracles/fixtures/a",), undeclared_fixtures=("oracles/fixtures/a",), load_error=False,
    isolation="sealed", containment="bwrap", falsifying_example="f(x=1)", reproduce=None, production_calls=3,
    production_s=0.1, revision="r", tree="t", items=(("tests/test_x.py::test_y", "failed"),),
    decisions=(Decisions("tests/test_x.py::test_y", "vvx", "", 1, 0),),
    lines_run=(("src/a.py", (1, 2)),), lines_at_import=(("src/a.py", (1,)),),
)
CHANGES = {"seed": 29, "revision": "head", "tree": "tree2", "reproduce": "gate run --only mod.prop --seed 29",
           "status": "pass", "items": ()}


def test_the_fast_copy_stays_valid_for_row() -> None:
    # ``replaced`` copies the fields: that is ``dataclasses.replace`` only while every field is an __init__
    # argument and nothing runs after __init__.
    assert all(f.init for f in dataclasses.fields(Row))
    assert not hasattr(Row, "__post_init__")


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_a_replaced_row_equals_dataclasses_replace(field: str) -> None:
    new = replaced(FULL, **{field: CHANGES[field]})
    assert new == dataclasses.replace(FULL, **{field: CHANGES[field]})
    assert getattr(new, field) == CHANGES[field]
    assert new.to_json() == dataclasses.replace(FULL, **{field: CHANGES[field]}).to_json()
    assert FULL.seed == 11 and FULL.revision == "r" and FULL.status == "fail"  # the original is untouched


def test_every_field_at_once_and_the_copy_is_still_frozen() -> None:
    new = replaced(FULL, **CHANGES)
    assert new == dataclasses.replace(FULL, **CHANGES)
    assert hash(new) == hash(dataclasses.replace(FULL, **CHANGES))
    with pytest.raises(dataclasses.FrozenInstanceError):
        new.seed = 1  # type: ignore[misc]


def test_an_unknown_field_is_refused_as_dataclasses_replace_refuses_it() -> None:
    with pytest.raises(TypeError, match="no field 'sede'"):
        replaced(FULL, sede=3)


def test_bound_and_with_reproduce_give_what_they_gave() -> None:
    rows = [FULL, replaced(FULL, status="pass", prop="mod.other")]
    bound = rowlib.bound(rows, "rev2", "tree2")
    assert [(r.revision, r.tree) for r in bound] == [("rev2", "tree2")] * 2
    assert bound == [dataclasses.replace(r, revision="rev2", tree="tree2") for r in rows]
    again = rowlib.with_reproduce(bound, rev="rev2")
    assert again[0].reproduce and "mod.prop" in again[0].reproduce  # a failing row gets its command
    assert again[1] is bound[1]  # a passing one is the same row
