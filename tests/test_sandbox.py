"""Containment of the subject: what production code can and cannot reach from its sandbox."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import standins

PROBES = '''
import os, resource, socket, subprocess, sys, time

def read(path):
    try:
        with open(path, "rb") as f:
            return f.read(100).decode(errors="replace")
    except OSError as exc:
        return type(exc).__name__

def write(path):
    try:
        with open(path, "w") as f:
            f.write("x")
        return "written"
    except OSError as exc:
        return type(exc).__name__

def fill(path, mb):
    import errno
    written = 0
    try:
        for part in range(0, mb, 16):  # files of 16 MB: each under the per-file limit (RLIMIT_FSIZE)
            with open(f"{path}.{part}", "wb") as f:
                for _ in range(min(16, mb - part)):
                    f.write(b"x" * (1 << 20))
                    f.flush()
                    written += 1
    except OSError as exc:
        return written, errno.errorcode.get(exc.errno, str(exc.errno))
    return written, "written"

def listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        return type(exc).__name__

def connect(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return "connected"
    except OSError as exc:
        return type(exc).__name__

def identity():
    return {"uid": os.getuid(), "pid": os.getpid(), "env": dict(os.environ),
            "as": resource.getrlimit(resource.RLIMIT_AS)[1]}

def daemon(marker):
    code = ("import os, time\\n"
            f"while True:\\n    open({marker!r}, 'a').write('.')\\n    time.sleep(0.1)\\n")
    subprocess.Popen([sys.executable, "-c", code], start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return "started"
'''


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for rel, text in {"src/probes.py": PROBES, "oracles/properties/test_x.py": "SECRET_ORACLE = 1\n",
                      "oracles/fixtures/rates.json": "{}\n", "notes.txt": "hello\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def probes(bwrap_works: bool, tree: Path, tmp_path: Path) -> Iterator[Any]:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    spec = sandbox.SubjectSpec(str(tree), (str(tree / "src"),),
                               masks=(str(tree / "oracles/properties"), str(tree / "oracles/fixtures")),
                               preload=("probes",), limits=sandbox.Limits(memory_bytes=2 << 30))
    subj = sandbox.Subject(spec, sandbox.BUBBLEWRAP, scratch, "p")
    module = standins.Channel(subj.socket_path).request("import", "probes")
    module._gate_subject = subj  # for tests that stop it
    yield module
    subj.close()


@pytest.mark.parametrize("where", ["/dev/shm", "/tmp"])
def test_writing_into_a_tmpfs_past_its_size_is_enospc_without_a_cgroup(probes: Any, where: str) -> None:
    """tmpfs pages are charged to no process (RLIMIT_AS) and, without a cgroup, to nothing: each is sized."""
    limit = {"/dev/shm": sandbox.Limits().shm_bytes, "/tmp": sandbox.Limits().tmp_bytes}[where] >> 20
    written, how = probes.fill(f"{where}/fill", limit + 64)
    assert how == "ENOSPC" and written <= limit, (written, how)


def test_the_tree_is_read_only_and_the_oracle_is_absent(probes: Any, tree: Path) -> None:
    assert probes.read(str(tree / "notes.txt")) == "hello\n"
    assert probes.write(str(tree / "notes.txt")) == "OSError"  # EROFS
    assert probes.write(str(tree / "src" / "new.py")) == "OSError"
    assert probes.listdir(str(tree / "oracles/properties")) == []
    assert probes.read(str(tree / "oracles/fixtures/rates.json")) == "FileNotFoundError"
    assert probes.read("/proc/self/cwd/oracles/fixtures/rates.json") == "FileNotFoundError"


def test_nothing_of_the_gate_or_the_host_is_in_view(probes: Any, tree: Path, tmp_path: Path) -> None:
    assert probes.listdir(str(tmp_path / "scratch")) == "FileNotFoundError"  # the gate's scratch, its socket
    assert probes.listdir(str(Path(__file__).resolve().parents[1] / "tests")) == "FileNotFoundError"
    home = probes.listdir(os.path.expanduser("~"))  # only what leads to the interpreter, if it lives there
    assert home in ("FileNotFoundError", "PermissionError") or all(
        any(d.startswith(os.path.join(os.path.expanduser("~"), e) + "/") for d in sandbox.python_dirs()) for e in home)
    assert probes.read("/etc/shadow") == "FileNotFoundError"
    tmp = probes.listdir("/tmp")  # a private /tmp: nothing but the way to the tree and the interpreter
    bound = [str(tree), *sandbox.python_dirs()]
    assert all(any(b.startswith(f"/tmp/{e}/") for b in bound) for e in tmp), tmp
    assert probes.write("/tmp/scribble") == "written" and not Path("/tmp/scribble").exists()


def test_no_network(probes: Any) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        assert probes.connect(server.getsockname()[1]) == "ConnectionRefusedError"
    finally:
        server.close()


def test_no_privileges_no_environment_and_limits(probes: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ident = probes.identity()
    assert ident["uid"] == sandbox.SANDBOX_UID
    assert ident["pid"] < 100  # its own PID namespace
    assert set(ident["env"]) <= {"PATH", "HOME", "TMPDIR", "LANG", "PYTHONHASHSEED", "PWD"}
    assert ident["as"] == 2 << 30


def test_nothing_production_starts_outlives_the_subject(probes: Any, tree: Path, tmp_path: Path) -> None:
    marker = "/tmp/marker"  # the sandbox's own /tmp: watch it through the daemon's effect instead
    assert probes.daemon(marker) == "started"
    time.sleep(0.5)
    before = probes.read(marker)
    assert before.startswith(".")
    probes._gate_subject.close()
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
    leftovers = []
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"open('/tmp/marker'" in cmdline:
            leftovers.append(pid)
    assert leftovers == []


def test_bwrap_argv_is_pure_and_complete(tree: Path) -> None:
    spec = sandbox.SubjectSpec(str(tree), (str(tree / "src"),), masks=(str(tree / "oracles/properties"),))
    argv = sandbox.bwrap_argv(spec, ["python"], python=["/opt/py"])
    assert argv[:5] == ["bwrap", "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"]
    for flag in ("--cap-drop", "--disable-userns", "--clearenv", "--proc", "--dev"):
        assert flag in argv
    assert argv[argv.index(str(tree)) - 1] == "--ro-bind"
    tmpfs = [argv[i + 1] for i, a in enumerate(argv) if a == "--tmpfs"]
    assert str(tree / "oracles/properties") in tmpfs
    assert argv.index(str(tree / "oracles/properties")) > argv.index(str(tree))  # masks after the tree
    assert argv[-2:] == ["--", "python"]
    assert argv.index("/opt/py") > argv.index("/tmp")  # an interpreter under /tmp is not hidden by the tmpfs


BOMB = '''
import os, time

def forks(n):
    made = 0
    for _ in range(n):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(2)
            os._exit(0)
        made += 1
    return made
'''


def test_production_cannot_fork_without_bound(bwrap_works: bool, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "bomb.py").write_text(BOMB)
    spec = sandbox.SubjectSpec(str(tree), (str(tree / "src"),), limits=sandbox.Limits(max_processes=30))
    subj = sandbox.Subject(spec, sandbox.BUBBLEWRAP, tmp_path, "b")
    try:
        if os.geteuid() == 0 and not any(c.parent.name == "pids" or "pids" in c.parts for c in subj.cgroups):
            why = "running as root without a writable pids cgroup: nothing bounds the subject's processes"
            if os.environ.get("CI") == "true":
                pytest.fail(why)
            pytest.skip(why)
        made = standins.Channel(subj.socket_path).request("import", "bomb").forks(200)
        assert 0 < made < 30
    finally:
        subj.close()
    assert not any(c.exists() for c in subj.cgroups)


HOG = '''
import os, time

def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False


def spread(children, mb):
    """Children that each hold ``mb`` MiB; how many hold it at once (one that got there and was then killed,
    to make room for another, does not count)."""
    pipes = []
    for _ in range(children):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                block = bytearray(mb << 20)
                for i in range(0, len(block), 4096):
                    block[i] = 1
                os.write(w, b"1")
                time.sleep(3)
            finally:
                os._exit(0)
        os.close(w)
        pipes.append((r, pid))
    time.sleep(2)
    return sum(1 for r, pid in pipes if os.read(r, 1) and alive(pid))
'''


def test_memory_is_bounded_for_the_whole_sandbox(bwrap_works: bool, tmp_path: Path) -> None:
    """Per-process limits alone would let 4 x 150 MiB through a 256 MiB budget."""
    tree = tmp_path / "tree"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "hog.py").write_text(HOG)
    spec = sandbox.SubjectSpec(str(tree), (str(tree / "src"),), limits=sandbox.Limits(memory_bytes=256 << 20))
    subj = sandbox.Subject(spec, sandbox.BUBBLEWRAP, tmp_path, "m")
    try:
        if not any("memory" in c.parts for c in subj.cgroups):
            why = "no writable memory cgroup: only the per-process address-space limit applies"
            if os.environ.get("CI") == "true":
                pytest.fail(why)
            pytest.skip(why)
        hog = standins.Channel(subj.socket_path).request("import", "hog")
        assert hog.spread(4, 150) <= 1
    except standins.SubjectGone:
        pass  # the kernel killed the caller itself: bounded all the same
    finally:
        subj.close()
    assert not any(c.exists() for c in subj.cgroups)


# ---------------------------------------------------------------- the gate's bytecode for the subject

PROBE_PYC = '''
import sys
VALUE = 41

def where():
    return {"cached": __cached__, "prefix": sys.pycache_prefix}

def scribble(path):
    try:
        with open(path, "wb") as f:
            f.write(b"x")
        return "written"
    except OSError as exc:
        return type(exc).__name__
'''


def subject_with_bytecode(tmp_path: Path, files: dict[str, str], cache_home: Path,
                          monkeypatch: pytest.MonkeyPatch) -> sandbox.Subject:
    from mergegate.runner.subject import bytecode

    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    tree = tmp_path / "tree"
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    pycache = bytecode.prepare(str(tree), (str(tree / "src"),), tmp_path / "pyc")
    assert pycache is not None
    spec = sandbox.SubjectSpec(str(tree), (str(tree / "src"),), pycache=str(pycache))
    return sandbox.Subject(spec, sandbox.BUBBLEWRAP, tmp_path, "c")


def test_the_subject_imports_the_gates_bytecode_read_only(bwrap_works: bool, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    subj = subject_with_bytecode(tmp_path, {"src/probe.py": PROBE_PYC}, tmp_path / "cache", monkeypatch)
    try:
        probe = standins.Channel(subj.socket_path).request("import", "probe")
        where = probe.where()
        assert where["prefix"] == subj.spec.pycache and where["cached"].startswith(str(subj.spec.pycache))
        assert Path(where["cached"]).is_file()
        assert probe.scribble(where["cached"]) == "OSError"  # read-only: no side can poison another's bytecode
    finally:
        subj.close()


def test_a_production_symlink_is_never_read_by_the_gate(bwrap_works: bool, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A link to a host file named like a module: the compiler must not follow it into the cache."""
    secret = tmp_path / "host-secret.py"
    secret.write_text("TOKEN = 'hunter2'\n")
    (tmp_path / "tree" / "src").mkdir(parents=True)
    os.symlink(secret, tmp_path / "tree" / "src" / "leak.py")
    subj = subject_with_bytecode(tmp_path, {"src/probe.py": PROBE_PYC}, tmp_path / "cache", monkeypatch)
    try:
        laid_out = [p.name for p in Path(str(subj.spec.pycache)).rglob("*.pyc")]
        assert laid_out == [f"probe.{sys.implementation.cache_tag}.pyc"]
        assert not any(b"hunter2" in p.read_bytes() for p in (tmp_path / "cache").rglob("*.pyc"))
    finally:
        subj.close()


