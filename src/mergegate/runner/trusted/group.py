"""A collector: one oracle file collected once, one forked child per property x seed.

A pytest session's fixed cost (configuration, the fixture manager, conftest files,
importing and collecting the test module) is paid once per oracle file and side,
not once per run.  The collector is a child of the evaluator zygote: it configures
pytest and collects the file (production behind stand-ins, as every sealed run),
then, for each job, asks the subject for a *twin* of its connection's process
(``subject/server.py``: same objects, a process of its own) and forks a child that
runs only that job's items, with that job's seed, talking only to that twin.  Each
run is still a fresh process on both sides, in the state collection left them: what
a session of its own would have met.

Messages to the zygote are length-prefixed JSON, one per job, ``{"id": ..., **outcome}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import time
from collections.abc import Iterator
from typing import Any

from mergegate.runner.trusted import forks, session, standins

MARGIN_S = 5.0  # the collector's own bookkeeping around a run's timeout


def selects(wanted: str, nodeid: str) -> bool:
    """Whether pytest, given the node id ``wanted``, would run the item ``nodeid``."""
    return nodeid == wanted or nodeid.startswith((wanted + "::", wanted + "["))


def overlapping(nodeids: list[str]) -> bool:
    """Whether one node id selects another's items (then each runs in a session of its own)."""
    return any(a != b and selects(a, b) for a in nodeids for b in nodeids)


# ---------------------------------------------------------------- the collector


def collector(jobs: list[dict[str, Any]], state: Any, wfd: int) -> None:
    """Sealed jobs of one oracle file: collect once, fork a child per job ; never return."""
    emit = Emitter(wfd)
    result: dict[str, Any] = {"examples": 0, "opened": []}
    try:
        forks.prepare(jobs[0])
        run_group(jobs, standins.seal(jobs[0], result), result, emit)
    except BaseException as exc:
        for job in jobs:
            emit(job, forks.runner_failure(exc))
    os._exit(0)


def run_group(jobs: list[dict[str, Any]], finder: Any, result: dict[str, Any], emit: Any) -> None:
    """Collect the jobs' oracle file once; each job runs in a child forked after collection .

    ``emit(job, outcome)`` is called once per job; jobs the loop never reached (collection
    failed, nothing collected) get the outcome their own session would have had.
    """
    job = jobs[0]
    plugin = session.GatePlugin(job, finder, os.path.join(job["trusted_root"], job["oracle_file"]), job["oracle_file"])
    plugin.group, plugin.each, plugin.result, plugin.emit = jobs, run_each, result, emit
    code = session._main(session.group_arguments(jobs, session._ini(job)), plugin)
    for each in jobs:
        if each["id"] not in plugin.done:
            plugin.for_job(each, [i for i in plugin.items if selects(each["nodeid"], i.nodeid)])
            emit(each, session.finish(plugin, code, dict(result)))


# ---------------------------------------------------------------- in the collector (pytest_runtestloop)


def run_each(plugin: Any, session: Any) -> None:
    """Fork one child per job of the plugin's group; report each outcome through ``plugin.emit``."""
    import gc

    items = list(session.items)
    channel = plugin.finder.channel if plugin.finder is not None else None
    me = os.getpid()
    gc.collect()
    gc.freeze()  # what collection made is shared by every child: never rescanned, its pages left unwritten
    gone: str | None = None  # once a twin cannot be had, no later run may reconnect afresh:
    for job in plugin.group:  # the collection's handles would name other objects in a new process
        mine = [item for item in items if selects(job["nodeid"], item.nodeid)]
        try:
            if gone is not None:
                raise standins.SubjectGone(gone)
            fd = channel.twin() if channel is not None else None
        except standins.SubjectGone as exc:
            gone = str(exc)
            plugin.done.add(job["id"])
            plugin.emit(job, {"status": "fail", "witness": "Crash:subject", "error": gone})
            continue
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            os.close(rfd)
            os.close(plugin.emit.fd)  # only the collector reports to the zygote
            forks.die_with_parent(me)
            try:
                _child(plugin, job, mine, fd, wfd)
            finally:
                os._exit(70)
        os.close(wfd)
        if fd is not None:
            os.close(fd)
        outcome = forks.collect(pid, rfd, float(job["timeout"]))
        plugin.done.add(job["id"])
        plugin.emit(job, outcome)


