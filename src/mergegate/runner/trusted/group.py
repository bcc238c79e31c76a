"""A collector: a unit's oracle files collected once, then each property x seed run in it against a fresh twin.

A pytest session's fixed cost (configuration, the fixture manager, conftest files,
importing and collecting the test modules) is paid once per unit of oracle files
(``schedule.units``) and side, not once per run or file.  The collector is a child of
the evaluator zygote: it configures pytest and collects the files (production behind
stand-ins, as every sealed run), then, for each job, asks the subject for a *twin* of
its connection's process (``subject/server.py``: same objects, a process of its own)
and runs that job's items, with that job's seed, talking only to that twin, as pytest
runs a session's tests (``inplace.py`` puts the channel back as collection left it
after each run).  Production's side is a fresh process per run, in the state
collection left it; the trusted side is one process per unit and side.  A run that
hangs past its timeout, or ends the collector, fails alone: the collector tells the
zygote when each run starts, and the runs after it get a new collector.  Files whose
collection together fails are collected each on its own (``fork_group``).

Messages to the zygote are length-prefixed JSON, one per job, ``{"id": ..., **outcome}``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import signal
import time
from collections.abc import Iterator
from typing import Any

from mergegate.runner.trusted import collected, forks, inplace, session, standins

REQUEUE = "requeue"  # an outcome that is none: run this job again, its file a unit of its own (schedule.py)
MARGIN_S = 5.0  # the collector's own bookkeeping: collecting the file, getting a run's twin
RUN_MARGIN_S = 0.5  # past a run's own timeout, before its collector is stopped


def selects(wanted: str, nodeid: str) -> bool:
    """Whether pytest, given the node id ``wanted``, would run the item ``nodeid``."""
    return nodeid == wanted or nodeid.startswith((wanted + "::", wanted + "["))


def overlapping(nodeids: list[str]) -> bool:
    """Whether one node id selects another's items (then each runs in a session of its own)."""
    return any(a != b and selects(a, b) for a in nodeids for b in nodeids)


def selectors(nodeid: str) -> list[str]:
    """Every node id that ``selects`` the item ``nodeid``: itself, and each prefix before a ``::`` or ``[``."""
    out = [nodeid]
    for i in range(len(nodeid) - 1, 0, -1):
        if nodeid.startswith("::", i) or nodeid[i] == "[":
            out.append(nodeid[:i])
    return out


def by_selector(items: list[Any]) -> dict[str, list[Any]]:
    """The items each node id selects, in collection order (one pass, not one per job)."""
    out: dict[str, list[Any]] = {}
    for item in items:
        for wanted in selectors(item.nodeid):
            out.setdefault(wanted, []).append(item)
    return out


def files(jobs: list[dict[str, Any]]) -> list[str]:
    """The jobs' oracle files, each once, in the jobs' order."""
    return list(dict.fromkeys(job["oracle_file"] for job in jobs))


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
    """Collect the jobs' oracle files once; then run each job here, against a twin of its own.

    ``emit(job, outcome)`` is called once per job; jobs the loop never reached (collection
    failed, nothing collected) get the outcome their own session would have had.  When the
    jobs span several files and their collection did not reach the runs, nothing is emitted
    but ``emit.regroup()``: each file is then collected on its own (``fork_group``), so one
    file's collection error is never another's.
    """
    job = jobs[0]
    plugin = session.GatePlugin(job, finder, os.path.join(job["trusted_root"], job["oracle_file"]), job["oracle_file"])
    plugin.group, plugin.each, plugin.result, plugin.emit = jobs, run_each, result, emit
    plugin.collection = collected.Opens(result.get("opened"))
    plugin.stderr = os.dup(2)  # the file forks.prepare opened for the first job: every run's (_run_here)
    code = session._main(session.group_arguments(jobs, session._ini(job)), plugin)
    if not plugin.done and len(files(jobs)) > 1:
        emit.regroup()
        return
    for each in jobs:
        if each["id"] not in plugin.done:
            plugin.for_job(each, [i for i in plugin.items if selects(each["nodeid"], i.nodeid)])
            emit(each, session.finish(plugin, code, dict(result)))


# ---------------------------------------------------------------- in the collector (pytest_runtestloop)


def run_each(plugin: Any, session: Any) -> None:
    """Run each job of the plugin's group here, against a twin of its own; report each through ``plugin.emit``."""
    import gc

    chosen = by_selector(list(session.items))
    channel = plugin.finder.channel if plugin.finder is not None else None
    gc.collect()
    gc.freeze()  # what collection made: never rescanned by the runs' collections
    plugin.collected_opens = plugin.collection.close()  # each run's own opens come after collection's
    gone: str | None = None  # once a twin cannot be had, no later run may reconnect afresh:
    last: str | None = None  # the collection's handles would name other objects in a new process
    several = len(files(plugin.group)) > 1
    for job in plugin.group:
        mine = chosen.get(job["nodeid"], [])
        try:
            if gone is not None:
                raise standins.SubjectGone(gone)
            fd = channel.twin() if channel is not None else None
        except standins.SubjectGone as exc:
            gone = str(exc)
            plugin.done.add(job["id"])
            if several and job["oracle_file"] != last:
                # Another file's run (or collection) ended the subject: this file's runs get a collector, and
                # a subject, of their own, as if each file were a unit (the gate runs them again, REQUEUE).
                plugin.emit(job, {"status": REQUEUE})
            else:
                plugin.emit(job, {"status": "fail", "witness": "Crash:subject", "error": gone})
            continue
        plugin.emit.started(job)
        outcome = _run_here(plugin, job, mine, channel, fd)
        plugin.done.add(job["id"])
        plugin.emit(job, outcome)
        last = job["oracle_file"]


