"""No gate command leaves the manifest not verifying without saying so; bytecode never reaches it."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import commit, gate, git, init_repo, write


def _fresh(path: Path) -> Path:
    return init_repo(path, gate_init=False)


def test_init_then_pre_commit_config_still_verifies(tmp_path: Path) -> None:
    repo = _fresh(tmp_path / "r")
    gate(repo, "init", check=0)
    out = gate(repo, "init", "--pre-commit-config", check=0).stdout
    assert "created  .pre-commit-config.yaml" in out and "re-signed oracles/MANIFEST.sha256" in out
    git(repo, "add", "-A")
    gate(repo, "manifest", "verify", "--staged", check=0)
    git(repo, "commit", "-q", "--no-verify", "-m", "Adopt mergegate")
    gate(repo, "manifest", "verify", "--rev", "HEAD", check=0)


def test_init_says_when_the_manifest_does_not_verify_and_how(tmp_path: Path) -> None:
    repo = _fresh(tmp_path / "r")
    gate(repo, "init", check=0)
    write(repo, {"oracles/properties/test_a.py": "def test_a():\n    assert True\n"})  # a person's own, unsigned
    out = gate(repo, "init", "--pre-commit-config", check=0).stdout
    assert "does not verify" in out and "missing: oracles/properties/test_a.py" in out
    assert "gate manifest sign --staged" in out
    assert "oracles/properties/test_a.py" not in (repo / "oracles/MANIFEST.sha256").read_text()  # not signed for them


def test_bytecode_is_ignored_and_never_signed(tmp_path: Path) -> None:
    repo = _fresh(tmp_path / "r")
    gate(repo, "init", check=0)
    write(repo, {"oracles/properties/test_a.py": "def test_a():\n    assert True\n",
                 "oracles/properties/__pycache__/test_a.cpython-311.pyc": b"\x00bytecode",
                 "oracles/properties/helper.pyc": b"\x00bytecode"})
    git(repo, "add", "-A")
    staged = git(repo, "diff", "--cached", "--name-only").stdout
    assert "__pycache__" not in staged and ".pyc" not in staged and "test_a.py" in staged
    gate(repo, "manifest", "sign", "--staged", check=0)
    git(repo, "add", "-f", "oracles/properties/__pycache__/test_a.cpython-311.pyc")
    proc = gate(repo, "manifest", "sign", "--staged")
    assert proc.returncode == 2
    assert "test_a.cpython-311.pyc is Python bytecode" in proc.stderr and "git rm -r --cached" in proc.stderr


def test_check_shows_the_manifest_lines(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    # A person adds a guarded file without re-signing (hooks skipped): the manifest no longer verifies.
    commit(repo, {".pre-commit-config.yaml": "repos: []\n", "src/app.py": "X = 1\n"}, "config")
    git(repo, "checkout", "-q", "-b", "fix")
    commit(repo, {"src/app.py": "X = 2\n"}, "fix")
    proc = gate(repo, "check", "--base", "main", "--evidence", str(tmp_path / "ev"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "decision: reject (manifest_mismatch)" in proc.stdout
    assert "missing: .pre-commit-config.yaml" in proc.stdout and "gate manifest sign --staged" in proc.stdout
    summary = (tmp_path / "ev" / "summary.md").read_text()
    assert "missing: .pre-commit-config.yaml" in summary and "gate manifest sign --staged" in summary


def test_init_never_signs_for_a_committed_file_it_made_again(tmp_path: Path) -> None:
    """Deleting claimed.yaml and letting init write its empty template back is a change a person signs."""
    repo = init_repo(tmp_path / "r")
    write(repo, {"oracles/catalog/claimed.yaml": "claimed: [prop.a]\n"})
    git(repo, "add", "-A")
    gate(repo, "manifest", "sign", "--staged", check=0)
    git(repo, "commit", "-q", "--no-verify", "-m", "claims")
    (repo / "oracles/catalog/claimed.yaml").unlink()
    out = gate(repo, "init", check=0).stdout
    assert "created  oracles/catalog/claimed.yaml" in out and "re-signed" not in out
    assert "changed: oracles/catalog/claimed.yaml" in out and "gate manifest sign --staged" in out
