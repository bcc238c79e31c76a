"""The freeze ledger: schema, refusals with file/line/fix, lint, atomic save."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from mergegate.errors import ConfigError
from mergegate.records import ledger

NOW = dt.datetime(2026, 9, 20, tzinfo=dt.UTC)

ENTRY = """\
  - id: FZ-014
    prop_id: prop.roundtrip_unicode
    signature: sig-a
    fixture_digest: digest-1
    base_revision: rev-9
    paths: ["src/parser/**"]
    reason: "clock skew on CI runner; not a product bug"
    witness: "repro seed 7f3c; fails 3/20 locally"
    opened_by: human
    opened_at: "2026-09-12T09:00:00Z"
    expires_at: "2026-09-26T09:00:00Z"
    allows_agent_rely: false
"""
HEAD = "version: 1\nbudget:\n  max_active: 3\n  max_added_per_patch: 0\nentries:\n"


def test_parse_full_entry() -> None:
    led = ledger.parse(HEAD + ENTRY, "freeze_ledger.yaml")
    (e,) = led.entries
    assert e.id == "FZ-014" and e.paths == ("src/parser/**",) and e.allows_agent_rely is False
    assert e.expires_at == dt.datetime(2026, 9, 26, 9, tzinfo=dt.UTC)
    assert e.line == 6
    assert led.budget == ledger.Budget(3, 0)
    assert not e.expired(NOW) and e.expired(NOW + dt.timedelta(days=7))
    assert e.covers_any(["src/parser/x.py"]) and not e.covers_any(["src/other.py"])


NODE = "tests/test_parser.py::test_roundtrip_unicode"
BY_NODEID = {NODE: "prop.roundtrip_unicode", "tests/test_parser.py::test_other": "prop.other"}
IDS = ("prop.roundtrip_unicode", "prop.other")


def test_seed_004_test_nodeid_names_the_catalog_entry() -> None:
    """Seed 004's entries name the frozen test by ``test_nodeid``: the catalog entry whose node id it is."""
    text = HEAD + ENTRY.replace("    prop_id: prop.roundtrip_unicode\n", f"    test_nodeid: {NODE}\n")
    led = ledger.parse(text)
    assert led.entries[0].prop_id == ""  # names nothing until resolved: a freeze that softens nothing
    (e,) = ledger.with_props(led, BY_NODEID, IDS).entries
    assert (e.prop_id, e.test_nodeid) == ("prop.roundtrip_unicode", NODE)
    assert b"test_nodeid: " + NODE.encode() in ledger.render(ledger.with_props(led, BY_NODEID, IDS))
    both = HEAD + ENTRY + f"    test_nodeid: {NODE}\n"
    assert ledger.with_props(ledger.parse(both), BY_NODEID, IDS).entries[0].prop_id == "prop.roundtrip_unicode"


