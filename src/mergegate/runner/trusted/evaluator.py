"""The trusted evaluator: a fork server (zygote) and one child per property x seed.

Started by ``runner.pool`` as ``python -s -S -P evaluator.py SITE...`` with a
scrubbed environment: no ``sitecustomize``, ``.pth`` file, user site,
``conftest.py`` or pytest configuration of the repository is loaded.  The
zygote imports Hypothesis once and forks a fresh child per job.

A sealed child (the default) never imports production code.  Its ``sys.path``
holds the standard library, the gate's own environment and the trusted oracle
tree (materialized from the trusted revision's blobs); the stand-in finder
(``trusted.standins``) answers every production name by asking that side's
subject over the call protocol.  Hypothesis's engine, the property body, its
helpers, the fixtures, the example counter and the result live here only: a
patch changes production code, and production code is in another process.

Protocol with the parent (zygote stdin/stdout): one JSON job per line in, one
JSON outcome per line out.  The child reports to the zygote on its own pipe
with one length-prefixed JSON message.
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


# ---------------------------------------------------------------- shared by both kinds of child


def bounded_settings(settings: Any, own: Any, job: dict[str, Any]) -> Any:
    """The test's own settings within the gate's bounds.

    Honoured as the test sets them: health checks it suppresses, ``stateful_step_count``,
    a deadline it sets, its phases (generation always on, the explain phase off).
    Never the test's: the catalog's ``max_examples`` is a floor (a test may ask for more),
    the example database is off, the seed is the gate's (``derandomize`` off), one bug
    reported, no reproduction blob.  A setting the test leaves at Hypothesis's default
    is not "set": the gate's default (no deadline) applies.
    """
    from hypothesis import HealthCheck, Phase

    default = settings.get_profile("default")
    floor = int(job["max_examples"])
    examples = max(floor, own.max_examples) if own.max_examples != default.max_examples else floor
    deadline = own.deadline if own.deadline != default.deadline else None
    phases = tuple(p for p in Phase if p is not Phase.explain and (p in own.phases or p is Phase.generate))
    suppress = {*own.suppress_health_check, HealthCheck.too_slow, HealthCheck.differing_executors}
    return settings(
        own, max_examples=examples, database=None, derandomize=False, deadline=deadline,
        report_multiple_bugs=False, print_blob=False, phases=phases,
        suppress_health_check=sorted(suppress, key=lambda h: h.value),
    )


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


def rebuild(counted: Any, handle: Any, fn: Any, job: dict[str, Any], given: Any, settings: Any, seed: Any,
            parent: Any) -> Any:
    """The property again, from its real ``@given`` handle, around ``counted`` (its body behind a counter),
    with its explicit examples, ``parent`` (its own settings) within the gate's bounds and the job's seed."""
    import inspect

    del counted.__wrapped__
    counted.__signature__ = inspect.signature(handle.inner_test)
    test = given(**handle._given_kwargs)(counted)
    explicit = getattr(fn, "hypothesis_explicit_examples", None)
    if explicit:
        test.hypothesis_explicit_examples = list(explicit)
    return seed(int(job["seed"]))(bounded_settings(settings, parent, job)(test))


# ---------------------------------------------------------------- the sealed child


def run_sealed(job: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """Run one node id x seed as a pytest session with production behind stand-ins; return the outcome."""
    from mergegate.runner.trusted import session

    return session.run(job, _seal(job, result), result)


def _seal(job: dict[str, Any], result: dict[str, Any]) -> Any:
    """Production behind stand-ins (the finder, first on ``sys.meta_path``); opens of the trusted tree watched."""
    from mergegate.runner.trusted import standins

    names = frozenset(job["production_names"])
    for name in [n for n in sys.modules if n.partition(".")[0] in names]:
        del sys.modules[name]  # the gate's own copy of a module production owns is not the tree's
    finder = standins.install(names, job["subject_socket"])
    result["opened"] = watch_opens(job["trusted_root"])
    return finder


# ---------------------------------------------------------------- the child process


def child(job: dict[str, Any], state: tuple[dict[str, Any], dict[str, Any]], wfd: int) -> None:
    """Run one job; write one message to ``wfd``; never return."""
    started = time.monotonic()
    result: dict[str, Any] = {"examples": 0, "opened": []}
    try:
        _prepare(job)
        if job["isolation"] == "shared":
            from mergegate.runner.unsealed import worker

            outcome = worker.run_shared(job, state[0], state[1], result)
        else:
            outcome = run_sealed(job, result)
    except BaseException as exc:
        outcome = _runner_failure(exc)
    report(result, outcome, started, wfd)


def collector(jobs: list[dict[str, Any]], state: Any, wfd: int) -> None:
    """Sealed jobs of one oracle file: collect once, fork a child per job (``group.py``); never return."""
    from mergegate.runner.trusted import group, session

    emit = group.Emitter(wfd)
    result: dict[str, Any] = {"examples": 0, "opened": []}
    try:
        _prepare(jobs[0])
        session.run_group(jobs, _seal(jobs[0], result), result, emit)
    except BaseException as exc:
        for job in jobs:
            emit(job, _runner_failure(exc))
    os._exit(0)


def _runner_failure(exc: BaseException) -> dict[str, Any]:
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


def _die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this child when the zygote dies, so an interrupted run leaves no orphan."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the zygote died before the line above
        os._exit(71)


def _prepare(job: dict[str, Any]) -> None:
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


# ---------------------------------------------------------------- the zygote


def fork_one(job: dict[str, Any], state: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    """Fork a child for ``job``, wait for its message (or the timeout), reap it."""
    pid, rfd = spawn(lambda wfd: child(job, state, wfd), job["id"])
    return _collect(pid, rfd, float(job["timeout"]))


def spawn(run: Callable[[int], None], announce: Any) -> tuple[int, int]:
    """Fork a child that runs ``run(wfd)`` and never returns; tell the parent its pid (under the id
    ``announce``) so it can kill the child's process group if it must stop early; (pid, read end)."""
    rfd, wfd = os.pipe()
    sys.stdout.flush()
    zygote_pid = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(rfd)
        _die_with_parent(zygote_pid)
        try:
            run(wfd)
        finally:
            os._exit(70)
    os.close(wfd)
    sys.stdout.write(json.dumps({"id": announce, "pid": pid}) + "\n")
    sys.stdout.flush()
    return pid, rfd


