"""`gate pre-receive` through real `git push` to a real bare repository (local transport)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import AGENT, commit, gate, git, sign_and_commit, write
from tests.receive_helpers import Server, make_server, refused

ORACLE = "oracles/properties/test_p.py"


def short(sha: str) -> str:
    return sha[:12]


def edit_policy(work: Path, old: str, new: str, message: str = "policy") -> str:
    text = (work / "gate.yaml").read_text()
    assert old in text
    return sign_and_commit(work, {"gate.yaml": text.replace(old, new)}, message)


@pytest.fixture
def srv(tmp_path: Path) -> Server:
    return make_server(tmp_path)


def assert_rejected(s: Server, proc: subprocess.CompletedProcess[str], before: str | None,
                    ref: str = "refs/heads/main") -> list[str]:
    assert proc.returncode != 0, proc.stderr
    assert "pre-receive hook declined" in proc.stdout + proc.stderr
    assert s.ref(ref) == before
    return refused(proc)


def assert_accepted(s: Server, proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stderr
    assert "push accepted" in proc.stderr  # the hook ran, not a missing hook


# ---------------------------------------------------------------- good pushes


def test_production_and_signed_oracle_commits_are_accepted(srv: Server) -> None:
    commit(srv.work, {"src/app.py": "x = 1\n"})
    sign_and_commit(srv.work, {ORACLE: "def test_p():\n    assert True\n"})
    tip = commit(srv.work, {"src/app.py": "x = 2\n"})
    assert_accepted(srv, srv.push())
    assert srv.ref("main") == tip


# ---------------------------------------------------------------- mixing


def test_mixed_commit_hidden_in_the_middle_of_a_long_push(srv: Server) -> None:
    before = srv.ref("main")
    for i in range(15):
        commit(srv.work, {f"src/m{i}.py": f"v = {i}\n"})
    bad = commit(srv.work, {"src/m7.py": "v = 'x'\n", "oracles/fixtures/data.json": "{}\n"})
    for i in range(15):
        commit(srv.work, {f"docs/n{i}.md": f"{i}\n"})
    lines = assert_rejected(srv, srv.push(), before)
    assert len(lines) == 1
    assert lines[0].startswith(f"{short(bad)} mixed")
    assert "oracles/fixtures/data.json" in lines[0] and "src/m7.py" in lines[0]
    assert "; fix: " in lines[0]


def test_oracle_change_split_across_commits_stale_manifest_is_refused(srv: Server) -> None:
    before = srv.ref("main")
    oracle_only = commit(srv.work, {ORACLE: "def test_p():\n    pass\n"})  # manifest not re-signed
    commit(srv.work, {"src/app.py": "x = 1\n"})
    sign_and_commit(srv.work, {}, "re-sign afterwards")  # the manifest catches up, too late
    lines = assert_rejected(srv, srv.push(), before)
    assert [line.split(" ")[:2] for line in lines] == [[short(oracle_only), "manifest:"]]
    assert ORACLE in lines[0]


def test_oracle_change_split_across_commits_the_mixing_one_is_refused(srv: Server) -> None:
    before = srv.ref("main")
    sign_and_commit(srv.work, {ORACLE: "def test_p():\n    pass\n"})
    commit(srv.work, {"src/app.py": "x = 1\n"})
    mixing = sign_and_commit(srv.work, {ORACLE: "def test_p():\n    assert 1\n", "src/app.py": "x = 2\n"})
    lines = assert_rejected(srv, srv.push(), before)
    assert len(lines) == 1 and lines[0].startswith(f"{short(mixing)} mixed:")


def test_a_human_oracle_edit_without_re_signing_is_refused(srv: Server) -> None:
    before = srv.ref("main")
    bad = commit(srv.work, {"oracles/catalog/p.yaml": "id: p\n"})
    lines = assert_rejected(srv, srv.push(), before)
    assert lines[0].startswith(f"{short(bad)} manifest:") and "oracles/catalog/p.yaml" in lines[0]


def test_a_deleted_oracle_file_must_be_re_signed_too(srv: Server) -> None:
    sign_and_commit(srv.work, {ORACLE: "def test_p():\n    pass\n"})
    assert_accepted(srv, srv.push())
    before = srv.ref("main")
    bad = commit(srv.work, {ORACLE: None})
    lines = assert_rejected(srv, srv.push(), before)
    assert lines[0].startswith(f"{short(bad)} manifest:")
    git(srv.work, "reset", "-q", "--hard", before)
    sign_and_commit(srv.work, {ORACLE: None})
    assert_accepted(srv, srv.push())


# ---------------------------------------------------------------- merges


def _branch(s: Server, name: str, base: str) -> None:
    git(s.work, "checkout", "-q", "-b", name, base)


def test_a_merge_is_judged_like_the_fast_forward_it_replaces(srv: Server) -> None:
    """Clean branches merged: what each merge takes from a side was judged in that side's commits."""
    base = srv.ref("main")
    assert base
    _branch(srv, "oracle", base)
    sign_and_commit(srv.work, {ORACLE: "def test_p():\n    pass\n"})
    _branch(srv, "prod", base)
    commit(srv.work, {"src/app.py": "x = 1\n"})
    git(srv.work, "checkout", "-q", "main")
    git(srv.work, "merge", "-q", "--no-edit", "--no-ff", "oracle")
    git(srv.work, "merge", "-q", "--no-edit", "--no-ff", "prod")
    assert_accepted(srv, srv.push())  # each merge brings one kind: fine
    before = srv.ref("main")
    _branch(srv, "both", before or "main")
    sign_and_commit(srv.work, {ORACLE: "def test_p():\n    assert 2\n"})
    commit(srv.work, {"src/app.py": "x = 2\n"})
    git(srv.work, "checkout", "-q", "main")
    commit(srv.work, {"README.md": "main moved on\n"})
    git(srv.work, "merge", "-q", "--no-edit", "both")
    # "both" holds an oracle-only and a production commit, each fine: pushed as a fast-forward they
    # would pass, so merging them must too.
    assert_accepted(srv, srv.push("main"))


