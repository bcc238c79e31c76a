"""``gate admit`` reads a patch as ``git apply`` does: the later canaries see git's reading, never ours.

Each finding has its regression test, run through the real canaries in a real
repository; a Hypothesis differential test feeds generated patches to our
parser and to ``git apply --numstat`` and requires the same files and added lines.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergegate.pipeline import canaries as the_canaries
from mergegate.records.policy import Policy
from mergegate.rules import admission
from mergegate.rules.patchparse import DiffError, parse_diff
from tests.helpers import commit, gate, init_repo

MOD = "def keep():\n    return 1\n\n\ndef gone():\n    return 2\n"
KEY = "AKIA" + "ABCDEFGHIJKLMNOP"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    path = init_repo(tmp_path / "repo")
    commit(path, {"src/m.py": MOD, "docs/a.txt": "doc\n", "README.md": "hi\n"}, "base")
    return path


def canaries(repo: Path, diff: bytes) -> dict[str, admission.CanaryResult]:
    return {r.name: r for r in the_canaries.run_canaries(diff, "HEAD", Policy(), repo)}


def _apply_checks(repo: Path, diff: bytes) -> None:
    proc = subprocess.run(["git", "apply", "--check", "--cached", "-"], cwd=repo, input=diff, capture_output=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr  # git itself would apply each of these patches


def test_a_mail_signature_does_not_hide_a_later_file(repo: Path) -> None:
    diff = (b"diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-hi\n+hello\n"
            b"-- \n2.39.5\n\n"
            b"diff --git a/src/k.py b/src/k.py\nnew file mode 100644\n--- /dev/null\n+++ b/src/k.py\n"
            b"@@ -0,0 +1 @@\n+KEY = '" + KEY.encode() + b"'\n")
    _apply_checks(repo, diff)
    result = canaries(repo, diff)["no_secret_marker"]
    assert not result.ok and "src/k.py:1" in result.detail
    assert {f.new_path for f in parse_diff(diff).files} == {"README.md", "src/k.py"}


def test_other_path_prefixes_do_not_hide_a_removed_public_function(repo: Path) -> None:
    diff = (b"--- x/src/m.py\n+++ y/src/m.py\n@@ -1,6 +1,2 @@\n def keep():\n     return 1\n-\n-\n"
            b"-def gone():\n-    return 2\n")
    _apply_checks(repo, diff)
    result = canaries(repo, diff)["public_signature"]
    assert not result.ok and "src/m.py::gone" in result.detail
    assert parse_diff(diff).touched == ("src/m.py",)


def test_a_rename_header_disagreeing_with_its_rename_lines_does_not_hide_a_removal(repo: Path) -> None:
    diff = (b"diff --git a/docs/a.txt b/docs/b.txt\nsimilarity index 100%\n"
            b"rename from src/m.py\nrename to docs/m.txt\n")
    _apply_checks(repo, diff)
    result = canaries(repo, diff)["public_signature"]
    assert not result.ok and "src/m.py::gone" in result.detail
    assert parse_diff(diff).touched == ("docs/m.txt", "src/m.py")


def test_gate_admit_refuses_the_signature_trick(repo: Path) -> None:
    diff = (b"diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-hi\n+hello\n"
            b"-- \n2.39.5\n\n--- a/src/k.py\n+++ b/src/k.py\n@@ -0,0 +1 @@\n+K = '" + KEY.encode() + b"'\n")
    (repo / "p.diff").write_bytes(diff)
    proc = gate(repo, "admit", "p.diff", "--json")
    assert proc.returncode == 1 and '"no_secret_marker"' in proc.stdout and '"reject"' in proc.stdout, proc.stdout


@pytest.mark.parametrize("quoted", [b'"src/\\9.py"', b'"src/\\777.py"', b'"src/\\q.py"', b'"src/\\1"'])
def test_bad_escapes_in_quoted_paths_are_a_diff_error(quoted: bytes) -> None:
    diff = b"--- " + quoted + b"\n+++ " + quoted + b"\n@@ -1 +1 @@\n-a\n+b\n"
    with pytest.raises(DiffError, match="bad escape"):
        parse_diff(diff)


# ---------------------------------------------------------------- differential: our parser against git's
NAMES = st.sampled_from(["src/m.py", "src/n.py", "docs/a.txt", "t\u00e9st.py", "a b/c.py", "lib/x.py"])
LINES = st.lists(st.sampled_from(["x = 1", "-- ", "--- y", "+++ z", "@@ -1 +1 @@", "", "def f():", "  pass"]),
                 min_size=0, max_size=4)
PREFIX = st.sampled_from([("a/", "b/"), ("x/", "y/"), ("a/", "a/"), ("", "")])


@st.composite
def file_patches(draw: st.DrawFn) -> bytes:
    old_name, new_name = draw(NAMES), draw(NAMES)
    old, new = draw(LINES), draw(LINES)
    src, dst = draw(PREFIX)
    header = draw(st.sampled_from(["none", "git", "git-rename", "git-mismatch"]))
    out = []
    if header == "none":
        new_name = old_name
    elif header == "git":
        new_name = old_name
        out.append(f"diff --git {src}{old_name} {dst}{new_name}")
    else:
        shown = draw(NAMES) if header == "git-mismatch" else old_name
        out += [f"diff --git {src}{shown} {dst}{shown if header == 'git-mismatch' else new_name}",
                "similarity index 50%", f"rename from {old_name}", f"rename to {new_name}"]
    out += [f"--- {src}{old_name}", f"+++ {dst}{new_name}",
            f"@@ -{1 if old else 0},{len(old)} +{1 if new else 0},{len(new)} @@"]
    out += [f"-{line}" for line in old] + [f"+{line}" for line in new]
    if draw(st.booleans()):
        out += ["-- ", "2.39.5", ""]
    return ("\n".join(out) + "\n").encode()


def git_numstat(diff: bytes, cwd: Path) -> list[tuple[str, int]] | None:
    proc = subprocess.run(["git", "apply", "--numstat", "-z", "-"], cwd=cwd, input=diff, capture_output=True,
                          check=False)
    if proc.returncode != 0:
        return None
    fields, out = proc.stdout.split(b"\0"), []
    i = 0
    while i < len(fields) and fields[i]:
        added, _deleted, path = fields[i].split(b"\t", 2)
        if not path:  # a rename: old and new follow as their own fields
            path, i = fields[i + 2], i + 2
        out.append((path.decode("utf-8", "surrogateescape"), int(added)))
        i += 1
    return sorted(out)


def ours(diff: bytes) -> list[tuple[str, int]] | None:
    try:
        parsed = parse_diff(diff)
    except DiffError:
        return None
    return sorted((f.new_path or f.old_path or "", len(f.added)) for f in parsed.files)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(file_patches(), min_size=1, max_size=3), st.text("ab\n-+ ", max_size=20))
def test_our_reading_is_gits_or_a_refusal(tmp_path: Path, files: list[bytes], preamble: str) -> None:
    diff = (preamble + "\n").encode() + b"".join(files) if preamble.strip() else b"".join(files)
    theirs = git_numstat(diff, tmp_path)
    mine = ours(diff)
    if theirs is not None and mine is not None:
        assert mine == theirs, diff
    if mine is not None:
        assert theirs is not None, diff  # we never read a patch git refuses


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(file_patches(), min_size=1, max_size=3))
def test_plain_git_patches_are_read(tmp_path: Path, files: list[bytes]) -> None:
    """Not vacuous: a patch git reads is read by us too unless it is one of the refused shapes."""
    diff = b"".join(files)
    if git_numstat(diff, tmp_path) is not None and b"--- /" not in diff:
        assert ours(diff) is not None or b"diff --git" in diff or b"@@ -0,0 +0,0 @@" in diff, diff
