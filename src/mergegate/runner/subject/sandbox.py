"""Starting and stopping one side's subject: bubblewrap when it works, a process group otherwise.

Parent side (the gate).  ``bwrap_argv`` is a pure function; ``Subject`` owns the
process, the listening socket the evaluator connects to, and the log.  The
socket is made here and handed to the subject as an inherited descriptor: no
path inside the sandbox leads back to the gate, the oracle or the other tree.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mergegate.errors import UsageError
from mergegate.runner.subject import cgroups

SERVER = Path(__file__).with_name("server.py")
PROTOCOL = Path(__file__).resolve().parent.parent / "protocol"
BWRAP = "bwrap"
NONE, BUBBLEWRAP = "none", "bwrap"
SANDBOX_UID = 65534  # nobody: no owner's rights over anything outside
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("passwd", "group", "nsswitch.conf", "localtime", "hosts", "ld.so.cache", "ld.so.conf",
             "ld.so.conf.d", "alternatives", "ssl/certs", "mime.types")


@dataclass(frozen=True)
class Limits:
    """Resource limits for one side's subject."""

    memory_bytes: int = 8 << 30  # each process (RLIMIT_AS) and, where a cgroup is writable, all together
    max_processes: int = 256
    max_file_bytes: int = 64 << 20
    tmp_bytes: int = 256 << 20  # the sandbox's private /tmp
    shm_bytes: int = 64 << 20  # its /dev/shm: tmpfs pages count against no process's RLIMIT_AS, nor, without a
    # cgroup, against anything: both are sized, so writing past them is ENOSPC, not the host's memory
    cpu_seconds: int | None = None  # per run (a fresh child per property x seed)


@dataclass(frozen=True)
class SubjectSpec:
    """Everything a side's subject is started from."""

    tree: str
    prod_roots: tuple[str, ...]
    masks: tuple[str, ...] = ()  # directories or files of the tree hidden from production
    preload: tuple[str, ...] = ()  # production modules imported once, before the fork server starts
    limits: Limits = field(default_factory=Limits)
    pycache: str | None = None  # the gate's bytecode for this tree (``subject/bytecode.py``), read-only
    trace: tuple[str, ...] = ()  # absolute production files whose executed lines the subject records


def python_dirs() -> list[str]:
    """The interpreter's prefixes and the third-party directories production may import from."""
    paths = sysconfig.get_paths()
    dirs = [sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable)),
            paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"]]
    return [d for d in dict.fromkeys(os.path.realpath(d) for d in dirs) if os.path.isdir(d)]


def site_dirs() -> list[str]:
    paths = sysconfig.get_paths()
    return list(dict.fromkeys(p for p in (paths["purelib"], paths["platlib"]) if os.path.isdir(p)))


