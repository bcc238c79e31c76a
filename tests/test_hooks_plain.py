"""The client checks as `gate install` writes them: real commits through a real git hook."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import AGENT, commit, gate, git, init_repo, write

M = "oracles/MANIFEST.sha256"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "r")
    commit(r, {"src/shop.py": "def total(xs):\n    return sum(xs)\n", "README.md": "shop\n"}, "production")
    gate(r, "install", check=0)
    return r


def do_commit(repo: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = git(repo, "commit", "-q", "-m", "msg", *args, env=env, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").stdout.strip()


def test_mixed_commit_refused_with_both_sides_and_the_fix(repo: Path) -> None:
    write(repo, {"src/shop.py": "x = 1\n", "oracles/properties/test_x.py": "def test_x(): pass\n"})
    git(repo, "add", "-A")
    code, out = do_commit(repo)
    assert code == 1
    assert "guarded:    oracles/properties/test_x.py" in out
    assert "production: src/shop.py" in out
    assert 'fix: gate commit --split -m "<message>"' in out
    assert "git restore --staged -- src/shop.py" in out  # by hand: the oracle first, then production
    assert 'git commit -m "oracle: <message>"' in out and "    git commit\n" not in out


def test_oracle_only_commit_resigned_then_accepted(repo: Path) -> None:
    before = head(repo)
    write(repo, {"oracles/properties/test_x.py": "def test_x(): pass\n"})
    git(repo, "add", "-A")
    code, out = do_commit(repo)
    assert code == 1 and "re-signed, stage it: git add oracles/MANIFEST.sha256" in out
    assert head(repo) == before
    git(repo, "add", M)
    assert do_commit(repo)[0] == 0
    gate(repo, "manifest", "verify", "--rev", "HEAD", check=0)


def test_stale_manifest_refused_on_a_production_commit(repo: Path) -> None:
    commit(repo, {"oracles/fixtures/a.json": "[]"}, "sneaked past with --no-verify")
    write(repo, {"src/shop.py": "x = 2\n"})
    git(repo, "add", "-A")
    code, out = do_commit(repo)
    assert code == 1
    assert "does not verify" in out and "missing: oracles/fixtures/a.json" in out


@pytest.mark.parametrize("how", ["env", "author"])
@pytest.mark.parametrize("path", ["oracles/properties/test_x.py", "freeze_ledger.yaml", "gate.yaml"])
def test_agent_commit_on_guarded_path_refused(repo: Path, how: str, path: str) -> None:
    write(repo, {path: (repo / path).read_text() + "\n# agent\n" if (repo / path).exists() else "x = 1\n"})
    git(repo, "add", "-A")
    env = {"GATE_AGENT": "1"} if how == "env" else AGENT
    code, out = do_commit(repo, env=env)
    assert code == 1
    assert "gate-guard: an agent's commit" in out and path in out


def test_agent_production_commit_allowed(repo: Path) -> None:
    write(repo, {"src/shop.py": "x = 3\n"})
    git(repo, "add", "-A")
    assert do_commit(repo, env=AGENT)[0] == 0


def test_agent_author_flag_is_seen(repo: Path) -> None:
    write(repo, {"oracles/fixtures/a.json": "[]"})
    git(repo, "add", "-A")
    code, out = do_commit(repo, "--author=coder <coder[bot]@example.com>")
    assert code == 1 and "author coder[bot]@example.com matches agents.authors" in out


def test_commit_all_is_judged_on_the_index_git_commits(repo: Path) -> None:
    sign = {"oracles/fixtures/a.json": "[]"}
    from tests.helpers import sign_and_commit

    sign_and_commit(repo, sign)
    # Only the oracle change is staged, but -a adds the tracked production edit too.
    write(repo, {"src/shop.py": "x = 4\n", "oracles/fixtures/a.json": "[1]"})
    git(repo, "add", "oracles/fixtures/a.json")
    git(repo, "restore", "--staged", "src/shop.py")
    code, out = do_commit(repo, "-a")
    assert code == 1 and "production: src/shop.py" in out


def test_commit_paths_is_judged_on_those_paths_only(repo: Path) -> None:
    # The index holds a mixed change, but `git commit src/shop.py` commits production only.
    write(repo, {"src/shop.py": "x = 5\n", "oracles/fixtures/b.json": "[]"})
    git(repo, "add", "-A")
    code, out = do_commit(repo, "--", "src/shop.py")
    assert code == 0, out
    # and the reverse: committing only the guarded path is an oracle-only commit (re-sign asked)
    code, out = do_commit(repo, "--", "oracles/fixtures/b.json")
    assert code == 1 and "re-signed, stage it" in out


def test_first_commit_of_a_repository(tmp_path: Path) -> None:
    r = init_repo(tmp_path / "fresh", gate_init=False)
    gate(r, "init", check=0)
    gate(r, "install", check=0)
    git(r, "add", "-A")
    code, out = do_commit(r)
    assert code == 0, out
    write(r, {"src/a.py": "1\n", "oracles/fixtures/x": "2"})
    git(r, "add", "-A")
    assert do_commit(r)[0] == 1


def test_first_commit_mixing_is_refused(tmp_path: Path) -> None:
    r = init_repo(tmp_path / "fresh", gate_init=False)
    gate(r, "init", check=0)
    gate(r, "install", check=0)
    write(r, {"src/a.py": "1\n"})
    git(r, "add", "-A")
    code, out = do_commit(r)
    assert code == 1 and "production: src/a.py" in out


def test_rename_from_src_into_oracles_is_a_mix(repo: Path) -> None:
    git(repo, "mv", "src/shop.py", "oracles/properties/shop.py")
    code, out = do_commit(repo)
    assert code == 1
    assert "production: src/shop.py" in out and "guarded:    oracles/properties/shop.py" in out


def test_symlink_planted_in_oracle_tree(repo: Path) -> None:
    os.symlink("../../src/shop.py", repo / "oracles/properties/test_link.py")
    git(repo, "add", "-A")
    code, out = do_commit(repo)
    assert code != 0
    assert "is a symlink in a guarded tree" in out
    assert git(repo, "log", "--oneline").stdout.count("\n") == 2


def test_symlink_is_an_agent_guarded_edit_too(repo: Path) -> None:
    os.symlink("../../src/shop.py", repo / "oracles/properties/test_link.py")
    git(repo, "add", "-A")
    code, out = do_commit(repo, env={"GATE_AGENT": "1"})
    assert code == 1 and "gate-guard" in out


def test_path_with_a_newline(repo: Path) -> None:
    write(repo, {"oracles/fixtures/odd\nname.json": "[]", "src/odd\nname.py": "1\n"})
    git(repo, "add", "-A")
    code, out = do_commit(repo)
    assert code == 1 and "'oracles/fixtures/odd\\nname.json'" in out
    git(repo, "restore", "--staged", "--", "src/odd\nname.py")
    assert do_commit(repo)[0] == 1  # re-signed
    git(repo, "add", M)
    assert do_commit(repo)[0] == 0
    gate(repo, "manifest", "verify", "--rev", "HEAD", check=0)


def test_install_refuses_a_foreign_hook(repo: Path) -> None:
    hook = repo / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\necho mine\n")
    proc = gate(repo, "install", check=2)
    assert "was not written by mergegate" in proc.stderr
    gate(repo, "install", "--force", check=0)
    gate(repo, "install", check=0)  # ours: re-installing is fine


def test_install_honours_core_hookspath(repo: Path) -> None:
    git(repo, "config", "core.hooksPath", ".githooks")
    gate(repo, "install", check=0)
    assert (repo / ".githooks/pre-commit").is_file()


def test_worktree_commit(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(wt))
    write(wt, {"src/shop.py": "x = 9\n", "oracles/fixtures/w.json": "[]"})
    git(wt, "add", "-A")
    code, out = do_commit(wt)
    assert code == 1 and "production: src/shop.py" in out


def test_broken_policy_fails_closed(repo: Path) -> None:
    commit(repo, {"gate.yaml": "version: 1\npaths: [\n"}, "broken by --no-verify")
    write(repo, {"src/shop.py": "x = 6\n"})
    git(repo, "add", "-A")
    code, out = do_commit(repo)
    assert code != 0  # git reports any hook failure as 1; the hook itself exits 2
    assert "gate.yaml (at" in out and "not valid YAML" in out
    assert gate(repo, "hook", "all").returncode == 2


def test_merge_is_judged_on_what_it_makes_anew(repo: Path) -> None:
    from tests.helpers import sign_and_commit

    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {"src/feature.py": "F = 1\n"}, "feature work")
    git(repo, "checkout", "-q", "main")
    sign_and_commit(repo, {"oracles/fixtures/new.json": "[]"}, "oracle-only on main")
    commit(repo, {"README.md": "conflict: main\n"}, "main readme")
    git(repo, "checkout", "-q", "feature")
    commit(repo, {"README.md": "conflict: feature\n"}, "feature readme")
    # main's oracle change plus feature's production change: each was judged on its own commit
    assert git(repo, "merge", "-q", "--no-edit", "main", check=False).returncode != 0  # README conflicts
    write(repo, {"README.md": "resolved\n"})
    git(repo, "add", "README.md")
    code, out = do_commit(repo, "--no-edit")
    assert code == 0, out
    gate(repo, "manifest", "verify", "--rev", "HEAD", check=0)


def test_evil_merge_mixing_anew_is_refused(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {"README.md": "feature\n"}, "feature readme")
    git(repo, "checkout", "-q", "main")
    commit(repo, {"README.md": "main\n"}, "main readme")
    git(repo, "checkout", "-q", "feature")
    git(repo, "merge", "-q", "--no-edit", "main", check=False)
    write(repo, {"README.md": "resolved\n", "src/evil.py": "1\n", "oracles/fixtures/evil.json": "[]"})
    git(repo, "add", "-A")
    code, out = do_commit(repo, "--no-edit")
    assert code == 1
    assert "production: src/evil.py" in out and "guarded:    oracles/fixtures/evil.json" in out


def test_merge_with_an_old_ancestor_cannot_revert_an_oracle(repo: Path) -> None:
    from tests.helpers import sign_and_commit

    sign_and_commit(repo, {"oracles/properties/test_p.py": "def test_p():\n    assert 1\n"})
    old = head(repo)
    sign_and_commit(repo, {"oracles/properties/test_p.py": "def test_p():\n    assert 2\n"})
    # An agent "merges" the old ancestor and takes its oracle: a change of its own, not one brought.
    (repo / ".git/MERGE_HEAD").write_text(old + "\n")
    (repo / ".git/MERGE_MSG").write_text("merge\n")
    git(repo, "checkout", old, "--", "oracles/properties/test_p.py", M)
    code, out = do_commit(repo, env={"GATE_AGENT": "1"})
    assert code == 1 and "gate-guard" in out and "oracles/properties/test_p.py" in out