def test_a_merge_cannot_revert_an_oracle_by_taking_an_old_parent(srv: Server) -> None:
    """A merge with an old ancestor whose tree takes the old oracle: the merge's own change."""
    sign_and_commit(srv.work, {ORACLE: "def test_p():\n    assert 1\n"})
    old = git(srv.work, "rev-parse", "HEAD").stdout.strip()
    sign_and_commit(srv.work, {ORACLE: "def test_p():\n    assert 2\n"})
    assert_accepted(srv, srv.push())
    before = srv.ref("main")
    commit(srv.work, {"src/app.py": "x = 3\n"})
    old_tree = {ORACLE: "def test_p():\n    assert 1\n"}
    write(srv.work, old_tree)
    git(srv.work, "checkout", "-q", old, "--", "oracles/MANIFEST.sha256")
    git(srv.work, "add", "-A")
    tree = git(srv.work, "write-tree").stdout.strip()
    head = git(srv.work, "rev-parse", "HEAD").stdout.strip()
    merge = git(srv.work, "commit-tree", tree, "-p", head, "-p", old, "-m", "evil merge", env=AGENT).stdout.strip()
    git(srv.work, "reset", "-q", "--hard", merge)
    lines = assert_rejected(srv, srv.push(), before)
    assert lines and lines[0].startswith(f"{short(merge)} ") and "agent-guarded" in lines[0]
    assert ORACLE in lines[0]


