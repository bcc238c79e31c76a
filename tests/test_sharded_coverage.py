"""Issue 24 on the sharded CI path: change coverage and fresh seeds when the rows come from a matrix.

The shards run ``gate run --fresh-seeds F`` on both sides (F drawn once by ``gate seeds --fresh`` in
the job that starts the matrix) and ``--coverage-base TIP`` on the head; ``gate check --base-runs
--head-runs --fresh-seeds F`` judges them as a check that ran everything itself.  Head rows that carry
no coverage are unmeasured runs: an unmeasured change is never an admit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mergegate.demo import build
from tests.helpers import gate
from tests.test_change_coverage import TAX, agent_patch, drawn_inputs, honest, lines_of, special_cased, tax


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build.build(tmp_path_factory.mktemp("shards"))


def shard_rows(repo: Path, head: str, out: Path, fresh: str = "", coverage: bool = True,
               shards: int = 1) -> tuple[str, ...]:
    """Both sides run as a CI matrix would (``shards`` jobs a side), merged; the check's run arguments."""
    tip = build.git(repo, "rev-parse", "main")
    out.mkdir(parents=True, exist_ok=True)
    for side, rev in (("base", tip), ("head", head)):
        extra = ["--fresh-seeds", fresh] if fresh else []
        if side == "head":
            extra += ["--merged-into", tip] + (["--coverage-base", tip] if coverage else [])
        parts = []
        for k in range(1, shards + 1):
            part = out / f"{side}-{k}.jsonl"
            proc = gate(repo, "run", "--rev", rev, "--trusted", tip, "--shard", f"{k}/{shards}", *extra,
                        "--out", str(part))
            assert proc.returncode in (0, 1), proc.stdout + proc.stderr
            parts.append(str(part))
        gate(repo, "merge-runs", *parts, "--out", str(out / f"{side}.jsonl"), check=0)
    args = ("--base-runs", str(out / "base.jsonl"), "--head-runs", str(out / "head.jsonl"))
    return (*args, "--fresh-seeds", fresh) if fresh else args


def check(repo: Path, head: str, *extra: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    proc = gate(repo, "check", "--base", "main", "--head", head, "--json", *extra)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def fresh_seed(repo: Path) -> str:
    drawn = gate(repo, "seeds", "--fresh", check=0).stdout.strip()
    assert drawn.isdigit(), drawn
    return drawn


def test_a_special_case_at_the_policy_seeds_is_caught_at_the_shards_fresh_seed(shop: Path, tmp_path: Path) -> None:
    head = agent_patch(shop, "special_sharded", {TAX: special_cased(shop, drawn_inputs(shop, tmp_path))})
    fresh = fresh_seed(shop)
    runs = shard_rows(shop, head, tmp_path / "runs", fresh, shards=2)
    out = tmp_path / "ev"
    code, data = check(shop, head, *runs, "--evidence", str(out))
    assert (code, data["decision"]) == (1, "reject"), data
    tax_round = next(p for p in data["properties"] if p["prop"] == "prop.tax_round")
    assert tax_round["reason"] == "regression", tax_round
    assert data["fresh_seeds"] == [int(fresh)]
    assert json.loads((out / "contract.json").read_text())["fresh_seeds"] == [int(fresh)]
    rows = [json.loads(ln) for ln in (out / "patch.jsonl").read_text().splitlines()]
    assert {r["status"] for r in rows if r["prop"] == "prop.tax_round" and r["seed"] == int(fresh)} == {"fail"}
    # the same rows judged without their fresh seeds: refused (exit 2, the file and line), never an admit
    proc = gate(shop, "check", "--base", "main", "--head", head, *runs[:4])
    assert proc.returncode == 2 and "jsonl:" in proc.stderr and "--fresh-seeds" in proc.stderr, proc.stderr
    # a shard's missing fresh-seed row is a missing run: a fail, never a pass
    head_rows = Path(runs[3]).read_text().splitlines()
    Path(runs[3]).write_text("".join(ln + "\n" for ln in head_rows if f'"seed": {fresh}' not in ln))
    code, data = check(shop, head, *runs)
    assert code == 1 and data["decision"] != "admit"


def test_an_untested_change_through_shards_is_review_with_coverage_or_without(shop: Path, tmp_path: Path) -> None:
    new = tax(shop) + ("\n\ndef tax_rounded_down(amount: Decimal, rate: str) -> Decimal:\n"
                       "    return (amount * Decimal(rate)).quantize(CENT) + CENT  # wrong by a cent\n")
    head = agent_patch(shop, "uncalled_sharded", {TAX: new})
    out = tmp_path / "ev"
    code, data = check(shop, head, *shard_rows(shop, head, tmp_path / "traced", fresh_seed(shop)),
                       "--evidence", str(out))
    assert (code, data["decision"], data["reason"]) == (1, "review", "unexercised_change"), data
    cov = json.loads((out / "coverage.json").read_text())
    assert cov["unreached"] == {TAX: lines_of(new, "wrong by a cent")} and cov["unmeasured_runs"] == [], cov
    # shards that traced nothing: every run unmeasured, so the change counts as not reached
    code, data = check(shop, head, *shard_rows(shop, head, tmp_path / "untraced", coverage=False),
                       "--evidence", str(out))
    assert (code, data["decision"], data["reason"]) == (1, "review", "unexercised_change"), data
    assert json.loads((out / "coverage.json").read_text())["unmeasured_runs"]


def test_an_honest_change_a_property_runs_is_admitted_through_shards(shop: Path, tmp_path: Path) -> None:
    new = honest(shop)
    head = agent_patch(shop, "honest_sharded", {TAX: new})
    out = tmp_path / "ev"
    code, data = check(shop, head, *shard_rows(shop, head, tmp_path / "runs", fresh_seed(shop), shards=2),
                       "--evidence", str(out))
    assert (code, data["decision"]) == (0, "admit"), data
    cov = json.loads((out / "coverage.json").read_text())
    assert cov["by_property"]["prop.tax_round"] == {TAX: lines_of(new, "exact")}, cov


def test_seeds_command_and_the_flags_misused(shop: Path) -> None:
    assert gate(shop, "seeds", check=0).stdout.strip() == "11,29,47"
    drawn = [gate(shop, "seeds", "--fresh", "-n", "3", check=0).stdout.strip().split(",") for _ in range(2)]
    assert all(len(set(d)) == 3 and not set(d) & {"11", "29", "47"} for d in drawn) and drawn[0] != drawn[1]
    for args, words in ((("seeds", "-n", "2"), "-n goes with --fresh"),
                        (("seeds", "--fresh", "-n", "0"), "cannot draw 0"),
                        (("run", "--tree", str(shop), "--coverage-base", "main"), "--coverage-base needs --rev"),
                        (("run", "--rev", "main", "--fresh-seeds", "29"), "29 is one of the seeds"),
                        (("check", "--base", "main", "--head", "main", "--fresh-seeds", "5"),
                         "--fresh-seeds goes with --base-runs"),
                        (("check", "--base", "main", "--head", "main", "--base-runs", "x", "--head-runs", "y",
                          "--fresh-seeds", "11"), "fresh seed 11 is one of the policy's seeds")):
        proc = gate(shop, *args)
        assert proc.returncode == 2 and words in proc.stderr and "fix:" in proc.stderr, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) <= 2, proc.stderr
