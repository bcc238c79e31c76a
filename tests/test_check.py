"""``gate check`` end to end on the demo shop: every row of DESIGN.md's per-property table."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mergegate.demo import build
from tests.helpers import clean_env, gate

BROKEN_TAX = "ROUND_HALF_UP).quantize(Decimal(1))"


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = build.build(tmp_path_factory.mktemp("demo"))
    # A base where prop.tax_round already fails on every seed (a person's production commit).
    build.git(repo, "checkout", "-q", "-b", "broken", "main")
    build.commit(repo, {"src/shop/tax.py": _tax(repo, BROKEN_TAX)}, "tax: round to whole units")
    build.git(repo, "checkout", "-q", "main")
    return repo


def _tax(repo: Path, new: str) -> str:
    return (repo / "src/shop/tax.py").read_text().replace("ROUND_HALF_UP)", new)


def patch(repo: Path, base: str, name: str, files: dict[str, str | None], *, agent: bool = True,
          sign: bool = False) -> str:
    build.git(repo, "checkout", "-q", "-B", f"t/{name}", base)
    try:
        return build.commit(repo, files, name, agent=agent, sign=sign)
    finally:
        build.git(repo, "checkout", "-q", "main")


def check(repo: Path, base: str, head: str, *extra: str,
          env: dict[str, str] | None = None) -> tuple[int, dict[str, object]]:
    proc = gate(repo, "check", "--base", base, "--head", head, "--json", *extra, env=env)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def props(data: dict[str, object]) -> dict[str, dict[str, object]]:
    return {p["prop"]: p for p in data["properties"]}  # type: ignore[index,union-attr]


def orders_comment(repo: Path) -> str:
    return (repo / "src/shop/orders.py").read_text() + "\n# reviewed\n"


# (name, base, files(repo), agent, sign, prop, verdict, reason, exit)
TABLE = [
    ("both_pass", "main", lambda r: {"src/shop/orders.py": orders_comment(r)}, True, False,
     "prop.order_total", "pass", "both_pass", 0),
    ("oracle_moved", "main", lambda r: {"oracles/properties/test_tax.py": (
        r / "oracles/properties/test_tax.py").read_text() + "\n# touched\n"}, False, True,
     "prop.tax_round", "fail", "oracle_moved", 1),
    ("regression", "main", lambda r: {"src/shop/tax.py": _tax(r, BROKEN_TAX)}, True, False,
     "prop.tax_round", "fail", "regression", 1),
    ("parent_fail_cleared", "broken", lambda r: {"src/shop/tax.py": (r / "src/shop/tax.py").read_text()},
     True, False, "prop.tax_round", "pass", "parent_fail_cleared", 0),
    ("uniform_fail", "broken", lambda r: {"src/shop/orders.py": orders_comment(r)}, True, False,
     "prop.tax_round", "fail", "uniform_fail", 1),
    ("frozen", "flaky", lambda r: {"src/shop/discount.py": build.FLAKY_DISCOUNT + "\n# SHOP-12\n"}, False, False,
     "prop.bulk_discount", "inconclusive", "frozen", 1),
    ("shared_variant_no_freeze", "flaky", lambda r: {"src/shop/orders.py": orders_comment(r)}, False, False,
     "prop.bulk_discount", "fail", "shared_variant_fail", 1),
    ("agent_may_not_rely", "flaky", lambda r: {"src/shop/discount.py": build.FLAKY_DISCOUNT + "\n# x\n"},
     True, False, "prop.bulk_discount", "fail", "shared_variant_fail", 1),
]


@pytest.mark.parametrize("row", TABLE, ids=[r[0] for r in TABLE])
def test_per_property_table(shop: Path, row: tuple) -> None:  # type: ignore[type-arg]
    name, base, files, agent, sign, prop, verdict, reason, code = row
    if name == "parent_fail_cleared":  # the fix restores main's tax.py on top of the broken base
        build.git(shop, "checkout", "-q", "main")
    head = patch(shop, base, name, files(shop), agent=agent, sign=sign)
    exit_code, data = check(shop, base, head)
    got = props(data)[prop]
    assert (got["verdict"], got["reason"], exit_code) == (verdict, reason, code), data
    if name == "parent_fail_cleared":
        assert got["review"] is True
    if name == "shared_variant_no_freeze":
        assert got["propose_freeze"] is True and "paths" in got["freeze_blockers"]["FZ-1"]
    if name == "agent_may_not_rely":
        assert "allows_agent_rely" in got["freeze_blockers"]["FZ-1"]
    if name == "frozen":
        assert data["decision"] == "hold" and got["freeze_id"] == "FZ-1"


def test_production_neutering_the_oracle_does_not_pass(shop: Path) -> None:
    attack = "import hypothesis\nhypothesis.given = lambda *a, **k: (lambda f: (lambda *x, **y: None))\n"
    head = patch(shop, "main", "neuter", {"src/shop/tax.py": attack + _tax(shop, BROKEN_TAX)})
    code, data = check(shop, "main", head)
    assert code == 1 and data["decision"] == "reject"
    assert props(data)["prop.tax_round"]["verdict"] == "fail"


@pytest.mark.parametrize("agent", [True, False])
def test_conftest_that_skips_properties_does_not_pass(shop: Path, agent: bool) -> None:
    skipper = "import pytest\n\ndef pytest_collection_modifyitems(items):\n" \
              "    for i in items:\n        i.add_marker(pytest.mark.skip)\n"
    head = patch(shop, "main", f"conftest-{agent}", {"conftest.py": skipper, "src/shop/conftest.py": skipper,
                                                     "src/shop/tax.py": _tax(shop, BROKEN_TAX)}, agent=agent)
    code, data = check(shop, "main", head)
    assert code == 1 and data["decision"] == "reject"


def test_evidence_packet_note_junit_markdown(shop: Path, tmp_path: Path) -> None:
    head = patch(shop, "flaky", "evidence", {"src/shop/discount.py": build.FLAKY_DISCOUNT + "\n# e\n"},
                 agent=False)
    ev, junit, md = tmp_path / "ev", tmp_path / "j.xml", tmp_path / "s.md"
    proc = gate(shop, "check", "--base", "flaky", "--head", head, "--evidence", str(ev), "--junit", str(junit),
                "--markdown", str(md))
    assert proc.returncode == 1
    names = {"contract.json", "fixture.digest", "oracle_edited.json", "base.jsonl", "patch.jsonl",
             "decision.json", "summary.md"}
    assert names <= {p.name for p in ev.iterdir()}
    note = [ln for ln in proc.stdout.splitlines() if ln.startswith(("contract:", "decision:", "reasons:", "lines:"))]
    assert len(note) == 4 and note[1] == "decision: hold (inconclusive)"
    assert note[3] == "lines: base.jsonl 12, patch.jsonl 12"  # 3 properties x (3 policy seeds + 1 fresh)
    contract = json.loads((ev / "contract.json").read_text())
    assert contract["seeds"] == [11, 29, 47] and set(contract["spec_hash"]) == {"base", "head"}
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["prop.bulk_discount"].find("skipped") is not None
    assert cases["prop.order_total"].find("failure") is None and cases["prop.order_total"].find("skipped") is None
    assert cases["gate.decision"].find("failure") is not None
    assert "inconclusive" in md.read_text()


def test_early_stop_still_writes_evidence_and_fails_every_property(shop: Path, tmp_path: Path) -> None:
    head = build.git(shop, "rev-parse", "main")
    proc = gate(shop, "check", "--base", "main", "--head", head, "--evidence", str(tmp_path / "ev"),
                "--junit", str(tmp_path / "j.xml"))
    assert proc.returncode == 1 and "decision: reject (empty_blob)" in proc.stdout
    cases = list(ET.parse(tmp_path / "j.xml").getroot().iter("testcase"))
    assert all(c.find("failure") is not None for c in cases)
    assert (tmp_path / "ev" / "decision.json").exists()


def test_bad_revisions_and_unclean_worktree(shop: Path) -> None:
    proc = gate(shop, "check", "--base", "main", "--head", "nope")
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    (shop / "src/shop/tax.py").write_text("broken = True\n")
    try:
        proc = gate(shop, "check", "--base", "main")
        assert proc.returncode == 2 and "uncommitted changes" in proc.stderr and "fix:" in proc.stderr
    finally:
        build.git(shop, "checkout", "--", "src/shop/tax.py")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_worktrees_removed_after_interrupt(shop: Path, sig: signal.Signals) -> None:
    slow = (shop / "src/shop/orders.py").read_text() + "\nimport time\ntime.sleep(60)\n"
    head = patch(shop, "main", f"slow-{sig}", {"src/shop/orders.py": slow})
    proc = subprocess.Popen([sys.executable, "-m", "mergegate", "diff", "--base", "main", "--head", head,
                             "--out", str(shop.parent / "diff-out")], cwd=shop, env=clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(_worktrees(shop)) < 3:
        time.sleep(0.1)
    trees = _worktrees(shop)
    assert len(trees) == 3
    time.sleep(1.0)  # the runs are under way
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode != 0, err
    assert _worktrees(shop) == [str(shop)]
    assert not any(Path(t).exists() for t in trees[1:])
    deadline = time.monotonic() + 5  # and no run outlives the command (none sits in a removed tree)
    while _processes_in(trees[1:]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_in(trees[1:]) == []


def _processes_in(trees: list[str]) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if any(cwd.startswith(t) for t in trees):
            found.append(f"{proc.name}: {cwd}")
    return found


def _worktrees(repo: Path) -> list[str]:
    out = build.git(repo, "worktree", "list", "--porcelain")
    return [ln[len("worktree "):] for ln in out.splitlines() if ln.startswith("worktree ")]


def test_rows_from_ci_shards_and_missing_seed(shop: Path, tmp_path: Path) -> None:
    """The scale-out path: sharded runs merged, then checked; a missing row is missing_seed."""
    head = patch(shop, "main", "shards", {"src/shop/orders.py": orders_comment(shop)})
    base = build.git(shop, "rev-parse", "main")
    for side, rev in (("base", base), ("head", head)):
        for k in (1, 2):
            gate(shop, "run", "--rev", rev, "--trusted", base, "--shard", f"{k}/2",
                 "--out", str(tmp_path / f"{side}-{k}.jsonl"), check=0)
        gate(shop, "merge-runs", str(tmp_path / f"{side}-1.jsonl"), str(tmp_path / f"{side}-2.jsonl"),
             "--out", str(tmp_path / f"{side}.jsonl"), check=0)
    runs = ("--base-runs", str(tmp_path / "base.jsonl"), "--head-runs", str(tmp_path / "head.jsonl"))
    code, data = check(shop, "main", head, *runs)
    assert (code, data["decision"]) == (0, "admit"), data
    lines = (tmp_path / "head.jsonl").read_text().splitlines()
    (tmp_path / "head.jsonl").write_text("\n".join(ln for ln in lines if '"seed": 29' not in ln
                                                   or "prop.tax_round" not in ln) + "\n")
    code, data = check(shop, "main", head, *runs)
    got = props(data)["prop.tax_round"]
    assert (code, got["verdict"], got["reason"]) == (1, "fail", "missing_seed")
    # a row citing another contract (here: another spec hash) is dropped, never trusted
    forged = [json.loads(ln) for ln in lines]
    for row in forged:
        row["spec_hash"] = "0" * 64
    (tmp_path / "head.jsonl").write_text("".join(json.dumps(r) + "\n" for r in forged))
    code, data = check(shop, "main", head, *runs)
    assert code == 1 and {p["reason"] for p in data["properties"]} == {"missing_seed"}


def test_production_plus_plain_tests_is_review(shop: Path) -> None:
    head = patch(shop, "main", "review", {"src/shop/orders.py": orders_comment(shop),
                                          "tests/test_orders.py": "def test_ok():\n    assert True\n"})
    code, data = check(shop, "main", head)
    assert (code, data["decision"]) == (1, "review"), data
    assert data["scorecard"]["reasons"] == ["tests_are_not_oracles"]
    assert {p["verdict"] for p in data["properties"]} == {"pass"}


def test_property_importing_something_missing_at_base_is_a_clear_error(shop: Path) -> None:
    text = "import no_such_module_anywhere\n" + (shop / "oracles/properties/test_tax.py").read_text()
    patch(shop, "main", "bad-base", {"oracles/properties/test_tax.py": text}, agent=False, sign=True)
    head = patch(shop, "t/bad-base", "on-bad-base", {"src/shop/orders.py": orders_comment(shop)})
    proc = gate(shop, "check", "--base", "t/bad-base", "--head", head)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot load its oracle at the base revision" in proc.stderr and "fix:" in proc.stderr
    assert "no_such_module_anywhere" in proc.stderr


def test_property_importing_what_only_the_head_adds_is_judged_not_an_error(shop: Path) -> None:
    """A person's test imports the function the agent is to write (``gate commit --split``'s shape; natsort's
    upstream #180 replayed): it cannot load at the base, which is a failure there, and the head that adds the
    function passes it: ``parent_fail_cleared``, a person looks; never exit 2.  A head that does not add it fails
    on both sides: the exit 2 above, naming the fix."""
    test_tax = shop / "oracles/properties/test_tax.py"
    text = "from shop.orders import gate_new_helper  # noqa: F401 (written by the patch)\n" + test_tax.read_text()
    patch(shop, "main", "tdd-base", {"oracles/properties/test_tax.py": text}, agent=False, sign=True)
    helper = (shop / "src/shop/orders.py").read_text() + "\n\ndef gate_new_helper() -> int:\n    return 1\n"
    head = patch(shop, "t/tdd-base", "tdd-head", {"src/shop/orders.py": helper})
    code, data = check(shop, "t/tdd-base", head)
    got = props(data)
    assert (code, data["decision"]) == (1, "review"), data
    assert (got["prop.tax_round"]["verdict"], got["prop.tax_round"]["reason"]) == ("pass", "parent_fail_cleared")
    assert (got["prop.order_total"]["verdict"], got["prop.order_total"]["reason"]) == ("pass", "both_pass")
    missing = patch(shop, "t/tdd-base", "tdd-missing", {"src/shop/orders.py": orders_comment(shop)})
    proc = gate(shop, "check", "--base", "t/tdd-base", "--head", missing)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot load its oracle at the base revision" in proc.stderr and "gate_new_helper" in proc.stderr


def test_evidence_feeds_freeze_propose_and_open(shop: Path, tmp_path: Path) -> None:
    """check -> propose_freeze ticket -> a person opens the freeze from the evidence -> frozen."""
    build.git(shop, "checkout", "-q", "-B", "t/flaky2", "flaky")
    build.git(shop, "checkout", "-q", "main")
    head = patch(shop, "t/flaky2", "uncovered", {"src/shop/orders.py": orders_comment(shop)}, agent=False)
    ev = tmp_path / "ev"
    proc = gate(shop, "check", "--base", "t/flaky2", "--head", head, "--evidence", str(ev))
    assert proc.returncode == 1
    gate(shop, "freeze", "propose", str(ev / "decision.json"), "--tickets", str(tmp_path / "tickets"), check=0)
    assert len(list((tmp_path / "tickets").glob("prop.bulk_discount-*.json"))) == 1
    build.git(shop, "checkout", "-q", "t/flaky2")
    try:
        gate(shop, "freeze", "open", "--evidence", str(ev), "--prop", "prop.bulk_discount", "--id", "FZ-2",
             "--reason", "orders refactor meets the promo flake", "--expires", "7d",
             "--paths", "src/shop/orders.py", check=0)
        build.commit(shop, {}, "ledger: FZ-2")
    finally:
        build.git(shop, "checkout", "-q", "main")
    rebased = patch(shop, "t/flaky2", "uncovered-again", {"src/shop/orders.py": orders_comment(shop)}, agent=False)
    code, data = check(shop, "t/flaky2", rebased)
    got = props(data)["prop.bulk_discount"]
    assert (code, data["decision"], got["verdict"], got["freeze_id"]) == (1, "hold", "inconclusive", "FZ-2")


def test_lenient_combiner_admits_pass_plus_inconclusive(shop: Path, tmp_path: Path) -> None:
    """combiner: lenient is seed 000's promote: a frozen flake beside real passes may admit."""
    build.git(shop, "checkout", "-q", "-B", "t/lenient", "main")
    try:
        policy = (shop / "gate.yaml").read_text().replace("combiner: strict", "combiner: lenient")
        build.commit(shop, {"gate.yaml": policy}, "policy: lenient", sign=True)
        flaky = build.commit(shop, {"src/shop/discount.py": build.FLAKY_DISCOUNT}, "promo tier")
        build.gate(shop, "run", "--rev", flaky, "--only", "prop.bulk_discount", "--out", str(tmp_path / "r.jsonl"),
                   ok=(1,))
        build.gate(shop, "freeze", "open", "--run", str(tmp_path / "r.jsonl"), "--base", flaky, "--id", "FZ-9",
                   "--prop", "prop.bulk_discount", "--reason", "flake", "--expires", "7d",
                   "--paths", "src/shop/discount.py")
        build.commit(shop, {}, "ledger: FZ-9")
    finally:
        build.git(shop, "checkout", "-q", "main")
    head = patch(shop, "t/lenient", "lenient-patch", {"src/shop/discount.py": build.FLAKY_DISCOUNT + "\n# l\n"},
                 agent=False)
    code, data = check(shop, "t/lenient", head)
    assert (code, data["decision"], data["reason"]) == (0, "admit", "promoted"), data
    assert props(data)["prop.bulk_discount"]["verdict"] == "inconclusive"