def test_an_evil_merge_is_judged_by_what_it_brings(srv: Server) -> None:
    base = srv.ref("main")
    assert base
    _branch(srv, "prod", base)
    commit(srv.work, {"src/app.py": "x = 1\n"})
    git(srv.work, "checkout", "-q", "main")
    commit(srv.work, {"README.md": "x\n"})
    git(srv.work, "merge", "-q", "--no-commit", "prod")
    # src/app.py comes unchanged from prod (judged there); the merge's own edits are the other two
    write(srv.work, {"oracles/fixtures/sneaky.json": "{}\n", "src/evil.py": "x = 1\n"})
    git(srv.work, "add", "-A")
    git(srv.work, "commit", "-q", "--no-verify", "-m", "merge prod")
    merge = git(srv.work, "rev-parse", "HEAD").stdout.strip()
    lines = assert_rejected(srv, srv.push(), base)
    assert lines and lines[0].startswith(f"{short(merge)} mixed,manifest:")
    assert "src/evil.py" in lines[0] and "src/app.py" not in lines[0]


# ---------------------------------------------------------------- agents


def test_agent_pushing_a_ledger_edit_is_refused(srv: Server) -> None:
    before = srv.ref("main")
    text = (srv.work / "freeze_ledger.yaml").read_text()
    bad = commit(srv.work, {"freeze_ledger.yaml": text + "# agent was here\n"}, env=AGENT)
    lines = assert_rejected(srv, srv.push(), before)
    assert len(lines) == 1 and lines[0].startswith(f"{short(bad)} agent-guarded:")
    assert "freeze_ledger.yaml" in lines[0] and "coder[bot]@example.com" in lines[0]


def test_agent_production_commits_are_accepted(srv: Server) -> None:
    commit(srv.work, {"src/app.py": "x = 1\n"}, env=AGENT)
    assert_accepted(srv, srv.push())


@pytest.mark.parametrize("variable", ["GATE_PUSHER", "GL_USERNAME", "GITHUB_USER_LOGIN", "GITEA_PUSHER_NAME"])
def test_pusher_identity_marks_an_agent(tmp_path: Path, variable: str) -> None:
    s = make_server(tmp_path, hook=False)
    edit_policy(s.work, "pushers: []", 'pushers: ["robot-*"]')
    git(s.work, "push", "-q", "origin", "main")
    from mergegate.hooks.pre_receive import install_pre_receive

    install_pre_receive(s.bare)
    before = s.ref("main")
    sign_and_commit(s.work, {ORACLE: "def test_p():\n    pass\n"})  # a person's commit, well signed
    lines = assert_rejected(s, s.push(env={variable: "robot-7"}), before)
    assert lines and "agent-guarded" in lines[0] and "robot-7" in lines[0]
    assert_accepted(s, s.push(env={variable: "alice"}))


def test_a_push_reclassifying_the_oracle_is_judged_by_the_old_policy(srv: Server) -> None:
    before = srv.ref("main")
    text = (srv.work / "gate.yaml").read_text()
    new_policy = text.replace('production: ["src/**"]', 'production: ["src/**", "oracles/properties/**"]') \
        .replace('oracle: ["oracles/properties/**"]', 'oracle: ["nothing/**"]')
    # in one commit: under the new policy this is production only; under the old one it mixes
    bad = commit(srv.work, {"gate.yaml": new_policy, ORACLE: "def test_p():\n    pass\n",
                            "src/app.py": "x = 1\n"})
    lines = assert_rejected(srv, srv.push(), before)
    assert lines[0].startswith(f"{short(bad)} mixed")
    # in two commits: the reclassification alone, then the edit the new policy would allow
    git(srv.work, "reset", "-q", "--hard", before or "main")
    sign_and_commit(srv.work, {"gate.yaml": new_policy}, "reclassify")
    second = commit(srv.work, {ORACLE: "def test_p():\n    pass\n", "src/app.py": "x = 1\n"})
    lines = assert_rejected(srv, srv.push(), before)
    assert [line.split(" ")[0] for line in lines] == [short(second)]


def test_an_agent_may_not_change_the_policy_at_all(srv: Server) -> None:
    before = srv.ref("main")
    text = (srv.work / "gate.yaml").read_text()
    write(srv.work, {"gate.yaml": text.replace("pushers: []", 'pushers: ["x"]')})
    git(srv.work, "add", "-A")
    gate(srv.work, "manifest", "sign", "--staged", check=0)
    git(srv.work, "add", "-A")
    git(srv.work, "commit", "-q", "--no-verify", "-m", "policy", env=AGENT)
    lines = assert_rejected(srv, srv.push(), before)
    assert "agent-guarded" in lines[0] and "gate.yaml" in lines[0]


