"""Whole-sandbox limits: a cgroup (v1 ``pids`` and ``memory``) the subject is started inside.

Parent side.  Resource limits (``setrlimit``) bind one process at a time, and
``RLIMIT_NPROC`` not at all for a process whose user outside the sandbox is
root; a cgroup bounds the subject and everything it starts, together.  Used
where the hierarchy is writable (root on most machines, delegated elsewhere);
otherwise the per-process limits are what remains, and ``Limits`` says so.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


def _own_path(controller: str, proc_cgroup: str) -> str:
    """This process's cgroup path in a v1 ``controller`` hierarchy (``/`` when not listed)."""
    for line in proc_cgroup.splitlines():
        _num, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return "/"


def make(name: str, settings: Mapping[str, Mapping[str, int]], root: Path = ROOT) -> list[Path]:
    """One child cgroup per controller (``{"pids": {"pids.max": 256}, ...}``) under this process's own.

    Controllers whose hierarchy is missing or not writable are skipped; the
    paths made are returned (the caller joins and removes them).
    """
    try:
        proc_cgroup = Path("/proc/self/cgroup").read_text()
    except OSError:
        return []
    made = []
    for controller, files in settings.items():
        base = root / controller
        nested = base / _own_path(controller, proc_cgroup).lstrip("/")
        parent = nested if nested.is_dir() else base  # inside a cgroup namespace the root is our own
        if not (parent / "cgroup.procs").exists():
            continue
        path = parent / name
        try:
            path.mkdir()
            for file, value in files.items():
                if (path / file).exists():
                    (path / file).write_text(f"{value}\n")
        except OSError:
            remove([path])
            continue
        made.append(path)
    return made


def joined(cgroups: Sequence[Path], argv: list[str]) -> list[str]:
    """``argv`` started inside ``cgroups``: a shell joins them, then becomes the command."""
    if not cgroups:
        return argv
    script = "".join(f'echo $$ > "${i + 1}/cgroup.procs" && ' for i in range(len(cgroups))) + 'shift {n} && exec "$@"'
    return ["/bin/sh", "-c", script.format(n=len(cgroups)), "sh", *map(str, cgroups), *argv]


def remove(cgroups: Sequence[Path]) -> None:
    """Kill whatever is left in each cgroup, then remove it."""
    for cgroup in cgroups:
        for _ in range(50):
            with contextlib.suppress(OSError):
                for pid in (cgroup / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                        os.kill(int(pid), signal.SIGKILL)
            try:
                cgroup.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)