def _collect(pid: int, rfd: int, timeout: float) -> dict[str, Any]:
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


def warm_up() -> None:
    """Run one throwaway property so every lazy import and cache of Hypothesis is paid once, here.

    Its unicode table (``st.text()``) is read from, or written once to, the gate's own Hypothesis
    cache (``MERGEGATE_HYPOTHESIS_CACHE``): only this trusted side ever writes there.
    """
    import tempfile  # noqa: F401 - used by each child's _prepare

    from hypothesis import configuration, given, seed, settings
    from hypothesis import strategies as st

    cache = os.environ.get("MERGEGATE_HYPOTHESIS_CACHE")
    if cache:
        configuration.set_hypothesis_home_dir(cache)

    @seed(0)
    @settings(database=None, max_examples=3, deadline=None)
    @given(st.integers(), st.text(), st.lists(st.floats()), st.decimals(allow_nan=False), st.data())
    def warm(i: int, t: str, xs: list[float], d: Any, data: Any) -> None:
        data.draw(st.sampled_from([1, 2]))

    warm()
    configuration.set_hypothesis_home_dir(None)


def scan_nothing_loaded_so_far() -> None:
    """Keep Hypothesis from mining the gate's own source for constants to generate with.

    Hypothesis draws literals from "local" modules (any not in site-packages): with an
    editable install that would be mergegate itself, and seeds would give other examples
    than on a wheel install.  The oracle and its helpers, loaded in the child, still count.
    (A private API, used only if it is there: without it runs are slower, not wrong.)
    """
    with contextlib.suppress(Exception):
        from hypothesis.internal.conjecture import providers

        seen = getattr(providers, "_seen_modules", None)
        if isinstance(seen, set):
            seen.update(id(m) for m in list(sys.modules.values()))


def zygote() -> None:
    """Serve jobs from stdin until EOF; one JSON outcome line per job on stdout."""
    import gc

    from mergegate.runner.trusted import group, session, standins  # noqa: F401 - loaded once, before any fork
    from mergegate.runner.unsealed import worker

    session.prepare()  # before the shared children's snapshot: pytest's modules are guarded too
    state = worker.zygote_state()
    warm_up()
    scan_nothing_loaded_so_far()
    # Everything loaded so far is shared by every child: keep the collector (Hypothesis runs it
    # for each test) off those objects, and their pages unwritten after the fork.
    gc.collect()
    gc.freeze()
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        if "group" in job:
            _serve_group(job["group"], state, out)
            continue
        try:
            outcome = fork_one(job, state)
        except Exception as exc:
            outcome = {"status": "fail", "witness": "Crash:runner", "error": f"fork failed: {exc}"}
        out.write(json.dumps({"id": job["id"], **outcome}) + "\n")
        out.flush()


def _serve_group(jobs: list[dict[str, Any]], state: Any, out: Any) -> None:
    from mergegate.runner.trusted import group

    answered = set()
    try:
        for outcome in group.fork_group(jobs, state):
            answered.add(outcome["id"])
            out.write(json.dumps(outcome) + "\n")
            out.flush()
    except Exception as exc:
        for job in jobs:
            if job["id"] not in answered:
                out.write(json.dumps({"id": job["id"], "status": "fail", "witness": "Crash:runner",
                                      "error": f"fork failed: {exc}"}) + "\n")
        out.flush()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    sys.path.extend(sys.argv[1:])  # the gate's own site-packages and package root, given by the parent
    zygote()