def test_a_poisoned_cache_entry_is_refused_by_its_source_hash(bwrap_works: bool, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked-hash bytecode: a pyc whose recorded hash does not match the source is recompiled."""
    import hashlib

    from mergegate.runner.subject import bytecode

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = bytecode.cache_root()
    assert root is not None
    key = hashlib.sha256(PROBE_PYC.encode()).hexdigest()
    evil_src = tmp_path / "evil.py"
    evil_src.write_text(PROBE_PYC.replace("VALUE = 41", "VALUE = 666"))
    import py_compile

    (root / key[:2]).mkdir(parents=True, exist_ok=True)
    py_compile.compile(str(evil_src), cfile=str(root / key[:2] / f"{key}.pyc"),
                       invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    subj = subject_with_bytecode(tmp_path, {"src/probe.py": PROBE_PYC}, tmp_path / "cache", monkeypatch)
    try:
        assert standins.Channel(subj.socket_path).request("import", "probe").VALUE == 41
    finally:
        subj.close()


GATE_LEFT_BEHIND = '''
import sys, time
from pathlib import Path
from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import standins
tree, scratch, containment = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
spec = sandbox.SubjectSpec(str(tree), (str(tree / "src"),), preload=("probes",))
subj = sandbox.Subject(spec, containment, scratch, "k")
assert standins.Channel(subj.socket_path).request("import", "probes").identity()["uid"] >= 0
print(subj.proc.pid, flush=True)
time.sleep(600)
'''


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("containment", [sandbox.NONE, sandbox.BUBBLEWRAP])
def test_a_subject_the_gate_left_behind_ends_itself(bwrap_works: bool, tree: Path, tmp_path: Path,
                                                    containment: str) -> None:
    """A gate killed outright (SIGKILL, an OOM kill, a CI job's timeout) never closes its subjects: without
    bubblewrap's --die-with-parent the fork server notices that its gate is gone and ends (with its children)."""
    import signal
    import subprocess

    if containment == sandbox.BUBBLEWRAP and not bwrap_works:
        pytest.skip("bubblewrap cannot run here")  # never in CI (conftest.py requires it there)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    gate = subprocess.Popen([sys.executable, "-c", GATE_LEFT_BEHIND, str(tree), str(scratch), containment],
                            stdout=subprocess.PIPE, text=True, cwd=str(Path(__file__).resolve().parents[1]),
                            env={**os.environ, "PYTHONPATH": str(Path(sandbox.__file__).resolve().parents[3])})
    assert gate.stdout is not None
    server = int(gate.stdout.readline())
    assert _alive(server)
    gate.send_signal(signal.SIGKILL)
    gate.wait()
    deadline = time.monotonic() + 10
    while _alive(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(server):
        os.kill(server, signal.SIGKILL)
        pytest.fail(f"the subject server {server} outlived its gate by 10 s")
