"""The runner's process pool: one evaluator zygote (``trusted/evaluator.py``) per core, fed by one thread each.

A zygote imports Hypothesis once and forks a fresh child per job; a dead zygote
is replaced; ``close`` kills every zygote and the child it is running.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from queue import Queue
from typing import Any

from mergegate.errors import InternalError

WORKER = Path(__file__).resolve().parent / "trusted" / "evaluator.py"
LINE_MAX = 64 << 20  # one outcome line, at most (its logs are capped far below)


@dataclass
class _Zygote:
    proc: subprocess.Popen[bytes]
    slot: int = 0  # its core, when pinned (``pin``)
    child: int | None = None
    lines: _Lines | None = None  # how its outcomes are read when it is production's (``Pool.deadline``)


class _Lines:
    """Lines from a zygote that is production's: each within a deadline, none longer than LINE_MAX.

    Read from the pipe itself (``select``, ``os.read``): a process it left holding the pipe open
    cannot keep a read waiting past the deadline.
    """

    def __init__(self, fd: int) -> None:
        self.fd, self.buf = fd, bytearray()

    def readline(self, until: float) -> bytes:
        start = 0
        while (end := self.buf.find(b"\n", start)) < 0:
            start = len(self.buf)
            if start > LINE_MAX:
                raise InternalError(f"the runner's worker process wrote a line longer than {LINE_MAX} bytes")
            left = until - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise InternalError("the runner's worker process for shared runs stopped answering (killed)")
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return b""
            self.buf += chunk
        line = bytes(self.buf[:end + 1])
        del self.buf[:end + 1]
        return line


def _send_within(fd: int, data: bytes, until: float) -> None:
    """Write ``data`` to a zygote that is production's: one that stops reading is not waited for past ``until``."""
    view = memoryview(data)
    while view:
        left = until - time.monotonic()
        if left <= 0 or not select.select([], [fd], [], left)[1]:
            raise InternalError("the runner's worker process for shared runs stopped reading its jobs (killed)")
        view = view[os.write(fd, view[:select.PIPE_BUF]):]


def site_dirs() -> list[str]:
    import importlib.util

    dirs = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    spec = importlib.util.find_spec("hypothesis")
    if spec and spec.origin:
        dirs.append(str(Path(spec.origin).parent.parent))
    dirs.append(str(Path(__file__).resolve().parents[2]))  # mergegate itself
    return list(dict.fromkeys(dirs))


def hypothesis_cache() -> str | None:
    """The gate's own Hypothesis storage (its unicode table), under the user's cache directory."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "mergegate", "hypothesis")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        return None
    return path


def child_env() -> dict[str, str]:
    """The caller's environment without any PYTHON*/HYPOTHESIS* knob, hash seed fixed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "HYPOTHESIS", "MERGEGATE_", "PYTEST"))}
    env["PYTHONHASHSEED"] = "0"  # one hash order for every run: per-seed determinism
    env["HYPOTHESIS_NO_PLUGINS"] = "1"
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the trusted session loads pytest's own plugins and the gate's
    cache = hypothesis_cache()
    if cache:
        env["MERGEGATE_HYPOTHESIS_CACHE"] = cache
    return env


def core_for(number: int, size: int, cpus: list[int], offset: int) -> int | None:
    """The core zygote ``number`` of a pool of ``size`` stays on; None: leave it to the scheduler.

    One core per zygote, starting at ``offset`` (so two gates on one machine tend to use
    different cores); a pool larger than the cores is not pinned (two zygotes on one core
    would wait for each other while another core idles).
    """
    if len(cpus) < 2 or size > len(cpus):
        return None
    return cpus[(offset + number) % len(cpus)]


def pin(pid: int, number: int, size: int) -> None:
    """Keep zygote ``number`` (and every process it forks) on one core (``core_for``).

    A sealed run is a call/reply ping-pong between an evaluator child and its subject, never
    both running at once.  On one core a round trip is a direct switch; across two it waits for
    a wake-up on the other (about 4 us against 55 us on a virtual machine).  The subject's process
    follows its evaluator's core (``Channel``).  Speed only: nothing here decides a verdict.
    """
    try:
        cpus = sorted(os.sched_getaffinity(0))
        core = core_for(number, size, cpus, os.getpid())
        if core is not None:
            os.sched_setaffinity(pid, {core})
    except (AttributeError, OSError):  # not Linux, or the process already exited: unpinned, only slower
        pass


def worker_cmd() -> list[str]:
    """``-s -S -P``: no user site, no site module (.pth, sitecustomize), no script dir."""
    return [sys.executable, "-s", "-S", "-P", str(WORKER), *site_dirs()]