def test_a_person_may_reclassify_in_an_oracle_only_commit(srv: Server) -> None:
    """The client signs with the new policy; the server accepts that manifest for the policy commit."""
    text = (srv.work / "gate.yaml").read_text()
    write(srv.work, {"tests/props/test_q.py": "def test_q():\n    pass\n"})
    commit(srv.work, {})
    assert_accepted(srv, srv.push())
    sign_and_commit(srv.work, {"gate.yaml": text.replace(
        'oracle: ["oracles/properties/**"]', 'oracle: ["oracles/properties/**", "tests/props/**"]')})
    manifest_text = (srv.work / "oracles/MANIFEST.sha256").read_text()
    assert "tests/props/test_q.py" in manifest_text
    assert_accepted(srv, srv.push())


# ---------------------------------------------------------------- refs


def test_several_refs_one_bad_rejects_the_whole_push(srv: Server) -> None:
    before = srv.ref("main")
    good = commit(srv.work, {"src/app.py": "x = 1\n"})
    git(srv.work, "checkout", "-q", "-b", "feature")
    bad = commit(srv.work, {"src/app.py": "x = 2\n", "oracles/fixtures/f.json": "[]\n"})
    git(srv.work, "checkout", "-q", "main")
    proc = srv.push("main", "feature")
    lines = assert_rejected(srv, proc, before)
    assert srv.ref("refs/heads/feature") is None
    assert [line.split(" ")[0] for line in lines] == [short(bad)]
    assert short(good) not in proc.stderr.split("gate pre-receive")[0]


def test_many_branches_in_one_push(srv: Server) -> None:
    names = [f"b{i}" for i in range(30)]
    for name in names:
        git(srv.work, "checkout", "-q", "-b", name, "main")
        commit(srv.work, {f"src/{name}.py": "x = 1\n"})
    git(srv.work, "checkout", "-q", "main")
    assert_accepted(srv, srv.push(*names))
    for name in names:  # now thirty updates of existing branches, thirty trusted tips, one policy
        git(srv.work, "checkout", "-q", name)
        commit(srv.work, {f"src/{name}.py": "x = 2\n"})
    bad = commit(srv.work, {f"src/{names[-1]}.py": "x = 3\n", "pytest.ini": "[pytest]\n"})
    git(srv.work, "checkout", "-q", "main")
    before = srv.ref(f"refs/heads/{names[0]}")
    lines = assert_rejected(srv, srv.push(*names), before, f"refs/heads/{names[0]}")
    assert [line.split(" ")[0] for line in lines] == [short(bad)]


def test_each_ref_is_judged_by_its_own_trusted_policy(srv: Server) -> None:
    git(srv.work, "checkout", "-q", "-b", "other")
    edit_policy(srv.work, 'production: ["src/**"]', 'production: ["src/**", "lib/**"]')
    assert_accepted(srv, srv.push("other"))
    git(srv.work, "checkout", "-q", "main")
    # lib/ is "other" on main, production on the branch "other": one commit, two verdicts
    shared = sign_and_commit(srv.work, {"lib/a.py": "x = 1\n", "oracles/fixtures/x.json": "{}\n"})
    git(srv.work, "branch", "-f", "other", "main")
    before = srv.ref("main")
    lines = assert_rejected(srv, srv.push("main", "+other"), before)
    assert lines == [ln for ln in lines if ln.startswith(f"{short(shared)} mixed")] and len(lines) == 1
    assert_accepted(srv, srv.push("main"))


def test_new_branch_whose_commits_already_exist(srv: Server) -> None:
    commit(srv.work, {"src/app.py": "x = 1\n"})
    assert_accepted(srv, srv.push())
    git(srv.work, "branch", "copy")
    proc = srv.push("copy")
    assert_accepted(srv, proc)
    assert "0 new commit(s) checked" in proc.stderr


