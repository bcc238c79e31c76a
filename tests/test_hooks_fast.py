"""The hooks' fast path only ever accepts what the full check accepts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import clean_env, commit, gate, git, init_repo, write

HEAVY = ("git", "docker", "httpx", "hypothesis", "rich", "yaml")


def hook_imports(repo: Path, names: tuple[str, ...]) -> str:
    """Run `gate hook all` in-process; its exit code and which of ``names`` it imported."""
    code = (
        "import sys\nfrom mergegate.main import main\nrc = main(['hook', 'all'])\n"
        f"print(rc, sorted(m for m in sys.modules if m in {names!r} or m.split('.')[0] in {names!r}))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=repo, env=clean_env(), capture_output=True, text=True,
                          check=False)
    return proc.stdout.strip() or proc.stderr


@pytest.fixture
def warm(tmp_path: Path) -> Path:
    """A repository whose caches the full check has filled (as after any earlier commit)."""
    r = init_repo(tmp_path / "r")
    commit(r, {"src/a.py": "1\n"})
    gate(r, "install", check=0)
    write(r, {"src/a.py": "2\n"})
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "through the full check")
    assert (r / ".git/mergegate/verified-trees").is_file()
    return r


def test_production_commit_takes_the_fast_path_without_heavy_imports(warm: Path) -> None:
    write(warm, {"src/a.py": "3\n"})
    git(warm, "add", "-A")
    assert hook_imports(warm, (*HEAVY, "mergegate.records.policy")) == "0 []"
    # Nor what only an error message needs (textsafe brings re, json and typing: ~9 ms a commit).
    assert hook_imports(warm, ("mergegate.textsafe", "json", "typing")) == "0 []"


def test_full_hook_path_imports_no_heavy_module(warm: Path) -> None:
    write(warm, {"src/a.py": "4\n", "oracles/fixtures/x.json": "[]"})
    git(warm, "add", "-A")
    assert hook_imports(warm, HEAVY[:-1]) == "1 []"


def test_stamp_is_not_reused_after_the_index_changes(warm: Path) -> None:
    write(warm, {"src/a.py": "5\n"})
    git(warm, "add", "-A")
    gate(warm, "hook", "guard", check=0)
    assert (warm / ".git/mergegate/hook-ok").is_file()
    write(warm, {"oracles/fixtures/x.json": "[]"})
    git(warm, "add", "-A")
    proc = gate(warm, "hook", "no-mix", check=1)
    assert "production: src/a.py" in proc.stderr


def test_guarded_change_never_takes_the_fast_path(warm: Path) -> None:
    write(warm, {"freeze_ledger.yaml": (warm / "freeze_ledger.yaml").read_text() + "# x\n"})
    git(warm, "add", "-A")
    assert gate(warm, "hook", "guard", env={"GATE_AGENT": "1"}).returncode == 1


def test_stale_head_manifest_is_not_verified_by_cache(warm: Path) -> None:
    commit(warm, {"oracles/fixtures/x.json": "[]"}, "stale manifest, --no-verify")
    write(warm, {"src/a.py": "6\n"})
    git(warm, "add", "-A")
    proc = gate(warm, "hook", "manifest", check=1)
    assert "missing: oracles/fixtures/x.json" in proc.stderr


def test_policy_change_at_head_is_picked_up(warm: Path) -> None:
    text = (warm / "gate.yaml").read_text().replace('production: ["src/**"]', 'production: ["src/**", "lib/**"]')
    write(warm, {"gate.yaml": text})
    git(warm, "add", "-A")
    gate(warm, "manifest", "sign", "--staged", check=0)
    git(warm, "commit", "-q", "-m", "policy", "--no-verify")
    write(warm, {"lib/b.py": "1\n", "oracles/fixtures/y.json": "[]"})
    git(warm, "add", "-A")
    proc = gate(warm, "hook", "no-mix", check=1)
    assert "production: lib/b.py" in proc.stderr
