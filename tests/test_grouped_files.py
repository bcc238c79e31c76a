"""Sealed runs of several oracle files share one collector, as one pytest session collects a suite
(runner/schedule.py ``units``, runner/trusted/group.py, collected.py).

What must hold, through the real ``gate run`` on a real repository (bubblewrap containment):

- the files of a unit are collected by one trusted process, each file once, and their runs run there;
- a run is charged only with what collecting its own file opened: a fixture one file reads at import
  is not another file's undeclared fixture;
- one file's collection error, or a collection that hangs, decides only that file's runs, exactly as
  when the file runs alone: the other files' runs pass (a run that ends the subject fails the rest of
  its own file's runs only: tests/test_runner.py ``test_a_killed_subject_is_a_crash_and_the_run_goes_on``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import gate, init_repo, sign_and_commit

STATE = "import os\n\n\ndef pid():\n    return os.getpid()\n"

HEADER = '''\
import os
from pathlib import Path

from box import state

LOG = Path(@LOG@)
with LOG.open("a") as log:  # the oracle is trusted: it may log its own collections
    log.write(f"collect {Path(__file__).stem} {os.getpid()}\\n")
'''

ONE = HEADER + '''
DATA = (Path(__file__).parent.parent / "fixtures" / "one.txt").read_text()  # a fixture read at import


def test_one():
    with LOG.open("a") as log:
        log.write(f"run one {os.getpid()}\\n")
    assert DATA == "one" and state.pid() != os.getpid()
'''

TWO = HEADER + '''

def test_two():
    with LOG.open("a") as log:
        log.write(f"run two {os.getpid()}\\n")
    assert state.pid() != os.getpid()
'''

BAD = HEADER + '''
raise RuntimeError("this oracle file cannot be collected")


def test_bad():
    pass
'''

SLOW = HEADER + '''
import time

time.sleep(600)


def test_slow():
    pass
'''

ENTRY = ("id: {pid}\noracle: oracles/properties/{file}.py::{fn}\nclaim: \"{pid}\"\ncanary: false\n"
         "quarantine_eligible: false\nfixtures: {fixtures}\nmax_examples: 5\ncovers: [\"src/box/**\"]\n")


def make_repo(path: Path, log: Path, files: dict[str, str], extra: dict[str, str] | None = None) -> Path:
    """Each ``files`` key ``[folder/]name``: ``oracles/properties/[folder/]test_name.py`` and its entry."""
    repo = init_repo(path)
    policy = (repo / "gate.yaml").read_text()
    pids = {key: "prop." + key.replace("/", "_") for key in files}
    content: dict[str, str | bytes | None] = {
        "gate.yaml": policy + "runner: {timeout_s: 2, containment: bwrap, jobs: 1}\n",
        "src/box/__init__.py": "", "src/box/state.py": STATE, "oracles/fixtures/one.txt": "one",
        "oracles/catalog/claimed.yaml": f"claimed: [{', '.join(sorted(pids.values()))}]\n", **(extra or {}),
    }
    for key, text in files.items():
        folder, _, name = key.rpartition("/")
        rel = f"{folder}/test_{name}" if folder else f"test_{name}"
        content[f"oracles/properties/{rel}.py"] = text.replace("@LOG@", repr(str(log)))
        fixtures = '["oracles/fixtures/one.txt"]' if name == "one" else "[]"
        content[f"oracles/catalog/{pids[key]}.yaml"] = ENTRY.format(pid=pids[key], file=rel, fn=f"test_{name}",
                                                                   fixtures=fixtures)
    sign_and_commit(repo, content, "production and oracles")
    return repo


def run(repo: Path, *only: str) -> dict[str, dict[str, Any]]:
    out = repo.parent / "rows.jsonl"
    args = [arg for prop in only for arg in ("--only", prop)]
    proc = gate(repo, "run", "--rev", "HEAD", "--seeds", "11", "--out", str(out), *args)
    assert proc.returncode in (0, 1, 2), proc.stderr  # 2: an oracle file that cannot be loaded
    return {row["prop"]: row for row in map(json.loads, out.read_text().splitlines())}


@pytest.fixture(scope="module")
def together(tmp_path_factory: pytest.TempPathFactory, bwrap_works: bool) -> tuple[Path, dict[str, Any], list[str]]:
    root = tmp_path_factory.mktemp("files")
    log = root / "log.txt"
    repo = make_repo(root / "repo", log, {"bad": BAD, "one": ONE, "two": TWO})
    log.write_text("")
    rows = run(repo)
    return repo, rows, log.read_text().splitlines()


def test_the_files_of_a_unit_share_one_collector(together: tuple[Path, dict[str, Any], list[str]]) -> None:
    _repo, rows, log = together
    assert rows["prop.one"]["status"] == rows["prop.two"]["status"] == "pass", rows
    collects = [line.split() for line in log if line.startswith("collect ")]
    good = {name: pid for _collect, name, pid in collects if name in ("test_one", "test_two")}
    # Together (with test_bad) first: that collection failed, so each file was collected again on its own.
    together_pids = [pid for _collect, name, pid in collects[:3]]
    assert [name for _collect, name, _pid in collects[:3]] == ["test_bad", "test_one", "test_two"], log
    assert len(set(together_pids)) == 1, log
    assert len(good) == 2 and good["test_one"] != good["test_two"], log  # alone, after the regroup


def test_a_run_is_charged_only_with_its_own_files_collection(
        together: tuple[Path, dict[str, Any], list[str]]) -> None:
    _repo, rows, _log = together
    assert rows["prop.one"].get("fixtures_opened") == ["oracles/fixtures/one.txt"], rows["prop.one"]
    assert not rows["prop.two"].get("fixtures_opened"), rows["prop.two"]


def test_one_files_collection_error_is_its_own(together: tuple[Path, dict[str, Any], list[str]]) -> None:
    repo, rows, _log = together
    bad = rows["prop.bad"]
    assert bad["status"] == "fail" and "cannot be collected" in bad["error"], bad
    alone = run(repo, "prop.bad")["prop.bad"]
    for key in ("status", "witness", "error", "signature"):
        assert bad[key] == alone[key], (key, bad, alone)


def test_files_without_errors_share_a_collector(tmp_path: Path, bwrap_works: bool) -> None:
    log = tmp_path / "log.txt"
    repo = make_repo(tmp_path / "repo", log, {"one": ONE, "two": TWO})
    log.write_text("")
    rows = run(repo)
    assert {prop: row["status"] for prop, row in rows.items()} == {"prop.one": "pass", "prop.two": "pass"}, rows
    # collected together: test_two's run is not charged with the fixture test_one read at import
    assert rows["prop.one"].get("fixtures_opened") == ["oracles/fixtures/one.txt"], rows["prop.one"]
    assert not rows["prop.two"].get("fixtures_opened"), rows["prop.two"]
    collects = [line.split() for line in log.read_text().splitlines() if line.startswith("collect ")]
    runs = [line.split() for line in log.read_text().splitlines() if line.startswith("run ")]
    assert len(collects) == 2 and len({pid for *_, pid in collects + runs}) == 1, (collects, runs)


def test_a_collection_that_hangs_fails_only_its_own_file(tmp_path: Path, bwrap_works: bool) -> None:
    log = tmp_path / "log.txt"
    repo = make_repo(tmp_path / "repo", log, {"one": ONE, "slow": SLOW})
    rows = run(repo)
    assert rows["prop.one"]["status"] == "pass", rows["prop.one"]
    assert rows["prop.slow"]["status"] == "fail" and rows["prop.slow"]["witness"] == "Timeout:runner", rows


def test_units_span_files_of_one_side() -> None:
    from types import SimpleNamespace as NS

    from mergegate.runner import schedule

    def task(root: str, nodeid: str, rev: str = "r1", isolation: str = "sealed", plain: bool = False) -> Any:
        prop = NS(oracle=nodeid, oracle_file=nodeid.partition("::")[0], isolation=isolation)
        return (NS(root=Path(root)), NS(prop=prop, trusted=NS(rev=rev), seeds_apply=not plain), 11)

    tasks = [task("/base", "b.py::test_1"), task("/base", "a.py::test_1"), task("/head", "a.py::test_1"),
             task("/base", "b.py::test_2"), task("/base", "a.py::test_2", rev="r2"), task("/base", "c.py::test_1")]
    # one unit per tree and trusted revision; a file's runs next to each other, files in order
    assert sorted(schedule.units(tasks, jobs=1)) == [[1, 0, 3, 5], [2], [4]]
    overlapping = [task("/t", "a.py::TestC"), task("/t", "a.py::TestC::test_y"), task("/t", "b.py::test_z"),
                   task("/t", "c.py::test_w"), task("/t", "d.py::test_v", isolation="shared")]
    assert sorted(schedule.units(overlapping, jobs=1)) == [[0], [1], [2, 3], [4]]
    many = [task("/t", f"f{i // 20:02d}.py::test_{i}") for i in range(1000)]  # 1,000 Hypothesis tests in 50 files
    units = schedule.units(many, jobs=2)
    assert len(units) == 16 and sorted(i for u in units for i in u) == list(range(1000))
    assert sorted({len(u) for u in units}) == [62, 63]  # 4,000 / 256 = 16 units, each an even share
    plain = [task("/t", f"f{i // 20:02d}.py::test_{i}", plain=True) for i in range(1000)]  # one example each
    assert [len(u) for u in schedule.units(plain, jobs=2)] == [250, 250, 250, 250]  # not 256, 256, 256, 232
    mixed = [task("/t", "a.py::test_h"), *(task("/t", f"b.py::test_{i}", plain=True) for i in range(300))]
    assert [len(u) for u in schedule.units(mixed, jobs=1)] == [149, 152]  # 304 / 2: 4 + 148 x 1, then 152 x 1
    # Both sides' units of the same files, even: in the order of the sides, so two evaluators run the base's
    # units together, then the head's, whose collectors read the asserts the base's rewrote (never two at once).
    both = [task(side, f"f{i // 20:02d}.py::test_{i}", plain=True) for i in range(1000) for side in ("/b", "/h")]
    assert [(both[u[0]][0].root.name, len(u)) for u in schedule.units(both, jobs=2)] == [
        ("b", 250)] * 4 + [("h", 250)] * 4


SAME = HEADER + """

