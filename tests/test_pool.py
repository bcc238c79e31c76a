"""The runner's pool: zygotes started ahead of their pool, and each kept on one core.

A sealed run is a call/reply ping-pong between an evaluator child and its subject; on one
core a round trip is a direct switch, across two it waits for a wake-up (``pool.pin``).
What must hold: the choice of core is a pure rule (one core per zygote, never when the pool
is larger than the cores); zygotes started ahead (``prestarted``) are the ones the pool uses,
and any the pool did not take are stopped when the block ends.  That the subject's process
follows its evaluator's core is checked end to end in ``test_grouped_runs.py``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mergegate.runner import pool


@pytest.mark.parametrize(("number", "size", "cpus", "offset", "core"), [
    (0, 1, [0], 0, None),  # one core: nothing to choose
    (0, 1, [0, 1], 0, 0),
    (0, 1, [0, 1], 7, 1),  # the offset (the gate's pid) spreads two gates over the cores
    (1, 2, [0, 1], 0, 1),
    (1, 2, [0, 1], 1, 0),
    (0, 3, [0, 1], 0, None),  # more zygotes than cores: the scheduler balances them, not us
    (2, 3, [2, 5, 7], 1, 2),  # cores as the affinity mask names them
])
def test_one_core_per_zygote(number: int, size: int, cpus: list[int], offset: int, core: int | None) -> None:
    assert pool.core_for(number, size, cpus, offset) == core


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_prestarted_zygotes_serve_the_pool_and_the_unused_ones_stop(tmp_path: Path) -> None:
    with pool.prestarted(2):
        started = [proc.pid for proc in pool._warm]
        assert len(started) == 2 and all(_alive(pid) for pid in started)
        runs = pool.Pool(1, 10.0, tmp_path)
        zyg = runs._spawn()
        assert zyg.proc.pid == started[0]  # taken, not started again
        assert zyg.proc.poll() is None
        assert zyg.proc.stdin is not None and zyg.proc.stdout is not None
        zyg.proc.stdin.write(b"\n")  # a blank line: ignored, the zygote serves on
        zyg.proc.stdin.flush()
        runs.close()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in started), started
    assert pool._warm == []


# A shared run's zygote is production's (runner/shared_box.py): these stand in for one that lies.
LIAR = """\
import json, subprocess, sys, time
victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
open(sys.argv[1], "w").write(str(victim.pid))
sys.stdin.readline()
print(json.dumps({"pid": victim.pid}), flush=True)  # "my child is that process": never signalled
print(json.dumps({"id": 99, "status": "pass"}), flush=True)  # another job's outcome: not taken
time.sleep(60)  # and then it stops answering
"""


def test_a_shared_zygote_that_stops_answering_is_killed_and_its_word_is_taken_for_its_own_jobs_only(
        tmp_path: Path) -> None:
    import sys

    from mergegate.errors import InternalError

    marker = tmp_path / "victim"
    liar = pool.Pool(1, 1.0, tmp_path, command=[sys.executable, "-c", LIAR, str(marker)], env=dict(os.environ),
                     deadline=1.0)
    got: list[dict[str, object]] = []
    started = time.monotonic()
    with pytest.raises(InternalError, match="stopped answering"):  # though a process it left holds the pipe
        liar.submit_group([{"id": 1}], each=got.append)
    assert time.monotonic() - started < 10
    assert got == []  # job 99 was not its job
    victim = int(marker.read_text())
    try:
        assert _alive(victim)  # a pid the zygote names is never signalled from here
    finally:
        os.kill(victim, 9)
    liar.close()


def test_a_shared_zygote_has_a_ceiling_on_a_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from mergegate.errors import InternalError

    monkeypatch.setattr(pool, "LINE_MAX", 1000)
    flood = "import sys; sys.stdin.readline(); sys.stdout.write('x' * 5000); sys.stdout.flush()"
    liar = pool.Pool(1, 1.0, tmp_path, command=[sys.executable, "-c", flood], env=dict(os.environ), deadline=5.0)
    with pytest.raises(InternalError, match="longer than 1000 bytes"):
        liar.submit_group([{"id": 1}])
    liar.close()


def test_a_shared_zygote_that_stops_reading_its_jobs_is_not_waited_for(tmp_path: Path) -> None:
    import sys

    from mergegate.errors import InternalError

    deaf = pool.Pool(1, 1.0, tmp_path, command=[sys.executable, "-c", "import time; time.sleep(60)"],
                     env=dict(os.environ), deadline=1.0)
    started = time.monotonic()
    with pytest.raises(InternalError, match="stopped reading"):  # a job larger than the pipe holds
        deaf.submit_group([{"id": 1, "source": "x" * (1 << 20)}])
    assert time.monotonic() - started < 10
    deaf.close()
