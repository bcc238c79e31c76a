"""A forked child and its one message: spawn it, bound its time, read its length-prefixed result, reap it.

The zygote (``evaluator.py``) and a collector (``group.py``) both fork children this way; a
child reports once (``report``) and exits.  Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

MSG_LIMIT = 4 << 20


def watch_opens(root: str) -> list[str]:
    """Record the files under ``root`` this process opens (relative paths), via an audit hook."""
    opened: list[str] = []
    prefix = root.rstrip("/") + "/"
    abspath, fsdecode = os.path.abspath, os.fsdecode

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if event == "open" and args and isinstance(args[0], (str, bytes)):
            path = abspath(fsdecode(args[0]))
            if path.startswith(prefix):
                opened.append(path[len(prefix):])

    sys.addaudithook(audit)
    return opened


def runner_failure(exc: BaseException) -> dict[str, Any]:
    return {"status": "fail", "witness": f"{type(exc).__name__}:runner", "error": f"{type(exc).__name__}: {exc}"[:2000]}


def report(result: dict[str, Any], outcome: dict[str, Any], started: float, wfd: int,
           real_exit: Any = os._exit, real_write: Any = os.write, dumps: Any = json.dumps,
           clock: Any = time.monotonic) -> None:
    """Write the run's one message to ``wfd`` and exit (with the functions bound in the zygote,
    before any production code ran: a shared run cannot rebind what reports it)."""
    result.update(outcome)
    result["duration_s"] = round(clock() - started, 4)
    try:
        data = dumps(result, default=str).encode()
    except BaseException:
        data = b'{"status": "fail", "witness": "Unserialisable:runner", "error": "result not serialisable"}'
    real_write(wfd, len(data).to_bytes(8, "big") + data)
    real_exit(0)


def die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this child when the zygote dies, so an interrupted run leaves no orphan."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the zygote died before the line above
        os._exit(71)


def prepare(job: dict[str, Any]) -> None:
    os.setsid()  # its own process group: a timeout kills everything it started
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    err = os.open(job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(err, 2)
    os.chdir(job["cwd"])
    # Bytecode is read from a fresh, empty, randomly named prefix and never written: a
    # committed __pycache__ can never stand in for a source file, and no run plants a .pyc
    # another run would load.
    import tempfile

    shared = job.get("trusted_pycache")
    if shared:
        # A sealed child behind a bubblewrap subject runs trusted code only, and nothing of
        # production can reach this folder: the trusted tree's bytecode (pytest's rewritten
        # test modules included) is compiled once per run and shared by its children.
        sys.pycache_prefix = shared
        sys.dont_write_bytecode = False
    else:
        sys.pycache_prefix = tempfile.mkdtemp(prefix="pyc-", dir=job["pycache"])
        sys.dont_write_bytecode = True
    from hypothesis import configuration

    configuration.set_hypothesis_home_dir(tempfile.mkdtemp(prefix="home-", dir=job["home"]))


def spawn(run: Callable[[int], None], announce: Any) -> tuple[int, int]:
    """Fork a child that runs ``run(wfd)`` and never returns; tell the parent its pid (under the id
    ``announce``) so it can kill the child's process group if it must stop early; (pid, read end)."""
    rfd, wfd = os.pipe()
    sys.stdout.flush()
    zygote_pid = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(rfd)
        die_with_parent(zygote_pid)
        try:
            run(wfd)
        finally:
            os._exit(70)
    os.close(wfd)
    sys.stdout.write(json.dumps({"id": announce, "pid": pid}) + "\n")
    sys.stdout.flush()
    return pid, rfd


def collect(pid: int, rfd: int, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    pidfd = os.pidfd_open(pid)
    buf = bytearray()
    status: int | None = None
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([rfd, pidfd], [], [], left)
            if rfd in ready:
                chunk = os.read(rfd, 65536)
                if chunk:
                    buf += chunk
                    if len(buf) > MSG_LIMIT:
                        break
                    continue
                ready = [pidfd]  # EOF: the child is gone or closing
            if pidfd in ready:
                _, status = os.waitpid(pid, 0)
                buf += _drain(rfd)
                break
    finally:
        _killgroup(pid)
        if status is None:
            _, status = os.waitpid(pid, 0)
        os.close(pidfd)
        os.close(rfd)
    return _outcome(bytes(buf), status, timed_out, timeout)


def _drain(fd: int) -> bytes:
    out = b""
    while select.select([fd], [], [], 0)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        out += chunk
    return out


def _killgroup(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _outcome(buf: bytes, status: int, timed_out: bool, timeout: float) -> dict[str, Any]:
    if timed_out:
        return {"status": "fail", "witness": "Timeout:runner", "error": f"timed out after {timeout:g}s"}
    code = os.waitstatus_to_exitcode(status)
    if len(buf) < 8:
        return {"status": "fail", "witness": "Crash:runner",
                "error": f"the run ended without a result (exit {code})"}
    size = int.from_bytes(buf[:8], "big")
    if len(buf) != 8 + size:  # a second message, or a torn one: never trusted
        return {"status": "fail", "witness": "Crash:runner", "error": "the run wrote a malformed result"}
    try:
        result: dict[str, Any] = json.loads(buf[8:])
    except ValueError:
        return {"status": "fail", "witness": "Crash:runner", "error": "the run wrote a malformed result"}
    if code != 0:
        return {**result, "status": "fail", "witness": "Crash:runner",
                "error": f"the run exited {code} after reporting {result.get('status')}"}
    return result
