"""The server cannot be locked: a push leaving its own files unreadable is refused at that push,
and a branch already holding a broken gate.yaml takes a person's repair without a hook bypass."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from mergegate.records import manifest, policy
from tests.helpers import AGENT, commit, gate, git, sign_and_commit, write
from tests.receive_helpers import Server, make_server, refused

ORACLE = "oracles/properties/test_p.py"
BOMB = "version: 1\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9) if i else ', '.join(['x'] * 9)}]\n" for i in range(9)
)


@pytest.fixture
def srv(tmp_path: Path) -> Server:
    s = make_server(tmp_path)
    sign_and_commit(s.work, {ORACLE: "def test_p():\n    assert True\n"})
    assert s.push().returncode == 0
    return s


def signed_by_hand(work: Path, files: dict[str, str | None], env: dict[str, str] | None = None) -> str:
    """An oracle-only commit re-signed the way the default policy signs, whatever gate.yaml now
    says (``gate manifest sign`` would refuse to read a broken one): a client that skipped its hooks."""
    write(work, files)
    git(work, "add", "-A")
    (work / policy.Paths().manifest).write_bytes(manifest.expected_at(None, policy.Policy(), work))
    return commit(work, {}, "oracle-only", env=env)


def push_refused(s: Server, rule: str, *refspecs: str) -> str:
    before = s.ref("main")
    proc = s.push(*refspecs)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert s.ref("main") == before
    lines = refused(proc)
    assert len(lines) == 1 and f" {rule}: " in lines[0] and "; fix: " in lines[0], proc.stderr
    return lines[0]


def policy_text(work: Path, old: str, new: str) -> str:
    text = (work / "gate.yaml").read_text()
    assert old in text
    return text.replace(old, new)


# ---------------------------------------------------------------- refused at the push that would lock


def test_version_2_is_refused_at_the_push(srv: Server) -> None:
    signed_by_hand(srv.work, {"gate.yaml": policy_text(srv.work, "version: 1", "version: 2")})
    line = push_refused(srv, "broken-config")
    assert line.startswith("refs/heads/main broken-config: ") and "version" in line and "gate.yaml" in line
    git(srv.work, "reset", "-q", "--hard", "HEAD~1")
    commit(srv.work, {"src/app.py": "x = 1\n"})
    assert srv.push().returncode == 0  # nothing was locked


def test_yaml_alias_bomb_is_refused_quickly(srv: Server) -> None:
    assert len(BOMB) < 1500
    signed_by_hand(srv.work, {"gate.yaml": BOMB})
    start = time.monotonic()
    line = push_refused(srv, "broken-config")
    assert time.monotonic() - start < 20
    assert "gate.yaml" in line


def test_deleting_the_policy_is_refused(srv: Server) -> None:
    signed_by_hand(srv.work, {"gate.yaml": None})
    assert "gate.yaml is missing" in push_refused(srv, "broken-config")


def test_an_unreadable_ledger_is_refused(srv: Server) -> None:
    sign_and_commit(srv.work, {"freeze_ledger.yaml": "version: 1\nentries: 7\n"})
    assert "freeze_ledger.yaml" in push_refused(srv, "broken-config")


def test_a_catalog_node_id_that_names_no_test_is_refused(srv: Server) -> None:
    entry = f"id: prop.p\noracle: {ORACLE}::test_missing\nclaim: p holds\n"
    sign_and_commit(srv.work, {"oracles/catalog/prop.p.yaml": entry})
    line = push_refused(srv, "broken-config")
    assert "oracles/catalog/prop.p.yaml" in line and "test_missing" in line
    git(srv.work, "reset", "-q", "--hard", "HEAD~1")
    sign_and_commit(srv.work, {"oracles/catalog/prop.p.yaml": entry.replace("test_missing", "test_p")})
    assert srv.push().returncode == 0


def test_an_oracle_edit_that_orphans_a_catalog_entry_is_refused(srv: Server) -> None:
    sign_and_commit(srv.work, {"oracles/catalog/prop.p.yaml": f"id: prop.p\noracle: {ORACLE}::test_p\nclaim: c\n"})
    assert srv.push().returncode == 0
    sign_and_commit(srv.work, {ORACLE: "def test_q():\n    assert True\n"})
    assert "test_p" in push_refused(srv, "broken-config")


def test_requiring_signatures_without_the_signers_file_is_refused(srv: Server) -> None:
    text = policy_text(srv.work, "canaries:", "server: {require_signed_oracle_commits: true, "
                       "allowed_signers: .ci/allowed_signers}\ncanaries:")
    sign_and_commit(srv.work, {"gate.yaml": text})
    assert ".ci/allowed_signers" in push_refused(srv, "broken-config")


def test_a_new_branch_leaving_a_broken_policy_is_refused(srv: Server) -> None:
    git(srv.work, "checkout", "-q", "-b", "topic")
    signed_by_hand(srv.work, {"gate.yaml": policy_text(srv.work, "version: 1", "version: 2")})
    proc = srv.push("topic")
    assert proc.returncode != 0 and srv.ref("topic") is None
    assert [line.split(" ")[:2] for line in refused(proc)] == [["refs/heads/topic", "broken-config:"]]


# ---------------------------------------------------------------- recovery without a hook bypass


def _break_main_behind_the_hooks_back(s: Server) -> str:
    """A server broken before this check existed: the bad commit lands with the hook set aside."""
    hook = s.bare / "hooks" / "pre-receive"
    hook.rename(hook.with_suffix(".off"))
    bad = signed_by_hand(s.work, {"gate.yaml": policy_text(s.work, "version: 1", "version: 2")})
    assert s.push().returncode == 0 and s.ref("main") == bad
    hook.with_suffix(".off").rename(hook)
    return bad


def test_a_broken_policy_on_the_server_takes_a_persons_repair(srv: Server) -> None:
    _break_main_behind_the_hooks_back(srv)
    # Ordinary work is refused, one line per commit, saying how to recover (no traceback).
    prod = commit(srv.work, {"src/app.py": "x = 1\n"})
    line = push_refused(srv, "repair-only")
    assert line.startswith(f"{prod[:12]} repair-only: ") and "version" in line and "Recovery" in line
    git(srv.work, "reset", "-q", "--hard", "HEAD~1")
    # An agent cannot repair it, even touching only the policy.
    good = policy_text(srv.work, "version: 2", "version: 1")
    signed_by_hand(srv.work, {"gate.yaml": good}, env=AGENT)
    assert "agent" in push_refused(srv, "repair-only")
    git(srv.work, "reset", "-q", "--hard", "HEAD~1")
    # A repair that is itself broken is refused too.
    signed_by_hand(srv.work, {"gate.yaml": good.replace("version: 1", "version: 3")})
    assert "version" in push_refused(srv, "broken-config")
    git(srv.work, "reset", "-q", "--hard", "HEAD~1")
    # A person's repair of gate.yaml alone (re-signed) is accepted; then work flows again.
    fixed = signed_by_hand(srv.work, {"gate.yaml": good})
    proc = srv.push()
    assert proc.returncode == 0, proc.stderr
    assert srv.ref("main") == fixed
    tip = commit(srv.work, {"src/app.py": "x = 2\n"})
    assert srv.push().returncode == 0 and srv.ref("main") == tip


def test_a_repair_cannot_carry_an_oracle_change_with_it(srv: Server) -> None:
    """A person's repair push is policy files and the manifest only: one that also weakens the oracle
    (its test now asserts nothing, the manifest re-signed to match) is refused while the policy is broken."""
    _break_main_behind_the_hooks_back(srv)
    good = policy_text(srv.work, "version: 2", "version: 1")
    signed_by_hand(srv.work, {"gate.yaml": good, ORACLE: "def test_p():\n    pass\n"})
    assert "repair-only" in push_refused(srv, "repair-only")


def test_a_broken_default_branch_does_not_lock_new_branches_out_of_repair(srv: Server) -> None:
    _break_main_behind_the_hooks_back(srv)
    git(srv.work, "checkout", "-q", "-b", "topic")
    commit(srv.work, {"src/app.py": "x = 1\n"})
    proc = srv.push("topic")
    assert proc.returncode != 0 and "repair-only" in proc.stderr and "Traceback" not in proc.stderr


# ---------------------------------------------------------------- telling an agent from a person


def _warnings(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in proc.stderr.splitlines() if "cannot tell an agent from a person" in line]


@pytest.mark.parametrize("old,new", [
    ("pushers: []", 'pushers: ["coder-bot"]'),
    ("canaries:", "server: {protected_branches: true}\ncanaries:"),
])
def test_the_hook_warns_until_the_server_can_tell_agents_apart(srv: Server, old: str, new: str) -> None:
    commit(srv.work, {"src/app.py": "x = 1\n"})
    proc = srv.push()
    assert proc.returncode == 0
    [line] = _warnings(proc)  # one line, with the fix
    assert "; fix: " in line and "agents.pushers" in line and "docs/server.md" in line
    sign_and_commit(srv.work, {"gate.yaml": policy_text(srv.work, old, new)})
    assert len(_warnings(srv.push())) == 1  # judged by the old policy still
    commit(srv.work, {"src/app.py": "x = 2\n"})
    proc = srv.push()
    assert proc.returncode == 0 and _warnings(proc) == []


def test_the_warning_comes_with_a_refusal_too(srv: Server) -> None:
    commit(srv.work, {"src/app.py": "x = 1\n", ORACLE: "def test_p():\n    assert 2\n"})
    proc = srv.push()
    assert proc.returncode != 0 and len(_warnings(proc)) == 1


def test_gate_init_says_how_to_identify_agents(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    out = gate(repo, "init", check=0).stdout
    assert "agents.pushers" in out and "docs/server.md, Identify agents" in out
    docs = (Path(__file__).resolve().parents[1] / "docs" / "server.md").read_text()
    assert "## Identify agents" in docs
