"""``gate queue accept`` is one transaction: a kill -9 anywhere is finished or rolled back by the next run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mergegate.drafter import journal
from tests.helpers import clean_env, commit, gate, git, init_repo
from tests.test_drafter_queue import CANDIDATE, SHOP, enqueue

ROOT = Path(__file__).resolve().parent.parent

# Accept for real, but SIGKILL the process just before its n-th atomic file write (1: the journal,
# 2-3: catalog entries, 4: the oracle file, 5: claimed.yaml, 6: the manifest, 7: meta.json).
KILLED_AT = """
import os, signal, sys
from mergegate import main
from mergegate.records import fsutil
calls = {"n": 0}
real = fsutil.atomic_write
def write(path, *a, **k):
    calls["n"] += 1
    if calls["n"] == int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(path, *a, **k)
fsutil.atomic_write = write
sys.exit(main.main(["queue", "accept", sys.argv[1], "--reviewed"]))
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "r")
    commit(r, {"src/shop.py": SHOP}, "production")
    return r


def _killed_accept(repo: Path, cid: str, at: int) -> int:
    proc = subprocess.run([sys.executable, "-c", KILLED_AT, cid[:8], str(at)], cwd=repo,
                          env=clean_env({"PYTHONPATH": str(ROOT)}), capture_output=True, text=True, check=False)
    return proc.returncode


def _status(repo: Path, cid: str) -> str:
    return str(json.loads(gate(repo, "queue", "show", cid, "--json", check=0).stdout)["meta"]["status"])


def _installed(repo: Path) -> list[str]:
    return sorted(p.name for p in (repo / "oracles/properties").glob("test_shop_total_*.py"))


def _assert_accepted_once(repo: Path, cid: str) -> None:
    assert _status(repo, cid) == "accepted"
    assert _installed(repo) == [f"test_shop_total_{cid[:8]}.py"]
    assert not journal.pending(repo / ".gate/queue" / cid)
    staged = git(repo, "diff", "--cached", "--name-only").stdout.split()
    assert f"oracles/properties/test_shop_total_{cid[:8]}.py" in staged and "oracles/MANIFEST.sha256" in staged
    git(repo, "commit", "-q", "--no-verify", "-m", "accept")
    gate(repo, "manifest", "verify", "--rev", "HEAD", check=0)


@pytest.mark.parametrize("at", [2, 4, 5, 6, 7])
def test_a_rerun_after_a_kill_mid_install_installs_once(repo: Path, at: int) -> None:
    cid = enqueue(repo)
    assert _killed_accept(repo, cid, at) == -signal.SIGKILL
    assert _status(repo, cid) == "pending"
    assert journal.pending(repo / ".gate/queue" / cid)  # the install had begun
    gate(repo, "queue", "accept", cid[:8], "--reviewed", check=0)
    _assert_accepted_once(repo, cid)


@pytest.mark.parametrize("at", [5, 7])
def test_reject_after_a_kill_mid_install_leaves_nothing_installed(repo: Path, at: int) -> None:
    cid = enqueue(repo)
    before = git(repo, "status", "--porcelain").stdout
    manifest = (repo / "oracles/MANIFEST.sha256").read_bytes()
    assert _killed_accept(repo, cid, at) == -signal.SIGKILL
    assert _installed(repo)  # the killed run had written the oracle file
    gate(repo, "queue", "reject", cid[:8], "--reason", "changed my mind", check=0)
    assert _status(repo, cid) == "rejected" and _installed(repo) == []
    assert git(repo, "status", "--porcelain").stdout == before  # index and work tree as they were
    assert (repo / "oracles/MANIFEST.sha256").read_bytes() == manifest
    gate(repo, "manifest", "verify", check=0)


def test_kill_9_at_random_times_then_rerun(repo: Path) -> None:
    rng = random.Random(11)
    for trial in range(6):
        cid = enqueue(repo, CANDIDATE + f"# {trial}\n".encode())
        proc = subprocess.Popen([sys.executable, "-m", "mergegate", "queue", "accept", cid[:8], "--reviewed"], cwd=repo,
                                env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.random() * 0.6)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        rerun = gate(repo, "queue", "accept", cid[:8], "--reviewed")
        assert rerun.returncode == 0 or "already accepted" in rerun.stderr, rerun.stderr
        assert _status(repo, cid) == "accepted"
        assert (repo / f"oracles/properties/test_shop_total_{cid[:8]}.py").read_bytes().startswith(CANDIDATE)
        assert not journal.pending(repo / ".gate/queue" / cid)
        git(repo, "commit", "-q", "--no-verify", "-m", f"accept {trial}")
        gate(repo, "manifest", "verify", "--rev", "HEAD", check=0)