def bwrap_argv(spec: SubjectSpec, command: Sequence[str], *, bwrap: str = BWRAP, disable_userns: bool = True,
               python: Sequence[str] = (), writable: Sequence[str] = (), env: Mapping[str, str] | None = None,
               ) -> list[str]:
    """The bubblewrap command line for one subject (pure: paths in, argv out).

    ``python``: folders bound read-only at their own paths; ``writable``: folders bound read-write (a
    shared run's own scratch, ``runner/shared_box.py``); ``env``: set inside, after the defaults.
    """
    argv = [bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--cap-drop", "ALL"]
    if disable_userns:
        argv.append("--disable-userns")
    for d in SYSTEM_DIRS:
        argv += ["--ro-bind-try", d, d]
    for name in ETC_FILES:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    # The private /tmp first: an interpreter or a tree that lives under /tmp is bound on top of it.
    tmp, shm = (min(n, spec.limits.memory_bytes // 2) for n in (spec.limits.tmp_bytes, spec.limits.shm_bytes))
    argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(shm), "--tmpfs", "/dev/shm",
             "--size", str(tmp), "--tmpfs", "/tmp", "--dir", "/run/gate"]
    for d in python:
        argv += ["--ro-bind-try", d, d]
    if spec.pycache:
        argv += ["--ro-bind", spec.pycache, spec.pycache]
    argv += ["--ro-bind", str(SERVER.parent), "/run/gate/subject", "--ro-bind", str(PROTOCOL), "/run/gate/protocol"]
    argv += ["--ro-bind", spec.tree, spec.tree]
    for mask in spec.masks:
        argv += ["--tmpfs", mask] if os.path.isdir(mask) else ["--ro-bind", "/dev/null", mask]
    for d in writable:
        argv += ["--bind", d, d]
    argv += ["--chdir", spec.tree, "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
             "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8",
             "--setenv", "PYTHONHASHSEED", "0"]
    for key, value in (env or {}).items():
        argv += ["--setenv", key, value]
    return [*argv, "--", *command]


def contained(spec: SubjectSpec, command: Sequence[str], extra_reads: Sequence[str] = (), **kw: Any) -> list[str]:
    """``command`` inside bubblewrap as this machine runs it (``probe``): the interpreter's folders and
    ``extra_reads`` read-only, ``kw`` as ``bwrap_argv`` takes them."""
    _works, disable, _why = probe()
    reads = list(dict.fromkeys([*python_dirs(), *extra_reads]))
    return bwrap_argv(spec, command, bwrap=shutil.which(BWRAP) or BWRAP, disable_userns=disable, python=reads, **kw)


@functools.cache
def probe() -> tuple[bool, bool, str]:
    """(bubblewrap works, --disable-userns works, why not): one tiny sandbox, cached per process."""
    exe = shutil.which(BWRAP)
    if exe is None:
        return False, False, "bubblewrap is not installed"
    spec = SubjectSpec(tree="/", prod_roots=())
    errors = ""
    for disable in (True, False):
        argv = bwrap_argv(spec, ["/bin/true"], bwrap=exe, disable_userns=disable)
        try:
            proc = subprocess.run(argv, capture_output=True, timeout=20, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, False, f"bubblewrap did not start: {exc}"
        if proc.returncode == 0:
            return True, disable, ""
        errors = proc.stderr.decode(errors="replace").strip()
    return False, False, f"bubblewrap cannot make a sandbox here: {errors}"


def choose(setting: str, environ: Mapping[str, str] | None = None) -> str:
    """The containment to use for ``runner.containment`` (auto | bwrap | none).

    ``auto`` falls back to a plain process group only outside CI: in CI (``CI``, ``GITHUB_ACTIONS``,
    ``GITLAB_CI``) the job is the gate, and a silent ``none`` there is where containment matters most.
    """
    if setting == NONE:
        return NONE
    works, _disable, why = probe()
    if works:
        return BUBBLEWRAP
    if setting == BUBBLEWRAP:
        raise UsageError(f"runner.containment is bwrap but {why}",
                         "install it (Debian: apt-get install bubblewrap) or set runner.containment: auto")
    from mergegate import ci

    name = ci.where(os.environ if environ is None else environ)
    if name is not None:
        raise UsageError(f"runner.containment is auto and this is {name}, but {why}: production would run "
                         "uncontained in the job that decides the verdict", ci.CONTAINMENT_FIX)
    return NONE


class Subject:
    """One side's running subject: a fork server behind a listening socket."""

    def __init__(self, spec: SubjectSpec, containment: str, scratch: Path, label: str) -> None:
        self.spec, self.containment = spec, containment
        self.socket_path = str(scratch / f"subject-{label}.sock")
        self.log_path = scratch / f"subject-{label}.log"
        self.restarts = 0
        self._lock = threading.Lock()
        self.cgroups = cgroups.make(f"mergegate-{os.getpid()}-{label}", {
            "pids": {"pids.max": spec.limits.max_processes},
            "memory": {"memory.limit_in_bytes": spec.limits.memory_bytes,
                       "memory.memsw.limit_in_bytes": spec.limits.memory_bytes},
        }) if containment == BUBBLEWRAP else []
        self.proc = self._listen_and_start()

    def _listen_and_start(self) -> subprocess.Popen[bytes]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(self.socket_path)
            self._listener.listen(128)
            return self._start()
        finally:
            # Only the subject holds the listening socket: once it is gone, a connection is
            # refused at once instead of waiting in a backlog nobody serves.
            self._listener.close()

    def ensure_running(self) -> None:
        """Start a fresh subject if production killed the last one (its runs already failed)."""
        with self._lock:
            if self.proc.poll() is not None:
                self.proc = self._listen_and_start()
                self.restarts += 1

    def settle(self, timeout: float = 2.0) -> None:
        """After a run lost its subject: if the fork server itself is dying, wait until it is gone."""
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(self.socket_path)
            return  # it still accepts: only that run's child died
        except OSError:
            pass
        finally:
            probe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout)

    def _config(self, protocol: str) -> str:
        lim = self.spec.limits
        return json.dumps({
            "listen_fd": self._listener.fileno(), "protocol": protocol, "tree": self.spec.tree,
            "prod_roots": list(self.spec.prod_roots), "site_dirs": site_dirs(),
            "preload": list(self.spec.preload), "pycache_prefix": self.spec.pycache, "memory_bytes": lim.memory_bytes,
            "max_processes": lim.max_processes, "max_file_bytes": lim.max_file_bytes,
            "cpu_seconds": lim.cpu_seconds, "trace": list(self.spec.trace),
        })

    def _start(self) -> subprocess.Popen[bytes]:
        fd = self._listener.fileno()
        if self.containment == BUBBLEWRAP:
            argv = contained(self.spec, [sys.executable, "-s", "-S", "-P", "/run/gate/subject/server.py",
                                         self._config("/run/gate/protocol")])
            env = None
        else:
            argv = [sys.executable, "-s", "-S", "-P", str(SERVER), self._config(str(PROTOCOL))]
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(Path(self.socket_path).parent),
                   "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}
        with open(self.log_path, "ab") as log:
            return subprocess.Popen(cgroups.joined(self.cgroups, argv), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=log, pass_fds=[fd], env=env, cwd=self.spec.tree, start_new_session=True)

    def log_tail(self, limit: int = 600) -> str:
        try:
            return self.log_path.read_bytes()[-limit:].decode(errors="replace").strip()
        except OSError:
            return ""

    def close(self) -> None:
        """Kill the subject and everything it started (the sandbox's PID namespace goes with it)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()
        cgroups.remove(self.cgroups)
        with contextlib.suppress(OSError):
            os.unlink(self.socket_path)
