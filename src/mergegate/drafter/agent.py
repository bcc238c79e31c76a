"""The drafter's in-container agent: drafts candidates, then triages them.

This file runs INSIDE the sandbox container only (mounted read-only at
/opt/gate/agent.py and started with ``python3 -I -B``).  It must not import
mergegate: the container holds the standard library, hypothesis and black.
The host never imports or runs it.

Input: /job/job.json (read-only).  Output: one JSON document written into
/out/result.json (a host file) after every child is gone.  A draft run only
drafts; the host hashes each draft as it leaves the container, writes it
read-only into a second container's /job/candidates and that run triages it.
Everything reported is advisory: the host re-validates every byte it reads.

The agent makes itself non-dumpable first, so a candidate (same uid) can
neither ptrace it nor read its memory or file descriptors through /proc.

Each draft and each triage runs in a forked child in its own process group,
with an address-space limit and a deadline; after each child the agent kills
every other process it may signal (fork bombs, daemonised leftovers).
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import os
import re
import resource
import select
import signal
import socket
import sys
import time
import traceback
import types
from collections.abc import Callable
from typing import Any

STAGING = "/staging"
OUT = "/out/result.json"
PR_SET_DUMPABLE = 4
RELAY_SOCKET = "/relay/model.sock"
WITNESS_MAX = 4000
FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)


# ---------------------------------------------------------------- isolation helpers

def not_dumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0): no ptrace, no /proc/<agent>/mem or fd for the same uid."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def _sweep() -> None:
    """Kill every process this user may signal except ourselves (and init)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(-1, signal.SIGKILL)


