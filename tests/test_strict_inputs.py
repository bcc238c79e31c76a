"""Strict schemas: each refused input is one line on stderr, exit 2, naming the file and the fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from mergegate.drafter import queue
from mergegate.errors import ConfigError
from mergegate.pipeline import diffrun
from mergegate.records import fsutil, ledger, manifest, policy, runs
from tests.helpers import commit, gate, git, init_repo, write
from tests.test_drafter_queue import enqueue

BASE_RUN = '{"prop":"prop.x","seed":11,"status":"fail","witness":"E:x","signature":"s","fixture_digest":"d1"}\n'
OPEN = ("freeze", "open", "--prop", "prop.x", "--reason", "clock", "--paths", "src/**")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = init_repo(tmp_path / "repo")
    commit(path, {"src/calc.py": "def add(a, b):\n    return a + b\n"}, "calc")
    return path


def one_line_exit_2(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "fix:" in proc.stderr and all(w in proc.stderr for w in words), proc.stderr


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", ".NaN"])
def test_non_finite_numbers_are_refused(value: str) -> None:
    with pytest.raises(ConfigError, match="finite") as info:
        policy.parse(f"version: 1\nrunner: {{timeout_s: {value}}}\n", "gate.yaml")
    assert info.value.line == 2


@pytest.mark.parametrize("parse", [policy.parse, ledger.parse])
@pytest.mark.parametrize("value", ["true", "1.0", "'1'"])
def test_version_must_be_the_integer_1(parse: object, value: str) -> None:
    with pytest.raises(ConfigError, match="version"):
        parse(f"version: {value}\n", "f.yaml")  # type: ignore[operator]


ROW = f"{'a' * 64}  3  oracles/x.py\n".encode()


@pytest.mark.parametrize(("data", "words"), [
    (ROW[:-1], "no newline"),
    (b"\\" + ROW, "escaped"),
    (f"\\{'a' * 64}  3  oracles/a\\\\b.py\n".encode() + b"\\" + ROW, "escaped"),
])
def test_manifest_must_be_in_canonical_form(data: bytes, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        manifest.parse(data, "oracles/MANIFEST.sha256")


def test_canonical_manifest_still_parses() -> None:
    rows = [manifest.Row("a" * 64, 3, "oracles/x.py"), manifest.Row("b" * 64, 1, "oracles/a\\b\nc.py")]
    assert manifest.parse(manifest.render(rows), "m") == sorted(rows, key=lambda r: os.fsencode(r.path))


def test_jsonl_splits_on_newline_only() -> None:
    text = ('{"prop":"p","seed":1,"status":"fail","witness":"E:a\u2028b\u0085c"}\n'
            '{"prop":"p","seed":2,"status":"pass"}\n')
    rows = runs.parse_jsonl(text, "runs.jsonl")
    assert [r.seed for r in rows] == [1, 2] and rows[0].witness == "E:a\u2028b\u0085c"


@pytest.mark.parametrize(("content", "words"), [
    (b'{"seeds": [' + b"9" * 5000 + b"]}", "4300"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deep"),
    (b'{"seeds": [1], "x": "\xff\xfe"}', "UTF-8"),
    (b'{"seeds": [NaN]}', "NaN"),
])
def test_bad_json_is_one_line_exit_2(repo: Path, content: bytes, words: str) -> None:
    (repo / "contract.json").write_bytes(content)
    (repo / "runs.jsonl").write_text("")
    proc = gate(repo, "verdict", "--contract", "contract.json", "--runs", "runs.jsonl", "--base-runs", "runs.jsonl")
    one_line_exit_2(proc, "contract.json", words)


def test_a_folder_where_a_file_belongs(repo: Path) -> None:
    (repo / "runs").mkdir()
    (repo / "contract.json").write_text('{"seeds": [1]}')
    proc = gate(repo, "verdict", "--contract", "contract.json", "--runs", "runs", "--base-runs", "runs")
    one_line_exit_2(proc, "runs", "folder")


@pytest.mark.parametrize("expires", ["9999999999d", "99999999999999999w", "9999-12-31T23:00:00-05:00"])
def test_expires_past_the_clock(repo: Path, expires: str) -> None:
    write(repo.parent, {"base.jsonl": BASE_RUN})
    proc = gate(repo, *OPEN, "--expires", expires, "--run", str(repo.parent / "base.jsonl"))
    one_line_exit_2(proc, "--expires")


@pytest.mark.parametrize("field", ["status", "target", "triage", "created_at"])
def test_queue_metadata_with_a_null_field(repo: Path, field: str) -> None:
    cid = enqueue(repo)
    meta = repo / ".gate/queue" / cid / queue.META
    data = json.loads(meta.read_text())
    data[field] = None
    meta.chmod(0o644)
    meta.write_text(json.dumps(data))
    one_line_exit_2(gate(repo, "queue", "list"), "meta.json", field)


def test_bad_octal_escape_in_an_admitted_patch_is_a_canary_miss(repo: Path) -> None:
    (repo / "p.diff").write_bytes(b'--- "a/src/\\9.py"\n+++ "b/src/\\9.py"\n@@ -1 +1 @@\n-a\n+b\n')
    proc = gate(repo, "admit", "p.diff", "--json")
    assert proc.returncode == 1 and "bad escape" in proc.stdout and "Traceback" not in proc.stderr


def test_stale_temp_files_are_swept(tmp_path: Path) -> None:
    stale, fresh = tmp_path / ".ledger.yaml.abc.tmp", tmp_path / ".ledger.yaml.def.tmp"
    stale.write_text("x")
    fresh.write_text("y")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    fsutil.atomic_write(tmp_path / "ledger.yaml", b"version: 1\n")
    assert not stale.exists() and fresh.exists()  # a young one may be another writer's


def test_many_writes_sweep_what_killed_writers_left_and_write_each_whole(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder = tmp_path / "catalog dir"
    folder.mkdir()
    orphan = folder / f".a-b.yaml.{dead.pid}-x1y2.tmp"  # a killed writer's, young: its pid is gone
    live = folder / f".c.yaml.{os.getpid()}-z3.tmp"  # a live writer's: kept
    orphan.write_text("half")
    live.write_text("half")
    fsutil.atomic_write_many([(folder / "a-b.yaml", b"id: a\n", 0o644), (folder / "c.yaml", b"id: c\n", None),
                              (tmp_path / "new" / "d.yaml", b"id: d\n", 0o600)])
    assert not orphan.exists() and live.exists()
    assert (folder / "a-b.yaml").read_bytes() == b"id: a\n" and (folder / "c.yaml").read_bytes() == b"id: c\n"
    assert (tmp_path / "new" / "d.yaml").stat().st_mode & 0o777 == 0o600
    assert (folder / "a-b.yaml").stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in folder.iterdir()) == sorted(["a-b.yaml", "c.yaml", live.name])


def test_worktrees_of_killed_runs_are_swept(repo: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    scratch = Path(tempfile.mkdtemp(prefix=f"gate-wt-{dead.pid}-"))
    git(repo, "worktree", "add", "--detach", "-q", str(scratch / "tree0"), "HEAD")
    mine = Path(tempfile.mkdtemp(prefix=f"gate-wt-{os.getpid()}-"))  # a live run's: kept
    diffrun.sweep_worktrees(repo)
    assert not scratch.exists() and mine.exists()
    assert str(scratch) not in git(repo, "worktree", "list").stdout
    mine.rmdir()


def test_worktrees_are_made_and_none_is_left_when_one_fails(repo: Path) -> None:
    from mergegate.errors import GateError

    first = commit(repo, {"src/a.py": "A = 1\n"}, "a")
    second = commit(repo, {"src/a.py": "A = 2\n"}, "b")
    with diffrun.worktrees([first, second], repo) as (one, two):
        assert (one / "src/a.py").read_text() == "A = 1\n" and (two / "src/a.py").read_text() == "A = 2\n"
        assert len(git(repo, "worktree", "list").stdout.splitlines()) == 3
    assert len(git(repo, "worktree", "list").stdout.splitlines()) == 1
    assert not one.parent.exists()
    with pytest.raises(GateError), diffrun.worktrees([first, "0" * 40], repo):
        pass  # the second add fails: the first tree is removed all the same
    assert len(git(repo, "worktree", "list").stdout.splitlines()) == 1
    assert not list(Path(tempfile.gettempdir()).glob(f"gate-wt-{os.getpid()}-*"))


def test_worktrees_leave_out_the_catalog_folder_and_nothing_else(repo: Path) -> None:
    files = {"oracles/catalog/a.yaml": "id: a\n", "oracles/catalog/sub/b.yaml": "id: b\n",
             "oracles/catalog2/kept.yaml": "k\n", "oracles/catalog.yaml": "k\n",
             "src/odd name \u00e9.py": "X = 1\n", "tests/test_x.py": "def test_x():\n    pass\n"}
    rev = commit(repo, files, "a tree with a catalog")
    os.symlink("src", repo / "link")
    linked = commit(repo, {}, "a link")
    with diffrun.worktrees([rev, linked], repo, omit=["oracles/catalog/"]) as (one, two):
        made = {p.relative_to(one).as_posix() for p in one.rglob("*") if p.is_file() and ".git" not in p.parts}
        assert not (one / "oracles/catalog").exists()
        assert {k for k in files if not k.startswith("oracles/catalog/")} <= made
        assert (one / "src/odd name \u00e9.py").read_text() == "X = 1\n"
        assert (two / "link").is_symlink() and os.readlink(two / "link") == "src"
    with diffrun.worktrees([rev], repo, omit=["."]) as (whole,):  # never the whole tree
        assert (whole / "oracles/catalog/a.yaml").is_file()


def test_lock_contention_is_another_gate_running(repo: Path) -> None:
    write(repo, {"oracles/properties/test_a.py": "def test_a():\n    pass\n"})
    git(repo, "add", "-A")
    lock = repo / ".git/index.lock"
    lock.write_text("")
    held = gate(repo, "manifest", "sign", "--staged")
    one_line_exit_2(held, "another gate", "index.lock")
    assert "remove the file manually" not in held.stderr
    timer = threading.Timer(0.4, lock.unlink)
    timer.start()
    proc = gate(repo, "manifest", "sign", "--staged")  # waits for the lock, then signs
    timer.join()
    assert proc.returncode == 0, proc.stderr
