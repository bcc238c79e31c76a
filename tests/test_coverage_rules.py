"""Issue 24's pure parts: executable lines, the coverage report and decision, fresh seeds in the tables."""

from __future__ import annotations

import datetime as dt
import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

from mergegate.errors import ConfigError
from mergegate.git.linediff import parse_hunks
from mergegate.pipeline.coverage import fresh_seeds
from mergegate.records import policy as policylib
from mergegate.rules import coverage, differential, unified
from mergegate.rules.differential import Row
from mergegate.rules.freezes import Entry
from mergegate.runner.subject.tracer import Tracer

SAMPLE = textwrap.dedent('''\
    """Module docstring."""
    import os

    LIMIT = 3  # a comment


    def f(a, b=2):
        """A docstring
        over two lines."""
        total = 0
        for i in range(a):
            if i % 2:
                total += i
            else:
                pass
        try:
            total += 10 // a
        except ZeroDivisionError:
            total = -1
        squares = [k * k for k in range(3)]
        return (total +
                b + len(squares))


    class C:
        """Class docstring."""

        attr = 3

        def gen(self):
            yield 1


    def never():
        return 2
    ''')


def test_executable_lines_follow_the_line_tables_without_docstrings_or_comments() -> None:
    lines = coverage.executable_lines(SAMPLE.encode())
    assert lines is not None
    text = SAMPLE.splitlines()
    for number in lines:
        line = text[number - 1].strip()
        assert line and not line.startswith(("#", '"""')) and "over two lines" not in line, (number, line)
    assert {i for i, t in enumerate(text, 1) if t.strip() in ("return 2", "total = -1", "pass", "b + len(squares))")} \
        <= lines
    assert coverage.executable_lines(b"def broken(:\n") is None


