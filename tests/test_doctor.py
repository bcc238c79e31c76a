"""``gate doctor``: each problem of an adoption, with its fix; exit 1 if any."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import clean_env, commit, gate, git, init_repo, sign_and_commit, write
from tests.test_hooks_precommit import hook_repo, precommit_env  # noqa: F401  (session fixture)

PUSHERS = "  pushers: []"


def _lines(repo: Path) -> tuple[int, dict[str, str], str]:
    proc = gate(repo, "doctor")
    areas = {ln.split()[0]: ln for ln in proc.stdout.splitlines() if ln[:1].isalpha() and len(ln.split()) > 1}
    return proc.returncode, areas, proc.stdout


def _identify_agents(repo: Path) -> None:
    text = (repo / "gate.yaml").read_text()
    assert PUSHERS in text
    sign_and_commit(repo, {"gate.yaml": text.replace(PUSHERS, '  pushers: ["coder-bot"]')}, "agents' pushers")


def test_doctor_names_each_problem_and_its_fix(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    code, areas, out = _lines(repo)
    assert code == 1
    assert " ok " in areas["policy"] and " ok " in areas["manifest"] and " ok " in areas["catalog"]
    assert "PROBLEM" in areas["hooks"] and "fix: gate install" in out
    assert "PROBLEM" in areas["server"] and "agents.pushers is empty" in areas["server"]
    assert "server.protected_branches: true" in out and "server.require_signed_oracle_commits" in out
    _identify_agents(repo)
    gate(repo, "install", check=0)
    code, areas, out = _lines(repo)
    assert code == 0 and "no problems" in out, out
    # A guarded file committed without re-signing, and a test with no catalog entry.
    commit(repo, {"oracles/properties/test_a.py": "def test_a():\n    assert True\n"}, "unsigned")
    code, areas, out = _lines(repo)
    assert code == 1
    assert "PROBLEM" in areas["manifest"] and "missing: oracles/properties/test_a.py" in areas["manifest"]
    assert "gate manifest sign --staged" in out
    assert "PROBLEM" in areas["catalog"] and "test_a.py::test_a" in areas["catalog"] and "gate catalog import" in out


def test_doctor_bad_policy(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    commit(repo, {"gate.yaml": "version: 1\npaths:\n  prod: []\n"}, "broken policy")
    code, areas, _out = _lines(repo)
    assert code == 1 and "PROBLEM" in areas["policy"] and "):3: unknown key 'prod'" in areas["policy"]


def test_doctor_sees_pre_commit(tmp_path: Path, hook_repo: tuple[str, str]) -> None:  # noqa: F811
    repo = init_repo(tmp_path / "r")
    _identify_agents(repo)
    url, sha = hook_repo
    write(repo, {".pre-commit-config.yaml": f"repos:\n  - repo: {url}\n    rev: {sha}\n    hooks:\n"
                 "      - id: gate-checks\n"})
    git(repo, "add", "-A")
    gate(repo, "manifest", "sign", "--staged", check=0)
    git(repo, "commit", "-q", "--no-verify", "-m", "pre-commit config")
    code, areas, _out = _lines(repo)
    assert code == 1 and "pre-commit install" in areas["hooks"] + _out
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, env=clean_env(precommit_env()),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    code, areas, out = _lines(repo)
    assert code == 0 and "(pre-commit" in areas["hooks"], out


def test_doctor_and_the_server_agree_on_identity(tmp_path: Path) -> None:
    """A protected default branch (server.protected_branches) identifies agents for the doctor as for pre-receive."""
    from mergegate.hooks import pre_receive
    from mergegate.records import policy
    from mergegate.rules import agents

    repo = init_repo(tmp_path / "r")
    text = (repo / "gate.yaml").read_text() + "server:\n  protected_branches: true\n"
    sign_and_commit(repo, {"gate.yaml": text}, "the host protects main")
    _code, areas, _out = _lines(repo)
    assert " ok " in areas["server"] and "protected_branches" in areas["server"], areas["server"]
    pol = policy.parse(text.encode(), "gate.yaml")
    assert agents.identity_gap(pol) == "" and pre_receive.identity_warning(pol) == ""