def test_new_branch_is_judged_by_the_default_branch_policy(srv: Server) -> None:
    git(srv.work, "checkout", "-q", "-b", "topic")
    bad = commit(srv.work, {"src/app.py": "x = 2\n", "conftest.py": "x = 1\n"})
    lines = assert_rejected(srv, srv.push("topic"), None, "refs/heads/topic")
    assert lines[0].startswith(f"{short(bad)} mixed")


def test_branch_deletion(srv: Server) -> None:
    git(srv.work, "branch", "old")
    assert_accepted(srv, srv.push("old"))
    lines = assert_rejected(srv, srv.push(":old", env={"GATE_AGENT": "1"}), srv.ref("refs/heads/old"),
                            "refs/heads/old")
    assert lines and lines[0].startswith("refs/heads/old agent-delete:")
    assert_accepted(srv, srv.push(":old"))
    assert srv.ref("refs/heads/old") is None


def test_annotated_tag_is_peeled_and_its_commits_checked(srv: Server) -> None:
    good = commit(srv.work, {"src/app.py": "x = 1\n"})
    git(srv.work, "tag", "-a", "v1", "-m", "v1", good)
    assert_accepted(srv, srv.push("main", "refs/tags/v1"))
    assert srv.ref("refs/tags/v1^{commit}") == good
    git(srv.work, "tag", "-a", "v1-again", "-m", "a tag of a tag", "v1")
    assert_accepted(srv, srv.push("refs/tags/v1-again"))
    git(srv.work, "checkout", "-q", "--detach")
    bad = commit(srv.work, {"src/app.py": "x = 3\n", ORACLE: "y = 1\n"})
    git(srv.work, "tag", "-a", "v2", "-m", "v2", bad)
    lines = assert_rejected(srv, srv.push("refs/tags/v2"), None, "refs/tags/v2")
    assert lines[0].startswith(f"{short(bad)} mixed")


def test_tag_of_a_tree_is_refused(srv: Server) -> None:
    tree = git(srv.work, "rev-parse", "HEAD^{tree}").stdout.strip()
    git(srv.work, "tag", "-a", "treetag", "-m", "t", tree)
    lines = assert_rejected(srv, srv.push("refs/tags/treetag"), None, "refs/tags/treetag")
    assert lines[0].startswith("refs/tags/treetag not-a-commit:")


def test_force_push_person_allowed_agent_refused(srv: Server) -> None:
    first = commit(srv.work, {"src/app.py": "x = 1\n"})
    assert_accepted(srv, srv.push())
    git(srv.work, "reset", "-q", "--hard", f"{first}~1")
    commit(srv.work, {"src/app.py": "x = 9\n"})
    lines = assert_rejected(srv, srv.push("+main", env={"GATE_AGENT": "1"}), first)
    assert lines and lines[0].startswith("refs/heads/main agent-force-push:")
    assert_accepted(srv, srv.push("+main"))


def test_force_push_by_agent_allowed_by_policy(tmp_path: Path) -> None:
    s = make_server(tmp_path, hook=False)
    edit_policy(s.work, "canaries:", "server: {agent_force_push: allow}\ncanaries:")
    first = commit(s.work, {"src/app.py": "x = 1\n"})
    git(s.work, "push", "-q", "origin", "main")
    from mergegate.hooks.pre_receive import install_pre_receive

    install_pre_receive(s.bare)
    git(s.work, "reset", "-q", "--hard", f"{first}~1")
    commit(s.work, {"src/app.py": "x = 9\n"})
    assert_accepted(s, s.push("+main", env={"GATE_AGENT": "1"}))


# ---------------------------------------------------------------- hashes and odd paths


