"""Everyday use: gate uninstall, the queue's state following the index, advice that never opens an editor."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.helpers import commit, gate, git, init_repo
from tests.test_drafter_queue import SHOP, enqueue

SRC = Path(__file__).resolve().parents[1] / "src" / "mergegate"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "r")
    commit(r, {"src/shop.py": SHOP}, "production")
    return r


def test_uninstall_removes_only_the_gates_hooks(repo: Path, tmp_path: Path) -> None:
    hooks = repo / ".git/hooks"
    gate(repo, "install", check=0)
    other = hooks / "commit-msg"
    other.write_text("#!/bin/sh\nexit 0\n")
    assert "removed" in gate(repo, "uninstall", check=0).stdout
    assert not (hooks / "pre-commit").exists() and other.exists()
    assert "no hook" in gate(repo, "uninstall", check=0).stdout
    mine = "#!/bin/sh\necho my own pre-commit\n"
    (hooks / "pre-commit").write_text(mine)
    assert "not written by mergegate" in gate(repo, "uninstall", check=0).stdout
    assert (hooks / "pre-commit").read_text() == mine
    bare = tmp_path / "server.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    gate(repo, "install", "--pre-receive", str(bare), check=0)
    (bare / "hooks/post-receive").write_text("#!/bin/sh\n")
    assert "removed" in gate(repo, "uninstall", "--pre-receive", str(bare), check=0).stdout
    assert not (bare / "hooks/pre-receive").exists() and (bare / "hooks/post-receive").exists()


def test_uninstall_names_the_pre_commit_config(repo: Path) -> None:
    gate(repo, "init", "--pre-commit-config", check=0)
    out = gate(repo, "uninstall", check=0).stdout
    assert ".pre-commit-config.yaml" in out and "pre-commit uninstall" in out


def test_queue_state_follows_the_index(repo: Path) -> None:
    cid = enqueue(repo)
    gate(repo, "queue", "accept", cid[:8], "--reviewed", check=0)
    assert re.search(rf"{cid[:12]}\s+accepted", gate(repo, "queue", "list", "--all", check=0).stdout)
    # A person drops the staged change: the queue no longer claims it was accepted.
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfd", "--", "oracles")
    out = gate(repo, "queue", "list", "--all", check=0).stdout
    assert re.search(rf"{cid[:12]}\s+discarded", out) and "accepted " not in out, out
    assert '"state": "discarded"' in gate(repo, "queue", "list", "--all", "--json", check=0).stdout


def test_queue_state_accepted_once_committed(repo: Path) -> None:
    cid = enqueue(repo)
    gate(repo, "queue", "accept", cid[:8], "--reviewed", check=0)
    git(repo, "commit", "-q", "--no-verify", "-m", "oracle: accept")
    assert re.search(rf"{cid[:12]}\s+accepted", gate(repo, "queue", "list", "--all", check=0).stdout)


def _advice_strings() -> list[tuple[str, str]]:
    """Every string constant of the gate's source but docstrings: what it prints."""
    found = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and n.body
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                found.append((f"{path.relative_to(SRC)}:{node.lineno}", node.value))
    return found


# A git command that may open an editor, as advice: "git commit", "git merge X", "git rebase --continue" ...
EDITOR = re.compile(r"\bgit (?:commit|merge|revert|rebase --continue|cherry-pick --continue)(?![-\w])"
                    r"(?! exited| failed)[^`'\")\n,;]*")
QUIET = re.compile(r"\s(?:-m|-F|--no-edit|--message|--file)\b")


def test_no_advice_opens_an_editor() -> None:
    """Every git command the gate tells a person to run names its message (-m) or takes none (--no-edit)."""
    bad = [f"{where}: {m.group()}" for where, text in _advice_strings() for m in EDITOR.finditer(text)
           if not QUIET.search(m.group()) and "GIT_EDITOR=true " + m.group() not in text]
    assert bad == []
    assert EDITOR.search("finish it (git commit, git rebase --continue)")  # what the old advice said