def in_child(func: Callable[[], Any], deadline_s: float, mem_bytes: int) -> dict[str, Any]:
    """Run ``func`` in a forked child; its JSON-able return value, or an error dict."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        code = 0
        try:
            os.setpgid(0, 0)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)  # a chatty candidate cannot flood the container log
            os.dup2(devnull, 2)
            if mem_bytes > 0:
                resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
            signal.alarm(int(deadline_s) + 1)
            result = func()
        except BaseException as exc:  # the child reports whatever happened, then dies
            result = {"status": "error", "reason": _describe(exc)}
            code = 1
        try:
            data = json.dumps(result).encode()
            with os.fdopen(write_fd, "wb") as out:
                out.write(data)
        finally:
            os._exit(code)
    os.close(write_fd)
    try:
        return _collect(pid, read_fd, deadline_s)
    finally:
        _sweep()


def _collect(pid: int, read_fd: int, deadline_s: float) -> dict[str, Any]:
    chunks: list[bytes] = []
    end = time.monotonic() + deadline_s
    timed_out = False
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while True:
            left = end - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([pipe], [], [], left)
            if not ready:
                continue
            chunk = pipe.read(65536)
            if not chunk:
                break
            chunks.append(chunk)
    if timed_out:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return {"status": "error", "reason": f"timeout: still running after {deadline_s:g} s, killed"}
    try:
        return dict(json.loads(b"".join(chunks)))
    except ValueError:
        if os.WIFSIGNALED(status):
            sig = signal.Signals(os.WTERMSIG(status)).name
            hint = " (out of memory?)" if sig == "SIGKILL" else ""
            return {"status": "error", "reason": f"crashed: killed by {sig}{hint}"}
        return {"status": "error", "reason": f"crashed: exit status {os.waitstatus_to_exitcode(status)}"}


def _describe(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text[:WITNESS_MAX]


# ---------------------------------------------------------------- drafting

GHOSTWRITERS = ("magic", "roundtrip", "idempotent", "equivalent")
TYPES_NAMES = ("NoneType", "EllipsisType", "NotImplementedType")


def _resolve(module_name: str, qualname: str) -> Any:
    import importlib

    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def add_missing_type_imports(code: str) -> str:
    """Import ``NoneType`` (and its kin) from ``types`` where the ghostwriter used it unbound.

    The ghostwriter can spell ``type(None)`` as ``NoneType`` in an annotation or strategy;
    the test module then dies with ``NameError: name 'NoneType' is not defined``.
    """
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    bound = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom | ast.Import) for a in n.names}
    bound |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    missing = [name for name in TYPES_NAMES if name in used and name not in bound]
    if not missing:
        return code
    lines = code.splitlines(keepends=True)
    first = next((n.lineno - 1 for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)), 0)
    lines.insert(first, f"from types import {', '.join(missing)}\n")
    return "".join(lines)


def at_defaults(func: Any, first_type: Any = None) -> Any:
    """``func`` as the ghostwriter should see it: its required parameters only (options stay at their
    defaults), the first one narrowed to ``first_type`` when its annotation is a Union holding it.

    The wrapper keeps the function's name, so the test the ghostwriter writes calls the real one.
    """
    import inspect
    import typing

    if not inspect.isfunction(func):
        return func
    try:
        signature = inspect.signature(func)
        hints = typing.get_type_hints(func)
    except Exception:  # unresolvable annotations: leave the function as it is
        return func
    params = [p for p in signature.parameters.values()
              if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if not params:
        return func
    annotations = {p.name: hints[p.name] for p in params if p.name in hints}
    first = params[0].name
    if first_type is not None and first_type in typing.get_args(annotations.get(first)):
        annotations[first] = first_type
        params[0] = params[0].replace(annotation=first_type)
    if "return" in hints:
        annotations["return"] = hints["return"]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = annotations
    del wrapper.__wrapped__
    return wrapper


def _shaped(mode: str, functions: list[Any]) -> list[Any]:
    """The functions as handed to the ghostwriter: a round trip starts from what its inverse returns."""
    import typing

    if mode != "roundtrip" or len(functions) != 2:
        return [at_defaults(f) for f in functions]
    returns = []
    for func in functions:
        try:
            returns.append(typing.get_type_hints(func).get("return"))
        except Exception:
            returns.append(None)
    # The ghostwriter also draws the inverse's first argument and, under one name, joins both
    # strategies: narrow both, and to the same type when the names meet.
    import inspect

    names = []
    for func in functions:
        try:
            names.append(next(iter(inspect.signature(func).parameters), None))
        except (TypeError, ValueError):
            names.append(None)
    second = returns[1] if names[0] is not None and names[0] == names[1] else returns[0]
    return [at_defaults(functions[0], returns[1]), at_defaults(functions[1], second)]


def draft_ghostwriter(job: dict[str, Any]) -> dict[str, Any]:
    from hypothesis.extra import ghostwriter

    targets = job.get("targets") or [[job["module"], job["qualname"]]]
    functions = [_resolve(module, qualname) for module, qualname in targets]
    mode = str(job.get("mode")) if job.get("mode") in GHOSTWRITERS else "magic"
    try:
        # Inputs the code refuses with ValueError (UnicodeError ...) are outside its domain, not failures.
        code = getattr(ghostwriter, mode)(*_shaped(mode, functions), except_=ValueError)
    except Exception:  # this writer does not fit these functions: let magic choose
        code = ghostwriter.magic(*functions)
    return {"status": "drafted", "code": add_missing_type_imports(code)}


def _relay_post(body: bytes, timeout_s: float) -> tuple[int, bytes]:
    class UnixConnection(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout_s)
            self.sock.connect(RELAY_SOCKET)

    conn = UnixConnection("relay", timeout=timeout_s)
    try:
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def extract_code(content: str) -> str:
    """The first fenced Python block of a model reply, else the whole reply."""
    match = FENCE.search(content)
    return (match.group(1) if match else content).strip() + "\n"


def draft_openai(job: dict[str, Any], model: str, timeout_s: float) -> dict[str, Any]:
    body = json.dumps({"model": model, "messages": job["messages"]}).encode()
    status, data = _relay_post(body, timeout_s)
    if status != 200:
        return {"status": "infra", "reason": data.decode(errors="replace")[:500]}
    reply = json.loads(data)
    content = reply["choices"][0]["message"]["content"]
    return {"status": "drafted", "code": extract_code(content)}


def draft_all(job_file: dict[str, Any]) -> dict[str, dict[str, Any]]:
    limits = job_file["limits"]
    out: dict[str, dict[str, Any]] = {}
    for job in job_file["jobs"]:
        if job_file["backend"] == "ghostwriter":
            def work(job: dict[str, Any] = job) -> dict[str, Any]:
                return draft_ghostwriter(job)
        else:
            def work(job: dict[str, Any] = job) -> dict[str, Any]:
                return draft_openai(job, job_file["model"], limits["draft_s"])
        result = in_child(work, limits["draft_s"], limits["mem_bytes"])
        out[job["key"]] = result
        if result.get("status") == "infra":
            break  # the trial stops at the first channel fault
    return out


# ---------------------------------------------------------------- triage

def _test_functions(module: types.ModuleType) -> list[tuple[str, Any]]:
    return [(name, obj) for name, obj in vars(module).items()
            if name.startswith("test") and callable(obj) and getattr(obj, "__module__", "") == module.__name__]


def _only_assertions(exc: BaseException) -> bool:
    """Whether ``exc`` is an AssertionError, or a group (Hypothesis's distinct failures) of nothing else."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_only_assertions(e) for e in exc.exceptions)
    return isinstance(exc, AssertionError)


def _run_one(func: Any) -> dict[str, Any]:
    try:
        func()
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            return {"result": "error", "witness": _describe(exc)}
        notes = "\n".join(getattr(exc, "__notes__", ()) or ())
        witness = (_describe(exc) + ("\n" + notes if notes and notes not in _describe(exc) else ""))
        # An assertion that does not hold is a failure; any other exception means the relation was never
        # checked (the candidate fed the code inputs it refuses, or did not run at all).
        kind = "fail" if _only_assertions(exc) else "error"
        return {"result": kind, "witness": witness[:WITNESS_MAX]}
    return {"result": "pass"}


def triage_one(path: str) -> dict[str, Any]:
    """Import one candidate and run each of its test functions."""
    os.chdir("/tmp")
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    module = types.ModuleType("gate_candidate")
    module.__file__ = path
    sys.modules["gate_candidate"] = module
    # dont_inherit: the candidate runs as the module pytest would import, not under this file's
    # ``from __future__ import annotations`` (which would hide a NameError in its annotations).
    exec(compile(source, path, "exec", dont_inherit=True), module.__dict__)
    tests = _test_functions(module)
    if not tests:
        return {"result": "error", "witness": "no test function in the candidate", "tests": {}}
    results = {name: _run_one(func) for name, func in tests}
    order = ("error", "fail", "pass")
    worst = min((r["result"] for r in results.values()), key=order.index)
    witness = next((f"{n}: {r['witness']}" for n, r in results.items() if r["result"] == worst and "witness" in r), "")
    return {"result": worst, "witness": witness[:WITNESS_MAX], "tests": {n: r["result"] for n, r in results.items()}}


def triage_all(paths: dict[str, str], limits: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, path in paths.items():
        started = time.monotonic()
        result = in_child(functools.partial(triage_one, path), limits["triage_s"], limits["mem_bytes"])
        if result.get("status") == "error":  # the child itself failed, not a test
            result = {"result": "error", "witness": result.get("reason", "")}
        result["elapsed_s"] = round(time.monotonic() - started, 3)
        out[key] = result
    return out


# ---------------------------------------------------------------- main

def _setup(job_file: dict[str, Any]) -> None:
    for directory in (os.environ.get("HOME", "/tmp/home"), os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY", "/tmp/hyp")):
        os.makedirs(directory, exist_ok=True)
    sys.path[:0] = job_file["sys_path"]
    if job_file["mode"] == "draft" and job_file["backend"] == "ghostwriter":
        from hypothesis.extra import ghostwriter  # noqa: F401  (imported once, before the forks)
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "gate", database=None, max_examples=job_file["limits"]["max_examples"], derandomize=True,
        deadline=None, print_blob=False, suppress_health_check=[HealthCheck.too_slow],
    )
    settings.load_profile("gate")


def main(argv: list[str]) -> int:
    not_dumpable()
    with open(argv[1], encoding="utf-8") as handle:
        job_file = json.load(handle)
    _setup(job_file)
    if job_file["mode"] == "draft":
        document: dict[str, Any] = {"drafts": draft_all(job_file)}
    else:
        paths = {c["key"]: c["path"] for c in job_file["candidates"]}
        document = {"triage": triage_all(paths, job_file["limits"])}
    _sweep()  # nothing a draft or a candidate started is left to write after us
    with open(OUT, "wb") as handle:
        handle.write(json.dumps(document).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