def _child(plugin: Any, job: dict[str, Any], items: list[Any], fd: int | None, wfd: int) -> None:
    """Run one job's items; write one message; never return."""
    started = time.monotonic()
    os.setsid()
    err = os.open(job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(err, 2)
    os.close(err)
    result: dict[str, Any] = dict(plugin.result)
    try:
        if plugin.finder is not None:
            plugin.finder.channel.adopt(fd)
        plugin.for_job(job, items)
        for index, item in enumerate(items):
            following = items[index + 1] if index + 1 < len(items) else None
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=following)
        outcome = session.finish(plugin, 0 if items else 5, result)
    except BaseException as exc:
        outcome = forks.runner_failure(exc)
    forks.report(result, outcome, started, wfd)


class Emitter:
    """The collector's ``emit``: one framed message per job on the pipe (``fd``) to the zygote."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._write, self._dumps = os.write, json.dumps  # bound before any oracle code runs

    def __call__(self, job: dict[str, Any], outcome: dict[str, Any]) -> None:
        try:
            data = self._dumps({**outcome, "id": job["id"]}, default=str).encode()
        except BaseException:
            data = self._dumps({"id": job["id"], "status": "fail", "witness": "Unserialisable:runner",
                                "error": "result not serialisable"}).encode()
        self._write(self.fd, len(data).to_bytes(8, "big") + data)


# ---------------------------------------------------------------- in the zygote


def fork_group(jobs: list[dict[str, Any]], state: Any) -> Iterator[dict[str, Any]]:
    """Fork a collector for ``jobs``; yield ``{"id", **outcome}`` per job as each arrives.

    Collection and the first run must end within twice a run's timeout, each later run within
    one (the collector enforces each run's own); past that the collector is killed and every
    job it did not report is a timeout.  A collector that dies or garbles a message fails the
    jobs it did not report.
    """
    pid, rfd = forks.spawn(lambda wfd: collector(jobs, state, wfd), jobs[0]["id"])
    pending = {job["id"]: job for job in jobs}
    timeout = float(jobs[0]["timeout"])
    reader = _Frames(rfd, pid)
    why = "crash"
    try:
        limit = 2 * timeout + MARGIN_S
        while pending:
            message, why = reader.next(limit)
            if message is None:
                break
            job_id = message.get("id")
            if job_id in pending:
                del pending[job_id]
                yield message
            limit = timeout + MARGIN_S
    finally:
        reader.close()
    for job_id in pending:
        if why == "timeout":
            yield {"id": job_id, "status": "fail", "witness": "Timeout:runner",
                   "error": f"timed out after {timeout:g}s (collecting the oracle file, or a run before it)"}
        else:
            yield {"id": job_id, "status": "fail", "witness": "Crash:runner",
                   "error": f"the oracle file's collector ended without this run's result ({why})"}


class _Frames:
    """Length-prefixed JSON messages from a child's pipe, each within a deadline."""

    def __init__(self, rfd: int, pid: int) -> None:
        self.rfd, self.pid, self.buf = rfd, pid, bytearray()
        self.eof = False

    def _frame(self) -> dict[str, Any] | str | None:
        if len(self.buf) < 8:
            return None
        size = int.from_bytes(self.buf[:8], "big")
        if size > (4 << 20):
            return "a message over the size limit"
        if len(self.buf) < 8 + size:
            return None
        data, self.buf = bytes(self.buf[8:8 + size]), self.buf[8 + size:]
        try:
            message = json.loads(data)
        except ValueError:
            return "a malformed message"
        return message if isinstance(message, dict) else "a malformed message"

    def next(self, limit: float) -> tuple[dict[str, Any] | None, str]:
        deadline = time.monotonic() + limit
        while True:
            frame = self._frame()
            if isinstance(frame, dict):
                return frame, ""
            if isinstance(frame, str):
                return None, frame
            if self.eof:
                return None, "the collector exited"
            left = deadline - time.monotonic()
            if left <= 0:
                return None, "timeout"
            ready, _, _ = select.select([self.rfd], [], [], left)
            if ready:
                chunk = os.read(self.rfd, 65536)
                self.buf += chunk
                self.eof = not chunk

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        os.close(self.rfd)