def test_sha256_repository(tmp_path: Path) -> None:
    s = make_server(tmp_path, object_format="sha256")
    good = commit(s.work, {"src/app.py": "x = 1\n"})
    assert len(good) == 64
    assert_accepted(s, s.push())
    git(s.work, "branch", "gone")
    assert_accepted(s, s.push("gone"))  # a creation: 64-digit zero old id
    assert_accepted(s, s.push(":gone"))  # a deletion: 64-digit zero new id
    sign_and_commit(s.work, {ORACLE: "def test_p():\n    pass\n"})
    assert_accepted(s, s.push())
    before = s.ref("main")
    bad = commit(s.work, {"src/app.py": "x = 2\n", ORACLE: "def test_p():\n    assert 0\n"})
    lines = assert_rejected(s, s.push(), before)
    assert lines[0].startswith(f"{short(bad)} mixed,manifest:")


def test_path_with_a_newline(srv: Server) -> None:
    odd = "oracles/fixtures/two\nlines.json"
    sign_and_commit(srv.work, {odd: "{}\n"})
    assert_accepted(srv, srv.push())  # the manifest escapes the path; the server agrees
    before = srv.ref("main")
    bad = commit(srv.work, {odd: "[]\n", "src/app.py": "x = 1\n"})
    proc = srv.push()
    lines = assert_rejected(srv, proc, before)
    assert len(lines) == 1 and lines[0].startswith(f"{short(bad)} mixed,manifest:")
    assert '"oracles/fixtures/two\\nlines.json"' in lines[0]


# ---------------------------------------------------------------- formats, bad input, fail closed


def test_gitlab_format_prefixes_every_line(tmp_path: Path) -> None:
    s = make_server(tmp_path, fmt="gitlab")
    before = s.ref("main")
    commit(s.work, {"src/app.py": "x = 1\n", ORACLE: "y = 1\n"})
    proc = s.push()
    assert_rejected(s, proc, before)
    hook_lines = [ln.removeprefix("remote: ") for ln in proc.stderr.splitlines() if ln.startswith("remote: ")]
    assert hook_lines and all(ln.startswith("GL-HOOK-ERR: ") for ln in hook_lines if ln.strip())


def test_empty_server_without_policy_fails_closed(tmp_path: Path) -> None:
    s = make_server(tmp_path, seed=False)
    proc = s.push()
    assert proc.returncode != 0
    assert "no trusted policy" in proc.stderr and "seed the repository" in proc.stderr
    assert s.ref("main") is None


def test_broken_policy_on_the_server_fails_closed(tmp_path: Path) -> None:
    s = make_server(tmp_path, hook=False)
    commit(s.work, {"gate.yaml": "version: 1\npaths: [oops\n"})
    git(s.work, "push", "-q", "origin", "main")
    from mergegate.hooks.pre_receive import install_pre_receive

    install_pre_receive(s.bare)
    before = s.ref("main")
    commit(s.work, {"src/app.py": "x = 1\n"})
    proc = s.push()
    assert_rejected(s, proc, before)
    assert "gate.yaml (server, at" in proc.stderr and "fix:" in proc.stderr


def test_branch_without_policy_fails_closed(srv: Server) -> None:
    git(srv.work, "checkout", "-q", "--orphan", "bare-branch")
    git(srv.work, "rm", "-rqf", ".")
    commit(srv.work, {"README.md": "x\n"})
    # A new ref is judged by main's policy; leaving no gate.yaml behind would lock it: refused.
    proc = srv.push("bare-branch")
    assert proc.returncode != 0 and srv.ref("bare-branch") is None
    assert [line.split(" ")[:2] for line in refused(proc)] == [["refs/heads/bare-branch", "broken-config:"]]
    hook = srv.bare / "hooks" / "pre-receive"  # a branch made so before this check: still closed
    hook.rename(hook.with_suffix(".off"))
    assert srv.push("bare-branch").returncode == 0
    hook.with_suffix(".off").rename(hook)
    commit(srv.work, {"README.md": "y\n"})
    proc = srv.push("bare-branch")
    assert proc.returncode != 0 and "no gate.yaml at" in proc.stderr
    assert_accepted(srv, srv.push(":bare-branch"))  # a person may still delete it


def _zero(s: Server) -> str:
    return "0" * len(s.ref("main") or "")