def _run_here(plugin: Any, job: dict[str, Any], items: list[Any], channel: Any, fd: int | None) -> dict[str, Any]:
    """One job's items in this process, against the twin on ``fd`` (``inplace.py``); its outcome and row."""
    started = time.monotonic()
    _own_stderr(plugin.stderr)
    opened = plugin.result.get("opened")
    if type(opened) is list:
        del opened[plugin.collected_opens:]  # the audit hook's list: what collection opened, then this run's
    result: dict[str, Any] = dict(plugin.result)
    saved = inplace.enter(channel, fd, job["trusted_root"]) if channel is not None else None
    try:
        plugin.for_job(job, items)
        for index, item in enumerate(items):
            following = items[index + 1] if index + 1 < len(items) else None  # None: every fixture torn down
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=following)
        outcome = session.finish(plugin, 0 if items else 5, result)
    except BaseException as exc:
        outcome = forks.runner_failure(exc)
    finally:
        if saved is not None:
            inplace.leave(channel, saved)
    result.update(outcome)
    if type(opened) is list:  # what collecting its own file opened, and what the run did
        result["opened"] = plugin.collection.charged(job["oracle_file"]) + opened[plugin.collected_opens:]
    result["duration_s"] = round(time.monotonic() - started, 4)
    return result


def _own_stderr(fd: int) -> None:
    """Point fd 2 at the collector's stderr file (``fd``), emptied: what it holds from now on is this run's.

    One file per collector, not one per run (creating a file costs more than most plain tests do); it is
    read only when a run is lost, and then the zygote gives it that run's name (``_keep_stderr``).
    """
    os.dup2(fd, 2)
    if os.fstat(fd).st_size:
        os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)


class Emitter:
    """The collector's ``emit``: one framed message per job on the pipe (``fd``) to the zygote."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._write, self._dumps = os.write, json.dumps  # bound before any oracle code runs

    def _send(self, data: bytes) -> None:
        self._write(self.fd, len(data).to_bytes(8, "big") + data)

    def regroup(self) -> None:
        """The jobs' files could not be collected together: collect each on its own (``fork_group``)."""
        self._send(self._dumps({"regroup": True}).encode())

    def started(self, job: dict[str, Any]) -> None:
        """The job's run begins (its twin is had): from now its time is the run's (``fork_group``)."""
        self._send(self._dumps({"id": job["id"], "started": True}).encode())

    def __call__(self, job: dict[str, Any], outcome: dict[str, Any]) -> None:
        try:
            data = self._dumps({**outcome, "id": job["id"]}, default=str).encode()
        except BaseException:
            data = self._dumps({"id": job["id"], "status": "fail", "witness": "Unserialisable:runner",
                                "error": "result not serialisable"}).encode()
        self._send(data)


# ---------------------------------------------------------------- in the zygote


def fork_group(jobs: list[dict[str, Any]], state: Any) -> Iterator[dict[str, Any]]:
    """Fork a collector for ``jobs``; yield ``{"id", **outcome}`` per job as each arrives.

    The collector says when each run starts (after its twin is had).  Collection must end within a
    run's timeout (plus bookkeeping), each run within its timeout; past that the collector is killed.
    A run that hangs, or ends the collector (a crash), fails alone: the jobs after it get a collector
    of their own.  When no run had started (collection hung or failed), every job not reported fails.
    """
    remaining = list(jobs)
    while remaining:
        pid, rfd = forks.spawn(functools.partial(collector, remaining, state), remaining[0]["id"])
        pending = {job["id"]: job for job in remaining}
        timeout = float(remaining[0]["timeout"])
        reader = _Frames(rfd, pid)
        why, running, reported = "crash", None, False
        try:
            limit = 2 * timeout + MARGIN_S  # collecting the file (it ran a first run in this time before)
            while pending:
                message, why = reader.next(limit)
                if message is None:
                    break
                if message.get("regroup") is True:
                    why = "regroup"
                    break
                job_id = message.get("id")
                if message.get("started") is True and job_id in pending:
                    running, limit = job_id, timeout + RUN_MARGIN_S
                    continue
                if job_id in pending:
                    del pending[job_id]
                    reported = True
                    yield message
                running, limit = None, timeout + MARGIN_S
        finally:
            reader.close()
        if running is None and not reported and len(files(list(pending.values()))) > 1:
            # Several files whose collection together failed, hung or crashed: each on its own (the gate runs
            # them again, each file a unit, with a subject of its own), so one file's collection decides only
            # its own runs, exactly as it would alone.
            for job_id in pending:
                yield {"id": job_id, "status": REQUEUE}
            return
        if running is not None:  # this run hung or ended the collector: it fails; the rest get a new collector
            _keep_stderr(remaining[0], pending.pop(running))
            yield _lost(running, why, timeout, "")
            remaining = [job for job in remaining if job["id"] in pending]
            continue
        for job_id in pending:
            yield _lost(job_id, why, timeout, " (collecting the oracle file, or a run before it)")
        return


def _keep_stderr(first: dict[str, Any], lost: dict[str, Any]) -> None:
    """The lost run's stderr under its own name (the schedule reads its end into the row): the collector's file,
    which was the first job's and holds only what the lost run wrote (``_own_stderr``)."""
    if lost["stderr"] != first["stderr"]:
        with contextlib.suppress(OSError):
            os.replace(first["stderr"], lost["stderr"])


def _lost(job_id: Any, why: str, timeout: float, where: str) -> dict[str, Any]:
    if why == "timeout":
        return {"id": job_id, "status": "fail", "witness": "Timeout:runner",
                "error": f"timed out after {timeout:g}s{where}"}
    return {"id": job_id, "status": "fail", "witness": "Crash:runner",
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
