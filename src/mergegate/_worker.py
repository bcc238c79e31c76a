"""The property runner's child side: a fork server (zygote) and the per-run child.

Started by ``mergegate.pool`` as ``python -s -S -P _worker.py SITE... ROOT`` with a
scrubbed environment (no ``PYTHON*`` variable but ``PYTHONHASHSEED=0``, so set
iteration is one order for every run of a seed; ``-I`` would also drop that), so
no ``sitecustomize``, ``usercustomize``, ``.pth`` file, ``conftest.py``, pytest
configuration or pytest plugin of the repository is ever loaded: pytest is not
run at all.  This file uses the standard library, Hypothesis and
``mergegate._guard`` (stdlib only); nothing else of the gate.

Why a fork server: each property x seed still runs in a process of its own that
never saw another run's production code (a child forked from a zygote that
imported only Hypothesis and the standard library), but without paying the
Hypothesis import per run.

The zygote imports Hypothesis once, takes a snapshot of every loaded module's
functions and classes, then forks one fresh child per (property, seed) job.
The child, before any production import, preloads the oracle's own
non-production imports and grabs the real ``given``/``settings``/``seed``; then it
executes the TRUSTED oracle source (sent by the parent, never read from the
tree), rebuilds the property from the real ``@given`` handle around a counting
wrapper, and runs it with the job's seed and ``max_examples``.  Anything that
production code changed at import time in Hypothesis, the builtins or a
preloaded module, a tracer, a missing result, an exit or a signal: a fail.

Protocol (zygote stdin/stdout, one JSON object per line): job in, outcome out.
The child reports on its own pipe with one length-prefixed JSON message.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
import types
from typing import Any

# Standard modules an oracle commonly leans on: preloaded (and snapshotted) in the
# zygote so production code cannot shadow them or patch them before the oracle runs.
PRELOAD = (
    "math", "cmath", "decimal", "fractions", "numbers", "statistics", "json", "re",
    "collections", "functools", "itertools", "operator", "datetime", "random", "string",
    "typing", "pathlib", "unittest", "dataclasses", "enum", "copy", "io", "struct", "ctypes",
    "hypothesis", "hypothesis.strategies", "hypothesis.core", "hypothesis.control",
    "hypothesis.errors", "hypothesis.configuration",
)
MSG_LIMIT = 4 << 20


# ---------------------------------------------------------------- the child


def child(job: dict[str, Any], snap: dict[str, Any], builtins_before: dict[str, Any], wfd: int) -> None:
    """Run one property x seed; write one message to ``wfd``; never return."""
    # Bind everything the verdict depends on to locals before any production import:
    # production code may rebind module globals, os._exit, builtins or hypothesis later.
    real_exit, real_write, dumps = os._exit, os.write, json.dumps
    started = time.monotonic()
    clock = time.monotonic
    result: dict[str, Any] = {"examples": 0, "opened": []}
    try:
        _prepare(job)
        outcome = _run(job, snap, builtins_before, result)
    except BaseException as exc:
        outcome = {"status": "fail", "witness": f"{type(exc).__name__}:runner",
                   "error": f"{type(exc).__name__}: {exc}"[:2000]}
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
    os.setsid()  # its own process group: a timeout kills production's children too
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    err = os.open(job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(err, 2)
    os.chdir(job["tree"])
    # Bytecode is read from a fresh, empty, randomly named prefix and never written: a
    # __pycache__ committed to the tree (an unchecked hash-based .pyc) can never stand in
    # for a source file, and no run can plant a .pyc that another run (the other tree,
    # another property) would load.
    import tempfile

    sys.pycache_prefix = tempfile.mkdtemp(prefix="pyc-", dir=job["pycache"])
    sys.dont_write_bytecode = True
    from hypothesis import configuration

    configuration.set_hypothesis_home_dir(tempfile.mkdtemp(prefix="home-", dir=job["home"]))


def _run(job: dict[str, Any], snap: dict[str, Any], builtins_before: dict[str, Any],
         result: dict[str, Any]) -> dict[str, Any]:
    import functools
    import importlib
    import inspect

    import hypothesis
    from hypothesis import HealthCheck, Phase
    from hypothesis.core import HypothesisHandle

    from mergegate import _guard as g

    # Locals only from here on: production code may rebind module globals.
    check, tamper, site, cex = g.tampered, _tamper, g.assertion_site, g.counterexample
    given, settings, seed_ = hypothesis.given, hypothesis.settings, hypothesis.seed
    pristine = settings.get_profile("default")
    source: bytes = job["source"].encode("utf-8", "surrogateescape")
    oracle_path = os.path.join(job["tree"], job["oracle_file"])
    rel = job["oracle_file"]
    # The oracle's own non-production imports, loaded and snapshotted first.
    # Oracle helpers (the oracle's own directory) load now too, before production can reach them.
    sys.path.insert(0, job["oracle_root"])
    extra = g.oracle_imports(source, job["prod_roots"])
    for name in extra:
        # A missing module is reported by the oracle's own import, in the oracle's words.
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    snap = {**snap, **g.snapshot([n for n in sys.modules if n not in snap])}
    consts = g.scalars(list(sys.modules))
    moved_const = g.scalars_moved
    builtins_before = dict(builtins_before)
    code_before = {f: (f.__code__, f.__defaults__)
                   for f in (g.tampered, _tamper, g.assertion_site, g.counterexample, g.scalars_moved)}
    opened: list[str] = []
    tree_prefix = job["tree"].rstrip("/") + "/"
    abspath = os.path.abspath

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if event == "open" and args and isinstance(args[0], (str, bytes)):
            path = abspath(os.fsdecode(args[0]))
            if path.startswith(tree_prefix):
                opened.append(path[len(tree_prefix):])

    sys.addaudithook(audit)
    result["opened"] = opened
    sys.path[1:1] = job["prod_roots"]  # after the oracle's directory: production never shadows a helper
    module = types.ModuleType(job["module"])
    module.__file__ = oracle_path
    module.__package__ = job["module"].rpartition(".")[0]  # relative imports in an oracle package
    sys.modules[job["module"]] = module
    try:
        code = compile(source, oracle_path, "exec", dont_inherit=True)
        exec(code, vars(module))
    except BaseException as exc:
        return {"status": "fail", "witness": site(exc, oracle_path, rel),
                "error": f"loading the oracle: {type(exc).__name__}: {exc}"[:2000]}
    moved = check(snap, builtins_before) or moved_const(consts)
    if moved is not None:
        return tamper(moved, rel)
    fn = vars(module).get(job["function"])
    handle = getattr(fn, "__dict__", {}).get("hypothesis")
    if type(handle) is not HypothesisHandle:
        return {"status": "fail", "witness": f"NotAProperty:{rel}",
                "error": f"{job['function']} is not a Hypothesis @given test (or @given was replaced)"}
    inner = handle.inner_test
    if getattr(getattr(inner, "__code__", None), "co_filename", None) != oracle_path:
        return tamper("the test body (not defined in the oracle file)", rel)
    counter = [0]
    trace_seen: list[str] = []
    gettrace = sys.gettrace

    @functools.wraps(inner)
    def counted(*args: Any, **kwargs: Any) -> Any:
        counter[0] += 1
        try:
            return inner(*args, **kwargs)
        finally:
            if gettrace() is not None:
                trace_seen.append("sys.settrace")

    del counted.__wrapped__
    counted.__signature__ = inspect.signature(inner)  # type: ignore[attr-defined]
    test = given(**handle._given_kwargs)(counted)
    explicit = getattr(fn, "hypothesis_explicit_examples", None)
    if explicit:
        test.hypothesis_explicit_examples = list(explicit)  # type: ignore[attr-defined]
    test = settings(
        pristine, max_examples=int(job["max_examples"]), database=None, derandomize=False,
        deadline=None, report_multiple_bugs=False, print_blob=False,
        phases=(Phase.explicit, Phase.generate, Phase.target, Phase.shrink),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
    )(test)
    test = seed_(int(job["seed"]))(test)
    failure: BaseException | None = None
    try:
        test()
    except BaseException as exc:
        failure = exc
    result["examples"] = counter[0]
    for f, (c, d) in code_before.items():
        if f.__code__ is not c or f.__defaults__ is not d:
            return tamper(f"the runner's {f.__name__}", rel)
    moved = check(snap, builtins_before) or moved_const(consts) or (trace_seen[0] if trace_seen else None)
    if moved is not None:
        return tamper(moved, rel)
    if failure is not None:
        return {"status": "fail", "witness": site(failure, oracle_path, rel),
                "counterexample": cex(failure),
                "error": f"{type(failure).__name__}: {failure}"[:2000]}
    if counter[0] == 0:
        return {"status": "fail", "witness": f"ZeroExamples:{rel}", "error": "the property ran zero examples"}
    return {"status": "pass", "witness": ""}


def _tamper(what: str, rel: str) -> dict[str, Any]:
    return {"status": "fail", "witness": f"OracleTampered:{rel}",
            "error": f"production code changed {what} while the property was loading or running"}


# ---------------------------------------------------------------- the zygote


def fork_one(job: dict[str, Any], snap: dict[str, Any], builtins_before: dict[str, Any]) -> dict[str, Any]:
    """Fork a child for ``job``, wait for its message (or the timeout), reap it."""
    rfd, wfd = os.pipe()
    sys.stdout.flush()
    zygote_pid = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(rfd)
        _die_with_parent(zygote_pid)
        try:
            child(job, snap, builtins_before, wfd)
        finally:
            os._exit(70)
    os.close(wfd)
    # Announce the child so the parent can kill its process group if it must stop early.
    sys.stdout.write(json.dumps({"id": job["id"], "pid": pid}) + "\n")
    sys.stdout.flush()
    return _collect(pid, rfd, float(job["timeout"]))


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


def zygote() -> None:
    """Serve jobs from stdin until EOF; one JSON outcome line per job on stdout."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    import builtins

    from mergegate import _guard

    snap = _guard.snapshot(list(sys.modules))
    builtins_before = dict(vars(builtins))
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        try:
            outcome = fork_one(job, snap, builtins_before)
        except Exception as exc:
            outcome = {"status": "fail", "witness": "Crash:runner", "error": f"fork failed: {exc}"}
        out.write(json.dumps({"id": job["id"], **outcome}) + "\n")
        out.flush()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    sys.path.extend(sys.argv[1:])  # the gate's own site-packages and package root, given by the parent
    zygote()
