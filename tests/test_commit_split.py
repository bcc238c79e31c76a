"""`gate commit --split`: a staged fix and its test become an oracle commit, then the fix on top.

Real repositories, the real installed hooks (`gate install` and the `pre-commit` client), and
`gate check` on the result: the new test sits on the base, fails there and passes on the head.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import AGENT, commit, gate, git, init_repo, write
from tests.test_hooks_precommit import hook_repo, precommit_env, precommit_repo  # noqa: F401 (a fixture)

M = "oracles/MANIFEST.sha256"
OPS = "src/calc/ops.py"
BUGGY = "def double(x):\n    return x * x\n"
FIXED = "def double(x):\n    return 2 * x\n"
TEST = "oracles/properties/test_double.py"
ENTRY = "oracles/catalog/prop.double.yaml"
CLAIMED = "oracles/catalog/claimed.yaml"
ORACLE_FILES = {
    TEST: "from hypothesis import given, strategies as st\nfrom calc.ops import double\n\n\n"
          "@given(st.integers(-1000, 1000))\ndef test_double_is_twice(x):\n    assert double(x) == 2 * x\n",
    ENTRY: "id: prop.double\noracle: oracles/properties/test_double.py::test_double_is_twice\n"
           'claim: "double(x) is twice x"\ncanary: false\nquarantine_eligible: false\nfixtures: []\n'
           'max_examples: 20\ncovers: ["src/calc/ops.py"]\n',
    CLAIMED: "claimed: [prop.double]\n",
}
MESSAGE = "calc: double doubles\n\nIt squared."


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a bug in production and `gate install`'s hook, wrapped to log each run."""
    r = init_repo(tmp_path / "r")
    commit(r, {"src/calc/__init__.py": "", OPS: BUGGY}, "calc")
    gate(r, "install", check=0)
    hooks = r / ".git/hooks"
    (hooks / "pre-commit").rename(hooks / "gate-pre-commit")
    write(r, {".git/hooks/pre-commit": '#!/bin/sh\n"$(dirname "$0")/gate-pre-commit"\ncode=$?\n'
              'echo "$code $(git write-tree)" >> "$(git rev-parse --git-dir)/hook.log"\nexit $code\n'})
    os.chmod(hooks / "pre-commit", 0o755)
    return r


def stage_fix(r: Path) -> None:
    """The fix and its new test, staged together (what 14 of 20 bug-fix commits look like)."""
    write(r, {OPS: FIXED, **ORACLE_FILES})
    git(r, "add", "-A")


def rev(r: Path, name: str = "HEAD") -> str:
    return git(r, "rev-parse", name).stdout.strip()


def touched(r: Path, old: str, new: str) -> set[str]:
    return set(git(r, "diff-tree", "-r", "--name-only", "--no-renames", old, new).stdout.split())


def state(r: Path) -> tuple[str, str, str]:
    """HEAD, the index (every entry) and the work tree's changes against it."""
    return rev(r), git(r, "ls-files", "--stage").stdout, git(r, "diff").stdout


