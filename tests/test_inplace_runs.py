"""Oracle state kept across the runs of one collector (``runner/trusted/inplace.py``), through the real ``gate run``.

A collector runs its file's properties and seeds in one trusted process, each against a fresh twin of
production.  Real suites keep things across runs at module level: a strategy built lazily
(``st.builds(Line)`` resolves ``Line``'s annotations at its first draw, in the first run), a module imported
inside a test.  A production class or module met in an earlier run is found again by its name in the later
run's twin; an instance, or a class no name reaches, is refused, never taken for another object.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers import gate, init_repo, sign_and_commit

GEO = '''\
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


class Line:
    def __init__(self, start: Point, end: Point):
        self.start, self.end = start, end

    def length2(self):
        return (self.end.x - self.start.x) ** 2 + (self.end.y - self.start.y) ** 2


def factory():
    class Local:
        pass

    return Local
'''

ORACLE = '''\
from hypothesis import given, strategies as st

from geo import Line

LINES = st.builds(Line)  # Point, met only through Line's annotations, is first seen in the first run
KEPT = []


@given(LINES)
def test_lines(line):
    assert line.length2() >= 0 and isinstance(line.start, type(line.end))


def test_lazy_module():
    if not KEPT:
        import geo.sub  # first imported inside a run, kept at module level
        KEPT.append(geo.sub)
    assert KEPT[0].twice(2) == 4


def test_local_class():
    from geo import factory

    if "local" not in globals():
        globals()["local"] = factory()  # a class no name reaches: it cannot be found again
        return
    globals()["local"]()
'''

ENTRY = "id: {pid}\noracle: oracles/properties/test_geo.py::{fn}\nclaim: \"{pid}\"\nmax_examples: 20\n" \
        "covers: [\"src/geo/**\"]\n"
PROPS = {"prop.lines": "test_lines", "prop.lazy": "test_lazy_module", "prop.lazy2": "test_lazy_module",
         "prop.local": "test_local_class", "prop.local2": "test_local_class"}


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory, bwrap_works: bool) -> dict[tuple[str, int], dict[str, Any]]:
    repo = init_repo(tmp_path_factory.mktemp("inplace") / "repo")
    files: dict[str, str | bytes | None] = {
        "src/geo/__init__.py": GEO,
        "src/geo/sub.py": "def twice(x):\n    return 2 * x\n",
        "oracles/properties/test_geo.py": ORACLE,
        "oracles/catalog/claimed.yaml": f"claimed: [{', '.join(sorted(PROPS))}]\n",
    }
    for pid, fn in PROPS.items():
        files[f"oracles/catalog/{pid}.yaml"] = ENTRY.format(pid=pid, fn=fn)
    sign_and_commit(repo, files, "geometry")
    out = repo.parent / "rows.jsonl"
    proc = gate(repo, "run", "--rev", "HEAD", "--out", str(out))
    assert proc.returncode in (0, 1), proc.stderr
    return {(r["prop"], r["seed"]): r for r in map(json.loads, out.read_text().splitlines())}


def test_a_lazily_built_strategy_draws_in_every_run(rows: dict[tuple[str, int], dict[str, Any]]) -> None:
    for seed in (11, 29, 47):
        assert rows[("prop.lines", seed)]["status"] == "pass", rows[("prop.lines", seed)]


def test_a_module_imported_in_an_earlier_run_is_found_again(rows: dict[tuple[str, int], dict[str, Any]]) -> None:
    for pid in ("prop.lazy", "prop.lazy2"):  # the second runs after the first, in the same trusted process
        assert rows[(pid, 11)]["status"] == "pass", rows[(pid, 11)]


def test_a_class_no_name_reaches_is_refused_in_a_later_run(rows: dict[tuple[str, int], dict[str, Any]]) -> None:
    first, later = rows[("prop.local", 11)], rows[("prop.local2", 11)]
    assert first["status"] == "pass", first
    assert later["status"] == "fail" and "earlier run" in later["error"], later
