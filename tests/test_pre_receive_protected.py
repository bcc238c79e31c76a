"""The server judges every commit a protected ref gains, wherever else it already was (issue 23).

A real bare repository with the installed hook, pushed to over the local transport.
The weakening reaches the server where no hook judged it: a ref the host makes
(``refs/pull/1/head``, fetched into the bare repository as a host does, no hook
runs), or a branch pushed before the hook was installed.  Fast-forwarding main to
it, or merging it in, is refused; honest forms are accepted and cost only the
commits main gains.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import AGENT, commit, gate, git, sign_and_commit
from tests.receive_helpers import Server, make_server, refused
from tests.test_pre_receive import ORACLE, assert_accepted, assert_rejected, edit_policy, short

WEAK = "def test_p():\n    assert True  # weakened\n"


@pytest.fixture
def srv(tmp_path: Path) -> Server:
    s = make_server(tmp_path)
    sign_and_commit(s.work, {ORACLE: "def test_p():\n    assert 1 + 1 == 2\n"})
    assert_accepted(s, s.push())
    return s


def agent_weakening(s: Server) -> str:
    """An agent's commit weakening the oracle, its manifest properly re-signed (only agent-guarded bites)."""
    (s.work / ORACLE).write_text(WEAK)
    git(s.work, "add", "-A")
    gate(s.work, "manifest", "sign", "--staged", check=0)
    git(s.work, "add", "-A")
    git(s.work, "commit", "-q", "--no-verify", "-m", "relax the flaky property", env=AGENT)
    return git(s.work, "rev-parse", "HEAD").stdout.strip()


def host_ref(s: Server, ref: str, sha: str) -> None:
    """The host makes ``ref`` (as it makes refs/pull/N/head from a fork): objects fetched, no hook runs."""
    git(s.bare, "fetch", "-q", str(s.work), f"{sha}:{ref}")
    assert s.ref(ref) == sha


def on_branch(s: Server, name: str, make: object) -> str:
    main = s.ref("main")
    assert main
    git(s.work, "checkout", "-q", "-B", name, main)
    assert callable(make)
    sha = str(make())
    git(s.work, "checkout", "-q", "main")
    return sha


def test_a_weakening_in_a_host_ref_fast_forwarded_into_main_is_refused(srv: Server) -> None:
    before = srv.ref("main")
    bad = on_branch(srv, "pr", lambda: agent_weakening(srv))
    host_ref(srv, "refs/pull/1/head", bad)
    git(srv.work, "merge", "-q", "--ff-only", "pr")
    lines = assert_rejected(srv, srv.push("main"), before)
    assert lines == [line for line in lines if line.startswith(f"{short(bad)} agent-guarded:")] and lines, lines
    assert ORACLE in lines[0]


def test_a_weakening_on_a_branch_pushed_before_the_hook_is_refused_on_main(tmp_path: Path) -> None:
    s = make_server(tmp_path, hook=False)
    before = s.ref("main")
    bad = on_branch(s, "old-topic", lambda: agent_weakening(s))
    assert s.push("old-topic").returncode == 0  # no hook yet: the server holds it unjudged
    from mergegate.hooks.pre_receive import install_pre_receive

    install_pre_receive(s.bare)
    git(s.work, "merge", "-q", "--ff-only", "old-topic")
    lines = assert_rejected(s, s.push("main"), before)
    assert lines and lines[0].startswith(f"{short(bad)} agent-guarded:"), lines


def test_a_merge_bringing_the_weakening_in_is_refused(srv: Server) -> None:
    before = srv.ref("main")
    bad = on_branch(srv, "pr", lambda: agent_weakening(srv))
    host_ref(srv, "refs/pull/1/head", bad)
    mine = commit(srv.work, {"src/app.py": "x = 1\n"})  # main moved on: a real merge, by a person
    git(srv.work, "merge", "-q", "--no-edit", "--no-ff", "pr")
    merge = git(srv.work, "rev-parse", "HEAD").stdout.strip()
    lines = assert_rejected(srv, srv.push("main"), before)
    assert any(line.startswith(f"{short(bad)} agent-guarded:") for line in lines), lines
    assert not any(line.startswith((short(mine), short(merge))) for line in lines), lines


def test_an_agents_merge_of_a_branch_the_server_already_holds_is_refused(srv: Server) -> None:
    before = srv.ref("main")
    bad = on_branch(srv, "other", lambda: agent_weakening(srv))
    host_ref(srv, "refs/heads/other", bad)  # another branch the server holds, never judged
    commit(srv.work, {"src/app.py": "x = 1\n"}, env=AGENT)
    git(srv.work, "merge", "-q", "--no-edit", "--no-ff", "other", env=AGENT)
    lines = assert_rejected(srv, srv.push("main"), before)
    assert any(line.startswith(f"{short(bad)} agent-guarded:") for line in lines), lines