@pytest.mark.parametrize("line,needle", [
    ("garbage", "expected '<old-id> <new-id> <ref>'"),
    ("{zero} {main} main", "not a full ref name"),
    ("{zero} {main} HEAD", "not a full ref name"),
    ("{zero} {main} refs/heads/a..b", "holds '..'"),
    ("{zero} {main} refs/heads/x y", "expected '<old-id> <new-id> <ref>'"),
    ("{zero} {zero} refs/heads/x", "both ids are all zero"),
    ("{main} 1234 refs/heads/main", "is not a full object id"),
    ("{missing} {main} refs/heads/main", "does not exist in this repository"),
    ("", "no ref updates on stdin"),
])
def test_bad_input_is_rejected_with_one_line(srv: Server, line: str, needle: str) -> None:
    main = srv.ref("main") or ""
    stdin = line.format(zero=_zero(srv), main=main, missing="e" * len(main)) + "\n"
    proc = srv.hook(stdin)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "push rejected" in lines[0]


def test_sha1_ids_on_a_sha256_server_are_rejected(tmp_path: Path) -> None:
    s = make_server(tmp_path, object_format="sha256")
    proc = s.hook(f"{'0' * 40} {'a' * 40} refs/heads/x\n")
    assert proc.returncode == 2 and "this repository uses 64" in proc.stderr


def test_internal_error_fails_closed(srv: Server) -> None:
    """No git on PATH: the hook cannot judge, so it rejects (non-zero, one line)."""
    main = srv.ref("main")
    proc = srv.hook(f"{main} {main} refs/heads/main\n", env={"PATH": "/nonexistent"})
    assert proc.returncode != 0
    assert "push rejected" in proc.stderr


def test_blob_cache_written_from_the_quarantine_and_optional(srv: Server) -> None:
    """Accepted pushes prove the hook saw the quarantined objects; the cache is a bonus."""
    sign_and_commit(srv.work, {ORACLE: "def test_p():\n    pass\n"})
    assert_accepted(srv, srv.push())
    cache = srv.bare / "mergegate" / "blob-sha256"
    blob = git(srv.bare, "rev-parse", f"main:{ORACLE}").stdout.strip()
    assert blob in cache.read_text()
    cache.unlink()
    cache.mkdir()  # unwritable where it matters: the hook must still decide
    sign_and_commit(srv.work, {ORACLE: "def test_p():\n    assert 1\n"})
    assert_accepted(srv, srv.push())
    before = srv.ref("main")
    commit(srv.work, {ORACLE: "def test_p():\n    assert 2\n"})  # not re-signed
    assert_rejected(srv, srv.push(), before)


def test_corrupt_policy_object_is_an_internal_error(srv: Server) -> None:
    blob = git(srv.bare, "rev-parse", "main:gate.yaml").stdout.strip()
    loose = srv.bare / "objects" / blob[:2] / blob[2:]
    loose.chmod(0o644)
    loose.write_bytes(b"not zlib")
    main = srv.ref("main")
    proc = srv.hook(f"{main} {main} refs/heads/main\n")
    assert proc.returncode == 3, proc.stderr
    assert "cannot be read" in proc.stderr and "push rejected" in proc.stderr
    commit(srv.work, {"src/app.py": "x = 1\n"})
    assert_rejected(srv, srv.push(), main)


def test_quarantined_objects_are_gone_after_a_rejection(srv: Server) -> None:
    bad = commit(srv.work, {"src/app.py": "x = 1\n", ORACLE: "y = 1\n"})
    assert srv.push().returncode != 0
    assert git(srv.bare, "cat-file", "-e", bad, check=False).returncode != 0


# ---------------------------------------------------------------- signed oracle commits


def _ssh_key(tmp: Path, name: str) -> tuple[Path, str]:
    assert shutil.which("ssh-keygen"), "signed-commit checks need ssh-keygen: apt-get install openssh-client"
    key = tmp / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True)
    return key, (tmp / f"{name}.pub").read_text().strip()