def split(r: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return gate(r, "commit", "--split", *args, env=env)


def test_mixed_change_becomes_oracle_commit_then_fix(repo: Path) -> None:
    before = rev(repo)
    stage_fix(repo)
    assert git(repo, "commit", "-q", "-m", "both", check=False).returncode == 1  # the live hook refuses the mix
    proc = split(repo, "-m", MESSAGE)
    assert proc.returncode == 0, proc.stderr
    first, second = rev(repo, "HEAD~1"), rev(repo)
    assert rev(repo, "HEAD~2") == before
    assert touched(repo, before, first) == {TEST, ENTRY, CLAIMED, M}
    assert touched(repo, first, second) == {OPS}
    assert git(repo, "log", "-1", "--format=%s", first).stdout.strip() == "oracle: calc: double doubles"
    assert git(repo, "log", "-1", "--format=%B", second).stdout.strip() == MESSAGE
    for commit_ in (first, second):
        gate(repo, "manifest", "verify", "--rev", commit_, check=0)
    assert rev(repo, f"{first}:{M}") == rev(repo, f"{second}:{M}")
    assert git(repo, "diff", "--cached", "--quiet", "HEAD", check=False).returncode == 0  # index == commit 2
    assert git(repo, "status", "--porcelain").stdout == ""  # the manifest on disk was refreshed too
    log = (repo / ".git/hook.log").read_text().split("\n")
    assert log[-3:] == [f"0 {rev(repo, f'{first}^{{tree}}')}", f"0 {rev(repo, f'{second}^{{tree}}')}", ""]
    assert f"gate check --base {first} --head {second}" in proc.stdout


def test_gate_check_judges_the_fix_with_its_test_on_the_base(repo: Path) -> None:
    stage_fix(repo)
    gate(repo, "commit", "--split", "-m", MESSAGE, "--oracle-message", "test: double is twice", check=0)
    first, second = rev(repo, "HEAD~1"), rev(repo)
    assert git(repo, "log", "-1", "--format=%s", first).stdout.strip() == "test: double is twice"
    proc = gate(repo, "check", "--base", first, "--head", second, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    prop = {p["prop"]: p for p in data["properties"]}["prop.double"]
    assert (prop["verdict"], prop["reason"]) == ("pass", "parent_fail_cleared")
    assert data["decision"] != "reject" and data["reason"] != "independence"
    edited = json.loads((Path(data["evidence"]) / "oracle_edited.json").read_text())
    assert edited["split"]["mixed"] is False and edited["split"]["guarded"] == [] and edited["oracle_edited"] == []
    # The same change in one commit is rejected for mixing, and the new test never judged the fix.
    git(repo, "reset", "-q", "--soft", "HEAD~2")
    git(repo, "commit", "-q", "--no-verify", "-m", "both")
    proc = gate(repo, "check", "--base", "HEAD~1", "--head", "HEAD", "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["decision"] == "reject"


def test_unstaged_and_untracked_work_survive(repo: Path) -> None:
    stage_fix(repo)
    write(repo, {OPS: FIXED + "# wip\n", TEST: ORACLE_FILES[TEST] + "# more cases soon\n", "notes.txt": "todo\n"})
    before = {p: (repo / p).read_text() for p in (OPS, TEST, "notes.txt")}
    gate(repo, "commit", "--split", "-m", MESSAGE, check=0)
    assert {p: (repo / p).read_text() for p in before} == before
    assert git(repo, "show", f"HEAD:{OPS}").stdout == FIXED
    assert git(repo, "show", f"HEAD~1:{TEST}").stdout == ORACLE_FILES[TEST]
    assert set(git(repo, "diff", "--name-only").stdout.split()) == {OPS, TEST}
    assert git(repo, "ls-files", "--others", "--exclude-standard").stdout.split() == ["notes.txt"]


def test_hook_refusing_the_second_commit_rolls_everything_back(repo: Path) -> None:
    write(repo, {".git/hooks/commit-msg": "#!/bin/sh\ngrep -q '^oracle:' \"$1\" || "
                 "{ echo 'commit-msg: only oracle commits today' >&2; exit 1; }\n"})
    os.chmod(repo / ".git/hooks/commit-msg", 0o755)
    stage_fix(repo)
    write(repo, {OPS: FIXED + "# wip\n"})
    before = state(repo)
    proc = split(repo, "-m", MESSAGE)
    assert proc.returncode == 1
    assert "only oracle commits today" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("gate commit: the production commit was refused")
    assert state(repo) == before
    assert not (repo / ".git/index.lock").exists()


def test_signing_failure_changes_nothing(repo: Path) -> None:
    stage_fix(repo)
    os.symlink("../../src/calc/ops.py", repo / "oracles/fixtures/link.py")
    git(repo, "add", "-A")
    before = state(repo)
    proc = split(repo, "-m", MESSAGE)
    assert proc.returncode == 2 and "symlink in a guarded tree" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert state(repo) == before and not (repo / ".git/index.lock").exists()


def test_a_held_index_lock_is_respected(repo: Path) -> None:
    stage_fix(repo)
    (repo / ".git/index.lock").write_text("")
    proc = split(repo, "-m", MESSAGE)
    assert proc.returncode == 2 and "index.lock exists" in proc.stderr
    assert (repo / ".git/index.lock").exists()


def one_line_refusal(r: Path, proc: subprocess.CompletedProcess[str], head: str, *words: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gate commit: ") and "; fix: " in lines[0], proc.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert rev(r) == head


def test_nothing_staged(repo: Path) -> None:
    one_line_refusal(repo, split(repo, "-m", MESSAGE), rev(repo), "nothing staged")


@pytest.mark.parametrize("side", ["production", "oracle"])
def test_change_that_does_not_mix_is_for_plain_git_commit(repo: Path, side: str) -> None:
    write(repo, {OPS: FIXED} if side == "production" else ORACLE_FILES)
    git(repo, "add", "-A")
    one_line_refusal(repo, split(repo, "-m", MESSAGE), rev(repo), "does not mix", "just git commit -m")


def test_message_is_required_and_no_editor_opens(repo: Path) -> None:
    stage_fix(repo)
    env = {"GIT_EDITOR": "false", "EDITOR": "false"}
    one_line_refusal(repo, split(repo, env=env), rev(repo), "-m MESSAGE is missing")
    one_line_refusal(repo, split(repo, "-m", "  ", env=env), rev(repo), "-m MESSAGE is missing")
    one_line_refusal(repo, gate(repo, "commit", "-m", MESSAGE), rev(repo), "--split")


@pytest.mark.parametrize("env", [{"GATE_AGENT": "1"}, AGENT], ids=["GATE_AGENT", "bot-author"])
def test_an_agent_may_not_make_the_oracle_commit(repo: Path, env: dict[str, str]) -> None:
    stage_fix(repo)
    one_line_refusal(repo, split(repo, "-m", MESSAGE, env=env), rev(repo), "an agent", "may not make the oracle")


def test_merge_in_progress(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "side")
    commit(repo, {"src/calc/more.py": "x = 1\n"}, "side")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "--no-commit", "side")
    stage_fix(repo)
    one_line_refusal(repo, split(repo, "-m", MESSAGE), rev(repo), "a merge is in progress")


def test_rebase_in_progress(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "side")
    commit(repo, {OPS: "def double(x):\n    return x + x + 0\n"}, "side")
    git(repo, "checkout", "-q", "main")
    commit(repo, {OPS: FIXED}, "main")
    git(repo, "checkout", "-q", "side")
    assert git(repo, "rebase", "main", check=False).returncode != 0  # stops on the conflict
    write(repo, {OPS: FIXED, **ORACLE_FILES})
    git(repo, "add", "-A")
    one_line_refusal(repo, split(repo, "-m", MESSAGE), rev(repo), "a rebase is in progress")


def test_first_commit_of_a_repository(tmp_path: Path) -> None:
    r = init_repo(tmp_path / "fresh", gate_init=False)
    gate(r, "init", check=0)
    write(r, {"src/calc/__init__.py": "", OPS: FIXED})
    git(r, "add", "-A")
    gate(r, "commit", "--split", "-m", "calc", check=0)
    assert git(r, "rev-list", "--count", "HEAD").stdout.strip() == "2"
    assert touched(r, "HEAD~1", "HEAD") == {"src/calc/__init__.py", OPS}
    gate(r, "manifest", "verify", "--rev", "HEAD~1", check=0)
    gate(r, "manifest", "verify", "--rev", "HEAD", check=0)


@pytest.mark.slow
def test_through_the_pre_commit_client(tmp_path: Path, hook_repo: tuple[str, str]) -> None:  # noqa: F811
    r = precommit_repo(tmp_path / "pc", hook_repo, {"src/calc/__init__.py": "", OPS: BUGGY})
    before = rev(r)
    stage_fix(r)
    write(r, {OPS: FIXED + "# wip\n", "notes.txt": "todo\n"})
    proc = split(r, "-m", MESSAGE, env=precommit_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rev(r, "HEAD~2") == before
    assert touched(r, before, "HEAD~1") == {TEST, ENTRY, CLAIMED, M}
    assert touched(r, "HEAD~1", "HEAD") == {OPS}
    gate(r, "manifest", "verify", "--rev", "HEAD~1", check=0)
    gate(r, "manifest", "verify", "--rev", "HEAD", check=0)
    assert (r / OPS).read_text() == FIXED + "# wip\n" and (r / "notes.txt").read_text() == "todo\n"
    assert git(r, "diff", "--cached", "--quiet", "HEAD", check=False).returncode == 0
    # the client really ran: it refuses the same mix when committed in one go
    git(r, "reset", "-q", "--soft", "HEAD~2")
    proc = git(r, "commit", "-q", "-m", "both", env=precommit_env(), check=False)
    assert proc.returncode == 1 and "gate commit --split" in proc.stdout + proc.stderr
