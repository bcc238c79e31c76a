"""The engine commands through the real CLI: decide (seed 003's shell examples as written),
verdict, admit, score and freeze, in real directories and real git repositories."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import AGENT, clean_env, commit, gate, git, init_repo, sign_and_commit, write

# Seed 003's two shell examples, verbatim but for `python3 differential_gate.py` -> `gate decide`.
REGRESSION_EXAMPLE = """\
printf '%s\\n' '{"prop":"prop.order_total_non_negative","seed":11,"status":"pass","witness":""}' > parent.jsonl
printf '%s\\n' '{"prop":"prop.order_total_non_negative","seed":11,"status":"fail","witness":"AssertionError:total"}' > patch.jsonl
printf '%s\\n' '{"seeds":[11]}' > differential-contract.json
gate decide
"""  # noqa: E501 (the seed's line, verbatim)

SHARED_VARIANT_EXAMPLE = """\
cat > parent.jsonl <<'EOF'
{"prop":"prop.order_total_non_negative","seed":11,"status":"fail","witness":"AssertionError:total"}
{"prop":"prop.order_total_non_negative","seed":29,"status":"pass","witness":""}
EOF
cat > patch.jsonl <<'EOF'
{"prop":"prop.order_total_non_negative","seed":11,"status":"fail","witness":"AssertionError:total"}
{"prop":"prop.order_total_non_negative","seed":29,"status":"fail","witness":"AssertionError:total"}
EOF
printf '%s\\n' '{"seeds":[11,29]}' > differential-contract.json
gate decide
"""


def shell(cwd: Path, script: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a script in a real bash, with this environment's ``gate`` first on PATH."""
    full = clean_env(env)
    full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=full, capture_output=True, text=True, check=False)


# ---------------------------------------------------------------- gate decide
def test_seed_003_regression_example_as_written(tmp_path: Path) -> None:
    proc = shell(tmp_path, REGRESSION_EXAMPLE)
    assert proc.returncode == 1, proc.stderr
    assert "regression" in proc.stdout and "decision: reject" in proc.stdout
    assert json.loads(gate(tmp_path, "decide", "--json", check=1).stdout) == {
        "decision": "reject",
        "results": [{"prop": "prop.order_total_non_negative", "decision": "reject", "reason": "regression"}],
    }


def test_seed_003_shared_variant_example_as_written(tmp_path: Path) -> None:
    proc = shell(tmp_path, SHARED_VARIANT_EXAMPLE)
    assert proc.returncode == 1, proc.stderr  # a proposal is not an accept
    assert "shared_variant_fail" in proc.stdout and "decision: propose_freeze" in proc.stdout
    assert json.loads(gate(tmp_path, "decide", "--json", check=1).stdout) == {
        "decision": "propose_freeze",
        "results": [{"prop": "prop.order_total_non_negative", "decision": "propose_freeze",
                     "reason": "shared_variant_fail"}],
    }


def seed_files(tmp_path: Path, parent: str, patch: str, contract: str = '{"seeds":[11]}') -> Path:
    write(tmp_path, {"parent.jsonl": parent, "patch.jsonl": patch, "differential-contract.json": contract})
    return tmp_path


PASS11 = '{"prop":"p","seed":11,"status":"pass","witness":""}\n'


def test_decide_accepts_with_exit_0(tmp_path: Path) -> None:
    seed_files(tmp_path, PASS11, PASS11)
    assert "both_pass" in gate(tmp_path, "decide", check=0).stdout


def test_decide_paths_can_be_overridden(tmp_path: Path) -> None:
    write(tmp_path, {"a/p.jsonl": PASS11, "b/c.jsonl": PASS11, "c.json": '{"seeds": [11]}'})
    gate(tmp_path, "decide", "--parent", "a/p.jsonl", "--patch", "b/c.jsonl", "--contract", "c.json", check=0)