def test_a_clean_fast_forward_from_a_host_ref_is_accepted(srv: Server) -> None:
    good = on_branch(srv, "pr", lambda: commit(srv.work, {"src/app.py": "x = 1\n"}, env=AGENT))
    host_ref(srv, "refs/pull/2/head", good)
    git(srv.work, "merge", "-q", "--ff-only", "pr")
    proc = srv.push("main")
    assert_accepted(srv, proc)
    assert srv.ref("main") == good and "1 new commit(s) checked" in proc.stderr


def test_a_person_merging_a_reviewed_oracle_change_from_a_host_ref_is_accepted(srv: Server) -> None:
    good = on_branch(srv, "pr", lambda: sign_and_commit(srv.work, {ORACLE: "def test_p():\n    assert 2 > 1\n"}))
    host_ref(srv, "refs/pull/3/head", good)
    commit(srv.work, {"src/app.py": "x = 1\n"})
    git(srv.work, "merge", "-q", "--no-edit", "--no-ff", "pr")
    proc = srv.push("main")
    assert_accepted(srv, proc)
    assert "3 new commit(s) checked" in proc.stderr  # the oracle commit, main's own, the merge


def test_unprotected_refs_are_still_judged_by_what_is_new_to_the_repository(srv: Server) -> None:
    bad = on_branch(srv, "pr", lambda: agent_weakening(srv))
    host_ref(srv, "refs/pull/1/head", bad)
    git(srv.work, "branch", "-f", "copy", bad)
    proc = srv.push("copy")  # a topic branch pointing at it: nothing new there, nothing landed on main
    assert_accepted(srv, proc)
    assert "0 new commit(s) checked" in proc.stderr


def test_protected_refs_from_the_policy_count_as_judged(srv: Server) -> None:
    """``server.protected_refs``: a release branch judged on its way in is not judged again on main;
    a weakening already in a protected ref's reach is refused when a protected ref first gains it."""
    edit_policy(srv.work, "budget:", "server: {protected_refs: [refs/heads/release/*]}\nbudget:", "policy: releases")
    assert_accepted(srv, srv.push())
    many = on_branch(srv, "release/1", lambda: [commit(srv.work, {"src/app.py": f"x = {i}\n"})
                                                 for i in range(40)][-1])
    proc = srv.push("release/1")
    assert_accepted(srv, proc)
    assert "40 new commit(s) checked" in proc.stderr
    git(srv.work, "merge", "-q", "--ff-only", "release/1")
    proc = srv.push("main")
    assert_accepted(srv, proc)
    assert "0 new commit(s) checked" in proc.stderr and srv.ref("main") == many  # judged on a protected ref
    bad = on_branch(srv, "pr", lambda: agent_weakening(srv))
    host_ref(srv, "refs/pull/9/head", bad)
    git(srv.work, "branch", "-f", "release/2", bad)
    lines = assert_rejected(srv, srv.push("release/2"), None, "refs/heads/release/2")
    assert lines and lines[0].startswith(f"{short(bad)} agent-guarded:"), lines


@pytest.mark.parametrize("pattern", ["main", "heads/*", ""])
def test_a_bad_protected_refs_pattern_is_refused_by_the_policy_loader(pattern: str) -> None:
    from mergegate.errors import ConfigError
    from mergegate.records import policy

    with pytest.raises(ConfigError) as caught:
        policy.parse(f"version: 1\nserver: {{protected_refs: [{pattern!r}]}}\n", "gate.yaml")
    text = caught.value.render()
    assert text.startswith("gate.yaml:2:") and "is not a ref pattern" in text and "refs/heads/release/*" in text
    pol = policy.parse("version: 1\nserver: {protected_refs: [refs/heads/release/*, refs/tags/*]}\n")
    assert pol.server.protected_refs == ("refs/heads/release/*", "refs/tags/*")


def test_many_commits_already_held_cost_only_what_main_gains(srv: Server, tmp_path: Path) -> None:
    """Thousands of commits in host refs: moving main by one judges one commit, quickly."""
    base = srv.ref("main")
    assert base
    stream = [f"reset refs/heads/bulk\nfrom {base}\n"]
    for i in range(3000):
        stream.append(f"commit refs/heads/bulk\ncommitter Pat <pat@example.com> {1_700_000_000 + i} +0000\n"
                      f"data 2\nc\nM 100644 inline src/bulk.py\ndata {len(str(i)) + 1}\n{i}\n\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=srv.work, input="".join(stream).encode(), check=True)
    bulk = git(srv.work, "rev-parse", "bulk").stdout.strip()
    host_ref(srv, "refs/pull/5/head", bulk)
    good = commit(srv.work, {"src/app.py": "x = 9\n"})
    proc = srv.push("main")
    assert_accepted(srv, proc)
    assert srv.ref("main") == good and "1 new commit(s) checked" in proc.stderr
    # main then takes the 3000 (a person's production commits): each is judged once, on its way in
    git(srv.work, "merge", "-q", "--no-edit", "bulk")
    proc = srv.push("main")
    assert_accepted(srv, proc)
    assert "3001 new commit(s) checked" in proc.stderr
    git(srv.work, "branch", "-f", "again", "main")
    proc = srv.push("again")
    assert_accepted(srv, proc)
    assert "0 new commit(s) checked" in proc.stderr
    assert not refused(proc)
