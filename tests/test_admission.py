"""Seed 002: the class table, trials T1-T5, and the real canaries in a real repository."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import pytest

from mergegate.pipeline import canaries as the_canaries
from mergegate.records.ledger import Entry
from mergegate.records.policy import Policy
from mergegate.rules import admission
from mergegate.rules.admission import Check, Kind, admit, blob_id
from mergegate.rules.patchparse import DiffError, parse_diff
from tests.helpers import commit, git, init_repo

DIFF = b"--- a/calc.py\n+++ b/calc.py\n@@\n-return a - b\n+return a + b\n"
NOW = dt.datetime(2026, 9, 20, tzinfo=dt.UTC)


# ---------------------------------------------------------------- trials T1-T5 (the seed's vectors)
T1 = [Check("parse_diff", True, False, Kind.PROP_PASS), Check("no_secret_marker", True, False, Kind.PROP_PASS),
      Check("add_commutes", False, True, Kind.PROP_PASS)]
T2 = [Check("parse_diff", True, False, Kind.CANARY_FAIL), Check("slow_integration", False, True, Kind.FREEZE_HIT)]
T3 = [Check("parse_diff", True, False, Kind.PROP_PASS), Check("add_commutes", False, True, Kind.PROP_FAIL)]
T5 = [Check("parse_diff", True, False, Kind.PROP_PASS), Check("slow_integration", False, True, Kind.FREEZE_HIT)]
BID = hashlib.sha256(DIFF).hexdigest()


@pytest.mark.parametrize(
    ("diff", "checks", "freezes", "expected"),
    [
        pytest.param(DIFF, T1, set(), {"blob": BID, "verdict": "admit", "held": []}, id="T1"),
        pytest.param(DIFF, T2, {"slow_integration"}, {
            "blob": BID, "verdict": "reject", "canary_bad": ["parse_diff"], "illegal_freeze": [],
            "uncovered_fail": []}, id="T2"),
        pytest.param(DIFF, T3, set(), {
            "blob": BID, "verdict": "reject", "canary_bad": [], "illegal_freeze": [],
            "uncovered_fail": ["add_commutes"]}, id="T3"),
        pytest.param(b"  ", [], set(), {"blob": None, "verdict": "reject", "reason": "empty_blob"}, id="T4"),
        pytest.param(b"", [], set(), {"blob": None, "verdict": "reject", "reason": "empty_blob"}, id="T4-empty"),
        pytest.param(DIFF, T5, {"slow_integration"}, {"blob": BID, "verdict": "hold", "held": ["slow_integration"]},
                     id="T5"),
    ],
)
def test_trials(diff: bytes, checks: list[Check], freezes: set[str], expected: dict[str, object]) -> None:
    assert admit(diff, checks, freezes) == expected


# ---------------------------------------------------------------- the class table, row by row
def test_class_blob_ok() -> None:
    assert blob_id(DIFF) == BID and admit(DIFF, [], set())["blob"] == BID


@pytest.mark.parametrize("diff", [DIFF, b""])
def test_class_infra_stops_the_trial_and_never_freezes(diff: bytes) -> None:
    result = admit(diff, T5, {"slow_integration"}, channel_infra=True)
    assert result["verdict"] == "reject" and result["reason"] == "infra"
    assert "held" not in result


def test_class_canary_fail_rejects_even_with_freeze_row() -> None:
    checks = [Check("apply_check", True, True, Kind.CANARY_FAIL)]
    assert admit(DIFF, checks, {"apply_check"})["canary_bad"] == ["apply_check"]


@pytest.mark.parametrize(
    ("eligible", "frozen", "verdict"),
    [(True, True, "hold"), (True, False, "reject"), (False, True, "reject"), (False, False, "reject")],
)
def test_class_prop_fail(eligible: bool, frozen: bool, verdict: str) -> None:
    checks = [Check("p", False, eligible, Kind.PROP_FAIL)]
    assert admit(DIFF, checks, {"p"} if frozen else set())["verdict"] == verdict


def test_class_prop_pass_counts() -> None:
    assert admit(DIFF, [Check("p", False, False, Kind.PROP_PASS)], {"p"})["verdict"] == "admit"


def test_class_freeze_hit_without_row_is_illegal() -> None:
    result = admit(DIFF, [Check("p", False, True, Kind.FREEZE_HIT)], set())
    assert result["verdict"] == "reject" and result["illegal_freeze"] == ["p"]


def test_class_freeze_hit_on_canary_is_bad_canary() -> None:
    result = admit(DIFF, [Check("parse_diff", True, True, Kind.FREEZE_HIT)], {"parse_diff"})
    assert result["canary_bad"] == ["parse_diff"]


# ---------------------------------------------------------------- freeze rows (step 8)
ROW = Entry(id="FZ-1", prop_id="slow_integration", signature="s", fixture_digest="d", base_revision="r",
            paths=("src/**",), reason="r", opened_by="pat", opened_at=NOW, expires_at=NOW + dt.timedelta(days=1))


@pytest.mark.parametrize(
    ("test_id", "touched", "eligible", "now", "usable"),
    [
        ("slow_integration", ["src/a.py"], True, NOW, True),
        ("other", ["src/a.py"], True, NOW, False),
        ("slow_integration", ["docs/a.md"], True, NOW, False),
        ("slow_integration", ["src/a.py"], False, NOW, False),
        ("slow_integration", ["src/a.py"], True, NOW + dt.timedelta(days=1), False),
    ],
    ids=["usable", "test-id", "paths", "eligibility", "expired"],
)
def test_freeze_row_needs_every_field(test_id: str, touched: list[str], eligible: bool, now: dt.datetime,
                                      usable: bool) -> None:
    assert admission.freeze_row_usable(ROW, test_id, touched, eligible, now) is usable


def test_usable_freeze_ids_never_include_canaries() -> None:
    row = Entry(**{**ROW.__dict__, "prop_id": "parse_diff"})
    checks = [Check("parse_diff", True, True, Kind.CANARY_FAIL), Check("slow_integration", False, True, Kind.PROP_FAIL)]
    assert admission.usable_freeze_ids([row, ROW], checks, ["src/a.py"], NOW) == {"slow_integration"}


# ---------------------------------------------------------------- real canaries
CALC = "def add(a, b):\n    return a - b\n\n\ndef _helper():\n    return 1\n\n\nclass Meter:\n    pass\n"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    path = init_repo(tmp_path / "repo")
    commit(path, {"src/calc.py": CALC, "tests/test_calc.py": "def test_x():\n    pass\n"}, "calc")
    return path


def patch_of(repo: Path, files: dict[str, str | bytes | None]) -> bytes:
    """The diff a patch would carry, made with git in the work tree, then undone."""
    from tests.helpers import write

    write(repo, files)
    git(repo, "add", "-A")
    diff = git(repo, "diff", "--cached", "--binary", "HEAD").stdout.encode()
    git(repo, "reset", "-q", "--hard", "HEAD")
    return diff


def names(results: tuple[admission.CanaryResult, ...]) -> list[tuple[str, bool]]:
    return [(r.name, r.ok) for r in results]


def test_clean_patch_passes_all_four_in_order(repo: Path) -> None:
    diff = patch_of(repo, {"src/calc.py": CALC.replace("a - b", "a + b")})
    results = the_canaries.run_canaries(diff, "HEAD", Policy(), repo)
    assert names(results) == [(n, True) for n in admission.CANARIES]


def test_unparseable_patch_stops_at_parse_diff(repo: Path) -> None:
    results = the_canaries.run_canaries(DIFF, "HEAD", Policy(), repo)  # '@@' without ranges
    assert names(results) == [("parse_diff", False)]


def test_patch_that_does_not_apply_stops_at_apply_check(repo: Path) -> None:
    diff = patch_of(repo, {"src/calc.py": CALC.replace("a - b", "a + b")})
    commit(repo, {"src/calc.py": CALC.replace("a - b", "a * b")}, "moved on")
    status_before = git(repo, "status", "--porcelain").stdout
    results = the_canaries.run_canaries(diff, "HEAD", Policy(), repo)
    assert names(results) == [("parse_diff", True), ("apply_check", False)]
    assert git(repo, "status", "--porcelain").stdout == status_before  # no work tree, no index touched
    assert the_canaries.run_canaries(diff, "HEAD~1", Policy(), repo)[1].ok  # applies to its real base


def test_secret_marker_on_added_line_stops_there(repo: Path) -> None:
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    diff = patch_of(repo, {"src/config.py": f'KEY = "{key}"\n', "src/calc.py": CALC.replace("def add", "def plus")})
    results = the_canaries.run_canaries(diff, "HEAD", Policy(), repo)
    assert names(results) == [("parse_diff", True), ("apply_check", True), ("no_secret_marker", False)]
    assert "src/config.py:1" in results[-1].detail


def test_removing_a_secret_is_fine(repo: Path) -> None:
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    commit(repo, {"src/config.py": f'KEY = "{key}"\n'}, "leak")
    diff = patch_of(repo, {"src/config.py": "KEY = None\n"})
    assert all(r.ok for r in the_canaries.run_canaries(diff, "HEAD", Policy(), repo))


def test_policy_markers_are_used(repo: Path) -> None:
    from mergegate.records.policy import Canaries

    diff = patch_of(repo, {"src/note.py": "TOKEN = 'xoxb-123'\n"})
    policy = Policy(canaries=Canaries(secret_markers=("xox[bp]-",)))
    assert not the_canaries.run_canaries(diff, "HEAD", policy, repo)[2].ok
    assert the_canaries.run_canaries(diff, "HEAD", Policy(), repo)[2].ok


@pytest.mark.parametrize(
    ("files", "ok", "words"),
    [
        ({"src/calc.py": CALC.replace("def add", "def plus")}, False, "src/calc.py::add"),
        ({"src/calc.py": CALC.replace("class Meter", "class _Meter")}, False, "src/calc.py::Meter"),
        ({"src/calc.py": None}, False, "src/calc.py::add"),
        ({"src/calc.py": CALC + "def broken(:\n"}, False, "does not parse"),
        ({"src/calc.py": CALC.replace("def _helper", "def _other")}, True, ""),
        ({"src/calc.py": CALC + "\n\ndef extra():\n    pass\n"}, True, ""),
        ({"tests/test_calc.py": "x = 1\n"}, True, ""),  # not a production module
        ({"src/calc.py": CALC.replace("def add(a, b)", "def _add(a, b)") + "\nadd = _add\n"}, True, ""),
        ({"src/calc.py": CALC.replace("def add(a, b):\n    return a - b\n", "from math import fsum as add\n")},
         True, ""),
    ],
    ids=["function-vanished", "class-made-private", "module-deleted", "head-syntax-error", "private-renamed",
         "name-added", "tests-not-production", "function-became-alias", "function-became-import"],
)
def test_public_signature(repo: Path, files: dict[str, str | None], ok: bool, words: str) -> None:
    diff = patch_of(repo, files)
    results = the_canaries.run_canaries(diff, "HEAD", Policy(), repo)
    assert [r.name for r in results] == list(admission.CANARIES)
    assert results[-1].ok is ok
    assert words in results[-1].detail


def test_canary_results_become_checks() -> None:
    good, bad = admission.CanaryResult("apply_check", True, ""), admission.CanaryResult("parse_diff", False, "")
    assert good.check() == Check("apply_check", True, False, Kind.PROP_PASS)
    assert bad.check() == Check("parse_diff", True, False, Kind.CANARY_FAIL)


# ---------------------------------------------------------------- the parse_diff canary's reader
GOOD = (b"diff --git a/src/a.py b/src/a.py\nindex 1..2 100644\n--- a/src/a.py\n+++ b/src/a.py\n"
        b"@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n")


@pytest.mark.parametrize(
    ("diff", "touched", "added"),
    [
        (GOOD, ("src/a.py",), [(2, b"y = 3")]),
        (b"From abc Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\n---\n" + GOOD, ("src/a.py",), [(2, b"y = 3")]),
        (b"diff --git a/n.py b/n.py\nnew file mode 100644\nindex 0..1\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+k\n",
         ("n.py",), [(1, b"k")]),
        (b"diff --git a/o.py b/o.py\ndeleted file mode 100644\n--- a/o.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-k\n",
         ("o.py",), []),
        (b"diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n", ("x", "y"), []),
        (b"diff --git a/s.sh b/s.sh\nold mode 100644\nnew mode 100755\n", ("s.sh",), []),
        (b"diff --git a/i.png b/i.png\nindex 1..2 100644\nGIT binary patch\nliteral 3\nKcmZ?wbN>JW\n\n", ("i.png",),
         []),
        (b'diff --git "a/t\\303\\251st.py" "b/t\\303\\251st.py"\n--- "a/t\\303\\251st.py"\n+++ "b/t\\303\\251st.py"\n'
         b"@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n", ("t\u00e9st.py",), [(1, b"b")]),
    ],
    ids=["modify", "mail-preamble", "new-file", "deleted-file", "rename", "mode-change", "binary", "quoted-path"],
)
def test_parse_diff_reads(diff: bytes, touched: tuple[str, ...], added: list[tuple[int, bytes]]) -> None:
    parsed = parse_diff(diff)
    assert parsed.touched == touched
    assert [a for f in parsed.files for a in f.added] == added


@pytest.mark.parametrize(
    "diff",
    [
        b"",
        b"just some words\n",
        DIFF,  # the seed's sketch: '@@' without line ranges is not a patch git can apply
        GOOD.replace(b"@@ -1,2 +1,2 @@", b"@@ -1,3 +1,2 @@"),
        GOOD.replace(b"@@ -1,2 +1,2 @@", b"@@ -1,1 +1,1 @@"),
        GOOD.replace(b"+++ b/src/a.py\n", b""),
        GOOD.replace(b"a/src/a.py", b"a/../etc/passwd"),
        b"--- a/x\n+++ b/x\n",
        GOOD + b"+stray\n",
    ],
    ids=["empty", "prose", "seed-sketch", "short-hunk", "long-hunk", "no-plus-header", "escapes-repo",
         "no-hunks", "stray-line"],
)
def test_parse_diff_refuses(diff: bytes) -> None:
    with pytest.raises(DiffError):
        parse_diff(diff)


def test_format_patch_mail_passes_the_canaries(repo: Path) -> None:
    from tests.helpers import commit as do_commit

    do_commit(repo, {"src/calc.py": CALC.replace("a - b", "a + b")}, "fix add")
    mail = git(repo, "format-patch", "-1", "--stdout", "HEAD").stdout.encode()
    assert b"\n-- \n" in mail  # the mail signature a parser must not read as a hunk
    results = the_canaries.run_canaries(mail, "HEAD~1", Policy(), repo)
    assert names(results) == [(n, True) for n in admission.CANARIES]
    assert parse_diff(mail).touched == ("src/calc.py",)


def test_secret_in_a_binary_file_is_found(repo: Path) -> None:
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    diff = patch_of(repo, {"src/blob.bin": b"\x00\x01" + key.encode() + b"\x00"})
    assert b"GIT binary patch" in diff
    results = the_canaries.run_canaries(diff, "HEAD", Policy(), repo)
    assert names(results)[-1] == ("no_secret_marker", False)
    assert "binary file src/blob.bin" in results[-1].detail
    clean = patch_of(repo, {"src/blob.bin": b"\x00\x01clean\x00"})
    assert all(r.ok for r in the_canaries.run_canaries(clean, "HEAD", Policy(), repo))