@pytest.mark.parametrize(
    ("patch", "words"),
    [
        (PASS11 + "not json\n", "patch.jsonl:2: not JSON"),
        ('{"prop":"p","seed":11}\n', "patch.jsonl:1: row lacks status"),
        ('{"seed":11,"status":"pass"}\n', "patch.jsonl:1: row lacks prop"),
        ('{"prop":"p","status":"pass"}\n', "patch.jsonl:1: row lacks seed"),
        ('{"prop":"p","seed":11,"status":"skipped"}\n', "patch.jsonl:1: status must be pass or fail"),
        ('{"prop":"p","seed":12,"status":"pass"}\n', "patch.jsonl:1: seed 12 is not in the contract"),
    ],
)
def test_decide_bad_rows_exit_2_with_file_and_line(tmp_path: Path, patch: str, words: str) -> None:
    seed_files(tmp_path, PASS11, patch)
    proc = gate(tmp_path, "decide", check=2)
    assert words in proc.stderr and "fix:" in proc.stderr and "Traceback" not in proc.stderr


def test_decide_empty_side_is_incomplete_contract(tmp_path: Path) -> None:
    seed_files(tmp_path, "", PASS11)
    data = json.loads(gate(tmp_path, "decide", "--json", check=1).stdout)
    assert data == {"decision": "reject", "reason": "incomplete_contract", "results": []}


def test_decide_missing_seed_rejects(tmp_path: Path) -> None:
    seed_files(tmp_path, PASS11, PASS11, '{"seeds":[11,29]}')
    data = json.loads(gate(tmp_path, "decide", "--json", check=1).stdout)
    assert data["results"] == [{"prop": "p", "decision": "reject", "reason": "missing_seed"}]


@pytest.mark.parametrize("name", ["parent.jsonl", "differential-contract.json"])
def test_decide_missing_file_is_a_usage_error(tmp_path: Path, name: str) -> None:
    seed_files(tmp_path, PASS11, PASS11)
    (tmp_path / name).unlink()
    assert name in gate(tmp_path, "decide", check=2).stderr


