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
