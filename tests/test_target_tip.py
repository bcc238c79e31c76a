"""What lands is what was judged (issue 23): ``gate check`` against the target's tip, rows bound to their tree.

A real repository (the demo shop): a person lands a new property on main after an
agent's branch forked; the branch carries the bug that property catches.  Judged
against the old merge-base the property never runs; judged against main's tip the
merge result meets it and is rejected.  Rows made elsewhere count only for the
trees being judged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mergegate.demo import build
from tests.helpers import gate
from tests.test_check import check, orders_comment, props

NEW_PROP = "prop.order_untaxed"
ORACLE = "oracles/properties/test_untaxed.py"
ORACLE_TEXT = '''# mypy: ignore-errors
"""Without tax an order total is exactly its subtotal."""

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from shop.orders import order_total, subtotal

RATES = Path(__file__).parents[1] / "fixtures" / "rates.json"
LINES = st.lists(st.tuples(st.integers(0, 500), st.integers(0, 100_000)), min_size=1, max_size=8)


@given(LINES)
def test_zero_rate_total_is_subtotal(lines):
    assert order_total(lines, json.loads(RATES.read_text())["zero"]) == subtotal(lines)
'''
ENTRY = f"""id: {NEW_PROP}
oracle: {ORACLE}::test_zero_rate_total_is_subtotal
claim: "an untaxed order total is its subtotal"
canary: false
quarantine_eligible: false
fixtures: ["oracles/fixtures/rates.json"]
max_examples: 30
covers: ["src/shop/orders.py"]
"""


def _fee(repo: Path) -> str:
    """A handling fee of one cent on every order: every property of the fork point still passes."""
    return (repo / "src/shop/orders.py").read_text().replace("return sub + tax_for(sub, rate)",
                                                             "return sub + tax_for(sub, rate) + CENT")


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """main forked at ``fork``; the agent's branches from there; then a person's new property on main."""
    repo = build.build(tmp_path_factory.mktemp("tip"))
    fork = build.git(repo, "rev-parse", "main")
    heads = {}
    for name, files in (("fee", {"src/shop/orders.py": _fee(repo)}),
                        ("clean", {"src/shop/orders.py": orders_comment(repo)})):
        build.git(repo, "checkout", "-q", "-B", f"agent/{name}", fork)
        heads[name] = build.commit(repo, files, f"orders: {name}", agent=True)
    build.git(repo, "checkout", "-q", "main")
    claimed = (repo / "oracles/catalog/claimed.yaml").read_text().replace("]", f", {NEW_PROP}]")
    tip = build.commit(repo, {ORACLE: ORACLE_TEXT, f"oracles/catalog/{NEW_PROP}.yaml": ENTRY,
                              "oracles/catalog/claimed.yaml": claimed}, "oracle: untaxed totals", sign=True)
    return {"repo": repo, "fork": fork, "tip": tip, **heads}


def _repo(s: dict[str, object]) -> Path:
    repo = s["repo"]
    assert isinstance(repo, Path)
    return repo


def test_the_stale_branch_passes_at_its_fork_point(shop: dict[str, object]) -> None:
    """The bug the issue describes: judged against the merge-base, the new property never runs."""
    code, data = check(_repo(shop), str(shop["fork"]), str(shop["fee"]))
    assert (code, data["decision"], data["reason"]) == (0, "admit", "all_pass"), data
    assert NEW_PROP not in props(data)


def test_a_stale_branch_is_judged_as_its_merge_result_and_the_new_property_rejects_it(
        shop: dict[str, object], tmp_path: Path) -> None:
    repo = _repo(shop)
    md = tmp_path / "summary.md"
    code, data = check(repo, "main", str(shop["fee"]), "--markdown", str(md))
    assert (code, data["decision"]) == (1, "reject"), data
    got = props(data)[NEW_PROP]
    assert (got["verdict"], got["reason"]) == ("fail", "regression"), got
    judged = data["judged"]
    assert judged["mode"] == "merge_result" and judged["target"] == shop["tip"] and judged["head"] == shop["fee"]
    assert judged["merge_base"] == shop["fork"] and data["merge_base"] == shop["fork"]
    assert data["target"] == shop["tip"] and data["head"] == judged["judged_head"] != shop["fee"]
    # the judged head is a real merge of the tip and the head, with the merge-tree result as its tree
    parents = build.git(repo, "rev-list", "--parents", "-n", "1", data["head"]).split()[1:]
    assert parents == [shop["tip"], shop["fee"]]
    assert build.git(repo, "rev-parse", f"{data['head']}^{{tree}}") == judged["merge_result_tree"]
    summary = md.read_text()
    assert "merge result of head" in summary and str(judged["merge_result_tree"])[:12] in summary
    plain = gate(repo, "check", "--base", "main", "--head", str(shop["fee"]))
    assert plain.returncode == 1 and f"the merge result of head {str(shop['fee'])[:12]} into target main" \
        in plain.stdout


def test_the_same_bug_on_an_up_to_date_branch_is_rejected_the_same_way(shop: dict[str, object]) -> None:
    repo = _repo(shop)
    build.git(repo, "checkout", "-q", "-B", "agent/fee-today", "main")
    head = build.commit(repo, {"src/shop/orders.py": _fee(repo)}, "orders: fee", agent=True)
    build.git(repo, "checkout", "-q", "main")
    code, data = check(repo, "main", head)
    assert (code, props(data)[NEW_PROP]["reason"]) == (1, "regression"), data
    assert data["judged"]["mode"] == "up_to_date" and data["head"] == head == data["judged"]["judged_head"]
    assert data["merge_base"] == data["target"] == shop["tip"] and data["judged"]["merge_result_tree"] is None


def test_an_honest_stale_branch_is_admitted_by_its_merge_result(shop: dict[str, object]) -> None:
    code, data = check(_repo(shop), "main", str(shop["clean"]))
    assert (code, data["decision"]) == (0, "admit"), data
    assert data["judged"]["mode"] == "merge_result" and props(data)[NEW_PROP]["reason"] == "both_pass"


def test_require_up_to_date_refuses_a_stale_branch(shop: dict[str, object]) -> None:
    repo = _repo(shop)
    code, data = check(repo, "main", str(shop["clean"]), "--require-up-to-date")
    assert (code, data["decision"], data["reason"], data["stopped_at"]) == (1, "reject", "stale_base", "target")
    assert data["judged"]["mode"] == "stale_base" and data["head"] == shop["clean"]
    proc = gate(repo, "check", "--base", "main", "--head", str(shop["clean"]), "--require-up-to-date")
    assert proc.returncode == 1 and "fix: bring the branch up to date" in proc.stdout


def test_the_targets_policy_can_require_up_to_date_branches(tmp_path: Path) -> None:
    repo = build.build(tmp_path)
    fork = build.git(repo, "rev-parse", "main")
    build.git(repo, "checkout", "-q", "-b", "agent/x")
    head = build.commit(repo, {"src/shop/orders.py": orders_comment(repo)}, "orders: comment", agent=True)
    build.git(repo, "checkout", "-q", "main")
    policy = (repo / "gate.yaml").read_text()
    assert "verdict: {combiner: strict, seeds: [11, 29, 47]}" in policy
    build.commit(repo, {"gate.yaml": policy.replace("seeds: [11, 29, 47]}", "seeds: [11, 29, 47], "
                                                    "stale_base: refuse}")}, "policy: up-to-date only", sign=True)
    code, data = check(repo, "main", head)
    assert (code, data["reason"]) == (1, "stale_base"), data
    # the branch's own gate.yaml cannot lift it (the policy is the target's), and at its fork point it was fine
    code, data = check(repo, fork, head)
    assert (code, data["decision"]) == (0, "admit"), data


def test_a_merge_conflict_with_the_tip_is_its_own_refusal(shop: dict[str, object]) -> None:
    repo = _repo(shop)
    build.git(repo, "checkout", "-q", "-B", "agent/conflict", str(shop["fork"]))
    head = build.commit(repo, {ORACLE: "# mine\n"}, "oracle: a file of the same name", agent=False, sign=True)
    build.git(repo, "checkout", "-q", "main")
    code, data = check(repo, "main", head)
    assert (code, data["reason"], data["stopped_at"]) == (1, "merge_conflict", "target"), data
    assert ORACLE in data["judged"]["conflicts"]  # (the manifest both sides re-signed conflicts too)


# ---------------------------------------------------------------- rows bound to their tree


def _shard_rows(repo: Path, rev: str, trusted: str, out: Path, shards: int = 2) -> Path:
    parts = []
    for k in range(1, shards + 1):
        part = out.with_name(f"{out.stem}-{k}.jsonl")
        gate(repo, "run", "--rev", rev, "--trusted", trusted, "--shard", f"{k}/{shards}", "--out", str(part))
        parts.append(str(part))
    gate(repo, "merge-runs", *parts, "--out", str(out), check=0)
    return out


def _regression(repo: Path, base: str) -> tuple[str, str]:
    """A branch from ``base``: an honest comment commit, then a tax regression on top."""
    build.git(repo, "checkout", "-q", "-B", "agent/tax", base)
    earlier = build.commit(repo, {"src/shop/orders.py": orders_comment(repo)}, "orders: comment", agent=True)
    text = (repo / "src/shop/tax.py").read_text().replace("ROUND_HALF_UP)", "ROUND_HALF_UP).quantize(Decimal(1))")
    head = build.commit(repo, {"src/shop/tax.py": text}, "tax: whole units", agent=True)
    build.git(repo, "checkout", "-q", "main")
    return earlier, head


def test_every_row_names_its_revision_and_tree(shop: dict[str, object], tmp_path: Path) -> None:
    repo, tip = _repo(shop), str(shop["tip"])
    merged = _shard_rows(repo, tip, tip, tmp_path / "base.jsonl")
    tree = build.git(repo, "rev-parse", f"{tip}^{{tree}}")
    rows = [json.loads(line) for line in merged.read_text().splitlines()]
    assert rows and {(r["revision"], r["tree"]) for r in rows} == {(tip, tree)}


def test_base_rows_offered_as_the_heads_do_not_admit_a_regression(shop: dict[str, object], tmp_path: Path) -> None:
    repo, tip = _repo(shop), str(shop["tip"])
    _earlier, head = _regression(repo, tip)
    base_rows = _shard_rows(repo, tip, tip, tmp_path / "base.jsonl")
    proc = gate(repo, "check", "--base", "main", "--head", head, "--base-runs", str(base_rows),
                "--head-runs", str(base_rows))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and f"{base_rows}:1:" in proc.stderr, proc.stderr
    assert "not on the head judged here" in proc.stderr and f"fix: pass the merged rows of `gate run --rev " \
        f"{head[:12]}` for the head" in proc.stderr


def test_rows_of_an_earlier_commit_are_refused(shop: dict[str, object], tmp_path: Path) -> None:
    repo, tip = _repo(shop), str(shop["tip"])
    earlier, head = _regression(repo, tip)
    base_rows = _shard_rows(repo, tip, tip, tmp_path / "base.jsonl")
    old_rows = _shard_rows(repo, earlier, tip, tmp_path / "earlier.jsonl")
    runs = ("--base-runs", str(base_rows), "--head-runs", str(old_rows))
    proc = gate(repo, "check", "--base", "main", "--head", head, *runs)
    assert proc.returncode == 2 and f"{old_rows}:1:" in proc.stderr and f"revision {earlier[:12]}" in proc.stderr
    # base rows offered for a head (the head's own rows as the base's) are refused the same way
    head_rows = _shard_rows(repo, head, tip, tmp_path / "head.jsonl")
    proc = gate(repo, "check", "--base", "main", "--head", head, "--base-runs", str(head_rows),
                "--head-runs", str(head_rows))
    assert proc.returncode == 2 and "not on the base judged here" in proc.stderr
    # the honest rows judge it: the regression is rejected
    code, data = check(repo, "main", head, "--base-runs", str(base_rows), "--head-runs", str(head_rows))
    assert (code, props(data)["prop.tax_round"]["reason"]) == (1, "regression"), data


def test_merge_runs_refuses_to_mix_trees(shop: dict[str, object], tmp_path: Path) -> None:
    repo, tip = _repo(shop), str(shop["tip"])
    a = tmp_path / "a.jsonl"
    gate(repo, "run", "--rev", tip, "--shard", "1/2", "--out", str(a))
    b = tmp_path / "b.jsonl"
    gate(repo, "run", "--rev", str(shop["fork"]), "--trusted", tip, "--shard", "2/2", "--out", str(b))
    proc = gate(repo, "merge-runs", str(a), str(b), "--out", str(tmp_path / "m.jsonl"))
    assert proc.returncode == 2 and f"{b}:1:" in proc.stderr and f"{a}:1 on tree" in proc.stderr, proc.stderr
    assert "fix: merge the shards of one revision only" in proc.stderr
    assert not (tmp_path / "m.jsonl").exists()


def test_honest_shard_rows_of_a_stale_heads_merge_result_are_accepted(shop: dict[str, object],
                                                                    tmp_path: Path) -> None:
    """The head's own rows are not the merge result's; the merge result's rows are."""
    repo, tip = _repo(shop), str(shop["tip"])
    code, data = check(repo, "main", str(shop["clean"]))
    merged_head = str(data["head"])
    assert data["judged"]["mode"] == "merge_result" and code == 0
    base_rows = _shard_rows(repo, tip, tip, tmp_path / "base.jsonl")
    own = _shard_rows(repo, str(shop["clean"]), tip, tmp_path / "own.jsonl")
    proc = gate(repo, "check", "--base", "main", "--head", str(shop["clean"]), "--base-runs", str(base_rows),
                "--head-runs", str(own))
    assert proc.returncode == 2 and f"`gate run --rev {merged_head[:12]}`" in proc.stderr, proc.stderr
    result_rows = _shard_rows(repo, merged_head, tip, tmp_path / "result.jsonl")
    code, data = check(repo, "main", str(shop["clean"]), "--base-runs", str(base_rows),
                       "--head-runs", str(result_rows))
    assert (code, data["decision"]) == (0, "admit"), data
    # what a CI shard runs without knowing the merge commit: gate run --rev HEAD --merged-into TARGET
    ci = tmp_path / "ci.jsonl"
    gate(repo, "run", "--rev", str(shop["clean"]), "--merged-into", "main", "--trusted", tip, "--out", str(ci),
         check=0)
    assert {json.loads(line)["revision"] for line in ci.read_text().splitlines()} == {merged_head}
    code, data = check(repo, "main", str(shop["clean"]), "--base-runs", str(base_rows), "--head-runs", str(ci))
    assert (code, data["decision"]) == (0, "admit"), data