def _start(log_path: Path, cwd: Path, command: list[str] | None = None,
           env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with open(log_path, "wb") as log:
        return subprocess.Popen(command or worker_cmd(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                env=child_env() if env is None else env, cwd=cwd, start_new_session=True)


_warm: list[subprocess.Popen[bytes]] = []  # zygotes started ahead of their pool (``prestarted``)
_warm_lock = threading.Lock()


def _adopt() -> subprocess.Popen[bytes] | None:
    with _warm_lock:
        while _warm:
            proc = _warm.pop(0)
            if proc.poll() is None:
                return proc
    return None


@contextlib.contextmanager
def prestarted(count: int) -> Iterator[None]:
    """Start ``count`` zygotes now, for the pool a later ``run_tasks`` makes within this block.

    A zygote's start (Python, pytest, Hypothesis, a warm-up session: about 0.3 s) then overlaps
    the work before the runs (the ledger, canaries, worktrees); any left unused are stopped
    when the block ends.  Nothing changes but when they start: same command and environment; the
    pool pins each one as it takes it.
    """
    mine: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="gate-zygotes-") as folder:
        try:
            for number in range(count):
                mine.append(_start(Path(folder) / f"zygote-{number}.log", Path(folder)))
            with _warm_lock:
                _warm.extend(mine)
            yield
        finally:
            with _warm_lock:
                unused = [proc for proc in _warm if proc in mine]
                _warm[:] = [proc for proc in _warm if proc not in mine]
            for proc in unused:
                _kill(_Zygote(proc))


@dataclass
class Pool:
    """A fixed set of zygotes fed by one thread each; close() kills every child.

    ``command``/``env``: how its zygotes start, when not the trusted evaluator's own way (a shared
    run's sandbox, ``runner/shared_box.py``). Such a zygote is production's: it is never pinned or
    prestarted, the process ids it reports are its sandbox's (never signalled from here), and an
    exchange that outlasts ``deadline`` seconds a job (its timeout and the collection) ends it.
    """

    size: int
    timeout: float
    scratch: Path
    command: list[str] | None = None
    env: dict[str, str] | None = None
    deadline: float | None = None
    _idle: Queue[_Zygote] = field(default_factory=Queue)
    _all: list[_Zygote] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False
    _live: int = 0

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _spawn(self) -> _Zygote:
        log = self.scratch / f"zygote-{self.label}{len(self._all)}.log"
        if self.command is None:
            proc = _adopt() or _start(log, self.scratch)
        else:
            proc = _start(log, self.scratch, self.command, self.env)
        with self._lock:
            taken = {z.slot for z in self._all}
            zyg = _Zygote(proc, slot=min(set(range(len(taken) + 1)) - taken))  # a replacement takes the dead one's core
            self._all.append(zyg)
        if self.command is None:
            pin(proc.pid, zyg.slot, self.size)
        return zyg

    @property
    def label(self) -> str:
        return "" if self.command is None else "shared-"

    def _borrow(self) -> _Zygote:
        with self._lock:
            if self._closed:
                raise InternalError("the runner pool was closed")
            spawn = self._idle.empty() and self._live < self.size
            if spawn:
                self._live += 1
        return self._spawn() if spawn else self._idle.get()

    def submit(self, job: dict[str, Any]) -> dict[str, Any]:
        """Run one job on a zygote; a dead zygote is replaced and the job fails closed."""
        return self.submit_group([job], single=True)[job["id"]]

    def submit_group(self, jobs: list[dict[str, Any]], single: bool = False,
                     each: Callable[[dict[str, Any]], None] | None = None) -> dict[Any, dict[str, Any]]:
        """Run sealed jobs of one oracle file on one zygote (collected once, ``trusted/group.py``);
        outcomes by job id, each also given to ``each`` as it arrives.  ``single``: one job, in a
        session of its own."""
        zyg = self._borrow()
        ok = False
        try:
            result = self._exchange(zyg, jobs, single, each)
            ok = True
            return result
        finally:
            if ok:
                self._idle.put(zyg)
            else:
                self._retire(zyg)

    def _exchange(self, zyg: _Zygote, jobs: list[dict[str, Any]], single: bool,
                  each: Callable[[dict[str, Any]], None] | None) -> dict[Any, dict[str, Any]]:
        assert zyg.proc.stdin is not None and zyg.proc.stdout is not None
        request = jobs[0] if single else {"group": jobs}
        pending = {job["id"] for job in jobs}
        out: dict[Any, dict[str, Any]] = {}
        if self.deadline is not None and zyg.lines is None:  # production's zygote (a shared run's sandbox)
            zyg.lines = _Lines(zyg.proc.stdout.fileno())
        until = time.monotonic() + (self.deadline or 0.0) * len(jobs)
        try:
            if zyg.lines is None:
                zyg.proc.stdin.write(json.dumps(request).encode() + b"\n")
                zyg.proc.stdin.flush()
            else:
                _send_within(zyg.proc.stdin.fileno(), json.dumps(request).encode() + b"\n", until)
            while pending:
                line = zyg.proc.stdout.readline() if zyg.lines is None else zyg.lines.readline(until)
                if not line.endswith(b"\n"):
                    raise InternalError("the runner's worker process died")
                msg = json.loads(line)
                if "pid" in msg and "status" not in msg:
                    if self.command is None:  # a sandbox's process ids are its own
                        zyg.child = int(msg["pid"])
                    continue
                if msg.get("id") in pending:
                    pending.discard(msg["id"])
                    out[msg["id"]] = dict(msg)
                    if each is not None:
                        each(out[msg["id"]])
            zyg.child = None
            return out
        except (OSError, ValueError) as exc:
            raise InternalError(f"the runner's worker process failed: {exc}") from None

    def _retire(self, zyg: _Zygote) -> None:
        _kill(zyg)
        with self._lock:
            self._live -= 1
            if zyg in self._all:
                self._all.remove(zyg)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._lock:
            self._closed = True
            zygotes = list(self._all)
        for zyg in zygotes:
            _kill(zyg)


def _kill(zyg: _Zygote) -> None:
    import signal

    if zyg.child is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(zyg.child, signal.SIGKILL)
    if zyg.proc.poll() is None:
        zyg.proc.kill()
    zyg.proc.wait()
    for stream in (zyg.proc.stdin, zyg.proc.stdout):
        if stream is not None:
            stream.close()