# ---------------------------------------------------------------- freeze propose from a decision
def test_propose_writes_a_ticket_and_never_the_ledger(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    before = (repo / "freeze_ledger.yaml").read_bytes()
    script = SHARED_VARIANT_EXAMPLE.replace("gate decide", "gate decide --out decision.json")
    assert shell(repo, script).returncode == 1
    proc = gate(repo, "freeze", "propose", "decision.json", check=0)
    tickets = list((repo / ".gate" / "tickets").glob("*.json"))
    assert len(tickets) == 1 and tickets[0].name in proc.stdout
    ticket = json.loads(tickets[0].read_text())
    assert ticket["prop"] == "prop.order_total_non_negative" and ticket["status"] == "proposed"
    assert (repo / "freeze_ledger.yaml").read_bytes() == before


def test_propose_without_proposal_exits_1(tmp_path: Path) -> None:
    assert shell(tmp_path, REGRESSION_EXAMPLE.replace("gate decide", "gate decide --out d.json")).returncode == 1
    gate(tmp_path, "freeze", "propose", "d.json", "--tickets", "t", check=1)
    assert not (tmp_path / "t").exists()


# ---------------------------------------------------------------- gate verdict
CATALOG = {
    "cat/prop.order_total.yaml": "id: prop.order_total\noracle: oracles/properties/o.py::test_o\nclaim: c\n"
                                 "quarantine_eligible: true\n",
    "cat/prop.tax_round.yaml": "id: prop.tax_round\noracle: oracles/properties/t.py::test_t\nclaim: c\n",
}
LEDGER = """\
version: 1
budget: {max_active: 3, max_added_per_patch: 0}
entries:
  - id: FZ-1
    prop_id: prop.order_total
    signature: sig-a
    fixture_digest: digest-1
    base_revision: rev-9
    paths: ["src/**"]
    reason: flaky clock
    opened_by: pat
    opened_at: "2026-09-01T00:00:00Z"
    expires_at: "2026-10-01T00:00:00Z"
"""


def rows(prop: str, *statuses: str, sig: str = "sig-a") -> str:
    return "".join(json.dumps({"prop": prop, "seed": seed, "status": st, "witness": "E" if st == "fail" else "",
                               "signature": sig if st == "fail" else None}) + "\n"
                   for seed, st in zip((11, 29), statuses, strict=True))


def evidence(tmp_path: Path, edited: list[str] | None = None) -> Path:
    ev = tmp_path / "ev"
    write(ev, {
        "base.jsonl": rows("prop.order_total", "fail", "fail") + rows("prop.tax_round", "pass", "pass"),
        "patch.jsonl": rows("prop.order_total", "fail", "fail") + rows("prop.tax_round", "pass", "pass"),
        "contract.json": json.dumps({"seeds": [11, 29], "base": "rev-9", "fixture_digest": "digest-1",
                                     "touched": ["src/orders.py"]}),
        "oracle_edited.json": json.dumps(edited or []),
    })
    write(tmp_path, {**CATALOG, "freeze_ledger.yaml": LEDGER})
    return ev


NOW = ("--now", "2026-09-20T00:00:00Z")


def verdict(tmp_path: Path, *extra: str, check: int) -> dict[str, object]:
    proc = gate(tmp_path, "verdict", "--evidence", "ev", "--catalog", "cat", "--json", *NOW, *extra, check=check)
    data: dict[str, object] = json.loads(proc.stdout)
    return data


def by_prop(data: dict[str, object]) -> dict[str, tuple[str, str]]:
    return {v["prop"]: (v["verdict"], v["reason"]) for v in data["verdicts"]}  # type: ignore[attr-defined,index]


def test_verdict_frozen_strict_holds(tmp_path: Path) -> None:
    evidence(tmp_path)
    data = verdict(tmp_path, check=1)
    assert by_prop(data) == {"prop.order_total": ("inconclusive", "frozen"), "prop.tax_round": ("pass", "both_pass")}
    assert (data["decision"], data["reason"]) == ("hold", "inconclusive")


def test_verdict_frozen_lenient_admits(tmp_path: Path) -> None:
    evidence(tmp_path)
    assert verdict(tmp_path, "--combiner", "lenient", check=0)["decision"] == "admit"


def test_verdict_table_and_expired_freeze(tmp_path: Path) -> None:
    evidence(tmp_path)
    proc = gate(tmp_path, "verdict", "--evidence", "ev", "--catalog", "cat", "--now", "2026-10-02", check=1)
    assert "freeze FZ-1 not applied: expired" in proc.stdout and "decision: reject" in proc.stdout


def test_verdict_oracle_edited_is_oracle_moved(tmp_path: Path) -> None:
    evidence(tmp_path, edited=["prop.tax_round"])
    data = verdict(tmp_path, "--combiner", "lenient", check=1)
    assert by_prop(data)["prop.tax_round"] == ("fail", "oracle_moved")


def test_verdict_all_pass_admits(tmp_path: Path) -> None:
    evidence(tmp_path)
    both = rows("prop.order_total", "pass", "pass") + rows("prop.tax_round", "pass", "pass")
    write(tmp_path / "ev", {"base.jsonl": both, "patch.jsonl": both})
    assert verdict(tmp_path, check=0)["decision"] == "admit"


def test_verdict_agent_cannot_spend_no_rely_freeze(tmp_path: Path) -> None:
    evidence(tmp_path)
    data = verdict(tmp_path, "--agent", "--combiner", "lenient", check=1)
    assert by_prop(data)["prop.order_total"] == ("fail", "uniform_fail")


def test_verdict_claimed_file(tmp_path: Path) -> None:
    evidence(tmp_path)
    write(tmp_path, {"claimed.json": '["prop.order_total"]'})
    data = verdict(tmp_path, "--combiner", "lenient", "--claimed", "claimed.json", check=1)
    assert (data["decision"], data["reason"]) == ("hold", "all_inconclusive")


def test_verdict_bad_ledger_exits_2(tmp_path: Path) -> None:
    evidence(tmp_path)
    write(tmp_path, {"freeze_ledger.yaml": LEDGER.replace('    expires_at: "2026-10-01T00:00:00Z"\n', "")})
    proc = gate(tmp_path, "verdict", "--evidence", "ev", "--catalog", "cat", check=2)
    assert "freeze_ledger.yaml:4" in proc.stderr and "expires_at" in proc.stderr


# ---------------------------------------------------------------- gate admit
CALC = "def add(a, b):\n    return a - b\n"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    path = init_repo(tmp_path / "repo")
    commit(path, {"src/calc.py": CALC}, "calc")
    return path


def make_patch(repo: Path, files: dict[str, str | None], name: str = "patch.diff") -> Path:
    write(repo, files)
    git(repo, "add", "-A")
    diff = git(repo, "diff", "--cached", "HEAD").stdout
    git(repo, "reset", "-q", "--hard", "HEAD")
    target = repo.parent / name
    target.write_text(diff)
    return target


def test_admit_clean_patch(repo: Path) -> None:
    patch = make_patch(repo, {"src/calc.py": CALC.replace("a - b", "a + b")})
    data = json.loads(gate(repo, "admit", str(patch), "--json", check=0).stdout)
    assert {k: data[k] for k in ("verdict", "held")} == {"verdict": "admit", "held": []}
    assert len(data["blob"]) == 64 and [c["test_id"] for c in data["checks"]] == [
        "parse_diff", "apply_check", "no_secret_marker", "public_signature"]
    assert "verdict: admit" in gate(repo, "admit", str(patch), check=0).stdout


def test_admit_empty_patch(repo: Path) -> None:
    (repo.parent / "empty.diff").write_text("\n")
    data = json.loads(gate(repo, "admit", str(repo.parent / "empty.diff"), "--json", check=1).stdout)
    assert {k: data[k] for k in ("blob", "verdict", "reason")} == {
        "blob": None, "verdict": "reject", "reason": "empty_blob"}


def test_admit_infra(repo: Path) -> None:
    patch = make_patch(repo, {"src/calc.py": CALC.replace("a - b", "a + b")})
    data = json.loads(gate(repo, "admit", str(patch), "--infra", "--json", check=1).stdout)
    assert data["reason"] == "infra"


def test_admit_public_name_vanished(repo: Path) -> None:
    patch = make_patch(repo, {"src/calc.py": CALC.replace("def add", "def plus")})
    proc = gate(repo, "admit", str(patch), check=1)
    assert "canary_bad: public_signature" in proc.stdout
    data = json.loads(gate(repo, "admit", str(patch), "--json", check=1).stdout)
    assert {k: data[k] for k in ("verdict", "canary_bad", "illegal_freeze", "uncovered_fail")} == {
        "verdict": "reject", "canary_bad": ["public_signature"], "illegal_freeze": [], "uncovered_fail": []}


def test_admit_against_wrong_base(repo: Path) -> None:
    patch = make_patch(repo, {"src/calc.py": CALC.replace("a - b", "a + b")})
    commit(repo, {"src/calc.py": "def add(a, b):\n    return 0\n"}, "moved")
    data = json.loads(gate(repo, "admit", str(patch), "--json", check=1).stdout)
    assert data["canary_bad"] == ["apply_check"]
    gate(repo, "admit", str(patch), "--base", "HEAD~1", check=0)


def test_admit_checks_with_a_usable_freeze_row_hold(repo: Path) -> None:
    ledger = LEDGER.replace('"2026-10-01T00:00:00Z"', '"2999-01-01T00:00:00Z"')
    commit(repo, {"freeze_ledger.yaml": ledger}, "freeze")
    patch = make_patch(repo, {"src/calc.py": CALC.replace("a - b", "a + b")})
    checks = repo.parent / "checks.jsonl"
    checks.write_text('{"test_id": "prop.order_total", "kind": "PROP_FAIL", "quarantine_eligible": true}\n')
    data = json.loads(gate(repo, "admit", str(patch), "--checks", str(checks), "--json", check=1).stdout)
    assert (data["verdict"], data["held"]) == ("hold", ["prop.order_total"])
    checks.write_text('{"test_id": "prop.order_total", "kind": "PROP_FAIL", "quarantine_eligible": false}\n')
    data = json.loads(gate(repo, "admit", str(patch), "--checks", str(checks), "--json", check=1).stdout)
    assert data["uncovered_fail"] == ["prop.order_total"]


# ---------------------------------------------------------------- gate score
def score(repo: Path, check: int) -> dict[str, object]:
    data: dict[str, object] = json.loads(gate(repo, "score", "--json", check=check).stdout)
    return data


def test_score_production_only(repo: Path) -> None:
    commit(repo, {"src/calc.py": CALC.replace("a - b", "a + b")}, "fix", env=AGENT)
    data = score(repo, 0)
    assert (data["verdict"], data["debt"], data["freeze_ledger_touched"]) == ("accept", 0, False)
    assert data["agent"] is True
    assert data["manifest_sha256"] == hashlib.sha256((repo / "oracles/MANIFEST.sha256").read_bytes()).hexdigest()
    assert "verdict: accept" in gate(repo, "score", check=0).stdout


def test_score_production_plus_tests_is_review(repo: Path) -> None:
    commit(repo, {"src/calc.py": CALC.replace("a - b", "a + b"), "tests/test_calc.py": "x = 1\n"}, "fix")
    assert score(repo, 1)["verdict"] == "review"


def test_score_production_plus_oracle(repo: Path) -> None:
    commit(repo, {"src/calc.py": "x = 1\n", "oracles/properties/p.py": "y = 1\n"}, "mixed")
    data = score(repo, 1)
    assert (data["verdict"], data["debt"], data["oracle_hits"]) == ("reject", 4, ["oracles/properties/p.py"])


def test_score_agent_relying_on_no_rely_freeze(repo: Path) -> None:
    ledger = LEDGER.replace('"2026-10-01T00:00:00Z"', '"2999-01-01T00:00:00Z"')
    commit(repo, {"freeze_ledger.yaml": ledger}, "freeze")
    commit(repo, {"src/calc.py": CALC.replace("a - b", "a + b")}, "fix", env=AGENT)
    data = score(repo, 1)
    assert data["verdict"] == "reject" and data["active_no_rely_freezes"] == ["FZ-1"]
    assert "relies_on_no_rely_freeze" in data["reasons"]  # type: ignore[operator]
    git(repo, "commit", "-q", "--amend", "--no-edit", "--reset-author")  # the same change by a person
    assert score(repo, 0)["verdict"] == "accept"


def test_score_ledger_by_agent(repo: Path) -> None:
    commit(repo, {"freeze_ledger.yaml": LEDGER}, "sneak", env=AGENT)
    data = score(repo, 1)
    assert (data["verdict"], data["debt"], data["freeze_ledger_touched"]) == ("reject", 5, True)


def test_score_ledger_only_by_person_within_budget(repo: Path) -> None:
    budget = "version: 1\nbudget: {max_active: 3, max_added_per_patch: 1}\nentries: []\n"
    commit(repo, {"freeze_ledger.yaml": budget}, "budget")
    opened = (LEDGER.replace("max_added_per_patch: 0", "max_added_per_patch: 1")
              .replace('"2026-10-01T00:00:00Z"', '"2999-01-01T00:00:00Z"'))
    commit(repo, {"freeze_ledger.yaml": opened}, "open FZ-1")
    data = score(repo, 0)
    assert (data["verdict"], data["debt"]) == ("accept", 5)


def test_score_fixtures_only(repo: Path) -> None:
    commit(repo, {"oracles/fixtures/a.json": "{}\n"}, "fixture, unsigned")
    data = score(repo, 1)
    assert (data["verdict"], data["fixture_hits"]) == ("reject", ["oracles/fixtures/a.json"])
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    sign_and_commit(repo, {"oracles/fixtures/a.json": "{}\n"}, "fixture, re-signed")
    data = score(repo, 0)
    assert (data["verdict"], data["debt"]) == ("accept", 7)


def test_score_root_commit_has_no_trusted_side(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    assert "no parent" in gate(repo, "score", check=2).stderr


# ---------------------------------------------------------------- gate freeze
BASE_RUN = ('{"prop":"prop.x","seed":11,"status":"fail","witness":"E:x","signature":"sig-a","fixture_digest":"d1"}\n'
            '{"prop":"prop.x","seed":29,"status":"pass","witness":""}\n')
OPEN = ("freeze", "open", "--prop", "prop.x", "--reason", "clock", "--paths", "src/**")


def test_freeze_open_list_lint_expire(repo: Path) -> None:
    write(repo.parent, {"base.jsonl": BASE_RUN})
    gate(repo, *OPEN, "--expires", "14d", "--run", str(repo.parent / "base.jsonl"), check=0)
    listed = json.loads(gate(repo, "freeze", "list", "--json", check=0).stdout)
    (entry,) = listed["entries"]
    head = git(repo, "rev-parse", "HEAD").stdout.strip()
    assert (entry["signature"], entry["fixture_digest"], entry["base_revision"]) == ("sig-a", "d1", head)
    assert entry["opened_by"] == "pat@example.com" and entry["allows_agent_rely"] is False
    assert "FZ-001" in gate(repo, "freeze", "list", check=0).stdout
    gate(repo, "freeze", "lint", check=0)
    far = ("--now", "2099-01-01T00:00:00Z")
    assert "expired" in gate(repo, "freeze", "lint", *far, check=1).stdout
    assert "FZ-001" in gate(repo, "freeze", "expire", *far, check=0).stdout
    assert json.loads(gate(repo, "freeze", "list", "--json", check=0).stdout)["entries"] == []
    assert (repo / "freeze_ledger.yaml").read_text().startswith("#")  # the file's header comments survive


def test_freeze_open_from_evidence_directory(repo: Path) -> None:
    write(repo.parent / "ev", {"base.jsonl": BASE_RUN.replace(',"fixture_digest":"d1"', ""),
                               "fixture.digest": "d2\n", "contract.json": '{"seeds": [11, 29], "base": "rev-7"}'})
    gate(repo, *OPEN, "--expires", "2999-01-01", "--evidence", str(repo.parent / "ev"), "--id", "FZ-x", check=0)
    (entry,) = json.loads(gate(repo, "freeze", "list", "--json", check=0).stdout)["entries"]
    assert (entry["id"], entry["fixture_digest"], entry["base_revision"]) == ("FZ-x", "d2", "rev-7")


@pytest.mark.parametrize("env", [{"GATE_AGENT": "1"}, AGENT])
def test_freeze_open_refused_for_agents(repo: Path, env: dict[str, str]) -> None:
    write(repo.parent, {"base.jsonl": BASE_RUN})
    before = (repo / "freeze_ledger.yaml").read_bytes()
    proc = gate(repo, *OPEN, "--expires", "14d", "--run", str(repo.parent / "base.jsonl"), env=env, check=1)
    assert "refused" in proc.stderr
    assert (repo / "freeze_ledger.yaml").read_bytes() == before


@pytest.mark.parametrize(
    ("run", "expires", "words"),
    [
        (BASE_RUN.replace('"fail"', '"pass"'), "14d", "no failing row"),
        (BASE_RUN.replace(',"signature":"sig-a"', ""), "14d", "signature"),
        (BASE_RUN, "2001-01-01", "not in the future"),
        (BASE_RUN, "whenever", "bad --expires"),
        (BASE_RUN.replace(',"fixture_digest":"d1"', ""), "14d", "fixture digest"),
    ],
)
def test_freeze_open_needs_real_evidence(repo: Path, run: str, expires: str, words: str) -> None:
    write(repo.parent, {"base.jsonl": run})
    proc = gate(repo, *OPEN, "--expires", expires, "--run", str(repo.parent / "base.jsonl"), check=2)
    assert words in proc.stderr


def test_freeze_open_without_evidence_is_refused(repo: Path) -> None:
    assert "--evidence" in gate(repo, *OPEN, "--expires", "14d", check=2).stderr


def test_freeze_open_respects_budget(repo: Path) -> None:
    write(repo, {"freeze_ledger.yaml": "version: 1\nbudget: {max_active: 0}\nentries: []\n"})
    write(repo.parent, {"base.jsonl": BASE_RUN})
    proc = gate(repo, *OPEN, "--expires", "14d", "--run", str(repo.parent / "base.jsonl"), check=1)
    assert "max_active=0" in proc.stderr


def test_freeze_lint_over_budget(repo: Path) -> None:
    second = LEDGER.split("entries:\n")[1].replace("FZ-1", "FZ-2")
    write(repo, {"freeze_ledger.yaml": LEDGER.replace("max_active: 3", "max_active: 1") + second})
    proc = gate(repo, "freeze", "lint", "--now", "2026-09-20", check=1)
    assert "exceed budget" in proc.stdout


def test_freeze_list_bad_ledger(repo: Path) -> None:
    write(repo, {"freeze_ledger.yaml": LEDGER + "    colour: blue\n"})
    proc = gate(repo, "freeze", "list", check=2)
    assert "freeze_ledger.yaml:14" in proc.stderr and "unknown key 'colour'" in proc.stderr


# ---------------------------------------------------------------- the evidence packet `gate check` writes
def check_packet(tmp_path: Path) -> Path:
    """An evidence directory in the layout of mergegate.pipeline.evidence.write_packet."""
    ev = tmp_path / "packet"
    base = rows("prop.order_total", "fail", "fail") + rows("prop.tax_round", "pass", "pass")
    base = base.replace('"signature"', '"fixture_digest": "digest-1", "examples": 10, "signature"')
    write(ev, {
        "base.jsonl": base,
        "patch.jsonl": base,
        "contract.json": json.dumps({
            "contract_version": 1, "base": "mb-1", "base_revision": "rev-9", "head": "h-1", "seeds": [11, 29],
            "properties": [{"id": "prop.order_total", "oracle": "o.py::t", "claim": "c"}],
            "fixture_digest": {"base": "digest-1", "head": "digest-1"}}),
        "fixture.digest": "base digest-1\nhead digest-1\n",
        "oracle_edited.json": json.dumps({"oracle_edited": [], "split": {"production": ["src/orders.py"],
                                                                         "other": []}}),
    })
    write(tmp_path, {**CATALOG, "freeze_ledger.yaml": LEDGER})
    return ev


def test_verdict_reads_a_check_packet(tmp_path: Path) -> None:
    check_packet(tmp_path)
    proc = gate(tmp_path, "verdict", "--evidence", "packet", "--catalog", "cat", "--json", *NOW, check=1)
    data = json.loads(proc.stdout)
    assert by_prop(data)["prop.order_total"] == ("inconclusive", "frozen")
    # without the split's touched paths the freeze would not overlap the patch
    write(tmp_path / "packet", {"oracle_edited.json": json.dumps({"oracle_edited": [], "split": {}})})
    proc = gate(tmp_path, "verdict", "--evidence", "packet", "--catalog", "cat", "--json", *NOW, check=1)
    assert by_prop(json.loads(proc.stdout))["prop.order_total"] == ("fail", "uniform_fail")


def test_freeze_open_from_a_check_packet(repo: Path) -> None:
    ev = check_packet(repo.parent)
    gate(repo, *OPEN[:3], "prop.order_total", *OPEN[4:], "--expires", "14d", "--evidence", str(ev), check=0)
    (entry,) = json.loads(gate(repo, "freeze", "list", "--json", check=0).stdout)["entries"]
    assert (entry["prop_id"], entry["signature"], entry["fixture_digest"], entry["base_revision"]) == (
        "prop.order_total", "sig-a", "digest-1", "rev-9")


def test_freeze_outside_a_repository(tmp_path: Path) -> None:
    assert "not a git repository" in gate(tmp_path, "freeze", "list", check=2).stderr
    write(tmp_path, {"l.yaml": LEDGER})
    data = json.loads(gate(tmp_path, "freeze", "list", "--ledger", "l.yaml", "--json", check=0).stdout)
    assert [e["id"] for e in data["entries"]] == ["FZ-1"]
    gate(tmp_path, "freeze", "expire", "--ledger", "l.yaml", "--now", "2030-01-01", check=0)
    assert "entries: []" in (tmp_path / "l.yaml").read_text()


def test_bad_inputs_never_crash(tmp_path: Path) -> None:
    write(tmp_path, {"parent.jsonl": PASS11, "patch.jsonl": b"\xff\xfe\n", "differential-contract.json": "[1]"})
    for args in (("decide",), ("admit", "parent.jsonl"), ("score",), ("verdict", "--runs", "patch.jsonl"),
                 ("freeze", "propose", "differential-contract.json")):
        proc = gate(tmp_path, *args, check=2)
        assert "Traceback" not in proc.stderr and "fix:" in proc.stderr


def test_bad_now_is_a_usage_error(tmp_path: Path) -> None:
    evidence(tmp_path)
    assert "bad --now" in gate(tmp_path, "verdict", "--evidence", "ev", "--now", "someday", check=2).stderr
    write(tmp_path, {"l.yaml": LEDGER})
    assert "bad --now" in gate(tmp_path, "freeze", "lint", "--ledger", "l.yaml", "--now", "x", check=2).stderr


def test_verdict_touched_as_a_single_string(tmp_path: Path) -> None:
    ev = evidence(tmp_path)
    contract = json.loads((ev / "contract.json").read_text())
    write(ev, {"contract.json": json.dumps({**contract, "touched": "src/orders.py"})})
    assert by_prop(verdict(tmp_path, check=1))["prop.order_total"] == ("inconclusive", "frozen")
    write(ev, {"contract.json": json.dumps({**contract, "touched": "docs/readme.md"})})
    assert by_prop(verdict(tmp_path, check=1))["prop.order_total"] == ("fail", "uniform_fail")


def test_score_reads_the_budget_from_the_trusted_side(repo: Path) -> None:
    # the patch raises its own budget while adding a freeze: the parent's budget (0 additions) rules
    opened = (LEDGER.replace("max_added_per_patch: 0", "max_added_per_patch: 5")
              .replace('"2026-10-01T00:00:00Z"', '"2999-01-01T00:00:00Z"'))
    commit(repo, {"freeze_ledger.yaml": opened}, "open FZ-1 and raise the budget")
    data = score(repo, 1)
    assert "added_over_budget" in data["reasons"]  # type: ignore[operator]
    assert data["budget"] == {"active": 1, "max_active": 3, "added": ["FZ-1"], "max_added_per_patch": 0}


def test_terminal_table_treats_cells_as_data(repo: Path) -> None:
    """On a terminal rich draws the table; a reason or path with brackets is text, not markup."""
    import pty

    write(repo.parent, {"base.jsonl": BASE_RUN})
    gate(repo, "freeze", "open", "--prop", "prop.x", "--reason", "[/bold] odd [x]", "--paths", "src/[ab].py",
         "--expires", "14d", "--run", str(repo.parent / "base.jsonl"), check=0)
    leader, follower = pty.openpty()
    env = clean_env({"COLUMNS": "200", "TERM": "xterm"})
    proc = subprocess.run([sys.executable, "-m", "mergegate", "freeze", "list"], cwd=repo, env=env,
                          stdout=follower, stderr=subprocess.PIPE, text=True, check=False)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    screen = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0, proc.stderr
    assert "[/bold] odd [x]" in screen and "src/[ab].py" in screen and "┃" in screen


def test_admit_binds_check_rows_to_the_blob(repo: Path) -> None:
    patch = make_patch(repo, {"src/calc.py": CALC.replace("a - b", "a + b")})
    blob = hashlib.sha256(patch.read_bytes()).hexdigest()
    checks = repo.parent / "checks.jsonl"
    checks.write_text(json.dumps({"test_id": "p", "kind": "PROP_PASS", "blob": blob}) + "\n")
    data = json.loads(gate(repo, "admit", str(patch), "--checks", str(checks), "--json", check=0).stdout)
    assert data["blob"] == blob and len(data["seed_list_sha256"]) == 64
    checks.write_text(json.dumps({"test_id": "p", "kind": "PROP_PASS", "blob": "0" * 64}) + "\n")
    assert "a changed diff is a new trial" in gate(repo, "admit", str(patch), "--checks", str(checks), check=2).stderr