def _signed_commit(work: Path, files: dict[str, str | None], key: Path | None) -> str:
    write(work, files)
    git(work, "add", "-A")
    gate(work, "manifest", "sign", "--staged", check=0)
    git(work, "add", "-A")
    sign = ["-c", "gpg.format=ssh", "-c", f"user.signingkey={key}", "commit", "-S"] if key else ["commit"]
    git(work, *sign, "-q", "--no-verify", "-m", "oracle")
    return git(work, "rev-parse", "HEAD").stdout.strip()


def test_require_signed_oracle_commits(tmp_path: Path) -> None:
    s = make_server(tmp_path, hook=False)
    good_key, good_pub = _ssh_key(tmp_path, "pat")
    other_key, _ = _ssh_key(tmp_path, "mallory")
    write(s.work, {".ci/allowed_signers": f"pat@example.com {good_pub}\n"})
    edit_policy(s.work, "canaries:",
                "server: {require_signed_oracle_commits: true, allowed_signers: .ci/allowed_signers}\ncanaries:")
    git(s.work, "push", "-q", "origin", "main")
    from mergegate.hooks.pre_receive import install_pre_receive

    install_pre_receive(s.bare)
    before = s.ref("main")
    unsigned = _signed_commit(s.work, {ORACLE: "def test_p():\n    pass\n"}, None)
    lines = assert_rejected(s, s.push(), before)
    assert lines[0].startswith(f"{short(unsigned)} unsigned:") and ".ci/allowed_signers" in lines[0]
    git(s.work, "reset", "-q", "--hard", before or "main")
    stranger = _signed_commit(s.work, {ORACLE: "def test_p():\n    pass\n"}, other_key)
    lines = assert_rejected(s, s.push(), before)
    assert lines[0].startswith(f"{short(stranger)} unsigned:")
    git(s.work, "reset", "-q", "--hard", before or "main")
    _signed_commit(s.work, {ORACLE: "def test_p():\n    pass\n"}, good_key)
    commit(s.work, {"src/app.py": "x = 1\n"})  # production commits need no signature
    assert_accepted(s, s.push())


# ---------------------------------------------------------------- install through the CLI


def test_gate_install_pre_receive(tmp_path: Path) -> None:
    s = make_server(tmp_path, hook=False)
    proc = gate(tmp_path, "install", "--pre-receive", str(s.bare), check=0)
    hook = s.bare / "hooks" / "pre-receive"
    assert str(hook) in proc.stdout and hook.stat().st_mode & 0o111
    gate(tmp_path, "install", "--pre-receive", str(s.bare), check=0)  # ours: replaced quietly
    commit(s.work, {"src/app.py": "x = 1\n", ORACLE: "y = 1\n"})
    assert s.push().returncode != 0  # it is live
    hook.write_text("#!/bin/sh\nexit 0\n")
    proc = gate(tmp_path, "install", "--pre-receive", str(s.bare), check=2)
    assert "not mergegate's" in proc.stderr and "--force" in proc.stderr
    gate(tmp_path, "install", "--pre-receive", str(s.bare), "--force", check=0)
    proc = gate(tmp_path, "install", "--pre-receive", str(s.work), check=2)
    assert "not a bare repository" in proc.stderr
    proc = gate(tmp_path, "install", "--pre-receive", str(tmp_path / "nowhere"), check=2)
    assert "not a git repository" in proc.stderr


def test_the_summary_counts_the_lines_it_prints(srv: Server) -> None:
    """Two commits breaking two rules each: two lines, and the summary says two, not four."""
    before = srv.ref("main")
    first = commit(srv.work, {"src/a.py": "a = 1\n", ORACLE: "def test_p():\n    assert 0\n"})
    second = commit(srv.work, {"src/b.py": "b = 1\n", ORACLE: "def test_p():\n    assert 1\n"})
    proc = srv.push()
    lines = assert_rejected(srv, proc, before)
    assert [line.split(" ")[:2] for line in lines] == [[short(first), "mixed,manifest:"],
                                                       [short(second), "mixed,manifest:"]]
    assert "push rejected (2 refused commit(s) or ref(s))" in proc.stderr
