"""The runner's process pool: one evaluator zygote (``trusted/evaluator.py``) per core, fed by one thread each.

A zygote imports Hypothesis once and forks a fresh child per job; a dead zygote
is replaced; ``close`` kills every zygote and the child it is running.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from queue import Queue
from typing import Any

from mergegate.errors import InternalError

WORKER = Path(__file__).resolve().parent / "trusted" / "evaluator.py"


@dataclass
class _Zygote:
    proc: subprocess.Popen[bytes]
    child: int | None = None


def _site_dirs() -> list[str]:
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


def worker_cmd() -> list[str]:
    """``-s -S -P``: no user site, no site module (.pth, sitecustomize), no script dir."""
    return [sys.executable, "-s", "-S", "-P", str(WORKER), *_site_dirs()]


@dataclass
class Pool:
    """A fixed set of zygotes fed by one thread each; close() kills every child."""

    size: int
    timeout: float
    scratch: Path
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
        log = open(self.scratch / f"zygote-{len(self._all)}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(worker_cmd(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                env=child_env(), cwd=self.scratch, start_new_session=True)
        log.close()
        zyg = _Zygote(proc)
        with self._lock:
            self._all.append(zyg)
        return zyg

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
        try:
            zyg.proc.stdin.write(json.dumps(request).encode() + b"\n")
            zyg.proc.stdin.flush()
            while pending:
                line = zyg.proc.stdout.readline()
                if not line:
                    raise InternalError("the runner's worker process died")
                msg = json.loads(line)
                if "pid" in msg and "status" not in msg:
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
