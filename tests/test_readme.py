"""The README's quick start and adoption sections, run word for word in fresh places.

The commands are read from README.md itself, so the README cannot drift from what works.
The quick start's first command (install into a fresh virtualenv, run `gate demo`) runs in
``tests/test_demo.py``; its second is the test command CI runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import clean_env, git
from tests.readme import ROOT, commands


def test_quick_start_is_two_commands_the_second_is_what_ci_runs() -> None:
    install, test = commands("Quick start")
    assert install == "sh scripts/demo.sh"
    demo = (ROOT / "scripts/demo.sh").read_text()
    assert "python3 -m venv" in demo and demo.rstrip().endswith('exec "$venv/bin/gate" demo')
    assert "python3 -m pip install" not in demo  # refused on Debian and Ubuntu (PEP 668)
    assert test == "bash scripts/test.sh"
    assert "bash scripts/test.sh" in (ROOT / ".ci/run").read_text().splitlines()


def test_adoption_section_word_for_word(tmp_path: Path) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "master")
    git(repo, "config", "user.name", "Pat Person")
    git(repo, "config", "user.email", "pat@example.com")
    (repo / "src").mkdir()
    (repo / "src/app.py").write_text("X = 1\n")
    env = clean_env({"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    outputs = {}
    lines = commands("Adopt it in a repository")
    for line in lines:
        proc = subprocess.run(["bash", "-c", line], cwd=repo, env=env, capture_output=True, text=True, check=False)
        outputs[line] = proc
        assert proc.returncode == 0, f"{line}\n{proc.stdout}\n{proc.stderr}"
        if line.startswith("gate doctor"):
            # A fresh adoption: only a person can say who the agents are on the server.
            problems = [ln for ln in proc.stdout.splitlines() if " PROBLEM " in ln]
            assert [p.split()[0] for p in problems] == ["server"], proc.stdout
            assert subprocess.run(["bash", "-c", "gate doctor"], cwd=repo, env=env, capture_output=True,
                                  check=False).returncode == 1  # the `|| true` is needed: doctor alone says no
    # The whole block as one script, start to end, as a user pastes it.
    again = tmp_path / "again"
    again.mkdir()
    git(again, "init", "-q", "-b", "master")
    git(again, "config", "user.name", "Pat Person")
    git(again, "config", "user.email", "pat@example.com")
    script = subprocess.run(["bash", "-e", "-c", "\n".join(lines)], cwd=again, env=env, capture_output=True,
                            text=True, check=False)
    assert script.returncode == 0, script.stdout + script.stderr
    assert git(repo, "status", "--porcelain").stdout == ""
    assert subprocess.run(["bash", "-c", "gate manifest verify --rev HEAD"], cwd=repo, env=env,
                          capture_output=True, text=True, check=False).returncode == 0
    # The hooks the README installed judge the next commit: an oracle file with production is refused.
    (repo / "oracles/properties/test_app.py").write_text("def test_x():\n    assert True\n")
    (repo / "src/app.py").write_text("X = 2\n")
    git(repo, "add", "-A")
    refused = git(repo, "commit", "-q", "-m", "mixed", check=False)
    assert refused.returncode != 0 and "gate-no-mix" in refused.stderr + refused.stdout


def test_the_pre_commit_config_gate_init_writes_runs(tmp_path: Path) -> None:
    """The repo: local gate-checks snippet, under the real pre-commit client: it judges commits."""
    from tests.test_hooks_precommit import precommit_env

    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "master")
    gate_bin = str(Path(sys.executable).parent)
    env = clean_env({"PATH": f"{gate_bin}{os.pathsep}{os.environ.get('PATH', '')}", **precommit_env()})

    def sh(line: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", line], cwd=repo, env=env, capture_output=True, text=True, check=False)

    assert sh("gate init --pre-commit-config").returncode == 0
    assert sh('git add -A && git commit -q -m "Adopt mergegate"').returncode == 0
    assert sh(f"{sys.executable} -m pre_commit install").returncode == 0
    assert "(pre-commit" in sh("gate doctor").stdout
    (repo / "oracles/properties/test_app.py").write_text("def test_x():\n    assert True\n")
    (repo / "src").mkdir()
    (repo / "src/app.py").write_text("X = 2\n")
    mixed = sh('git add -A && git commit -q -m "mixed"')
    assert mixed.returncode != 0 and "gate-no-mix" in mixed.stdout + mixed.stderr, mixed.stdout + mixed.stderr
    assert sh('git restore --staged -- oracles && git commit -q -m "production"').returncode == 0
    # Without `gate` on PATH the local hook cannot run: the doctor says so.
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if not (Path(p) / "gate").exists())
    out = sh(f"{sys.executable} -m mergegate doctor").stdout
    assert "no `gate` is on PATH" in out, out
