"""Sealed runs of one oracle file are collected once and run in one trusted process, each against a fresh twin
(runner/trusted/group.py, inplace.py).

What must hold, through the real ``gate run`` on a real repository (bubblewrap containment):

- the file is collected (its module body run) once per side, not once per run;
- each run meets a fresh production process: a run never sees the production-side state another
  run left, and every run meets production as collection left it (an object the oracle made at
  import time is there, untouched by the other runs); the trusted side is one process per file, as a
  pytest session is;
- a production object an oracle cache kept from an earlier run is refused in a later one, never
  taken for another object of the later run's twin;
- a run that hangs, kills its production process or ends its trusted process fails alone: the file's
  other runs pass;
- hostile production that answers the twin request with something other than one socket, or that
  kills the collection's own process, makes the runs after it fail (closed), and nothing hangs;
- the schedule: a side's runs in units of at most ``GROUP_MAX``, split while evaluators would idle,
  and node ids that select each other's items never share a collection (several files in a unit:
  tests/test_grouped_files.py).
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
import sys
import time
from pathlib import Path

from hypothesis import given, strategies as st

from box import state

LOG = Path(@LOG@)
with LOG.open("a") as log:  # the oracle is trusted: it may count its own collections
    log.write("collect\\n")
BOX = state.Box()  # made at collection, in the production process every run is a twin of
COLLECTION_PID = state.pid()
KEPT = []  # an oracle cache across runs (a trusted module global)


def first_example(name):
    """Once per run: production is as collection left it (the first bump of a fresh twin is 1)."""
    print(f"{name} wrote this", file=sys.stderr)  # only its own run's row may ever show it
    if state.bump() != 1:
        return  # a later example of the same run
    with LOG.open("a") as log:
        log.write(f"run {name} {os.getpid()} {state.pid()}\\n")
        log.write(f"cores {name} {sorted(os.sched_getaffinity(0))} {state.cores()}\\n".replace(", ", ","))
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
    print("hang: about to sleep", file=sys.stderr)
    time.sleep(600)


def test_crash():
    state.crash()


def test_keep():
    """A production object kept from an earlier run names nothing in this one."""
    if KEPT:
        with LOG.open("a") as log:
            try:
                KEPT[0].add(1)
                log.write("kept: used\\n")
            except Exception as exc:
                log.write(f"kept: {type(exc).__name__}: {exc}\\n")
    KEPT.append(state.Box())


def test_exit():
    print("exit: about to end", file=sys.stderr, flush=True)
    os._exit(9)  # the trusted process itself ends


def test_fixture():
    assert Path(__file__).parent.parent.joinpath("fixtures", "data.txt").read_text() == "data"
'''

ENTRY = ("id: {pid}\noracle: oracles/properties/test_state.py::{fn}\nclaim: \"{pid}\"\ncanary: false\n"
         "quarantine_eligible: false\nfixtures: []\nmax_examples: 5\ncovers: [\"src/box/**\"]\n")
PROPS = {"prop.a": "test_a", "prop.b": "test_b", "prop.plain": "test_plain", "prop.hang": "test_hang",
         "prop.crash": "test_crash", "prop.keep": "test_keep", "prop.keep2": "test_keep", "prop.exit": "test_exit",
         "prop.kept_fixture": "test_fixture"}


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
    files["oracles/fixtures/data.txt"] = "data"
    files["oracles/catalog/prop.kept_fixture.yaml"] = ENTRY.format(pid="prop.kept_fixture", fn="test_fixture").replace(
        "fixtures: []", 'fixtures: ["oracles/fixtures/data.txt"]')
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
    # once, and again for the runs after each of the two runs that ended their collector (prop.exit, prop.hang)
    assert log.count("collect") == 3, log


@pytest.mark.parametrize("prop", ["prop.a", "prop.b", "prop.plain"])
def test_each_run_meets_a_fresh_production(honest: tuple[dict[Any, Any], list[str]], prop: str) -> None:
    rows, log = honest
    for seed in SEEDS:
        row = rows[(prop, seed)]
        assert row["status"] == "pass", row
    runs = [line.split() for line in log if line.startswith("run ")]
    # A Hypothesis property at each seed, a plain test once: each met a production process whose first
    # bump was 1 (else it would not have logged), each a twin of its own.
    assert len(runs) == 7, log
    assert len({production for _run, _name, _trusted, production in runs}) == 7, log
    # prop.a and prop.b's six runs share one trusted process (prop.plain comes after the collector prop.exit ended)
    assert len({trusted for _run, name, trusted, _production in runs if name in ("a", "b")}) == 1, log


def test_an_object_kept_from_an_earlier_run_is_refused(honest: tuple[dict[Any, Any], list[str]]) -> None:
    """The second run's use of the first run's object is refused; the test catches the refusal and goes on, so it
    fails with it (a refusal is a fail, never an answer: tests/test_refusals.py); the first run passes."""
    rows, log = honest
    kept = [line for line in log if line.startswith("kept: ")]
    assert len(kept) == 1 and "SealedCallError" in kept[0] and "earlier run" in kept[0], log
    assert rows[("prop.keep", 11)]["status"] == "pass", rows[("prop.keep", 11)]
    second = rows[("prop.keep2", 11)]
    assert second["status"] == "fail" and "went on after the gate refused" in second["error"], second
    assert "earlier run" in second["error"], second


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
    assert rows[("prop.hang", 11)]["error"].endswith("stderr: hang: about to sleep"), rows[("prop.hang", 11)]


def test_a_run_that_kills_its_production_process_fails_alone(honest: tuple[dict[Any, Any], list[str]]) -> None:
    rows, _log = honest
    assert rows[("prop.crash", 11)]["status"] == "fail"
    assert rows[("prop.crash", 11)]["witness"] == "Crash:subject", rows[("prop.crash", 11)]


def test_a_run_that_ends_its_trusted_process_fails_alone(honest: tuple[dict[Any, Any], list[str]]) -> None:
    rows, _log = honest
    assert rows[("prop.exit", 11)]["status"] == "fail"
    assert rows[("prop.exit", 11)]["witness"] == "Crash:runner", rows[("prop.exit", 11)]
    # what it wrote to stderr is in its row, and nothing another run of its collector wrote there
    assert "stderr: exit: about to end" in rows[("prop.exit", 11)]["error"], rows[("prop.exit", 11)]
    assert "wrote this" not in rows[("prop.exit", 11)]["error"], rows[("prop.exit", 11)]
    passing = {key for key, row in rows.items() if row["status"] == "pass"}
    assert {key[0] for key in passing} == {"prop.a", "prop.b", "prop.plain", "prop.keep", "prop.kept_fixture"}, rows


def test_a_run_lists_only_the_fixtures_it_opened(honest: tuple[dict[Any, Any], list[str]]) -> None:
    """Runs share a trusted process: the files one run opened are not another's (prop.plain runs after it, in the
    same collector)."""
    rows, _log = honest
    row = rows[("prop.kept_fixture", 11)]
    assert row["status"] == "pass" and row.get("fixtures_opened") == ["oracles/fixtures/data.txt"], row
    assert not rows[("prop.plain", 11)].get("fixtures_opened"), rows[("prop.plain", 11)]


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
        # Killing the collection's process ends the runs still to come (in plan order: prop.exit, ...,
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
        seeds_apply: bool = True  # a Hypothesis test: 64 to a unit

    @dataclass
    class Tree:
        root: Path

    class Rev:
        rev = "r1"

    tree = Tree(Path("/t"))

    def task(nodeid: str, isolation: str = "sealed") -> Any:
        return (tree, Spec(Prop(nodeid, isolation), Rev()), 11)

    assert schedule.GROUP_MAX == 64
    many = [task(f"a.py::test_{i}") for i in range(160)]
    units = schedule.units(many, jobs=2)
    assert sorted(len(u) for u in units) == [53, 53, 54]  # 160 runs: three units (at most 64), even
    assert sorted(i for u in units for i in u) == list(range(160))
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


TWIN_DIES = '''
import os, sys, time
from mergegate.runner.subject import server

arm = server.LIMITS.death_signal()
assert server.LIMITS.death_signal() is arm, "made again for each twin"
r, w = os.pipe()
if os.fork() == 0:  # a connection's process
    mine = server.LIMITS.death_signal()
    assert mine is not arm, "a child's twins must die with the child, not with its parent"
    if os.fork() == 0:  # its twin
        mine()
        os.write(w, str(os.getpid()).encode())
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1), os.dup2(null, 2)  # the test waits for the twin's end, not its output's
        time.sleep(60)
        os._exit(0)
    time.sleep(0.2)
    os._exit(0)  # the connection ends: its twin must go with it
os.close(w)
print(os.read(r, 32).decode())
'''


def test_a_twin_dies_with_the_process_it_was_forked_from(tmp_path: Path) -> None:
    """``subject/server.py``: each twin is armed to die with its connection's process (no orphan runs on after its
    run was given up), by a function made once per process, not once per twin."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", TWIN_DIES], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    twin = int(proc.stdout)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{twin}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.05)
    os.kill(twin, 9)
    pytest.fail("the twin outlived the process it was forked from by 10 s")
