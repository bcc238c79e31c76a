"""Seed 003: the table row by row, every reason code, seed split, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mergegate.errors import ConfigError
from mergegate.records.runs import load_contract, load_jsonl, parse_contract, parse_jsonl
from mergegate.rules.differential import Row, decide

P = "prop.order_total_non_negative"
W = "AssertionError:total"


def rows(*statuses: str, witness: str = W, prop: str = P, seeds: tuple[int, ...] = (11, 29)) -> list[Row]:
    return [Row(prop, s, st, witness if st == "fail" else "") for s, st in zip(seeds, statuses, strict=True)]


# Parent | Patch | Witness | Seed split | Result  (seed 003's table, row by row)
@pytest.mark.parametrize(
    ("parent", "patch", "decision", "reason"),
    [
        pytest.param(rows("pass", "pass"), rows("pass", "pass"), "accept", "both_pass", id="pass-pass"),
        pytest.param(rows("pass", "pass"), rows("fail", "pass"), "reject", "regression", id="pass-fail"),
        pytest.param(rows("fail", "pass"), rows("pass", "pass"), "accept", "parent_fail_cleared",
                     id="fail-pass"),
        pytest.param(rows("fail", "pass"), rows("fail", "fail"), "propose_freeze", "shared_variant_fail",
                     id="fail-fail-same-split"),
        pytest.param(rows("fail", "fail"), rows("fail", "fail"), "reject", "uniform_fail",
                     id="fail-fail-same-nosplit"),
        pytest.param(rows("fail", "pass"), rows("fail", "pass", witness="KeyError:x"), "reject",
                     "witness_mismatch", id="fail-fail-different"),
        pytest.param([Row(P, 11, "pass")], rows("pass", "pass"), "reject", "missing_seed",
                     id="missing"),
    ],
)
def test_seed_003_table(parent: list[Row], patch: list[Row], decision: str, reason: str) -> None:
    result = decide(parent, patch, [11, 29])
    assert [r.to_dict() for r in result.results] == [{"prop": P, "decision": decision, "reason": reason}]
    assert result.decision == decision


def test_pass_fail_is_regression_whatever_the_witness_or_split() -> None:
    for patch in (rows("fail", "fail"), rows("fail", "pass"), rows("fail", "fail", witness="X")):
        assert decide(rows("pass", "pass"), patch, [11, 29]).results[0].reason == "regression"


def test_empty_side_is_incomplete_contract() -> None:
    for parent, patch in (([], rows("pass", "pass")), (rows("pass", "pass"), []), ([], [])):
        assert decide(parent, patch, [11, 29]).to_dict() == {
            "decision": "reject", "reason": "incomplete_contract", "results": []}


def test_missing_seed_on_patch_side() -> None:
    result = decide(rows("pass", "pass"), [Row(P, 29, "pass")], [11, 29])
    assert result.results[0].reason == "missing_seed"
    assert result.decision == "reject"


def test_seed_split_on_patch_side_only_counts() -> None:
    # parent fails both seeds (uniform), patch splits: still a split "on at least one side"
    result = decide(rows("fail", "fail"), rows("fail", "pass"), [11, 29])
    assert result.results[0].reason == "shared_variant_fail"


def test_one_regression_rejects_whole_patch() -> None:
    q = "prop.shared_flake"
    parent = rows("pass", "pass") + rows("fail", "pass", prop=q)
    patch = rows("fail", "pass") + rows("fail", "fail", prop=q)
    result = decide(parent, patch, [11, 29])
    assert result.decision == "reject"
    assert {r.prop: r.reason for r in result.results} == {P: "regression", q: "shared_variant_fail"}


def test_propose_freeze_when_no_reject() -> None:
    q = "prop.other"
    parent = rows("fail", "pass") + rows("pass", "pass", prop=q)
    patch = rows("fail", "fail") + rows("pass", "pass", prop=q)
    assert decide(parent, patch, [11, 29]).decision == "propose_freeze"


def test_contract_property_absent_from_both_files_is_missing_seed() -> None:
    result = decide(rows("pass", "pass"), rows("pass", "pass"), [11, 29], properties=["prop.gone"])
    assert result.decision == "reject"
    assert {r.prop: r.reason for r in result.results}["prop.gone"] == "missing_seed"


def test_duplicate_row_fails_if_any_copy_failed() -> None:
    patch = [*rows("pass", "pass"), Row(P, 11, "fail", W)]
    assert decide(rows("pass", "pass"), patch, [11, 29]).results[0].reason == "regression"
    assert decide(rows("pass", "pass"), list(reversed(patch)), [11, 29]).results[0].reason == "regression"


# --- loading and bad input
def test_parse_jsonl_reads_seed_rows() -> None:
    text = '{"prop":"p","seed":11,"status":"fail","witness":"A","signature":"s","extra":1}\n\n'
    assert parse_jsonl(text, "x.jsonl") == [Row("p", 11, "fail", "A", "s")]


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"seed": 11, "status": "pass"}', "lacks prop"),
        ('{"prop": "p", "status": "pass"}', "lacks seed"),
        ('{"prop": "p", "seed": 11}', "lacks status"),
        ('{"prop": "p", "seed": 11, "status": "flaky"}', "pass or fail"),
        ('{"prop": "p", "seed": "11", "status": "pass"}', "integer"),
        ('{"prop": "p", "seed": true, "status": "pass"}', "integer"),
        ('{"prop": "", "seed": 11, "status": "pass"}', "non-empty"),
        ('{"prop": "p", "seed": 11, "status": "fail", "witness": 3}', "witness"),
    ],
)
def test_bad_rows_name_file_and_line(line: str, words: str) -> None:
    text = '{"prop":"p","seed":11,"status":"pass"}\n' + line + "\n"
    with pytest.raises(ConfigError) as info:
        parse_jsonl(text, "patch.jsonl")
    assert info.value.source == "patch.jsonl"
    assert info.value.line == 2
    assert words in info.value.message
    assert info.value.fix


def test_seed_outside_contract_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        parse_jsonl('{"prop":"p","seed":12,"status":"pass"}\n', "parent.jsonl", seeds=[11])
    assert info.value.line == 1 and "not in the contract" in info.value.message


def test_load_jsonl_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_jsonl(tmp_path / "nope.jsonl")


def test_contract(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"seeds": [11, 29], "properties": [{"id": "a"}, "b"], "spec_hash": "x"}))
    contract = load_contract(path)
    assert contract.seeds == (11, 29) and contract.properties == ("a", "b")


@pytest.mark.parametrize("text", ["{", "[]", '{"seeds": []}', '{"seeds": [1, 1]}', '{"seeds": ["a"]}',
                                  '{"seeds": [1], "properties": 3}', '{"seeds": [1], "properties": [{}]}'])
def test_bad_contract(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_contract(text, "differential-contract.json")


def test_parse_digest_file_both_layouts() -> None:
    from mergegate.records.runs import parse_digest_file

    assert parse_digest_file("abc\n") == {"base": "abc", "head": "abc"}
    assert parse_digest_file("base d1\nhead d2\n") == {"base": "d1", "head": "d2"}
    assert parse_digest_file("") == {}


def test_side_digest() -> None:
    from mergegate.rules.differential import side_digest

    assert side_digest({"fixture_digest": {"base": "d1", "head": "d2"}}, "head") == "d2"
    assert side_digest({"fixture_digest": "d1"}, "base") == "d1"
    assert side_digest({"base_fixture_digest": "d3", "fixture_digest": "d1"}, "base") == "d3"
    assert side_digest({}, "base") is None
