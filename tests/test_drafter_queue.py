"""The candidate queue through the real CLI: list, show, reject, accept, and a commit through pre-commit."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mergegate.drafter import queue
from tests.helpers import AGENT, clean_env, commit, gate, git, init_repo, write
from tests.test_hooks_precommit import hook_repo, precommit_env, precommit_repo  # noqa: F401  (session fixture)

SHOP = "def total(xs: list[int]) -> int:\n    return sum(xs)\n"
CANDIDATE = b'''import shop
from hypothesis import given, strategies as st


@given(xs=st.lists(st.integers()))
def test_total_is_order_free(xs: list[int]) -> None:
    assert shop.total(xs) == shop.total(list(reversed(xs)))


@given(xs=st.lists(st.integers()))
def test_total_of_doubled(xs: list[int]) -> None:
    assert shop.total(xs + xs) == 2 * shop.total(xs)
'''


def enqueue(repo: Path, code: bytes = CANDIDATE, result: str = "pass") -> str:
    cid = hashlib.sha256(code).hexdigest()
    meta = queue.Meta(id=cid, drafter="ghostwriter", model="m", prompt_hash="0" * 64, target="shop.total",
                      target_path="src/shop.py", triage={"result": result, "witness": "", "tests": {}},
                      created_at=queue.now())
    assert queue.put(repo, code, meta)
    return cid


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "r")
    commit(r, {"src/shop.py": SHOP}, "production")
    return r


def test_list_show_reject(repo: Path) -> None:
    cid = enqueue(repo)
    listed = gate(repo, "queue", "list", check=0).stdout
    assert cid[:12] in listed and "pending" in listed and "shop.total" in listed
    shown = gate(repo, "queue", "show", cid[:8], check=0).stdout
    assert '"prompt_hash"' in shown and "def test_total_is_order_free" in shown
    assert gate(repo, "queue", "reject", cid[:8], "--reason", "  ", check=2).stderr.count("\n") == 1
    gate(repo, "queue", "reject", cid[:8], "--reason", "asserts nothing useful", check=0)
    meta = json.loads(gate(repo, "queue", "show", cid, "--json", check=0).stdout)["meta"]
    assert (meta["status"], meta["reason"], meta["decided_by"]) == ("rejected", "asserts nothing useful",
                                                                    "pat@example.com")
    assert "no pending candidates" in gate(repo, "queue", "list", check=0).stdout
    assert "rejected" in gate(repo, "queue", "list", "--all", check=0).stdout
    assert "already rejected" in gate(repo, "queue", "accept", cid[:8], "--reviewed", check=2).stderr
    assert git(repo, "status", "--porcelain").stdout == ""


def test_bad_ids(repo: Path) -> None:
    enqueue(repo)
    assert "not a candidate id" in gate(repo, "queue", "show", "zz", check=2).stderr
    assert "no queued candidate" in gate(repo, "queue", "show", "ffff", check=2).stderr


@pytest.mark.parametrize("who", ["env", "author"])
def test_accept_is_refused_in_an_agents_environment(repo: Path, who: str) -> None:
    cid = enqueue(repo)
    env = {"GATE_AGENT": "1"} if who == "env" else AGENT
    proc = gate(repo, "queue", "accept", cid[:8], "--reviewed", env=env, check=1)
    assert "accept refused" in proc.stdout and "only a person" in proc.stdout
    assert git(repo, "status", "--porcelain").stdout == ""
    assert json.loads(gate(repo, "queue", "show", cid, "--json", check=0).stdout)["meta"]["status"] == "pending"


def test_accept_refuses_a_failed_triage_without_force(repo: Path) -> None:
    cid = enqueue(repo, result="fail")
    assert "did not pass triage" in gate(repo, "queue", "accept", cid[:8], "--reviewed", check=2).stderr
    gate(repo, "queue", "accept", cid[:8], "--reviewed", "--force", check=0)


def test_a_triage_pass_never_waives_a_persons_review(repo: Path) -> None:
    cid = enqueue(repo, result="pass")  # a pass the candidate itself may have forged
    for extra in ((), ("--force",)):
        proc = gate(repo, "queue", "accept", cid[:8], *extra, check=2)
        assert "needs a person's review whatever triage said" in proc.stderr and "--reviewed" in proc.stderr
    assert queue.entries(repo)[0].status == "pending"
    assert git(repo, "status", "--porcelain").stdout == ""


def test_accept_refuses_bytes_changed_since_they_were_queued(repo: Path) -> None:
    cid = enqueue(repo)
    stored = repo / ".gate" / "queue" / cid / "candidate.py"
    stored.chmod(0o644)
    stored.write_bytes(CANDIDATE + b"\nimport os\nos.system('id')\n")
    assert "DOES NOT match its id" in gate(repo, "queue", "show", cid[:8], check=0).stdout
    proc = gate(repo, "queue", "accept", cid[:8], "--reviewed", check=3)
    assert proc.stderr.count("\n") == 1 and "changed since it was queued" in proc.stderr
    assert str(stored) in proc.stderr
    assert queue.entries(repo)[0].status == "pending"
    assert git(repo, "status", "--porcelain", "--untracked-files=all").stdout == ""


@pytest.mark.parametrize(("tests", "words"), [
    ([f"test_{'n' * 295}"], "300 characters, over the limit of 80"),
    ([f"test_{i}" for i in range(21)], "21 test functions, over the limit of 20"),
])
def test_accept_refuses_too_many_or_too_long_tests_before_writing_anything(repo: Path, tests: list[str],
                                                                             words: str) -> None:
    code = "".join(f"def {name}() -> None:\n    assert 1 + 1 == 2\n\n\n" for name in tests).encode()
    cid = enqueue(repo, code)  # queued by an older gate, or by hand: accept checks again
    proc = gate(repo, "queue", "accept", cid[:8], "--reviewed", check=2)
    assert proc.stderr.count("\n") == 1 and words in proc.stderr and "reject it" in proc.stderr
    assert "Traceback" not in proc.stderr and "File name too long" not in proc.stderr
    assert git(repo, "status", "--porcelain", "--untracked-files=all").stdout == ""  # no stray catalog file
    assert queue.entries(repo)[0].status == "pending"


def test_accept_refuses_when_production_changes_are_staged(repo: Path) -> None:
    cid = enqueue(repo)
    write(repo, {"src/shop.py": SHOP + "# more\n"})
    git(repo, "add", "src/shop.py")
    assert "non-oracle changes" in gate(repo, "queue", "accept", cid[:8], "--reviewed", check=2).stderr


def test_accept_installs_read_only_catalogs_signs_and_stages_oracle_only(repo: Path) -> None:
    cid = enqueue(repo)
    out = gate(repo, "queue", "accept", cid[:8], "--reviewed", check=0).stdout
    rel = f"oracles/properties/test_shop_total_{cid[:8]}.py"
    assert rel in out
    installed = repo / rel
    assert installed.read_bytes() == CANDIDATE and stat.S_IMODE(installed.stat().st_mode) == 0o444
    staged = git(repo, "diff", "--cached", "--name-only").stdout.split()
    assert sorted(staged) == sorted([
        rel, "oracles/MANIFEST.sha256", "oracles/catalog/claimed.yaml",
        f"oracles/catalog/total_is_order_free-{cid[:8]}.yaml", f"oracles/catalog/total_of_doubled-{cid[:8]}.yaml",
    ])
    split = json.loads(gate(repo, "split", "--staged", check=0).stdout)
    assert split["production"] == [] and split["other"] == [] and split["mixed"] is False
    assert rel in split["oracle"]
    assert git(repo, "diff", "--name-only").stdout == ""  # nothing left unstaged
    entry = (repo / f"oracles/catalog/total_of_doubled-{cid[:8]}.yaml").read_text()
    assert f'oracle: "{rel}::test_total_of_doubled"' in entry and 'covers: ["src/shop.py"]' in entry
    assert json.loads(gate(repo, "queue", "show", cid, "--json", check=0).stdout)["meta"]["installed_as"] == rel
    git(repo, "commit", "-q", "--no-verify", "-m", "accept")
    gate(repo, "manifest", "verify", "--rev", "HEAD", check=0)


def test_concurrent_accepts_install_once(repo: Path) -> None:
    cid = enqueue(repo)
    with ThreadPoolExecutor(4) as pool:
        procs = list(pool.map(lambda _: gate(repo, "queue", "accept", cid[:8], "--reviewed"), range(4)))
    assert sorted(p.returncode for p in procs) == [0, 2, 2, 2]
    assert sum("already accepted" in p.stderr for p in procs) == 3


def test_concurrent_puts_leave_whole_entries(repo: Path) -> None:
    codes = [CANDIDATE + f"# variant {i}\n".encode() for i in range(24)]
    script = ("import sys, hashlib; from pathlib import Path; from tests.test_drafter_queue import enqueue\n"
              "[enqueue(Path(sys.argv[1]), c.encode()) for c in sys.argv[2:]]\n")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(repo), *[c.decode() for c in codes[i::4]]],
                              cwd=Path(__file__).parents[1], env=clean_env()) for i in range(4)]
    assert [p.wait() for p in procs] == [0, 0, 0, 0]
    entries = queue.entries(repo)
    assert len(entries) == 24
    assert not [p for p in (repo / ".gate/queue").iterdir() if p.name.startswith(".new-")]
    for meta in entries:
        assert hashlib.sha256(queue.candidate_code(repo, meta)).hexdigest() == meta.id


# ---------------------------------------------------------------- through the real pre-commit hooks

@pytest.fixture
def hooked(tmp_path: Path, hook_repo: tuple[str, str]) -> Path:  # noqa: F811
    return precommit_repo(tmp_path / "h", hook_repo, {"src/shop.py": SHOP})


@pytest.mark.slow
def test_accepted_candidate_commits_through_pre_commit_as_oracle_only(hooked: Path) -> None:
    cid = enqueue(hooked)
    gate(hooked, "queue", "accept", cid[:8], "--reviewed", check=0)
    # The hooks are live: the same change mixed with production code is refused.
    write(hooked, {"src/shop.py": SHOP + "# sneak\n"})
    git(hooked, "add", "src/shop.py")
    mixed = git(hooked, "commit", "-q", "-m", "mixed", env=precommit_env(), check=False)
    assert mixed.returncode == 1 and "gate-no-mix" in mixed.stdout + mixed.stderr
    git(hooked, "reset", "-q", "--", "src/shop.py")
    git(hooked, "checkout", "--", "src/shop.py")
    proc = git(hooked, "commit", "-q", "-m", "oracle: accept drafted property", env=precommit_env(), check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    gate(hooked, "manifest", "verify", "--rev", "HEAD", check=0)
    changed = git(hooked, "diff-tree", "-r", "--name-only", "--no-commit-id", "HEAD").stdout.split()
    assert changed and all(p.startswith("oracles/") for p in changed)
    assert git(hooked, "status", "--porcelain").stdout == ""
    # The same change made by an agent is refused by the hooks (and by accept itself).
    cid2 = enqueue(hooked, CANDIDATE + b"# second\n")
    assert gate(hooked, "queue", "accept", cid2[:8], env={"GATE_AGENT": "1"}).returncode == 1
    assert os.path.exists(hooked / f"oracles/properties/test_shop_total_{cid[:8]}.py")


def test_an_accepted_candidate_runs_under_the_gates_runner(repo: Path, tmp_path: Path) -> None:
    cid = enqueue(repo)
    gate(repo, "queue", "accept", cid[:8], "--reviewed", check=0)
    git(repo, "commit", "-q", "--no-verify", "-m", "oracle: accept")
    out = tmp_path / "run.jsonl"
    gate(repo, "run", "--rev", "HEAD", "--out", str(out), check=0)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    props = {r["prop"] for r in rows}
    assert props == {f"total_is_order_free-{cid[:8]}", f"total_of_doubled-{cid[:8]}"}
    assert {r["status"] for r in rows} == {"pass"} and all(r["examples"] > 0 for r in rows)