def test_same(value):
    assert value == Path(__file__).parent.name and state.pid() != os.getpid()
"""
CONFTEST = "import pytest\n\n\n@pytest.fixture\ndef value():\n    return {name!r}\n"


def test_folders_with_their_own_conftest_and_one_basename(tmp_path: Path, bwrap_works: bool) -> None:
    """Two folders, each a conftest with its own ``value`` and a ``test_same.py``: one session cannot import both
    modules under one name (pytest's import file mismatch), so each file runs as a unit of its own, and passes."""
    log = tmp_path / "log.txt"
    extra = {f"oracles/properties/{name}/conftest.py": CONFTEST.format(name=name) for name in ("alpha", "beta")}
    repo = make_repo(tmp_path / "repo", log, {"alpha/same": SAME, "beta/same": SAME}, extra)
    log.write_text("")
    rows = run(repo)
    assert {prop: row["status"] for prop, row in rows.items()} == {"prop.alpha_same": "pass",
                                                                   "prop.beta_same": "pass"}, rows
    pids = [line.split()[2] for line in log.read_text().splitlines() if line.startswith("collect ")]
    assert len(pids) == 3 and len(set(pids)) == 3, pids  # together (alpha only: beta's import failed), then each


def test_a_jobs_items_are_found_by_index_as_pytest_selects_them() -> None:
    """``by_selector`` (one pass) gives each node id exactly the items ``selects`` would (a scan per job)."""
    from types import SimpleNamespace as NS

    from mergegate.runner.trusted.group import by_selector, selects

    ids = ["t.py::test_x", "t.py::test_x[1-2]", "t.py::test_x[a[b]", "t.py::TestC::test_y", "t.py::test_xy",
           "t.py::TestCD::test_y", "t.py::TestC::test_y[0]", "u.py::test_x", "d/t.py::TestC::Inner::test_z[::]"]
    items = [NS(nodeid=i) for i in ids]
    index = by_selector(items)
    wanted = {i[:k] for i in ids for k in range(1, len(i) + 1)}
    for w in sorted(wanted):
        assert index.get(w, []) == [item for item in items if selects(w, item.nodeid)], w


KILLS_ITS_COLLECTION = '''import os
import signal
import time


def pid():
    os.kill(os.getppid(), signal.SIGKILL)  # the collection's process: the unit's later runs get no twin from it
    time.sleep(30)  # never answers: its twin dies with that process (or the run times out), never a race to reply
    return os.getpid()
'''


def test_a_patch_that_ends_the_collection_in_every_run_is_rejected(tmp_path: Path, bwrap_works: bool) -> None:
    """An agent's production that kills the process every twin is forked from: each file's runs are run again with a
    fresh subject (never skipped or left unjudged), each fails, and ``gate check`` rejects the patch."""
    from tests.test_sealed_attacks import agent_head

    repo = make_repo(tmp_path / "repo", tmp_path / "log.txt", {"one": ONE, "two": TWO})
    head = agent_head(repo, "faster pid", {"src/box/state.py": KILLS_ITS_COLLECTION})
    proc = gate(repo, "check", "--base", "main", "--head", head, "--json")
    data = json.loads(proc.stdout)
    assert proc.returncode == 1 and data["decision"] == "reject", (proc.stdout, proc.stderr[-2000:])
    verdicts = {p["prop"]: p["verdict"] for p in data["properties"]}
    assert verdicts == {"prop.one": "fail", "prop.two": "fail"}, (data.get("reason"), data.get("stopped_at"))