@pytest.mark.parametrize(("entry", "words"), [
    (ENTRY.replace("    prop_id: prop.roundtrip_unicode\n", "    test_nodeid: tests/test_parser.py::gone\n"),
     "is no catalog entry's oracle"),
    (ENTRY.replace("prop.roundtrip_unicode", "prop.other") + f"    test_nodeid: {NODE}\n",
     "is not the entry for"),
])
def test_test_nodeid_that_names_no_entry_or_another_is_refused(entry: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as info:
        ledger.with_props(ledger.parse(HEAD + entry, "freeze_ledger.yaml"), BY_NODEID, IDS)
    assert "freeze_ledger.yaml:6" in info.value.render() and "fix:" in info.value.render()


def test_allows_agent_rely_defaults_false() -> None:
    text = HEAD + ENTRY.replace("    allows_agent_rely: false\n", "")
    assert ledger.parse(text).entries[0].allows_agent_rely is False


def test_unquoted_yaml_dates_are_accepted() -> None:
    text = HEAD + ENTRY.replace('"2026-09-26T09:00:00Z"', "2026-09-26")
    assert ledger.parse(text).entries[0].expires_at == dt.datetime(2026, 9, 26, tzinfo=dt.UTC)


def test_empty_entries() -> None:
    assert ledger.parse("version: 1\nentries: []\n").entries == ()
    assert ledger.parse("version: 1\n").budget == ledger.Budget()


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (HEAD + ENTRY.replace('    expires_at: "2026-09-26T09:00:00Z"\n', ""), 6, "no expires_at"),
        (HEAD + ENTRY.replace('"2026-09-26T09:00:00Z"', "null"), 6, "no expires_at"),
        (HEAD + ENTRY + "    skip_reason: flaky\n", 18, "unknown key 'skip_reason'"),
        (HEAD + ENTRY.replace("    prop_id: prop.roundtrip_unicode\n", ""), 6, "names no property"),
        (HEAD + ENTRY + ENTRY, 18, "duplicate freeze id 'FZ-014'"),
        (HEAD + ENTRY.replace('"2026-09-26T09:00:00Z"', '"next tuesday"'), 16, "bad date"),
        (HEAD + ENTRY.replace('"2026-09-12T09:00:00Z"', '"2026-13-01"'), 15, "bad date"),
        (HEAD + ENTRY.replace('"2026-09-26T09:00:00Z"', '"2026-09-01"'), 16, "not after opened_at"),
        (HEAD + "  - just a string\n", 6, "must be a mapping"),
        (HEAD + ENTRY.replace("    signature: sig-a\n", ""), 6, "required key 'signature'"),
        (HEAD + ENTRY.replace("allows_agent_rely: false", "allows_agent_rely: maybe"), 17, "true or false"),
        (HEAD + ENTRY.replace('["src/parser/**"]', "[]"), 11, "paths"),
        ("version: 2\nentries: []\n", 1, "version"),
        ("version: 1\nbudget: {max_active: -1}\n", 2, "negative"),
        ("version: 1\nbudget: {max_frozen: 1}\n", 2, "unknown key"),
        ("version: 1\nentries: {}\n", 2, "list"),
        ("", 1, "empty"),
    ],
)
def test_refusals_name_file_line_and_fix(text: str, line: int, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        ledger.parse(text, "freeze_ledger.yaml")
    assert info.value.source == "freeze_ledger.yaml"
    assert info.value.line == line
    assert words in info.value.message
    assert info.value.fix


def test_render_round_trips(tmp_path: Path) -> None:
    led = ledger.parse(HEAD + ENTRY, "freeze_ledger.yaml")
    path = tmp_path / "freeze_ledger.yaml"
    ledger.save(led, path)
    again = ledger.load(path)
    assert [e.__class__(**{**e.__dict__, "line": None}) for e in again.entries] == [
        e.__class__(**{**e.__dict__, "line": None}) for e in led.entries]
    assert again.budget == led.budget
    assert not list(tmp_path.glob(".*tmp"))  # no temporary file left behind


def test_lint_flags_expired_and_over_budget() -> None:
    led = ledger.parse("version: 1\nbudget: {max_active: 1}\nentries:\n" + ENTRY
                       + ENTRY.replace("FZ-014", "FZ-015")
                       + ENTRY.replace("FZ-014", "FZ-016").replace("2026-09-26", "2026-09-15"))
    problems = ledger.lint(led, NOW)
    assert [p.code for p in problems] == ["expired", "over_budget"]
    assert problems[0].entry == "FZ-016"
    assert ledger.lint(led.without(["FZ-015", "FZ-016"]), NOW) == ()


def test_added_sees_new_and_extended_entries() -> None:
    base = ledger.parse(HEAD + ENTRY)
    extended = ledger.parse(HEAD + ENTRY.replace("2026-09-26", "2026-12-26"))
    more = ledger.parse(HEAD + ENTRY + ENTRY.replace("FZ-014", "FZ-020"))
    assert ledger.added(base, base) == ()
    assert [e.id for e in ledger.added(base, extended)] == ["FZ-014"]
    assert [e.id for e in ledger.added(base, more)] == ["FZ-020"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("14d", NOW + dt.timedelta(days=14)),
        ("36h", NOW + dt.timedelta(hours=36)),
        ("2w", NOW + dt.timedelta(weeks=2)),
        ("2026-10-01", dt.datetime(2026, 10, 1, tzinfo=dt.UTC)),
        ("2026-10-01T12:00:00+02:00", dt.datetime(2026, 10, 1, 10, tzinfo=dt.UTC)),
    ],
)
def test_parse_expiry(text: str, expected: dt.datetime) -> None:
    assert ledger.parse_expiry(text, NOW) == expected


def test_parse_expiry_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        ledger.parse_expiry("soon", NOW)


def test_render_parse_round_trip_any_text() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30).filter(str.strip)
    ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,10}", fullmatch=True)
    when = st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2100, 1, 1),
                        timezones=st.just(dt.UTC)).map(lambda d: d.replace(microsecond=0))
    entry = st.tuples(when, st.integers(1, 999)).flatmap(lambda pair: st.builds(
        ledger.Entry, id=ids, prop_id=text, signature=text, fixture_digest=text, base_revision=text,
        paths=st.lists(st.sampled_from(["src/**", "src/a.py", "lib/*.py"]), min_size=1, max_size=3).map(tuple),
        reason=text, opened_by=text, opened_at=st.just(pair[0]),
        expires_at=st.just(pair[0] + dt.timedelta(hours=pair[1])),
        witness=st.one_of(st.just(""), text), allows_agent_rely=st.booleans()))

    @settings(max_examples=150, deadline=None)
    @given(st.lists(entry, max_size=4, unique_by=lambda e: e.id), st.integers(0, 9), st.integers(0, 9))
    def round_trip(entries: list[ledger.Entry], active: int, added: int) -> None:
        led = ledger.Ledger(budget=ledger.Budget(active, added), entries=tuple(entries))
        again = ledger.parse(ledger.render(led), "freeze_ledger.yaml")
        assert again.entries == led.entries and again.budget == led.budget

    round_trip()
