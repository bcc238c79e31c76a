"""Sealed runs of one oracle file are collected once and forked per property x seed (runner/trusted/group.py).

What must hold, through the real ``gate run`` on a real repository (bubblewrap containment):

- the file is collected (its module body run) once per side, not once per run;
- each run is still a fresh process on both sides: a run never sees the trusted-side or the
  production-side state another run left, and every run meets production as collection left it
  (an object the oracle made at import time is there, untouched by the other runs);
- a run that hangs or kills its production process fails alone: the file's other runs pass;
- hostile production that answers the twin request with something other than one socket, or that
  kills the collection's own process, makes the runs after it fail (closed), and nothing hangs;
- the schedule: a file's runs in units of at most ``GROUP_MAX``, split while evaluators would idle,
  and node ids that select each other's items never share a collection.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import gate, init_repo, sign_and_commit

SEEDS = [11, 29, 47]

STATE = '''\
import os

_count = 0


def bump():
    global _count
    _count += 1
    return _count


def pid():
    return os.getpid()


def ppid():
    return os.getppid()


def crash():
    os._exit(3)


def cores():
    return sorted(os.sched_getaffinity(0))


class Box:
    def __init__(self):
        self.items = []

    def add(self, x):
        self.items.append(x)
        return len(self.items)
'''

ORACLE = '''\
import os
import time
from pathlib import Path

from hypothesis import given, strategies as st

from box import state

LOG = Path(@LOG@)
with LOG.open("a") as log:  # the oracle is trusted: it may count its own collections
    log.write("collect\\n")
BOX = state.Box()  # made at collection, in the production process every run is a twin of
COLLECTION_PID = state.pid()
FIRST = []


def first_example(name):
    """Once per run (per process): production and the trusted side are as collection left them."""
    if FIRST:
        return
    FIRST.append(name)
    with LOG.open("a") as log:
        log.write(f"run {name} {os.getpid()}\\n")
        log.write(f"cores {name} {sorted(os.sched_getaffinity(0))} {state.cores()}\\n".replace(", ", ","))
    assert state.bump() == 1, "production state another run left"
    assert BOX.add(name) == 1, "the collection's object, as another run left it"
    assert state.ppid() == COLLECTION_PID, "not a twin of the collection's production process"
    assert state.pid() != COLLECTION_PID


@given(st.integers())
def test_a(x):
    first_example("a")


@given(st.text())
def test_b(s):
    first_example("b")


def test_plain():
    first_example("plain")


def test_hang():
    time.sleep(600)


def test_crash():
    state.crash()
'''

ENTRY = ("id: {pid}\noracle: oracles/properties/test_state.py::{fn}\nclaim: \"{pid}\"\ncanary: false\n"
         "quarantine_eligible: false\nfixtures: []\nmax_examples: 5\ncovers: [\"src/box/**\"]\n")
PROPS = {"prop.a": "test_a", "prop.b": "test_b", "prop.plain": "test_plain", "prop.hang": "test_hang",
         "prop.crash": "test_crash"}


def make_repo(path: Path, log: Path, production: str = STATE) -> Path:
    repo = init_repo(path)
    policy = (repo / "gate.yaml").read_text()
    assert "seeds: [11, 29, 47]" in policy
    files: dict[str, str | bytes | None] = {
        "gate.yaml": policy + "runner: {timeout_s: 4, containment: bwrap, jobs: 1}\n",
        "src/box/__init__.py": "",
        "src/box/state.py": production,
        "oracles/properties/test_state.py": ORACLE.replace("@LOG@", repr(str(log))),
        "oracles/catalog/claimed.yaml": f"claimed: [{', '.join(sorted(PROPS))}]\n",
    }
    for pid, fn in PROPS.items():
        files[f"oracles/catalog/{pid}.yaml"] = ENTRY.format(pid=pid, fn=fn)
    sign_and_commit(repo, files, "production and oracles")
    return repo


def run(repo: Path) -> dict[tuple[str, int], dict[str, Any]]:
    out = repo.parent / "rows.jsonl"
    proc = gate(repo, "run", "--rev", "HEAD", "--out", str(out))
    assert proc.returncode in (0, 1), proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {(r["prop"], r["seed"]): r for r in rows}


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory, bwrap_works: bool) -> tuple[dict[Any, Any], list[str]]:
    root = tmp_path_factory.mktemp("grouped")
    log = root / "log.txt"
    repo = make_repo(root / "repo", log)
    log.write_text("")
    rows = run(repo)
    return rows, log.read_text().splitlines()


def test_the_file_is_collected_once_per_side(honest: tuple[dict[Any, Any], list[str]]) -> None:
    rows, log = honest
    assert rows[("prop.a", 11)]["status"] == "pass", rows[("prop.a", 11)]
    assert log.count("collect") == 1, log


@pytest.mark.parametrize("prop", ["prop.a", "prop.b", "prop.plain"])
def test_each_run_is_fresh_on_both_sides(honest: tuple[dict[Any, Any], list[str]], prop: str) -> None:
    rows, log = honest
    for seed in SEEDS:
        row = rows[(prop, seed)]
        assert row["status"] == "pass", row
    runs = [line.split() for line in log if line.startswith("run ")]
    # A Hypothesis property at each seed, a plain test once: each in a process of its own.
    assert len(runs) == 7, log
    assert len({pid for _run, _name, pid in runs}) == 7, log


def test_production_runs_on_its_evaluators_core(honest: tuple[dict[Any, Any], list[str]]) -> None:
    """A call and its reply are a switch on one core, not a wake-up on another (pool.pin)."""
    _rows, log = honest
    seen = [line.split() for line in log if line.startswith("cores ")]
    assert len(seen) == 7, log
    usable = len(os.sched_getaffinity(0))
    for _cores, _name, evaluator, production in seen:
        assert evaluator == production, seen
        assert len(json.loads(evaluator)) == 1 or usable == 1, seen


def test_a_hanging_run_fails_alone(honest: tuple[dict[Any, Any], list[str]]) -> None:
    rows, _log = honest
    assert rows[("prop.hang", 11)]["status"] == "fail"
    assert rows[("prop.hang", 11)]["witness"] == "Timeout:runner", rows[("prop.hang", 11)]


def test_a_run_that_kills_its_production_process_fails_alone(honest: tuple[dict[Any, Any], list[str]]) -> None:
    rows, _log = honest
    assert rows[("prop.crash", 11)]["status"] == "fail"
    assert rows[("prop.crash", 11)]["witness"] == "Crash:subject", rows[("prop.crash", 11)]


HOSTILE_TWIN = STATE + '''

import socket as _socket
import sys as _sys

_server = _sys.modules["__main__"]


def _pipe_twin(s):
    """Answer the twin request with a pipe, not a socket, and claim success."""
    read, _write = __import__("os").pipe()
    _socket.send_fds(s.endpoint.sock, [b"T"], [read])
    return ["ok", 0]


_server.OPS["twin"] = _pipe_twin
'''

KILL_COLLECTION = STATE.replace("def crash():\n    os._exit(3)",
                                "def crash():\n    import signal\n    os.kill(os.getppid(), signal.SIGKILL)")


@pytest.mark.parametrize("production", [HOSTILE_TWIN, KILL_COLLECTION], ids=["pipe-for-a-twin", "kills-collection"])
def test_hostile_production_around_twins_fails_closed(tmp_path: Path, bwrap_works: bool, production: str) -> None:
    log = tmp_path / "log.txt"
    rows = run(make_repo(tmp_path / "repo", log, production))
    assert rows, "no rows"
    statuses = {key: row["status"] for key, row in rows.items()}
    if production is HOSTILE_TWIN:
        # No run gets a production process: every property fails, none passes.
        assert set(statuses.values()) == {"fail"}, statuses
        assert {row["witness"] for row in rows.values()} == {"Crash:subject"}, rows
    else:
        # Killing the collection's process ends the runs still to come (in plan order: prop.hang,
        # then prop.plain): they fail closed, and nothing hangs (the run finished).
        assert rows[("prop.plain", 11)]["status"] == "fail", rows[("prop.plain", 11)]
        assert rows[("prop.plain", 11)]["witness"] == "Crash:subject", rows[("prop.plain", 11)]


# ---------------------------------------------------------------- the schedule (pure)


def test_selects_what_pytest_would_run() -> None:
    from mergegate.runner.trusted.group import overlapping, selects

    assert selects("t.py::test_x", "t.py::test_x")
    assert selects("t.py::test_x", "t.py::test_x[1-2]")
    assert selects("t.py::TestC", "t.py::TestC::test_y")
    assert not selects("t.py::test_x", "t.py::test_xy")
    assert not selects("t.py::TestC", "t.py::TestCD::test_y")
    assert overlapping(["t.py::TestC", "t.py::TestC::test_y"])
    assert not overlapping(["t.py::test_x", "t.py::test_xy", "t.py::TestC::test_x"])
    assert overlapping(["t.py::test_x", "t.py::test_x[1]"])


def test_units_group_split_and_isolate() -> None:
    from dataclasses import dataclass

    from mergegate.runner import schedule

    @dataclass
    class Prop:
        oracle: str
        isolation: str = "sealed"

        @property
        def oracle_file(self) -> str:
            return self.oracle.partition("::")[0]

    @dataclass
    class Spec:
        prop: Prop
        trusted: Any

    @dataclass
    class Tree:
        root: Path

    class Rev:
        rev = "r1"

    tree = Tree(Path("/t"))

    def task(nodeid: str, isolation: str = "sealed") -> Any:
        return (tree, Spec(Prop(nodeid, isolation), Rev()), 11)

    many = [task(f"a.py::test_{i}") for i in range(40)]
    units = schedule.units(many, jobs=2)
    assert sorted(len(u) for u in units) == [8, 16, 16]
    assert sorted(i for u in units for i in u) == list(range(40))
    assert [len(u) for u in schedule.units(many[:6], jobs=2)] == [3, 3]  # never leave an evaluator idle
    assert schedule.units(many[:6], jobs=1) == [list(range(6))]
    mixed = [task("a.py::TestC"), task("a.py::TestC::test_y"), task("b.py::test_z", "shared"), task("b.py::test_w")]
    assert sorted(schedule.units(mixed, jobs=1)) == [[0], [1], [2], [3]]


# ---------------------------------------------------------------- through gate check


HANGING_TWIN = STATE + '''

import sys as _sys
import time as _time

_server = _sys.modules["__main__"]


def _never(s):
    """Never answer a twin request: every run of the file waits on production for ever."""
    _time.sleep(3600)


_server.OPS["twin"] = _never
'''


def test_an_agent_patch_whose_production_never_answers_a_twin_is_rejected(tmp_path: Path, bwrap_works: bool) -> None:
    from tests.helpers import AGENT, commit

    repo = make_repo(tmp_path / "repo", tmp_path / "log.txt")
    head = commit(repo, {"src/box/state.py": HANGING_TWIN}, "agent: faster state", env=AGENT)
    started = time.monotonic()
    proc = gate(repo, "check", "--base", "HEAD~1", "--head", head, "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["decision"] == "reject", data
    failed = {p["prop"] for p in data["properties"] if p["verdict"] != "pass"}
    assert {"prop.a", "prop.b", "prop.plain"} <= failed, data["properties"]
    assert time.monotonic() - started < 120  # bounded by the runs' timeout, not production's sleep
