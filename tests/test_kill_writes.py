"""Kill -9 during a ledger write or a manifest sign: the file is old or new, never torn; the next run succeeds."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mergegate.records import ledger, manifest
from tests.helpers import clean_env, commit, gate, git, init_repo, write

BASE_RUN = '{"prop":"prop.x","seed":11,"status":"fail","witness":"E:x","signature":"s","fixture_digest":"d1"}\n'
OPEN = ("freeze", "open", "--prop", "prop.x", "--reason", "clock", "--paths", "src/**", "--expires", "14d")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = init_repo(tmp_path / "repo")
    commit(path, {"src/calc.py": "def add(a, b):\n    return a + b\n"}, "calc")
    write(tmp_path, {"base.jsonl": BASE_RUN})
    budget = "budget: {max_active: 100, max_added_per_patch: 100}\n"
    write(path, {"freeze_ledger.yaml": "version: 1\n" + budget + "entries: []\n"})
    return path


def _kill_at_random(repo: Path, argv: list[str], rng: random.Random) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "mergegate", *argv], cwd=repo, env=clean_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(rng.random() * 0.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def test_kill_9_during_freeze_open_leaves_a_whole_ledger(repo: Path) -> None:
    rng = random.Random(3)
    run = str(repo.parent / "base.jsonl")
    for trial in range(6):
        _kill_at_random(repo, [*OPEN, "--run", run, "--id", f"FZ-k{trial}"], rng)
        led = ledger.load(repo / "freeze_ledger.yaml")  # old or new, never torn
        allowed = {f"FZ-{k}{t}" for t in range(trial + 1) for k in "kn"} - {f"FZ-n{trial}"}
        assert {e.id for e in led.entries} <= allowed
        gate(repo, *OPEN, "--run", run, "--id", f"FZ-n{trial}", check=0)  # the next run succeeds


def test_kill_9_during_manifest_sign_leaves_a_whole_manifest(repo: Path) -> None:
    rng = random.Random(5)
    path = repo / "oracles/MANIFEST.sha256"
    for trial in range(6):
        write(repo, {f"oracles/properties/test_k{trial}.py": f"def test_k{trial}():\n    pass\n"})
        git(repo, "add", "-A")
        _kill_at_random(repo, ["manifest", "sign", "--staged"], rng)
        manifest.parse(path.read_bytes(), str(path))  # old or new, never torn
        gate(repo, "manifest", "sign", "--staged", check=0)  # the next run succeeds
        git(repo, "add", "-A")
        gate(repo, "manifest", "verify", check=0)


# ---------------------------------------------------------------- lock contention


HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _holder(lock: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_lock_held_by_another_gate_is_reported_not_waited_on_forever(tmp_path: Path) -> None:
    from mergegate.errors import UsageError
    from mergegate.records import fsutil

    lock = tmp_path / "ledger.lock"
    holder = _holder(lock, 30)
    try:
        started = time.monotonic()
        with pytest.raises(UsageError, match="another gate is running") as caught, fsutil.locked(lock, wait_s=0.5):
            pass
        assert 0.5 <= time.monotonic() - started < 5
        assert "wait for it to finish" in str(caught.value.fix)
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_let_go_in_time_is_taken(tmp_path: Path) -> None:
    from mergegate.records import fsutil

    lock = tmp_path / "ledger.lock"
    holder = _holder(lock, 0.3)
    try:
        with fsutil.locked(lock, wait_s=10):
            assert holder.poll() is not None or holder.wait(5) == 0  # ours only once the holder let go
    finally:
        holder.kill()
        holder.wait()
