"""The hooks through the real `pre-commit` client, installed from this source tree."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mergegate.records.fsutil import locked
from tests.helpers import AGENT, clean_env, commit, gate, git, init_repo, write

ROOT = Path(__file__).resolve().parents[1]
M = "oracles/MANIFEST.sha256"
SHARED = Path(os.environ.get("MERGEGATE_TEST_CACHE", "/tmp/mergegate-test-cache"))

pytestmark = pytest.mark.slow


def _snapshot_files() -> list[Path]:
    files = [ROOT / "pyproject.toml", ROOT / ".pre-commit-hooks.yaml", ROOT / "README.md"]
    files += sorted(p for p in (ROOT / "src").rglob("*") if p.is_file() and "__pycache__" not in p.parts
                    and not p.name.endswith(".egg-info") and ".egg-info" not in str(p))
    return [f for f in files if f.exists()]


@pytest.fixture(scope="session")
def hook_repo() -> tuple[str, str]:
    """A git repository holding this source tree: pre-commit installs the hooks from it once."""
    files = _snapshot_files()
    digest = hashlib.sha256()
    for f in files:
        digest.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes())
    dest = SHARED / f"hookrepo-{digest.hexdigest()[:16]}"
    with locked(SHARED / "hookrepo.lock"):
        if not (dest / ".git").is_dir():
            tmp = dest.with_suffix(".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            for f in files:
                target = tmp / f.relative_to(ROOT)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, target)
            if not (tmp / "README.md").exists():
                (tmp / "README.md").write_text("mergegate\n")
            init_repo(tmp, gate_init=False)
            git(tmp, "add", "-A")
            git(tmp, "commit", "-q", "--no-verify", "-m", "snapshot")
            tmp.rename(dest)
    sha = git(dest, "rev-parse", "HEAD").stdout.strip()
    return str(dest), sha


def precommit_env() -> dict[str, str]:
    return {"PRE_COMMIT_HOME": str(SHARED / "pre-commit-home"), "PRE_COMMIT_COLOR": "never"}


def precommit_repo(path: Path, hook_repo: tuple[str, str], production: dict[str, str]) -> Path:
    """A repository that adopted mergegate with pre-commit installed, plus one production commit."""
    url, sha = hook_repo
    r = init_repo(path, gate_init=False)
    gate(r, "init", check=0)
    write(r, {".pre-commit-config.yaml": (
        f"repos:\n  - repo: {url}\n    rev: {sha}\n    hooks:\n"
        "      - id: gate-guard\n      - id: gate-no-mix\n      - id: gate-manifest\n"
    )})
    git(r, "add", "-A")
    gate(r, "manifest", "sign", "--staged", check=0)
    git(r, "commit", "-q", "--no-verify", "-m", "adopt mergegate")
    commit(r, production, "production")
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=r, env=clean_env(precommit_env()),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return r


@pytest.fixture
def repo(tmp_path: Path, hook_repo: tuple[str, str]) -> Path:
    return precommit_repo(tmp_path / "r", hook_repo, {"src/shop.py": "def total(xs):\n    return sum(xs)\n"})


def do_commit(repo: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    full = precommit_env() | (env or {})
    proc = git(repo, "commit", "-q", "-m", "msg", *args, env=full, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_hook_manifest_is_valid_for_pre_commit() -> None:
    cmd = [sys.executable, "-m", "pre_commit", "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml")]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mixed_commit_refused(repo: Path) -> None:
    write(repo, {"src/shop.py": "x = 1\n", "oracles/properties/test_x.py": "def test_x(): pass\n"})
    git(repo, "add", "-A")
    code, out = do_commit(repo)
    assert code == 1
    assert "gate-no-mix" in out and "production: src/shop.py" in out


def test_oracle_only_commit_resigned_then_accepted(repo: Path) -> None:
    write(repo, {"oracles/properties/test_x.py": "def test_x(): pass\n"})
    git(repo, "add", "-A")
    code, out = do_commit(repo)
    assert code == 1 and "re-signed, stage it" in out
    git(repo, "add", M)
    code, out = do_commit(repo)
    assert code == 0, out
    gate(repo, "manifest", "verify", "--rev", "HEAD", check=0)


def test_stale_manifest_refused(repo: Path) -> None:
    commit(repo, {"oracles/fixtures/a.json": "[]"}, "sneaked past with --no-verify")
    write(repo, {"src/shop.py": "x = 2\n"})
    git(repo, "add", "-A")
    code, out = do_commit(repo)
    assert code == 1 and "does not verify" in out


def test_agent_commit_on_guarded_path_refused(repo: Path) -> None:
    write(repo, {"freeze_ledger.yaml": (repo / "freeze_ledger.yaml").read_text() + "# spend it\n"})
    git(repo, "add", "-A")
    code, out = do_commit(repo, env=AGENT)
    assert code == 1 and "gate-guard" in out and "freeze_ledger.yaml" in out
    code, out = do_commit(repo, env={"GATE_AGENT": "1"})
    assert code == 1 and "GATE_AGENT=1" in out


def test_commit_all_and_commit_paths_judged_on_the_right_index(repo: Path) -> None:
    write(repo, {"src/shop.py": "x = 3\n", "oracles/fixtures/b.json": "[]"})
    git(repo, "add", "oracles/fixtures/b.json")
    code, out = do_commit(repo, "--", "src/shop.py")  # commits production only
    assert code == 0, out
    write(repo, {"src/shop.py": "x = 4\n"})
    code, out = do_commit(repo, "-a")  # the staged fixture plus the tracked production edit
    assert code == 1 and "production: src/shop.py" in out


def test_rename_symlink_and_newline(repo: Path) -> None:
    git(repo, "mv", "src/shop.py", "oracles/properties/shop.py")
    code, out = do_commit(repo)
    assert code == 1 and "production: src/shop.py" in out
    git(repo, "mv", "oracles/properties/shop.py", "src/shop.py")
    os.symlink("../../src/shop.py", repo / "oracles/properties/test_link.py")
    git(repo, "add", "-A")
    code, out = do_commit(repo)
    assert code == 1 and "symlink in a guarded tree" in out
    git(repo, "rm", "-q", "--cached", "oracles/properties/test_link.py")
    (repo / "oracles/properties/test_link.py").unlink()
    write(repo, {"oracles/fixtures/new\nline.json": "[]"})
    git(repo, "add", "-A")
    assert do_commit(repo)[0] == 1
    git(repo, "add", M)
    code, out = do_commit(repo)
    assert code == 0, out


def test_first_commit_through_pre_commit(tmp_path: Path, hook_repo: tuple[str, str]) -> None:
    url, sha = hook_repo
    r = init_repo(tmp_path / "first", gate_init=False)
    gate(r, "init", check=0)
    write(r, {".pre-commit-config.yaml": f"repos:\n  - repo: {url}\n    rev: {sha}\n    hooks:\n"
              "      - id: gate-no-mix\n      - id: gate-manifest\n"})
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=r, env=clean_env(precommit_env()), check=True,
                   capture_output=True)
    git(r, "add", "-A")
    code, out = do_commit(r)
    assert code == 1 and "re-signed" in out  # the config joined the guarded set after init signed
    git(r, "add", M)
    code, out = do_commit(r)
    assert code == 0, out