def test_the_tracer_reports_exactly_the_executable_lines_that_ran(tmp_path: Path) -> None:
    """What the subject's tracer reports and what the gate counts as executable agree, line for line."""
    path = tmp_path / "sample.py"
    path.write_text(SAMPLE)
    tracer = Tracer([str(path)])
    old = sys.gettrace()
    tracer.start()
    try:
        spec = importlib.util.spec_from_file_location("cov_sample", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.f(3), module.f(0), list(module.C().gen())
    finally:
        sys.settrace(old)
    ran = set(tracer.lines(tracer.hits)[str(path)])
    executable = coverage.executable_lines(SAMPLE.encode())
    assert executable is not None
    never = [i for i, t in enumerate(SAMPLE.splitlines(), 1) if t.strip() == "return 2"]
    assert executable - ran == set(never)


def test_hunks_give_the_new_sides_added_lines() -> None:
    diff = b"@@ -3 +3 @@\n-a\n+b\n@@ -10,0 +11,2 @@\n+c\n+d\n@@ -20,3 +22,0 @@\n-x\n-y\n-z\n"
    assert parse_hunks(diff) == {3, 11, 12}


def test_report_counts_only_executable_changed_lines_and_says_who_reached_them() -> None:
    rep = coverage.report(
        {"a.py": {1, 2, 3, 4}, "b.py": {7}, "bad.py": {5}},
        {"a.py": {2, 3, 4}, "b.py": {1}, "bad.py": None},
        [("p1", {"a.py": [2, 3, 9]}, {"a.py": [2]}), ("p2", {"a.py": [2]}, {"a.py": [2]})],
        threshold=0.5,
    )
    assert rep.changed == {"a.py": (2, 3, 4), "bad.py": (5,)}  # b.py's line 7 is no code; bad.py: all
    assert rep.reached == {"a.py": (2, 3)} and rep.unreached == {"a.py": (4,), "bad.py": (5,)}
    assert rep.by_prop == {"p1": {"a.py": (3,)}}  # line 2 ran at import, before any property
    assert rep.at_import_only == {"a.py": (2,)}
    assert rep.fraction == 0.5 and rep.ok
    assert not coverage.report({"a.py": {1}}, {"a.py": {1}}, [], threshold=1.0).ok
    assert coverage.report({}, {}, []).ok  # nothing changed that carries code


@pytest.mark.parametrize(("decision", "ok", "action", "wanted"), [
    ("admit", False, "review", ("review", "unexercised_change")),
    ("admit", False, "admit", ("admit", "all_pass")),
    ("admit", True, "review", ("admit", "all_pass")),
    ("reject", False, "review", ("reject", "all_pass")),  # never softens a reject into a review
    ("hold", False, "review", ("hold", "all_pass")),
])
def test_decide_only_turns_an_admit_into_review(decision: str, ok: bool, action: str,
                                                wanted: tuple[str, str]) -> None:
    rep = coverage.report({"a.py": {1}}, {"a.py": {1}}, [("p", {"a.py": [1]} if ok else {}, {})])
    assert coverage.decide(decision, "all_pass", rep, action) == wanted


def test_ranges() -> None:
    assert coverage.ranges([9, 3, 4, 5, 11, 12]) == "3-5, 9, 11-12"


def test_fresh_seeds_come_from_the_os_and_avoid_the_policys() -> None:
    draws = {fresh_seeds(2, (11, 29, 47)) for _ in range(5)}
    assert len(draws) == 5 and all(len(set(d)) == 2 and not set(d) & {11, 29, 47} for d in draws)
    assert fresh_seeds(0, ()) == ()


# ---------------------------------------------------------------- fresh seeds in seed 003 and the unified table


def rows(prop: str, statuses: dict[int, str], witness: str = "AssertionError:t", sig: str = "S") -> list[Row]:
    return [Row(prop, seed, st, witness if st == "fail" else "", sig if st == "fail" else None)
            for seed, st in statuses.items()]


SEEDS, FRESH = (11, 29, 47), (123456,)


def test_a_fail_at_a_fresh_seed_the_base_passes_is_a_regression() -> None:
    base = rows("p", {11: "pass", 29: "pass", 47: "pass", 123456: "pass"})
    head = rows("p", {11: "pass", 29: "pass", 47: "pass", 123456: "fail"})
    assert differential.classify(base, head, "p", SEEDS, FRESH).reason == differential.REGRESSION
    assert differential.classify(base, head, "p", SEEDS).reason == differential.BOTH_PASS  # unseen without it
    assert differential.decide(base, head, SEEDS, fresh=FRESH).decision == differential.REJECT


def test_a_missing_fresh_seed_row_is_a_missing_seed() -> None:
    base = rows("p", {11: "pass", 29: "pass", 47: "pass", 123456: "pass"})
    head = rows("p", {11: "pass", 29: "pass", 47: "pass"})
    assert differential.classify(base, head, "p", SEEDS, FRESH).reason == differential.MISSING_SEED


def test_a_split_only_a_fresh_seed_shows_proposes_no_freeze() -> None:
    """Uniform red on the policy's schedule stays uniform_fail even when a fresh seed passed."""
    base = rows("p", {11: "fail", 29: "fail", 47: "fail", 123456: "pass"})
    head = rows("p", {11: "fail", 29: "fail", 47: "fail", 123456: "pass"})
    assert differential.classify(base, head, "p", SEEDS, FRESH).reason == differential.UNIFORM_FAIL
    split = rows("p", {11: "fail", 29: "pass", 47: "fail", 123456: "fail"})
    assert differential.classify(split, split, "p", SEEDS, FRESH).reason == differential.SHARED_VARIANT_FAIL


CTX = unified.RunContext(base_revision="B", base_fixture_digest="D", head_fixture_digest="D",
                         touched_paths=("src/x.py",), agent=False,
                         now=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
ENTRY = Entry(id="FZ-1", prop_id="p", signature="S", fixture_digest="D", base_revision="B", paths=("src/**",),
              reason="flake", witness="AssertionError:t", opened_by="pat",
              opened_at=dt.datetime(2025, 12, 1, tzinfo=dt.UTC),
              expires_at=dt.datetime(2026, 2, 1, tzinfo=dt.UTC), allows_agent_rely=False)


def verdict(base: list[Row], head: list[Row]) -> unified.PropertyVerdict:
    return unified.per_property("p", base, head, SEEDS, oracle_edited=False, freezes=[ENTRY], ctx=CTX,
                                quarantine_eligible=True, fresh=FRESH)


def test_a_freeze_never_matches_a_fresh_seed_row_the_base_did_not_fail_alike() -> None:
    base = rows("p", {11: "fail", 29: "pass", 47: "pass", 123456: "pass"})
    head = rows("p", {11: "fail", 29: "pass", 47: "pass", 123456: "fail"})
    got = verdict(base, head)
    assert (got.verdict, got.blockers) == ("fail", (("FZ-1", (unified.FRESH_SEED,)),))
    other_sig = rows("p", {11: "fail", 29: "pass", 47: "pass", 123456: "fail"}, sig="OTHER")
    assert verdict(base[:3] + other_sig[3:], head).verdict == "fail"


def test_the_same_flake_at_a_fresh_seed_on_both_sides_keeps_the_freeze() -> None:
    both = rows("p", {11: "fail", 29: "pass", 47: "pass", 123456: "fail"})
    got = verdict(both, both)
    assert (got.verdict, got.reason) == ("inconclusive", unified.FROZEN)


# ---------------------------------------------------------------- the policy knobs


def test_policy_knobs_defaults_and_errors() -> None:
    p = policylib.parse("version: 1\n")
    assert (p.verdict.fresh_seeds, p.coverage.threshold, p.coverage.action, p.coverage.paths) == (1, 1.0, "review", ())
    p = policylib.parse("version: 1\nverdict: {fresh_seeds: 3}\ncoverage: {paths: ['src/a/**'], threshold: 0.8, "
                        "action: admit}\n")
    assert (p.verdict.fresh_seeds, p.coverage.paths, p.coverage.threshold, p.coverage.action) == (
        3, ("src/a/**",), 0.8, "admit")
    for text, where in (("verdict:\n  fresh_seeds: -1\n", 3), ("verdict:\n  fresh_seeds: true\n", 3),
                        ("coverage:\n  threshold: 2\n", 3), ("coverage:\n  action: maybe\n", 3),
                        ("coverage:\n  paths: [3]\n", 3), ("coverage:\n  colour: red\n", 3)):
        with pytest.raises(ConfigError) as err:
            policylib.parse("version: 1\n" + text)
        assert err.value.line == where and err.value.fix, text
