"""The pure parts of the server hook: stdin parser, rules, message lines, log parser."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mergegate.errors import UsageError
from mergegate.git import core, diffs, history, pushlog
from mergegate.hooks import receive_rules as rr
from mergegate.hooks.pre_receive import Splitter, pushers
from mergegate.hooks.push_manifest import git_blob_id
from mergegate.records.manifest import Report
from mergegate.records.policy import Policy
from mergegate.rules.split import split

A1, B1, Z1 = "a" * 40, "b" * 40, "0" * 40
A2, Z2 = "a" * 64, "0" * 64


# ---------------------------------------------------------------- stdin


def test_parse_several_lines() -> None:
    data = f"{Z1} {A1} refs/heads/new\n{A1} {B1} refs/heads/main\n{B1} {Z1} refs/tags/old\n".encode()
    updates = pushlog.parse(data)
    assert [(u.created, u.deleted, u.is_branch) for u in updates] == [
        (True, False, True), (False, False, True), (False, True, False)]


def test_parse_sha256_zero_ids() -> None:
    (update,) = pushlog.parse(f"{Z2} {A2} refs/heads/x".encode())
    assert update.created and not update.deleted and update.new == A2


@pytest.mark.parametrize("data,needle", [
    (b"", "no ref updates"),
    (b"\n", "no ref updates"),
    (f"{A1} {B1} refs/heads/x\n\n".encode(), "line 2: expected '<old-id> <new-id> <ref>'"),
    (f"{A1} {B1}".encode(), "expected '<old-id> <new-id> <ref>'"),
    (f"{A1}  {B1} refs/heads/x".encode(), "expected '<old-id> <new-id> <ref>'"),
    (f"{A1} {B1} refs/heads/x\r\n".encode(), "control character"),
    (f"{A1.upper()} {B1} refs/heads/x".encode(), "not a full object id"),
    (f"{A1[:39]} {B1} refs/heads/x".encode(), "not a full object id"),
    (f"{A1} {A2} refs/heads/x".encode(), "differ in length"),
    (f"{Z1} {Z1} refs/heads/x".encode(), "both ids are all zero"),
    (f"{A1} {B1} refs/heads/x\n{A2} {A2} refs/heads/y".encode(), "mixes SHA-1 and SHA-256"),
    (f"{A1} {B1} refs/heads/x\n{B1} {A1} refs/heads/x".encode(), "appears twice"),
    (b"\xff\xfe", "not UTF-8"),
])
def test_parse_refuses(data: bytes, needle: str) -> None:
    with pytest.raises(UsageError) as err:
        pushlog.parse(data)
    assert needle in err.value.render() and "\n" not in err.value.render()


@pytest.mark.parametrize("ref,ok", [
    ("refs/heads/main", True),
    ("refs/heads/feature/x-1", True),
    ("refs/tags/v1.0", True),
    ("refs/notes/commits", True),
    ("refs/merge-requests/1/head", True),
    ("main", False),
    ("HEAD", False),
    ("refs/main", False),
    ("refs/heads/a..b", False),
    ("refs/heads/a b", False),
    ("refs/heads/a~1", False),
    ("refs/heads/a^", False),
    ("refs/heads/a:b", False),
    ("refs/heads/a*", False),
    ("refs/heads/.hidden", False),
    ("refs/heads/x.lock", False),
    ("refs/heads/x/", False),
    ("refs/heads/x.", False),
    ("refs/heads//x", False),
    ("refs/heads/a@{1}", False),
    ("refs/heads/a\\b", False),
])
def test_ref_names(ref: str, ok: bool) -> None:
    assert (pushlog.ref_name_problem(ref) is None) is ok


# ---------------------------------------------------------------- rules


def _facts(paths: list[str], agent: str = "", report: Report | None = None,
           signed: bool | None = None) -> rr.CommitFacts:
    changes = [diffs.Change("100644", "100644", A1, B1, "M", p) for p in paths]
    return rr.CommitFacts("c" * 40, split(changes, Policy()), agent, report, signed, ".ci/allowed_signers")


@pytest.mark.parametrize("paths,agent,report,signed,rules", [
    (["src/a.py"], "", None, None, []),
    (["src/a.py"], "bot", None, False, []),  # production commits need neither signature nor manifest
    (["oracles/properties/p.py"], "", Report(), None, []),
    (["oracles/properties/p.py", "src/a.py"], "", Report(), None, ["mixed"]),
    (["oracles/properties/p.py"], "", Report(changed=("oracles/properties/p.py",)), None, ["manifest"]),
    (["freeze_ledger.yaml"], "bot", Report(), None, ["agent-guarded"]),
    (["gate.yaml", "src/a.py"], "bot", Report(problems=("no manifest",)), False,
     ["mixed", "agent-guarded", "manifest", "unsigned"]),
    (["oracles/fixtures/f.json"], "", Report(), False, ["unsigned"]),
    (["oracles/fixtures/f.json"], "", Report(), True, []),
    (["docs/x.md", "README.md"], "bot", None, None, []),
])
def test_judge_commit(paths: list[str], agent: str, report: Report | None, signed: bool | None,
                      rules: list[str]) -> None:
    assert [r.rule for r in rr.judge_commit(_facts(paths, agent, report, signed))] == rules


@pytest.mark.parametrize("deleted,ff,agent,policy,rules", [
    (False, False, "", "refuse", []),
    (False, False, "bot", "refuse", ["agent-force-push"]),
    (False, True, "bot", "refuse", []),
    (False, None, "bot", "refuse", []),  # a creation: nothing rewritten
    (True, None, "bot", "refuse", ["agent-delete"]),
    (True, None, "", "refuse", []),
    (False, False, "bot", "allow", []),
    (True, None, "bot", "allow", []),
])
def test_judge_ref(deleted: bool, ff: bool | None, agent: str, policy: str, rules: list[str]) -> None:
    assert [r.rule for r in rr.judge_ref("refs/heads/main", deleted, ff, agent, policy)] == rules


def test_one_line_per_commit_whatever_the_paths() -> None:
    odd = "oracles/properties/a\nb c.py"
    refusals = rr.judge_commit(_facts([odd, "src/x.py"], "bot", Report(missing=(odd,))))
    lines = rr.render(refusals)
    assert len(lines) == 1 and "\n" not in lines[0]
    assert lines[0].startswith("cccccccccccc mixed,agent-guarded,manifest: ")
    assert '"oracles/properties/a\\nb c.py"' in lines[0] and "; fix: " in lines[0]
    (gl,) = rr.render(refusals, "gitlab")
    assert gl == "GL-HOOK-ERR: " + lines[0]


def test_long_path_lists_are_cut() -> None:
    paths = [f"oracles/properties/p{i}.py" for i in range(10)] + ["src/a.py"]
    (line,) = rr.render(rr.judge_commit(_facts(paths, report=Report())))
    assert "(+7 more)" in line


def test_pushers_collects_every_server_identity() -> None:
    env = {"GL_USERNAME": "a", "GITHUB_USER_LOGIN": "b", "GITEA_PUSHER_NAME": "a", "GATE_PUSHER": ""}
    assert pushers(env) == ("a", "b")


@pytest.mark.parametrize("path", [
    "src/a.py", "oracles/properties/x.py", "gate.yaml", "sub/conftest.py", "oracles/catalog",
    "oracles/catalog/p.yaml", "oracles/MANIFEST.sha256", "freeze_ledger.yaml", "README.md", ".ci/run",
    "oracles/fixtures/a\nb",
])
def test_splitter_agrees_with_split(path: str) -> None:
    changes = [diffs.Change("100644", "100644", A1, B1, "M", p) for p in (path, "src/z.py")]
    assert Splitter(Policy()).split(changes) == split(changes, Policy())


# ---------------------------------------------------------------- git plumbing helpers


@pytest.mark.parametrize("fmt", ["sha1", "sha256"])
def test_git_blob_id_matches_git(tmp_path: Path, fmt: str) -> None:
    subprocess.run(["git", "init", "-q", f"--object-format={fmt}", str(tmp_path)], check=True)
    data = b"abc  12  oracles/x\n"
    want = subprocess.run(["git", "hash-object", "--stdin"], cwd=tmp_path, input=data,
                          capture_output=True, check=True).stdout.decode().strip()
    assert git_blob_id(data, len(want)) == want


def test_parse_log_reads_fields_in_order() -> None:
    tricky = "x\n\x01y :z"
    data = (f"\x01{A1} {B1}\0bot@x\0\n:100644 100644 {A1} {B1} M\0{tricky}\0"
            f":000000 100644 {Z1} {B1} A\0plain\0\x01{B1} \0pat@x\0").encode()
    first, second = history.parse_log(data)
    assert first.parents == (B1,) and first.author_email == "bot@x"
    assert [c.path for c in first.changes] == [tricky, "plain"]
    assert second.sha == B1 and second.parents == () and second.changes == ()


def test_parse_log_refuses_garbage() -> None:
    with pytest.raises(core.GitFailed):
        history.parse_log(b"not a header\0")
