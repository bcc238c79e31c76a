"""The subject's hard limits, lowered before production runs, and its children dying with it (loaded by
``server.py``, by path).

Standard library only, and as untrusted as the rest of the subject: a process can never raise a hard
limit again, so what production inherits is bounded from its first line.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
from collections.abc import Callable
from typing import Any


def lower_limits(config: dict[str, Any]) -> None:
    """Hard limits, lowered before production runs (a process can never raise them again)."""
    wanted = {
        resource.RLIMIT_AS: config.get("memory_bytes"),
        resource.RLIMIT_NPROC: config.get("max_processes"),
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_FSIZE: config.get("max_file_bytes"),
    }
    for which, value in wanted.items():
        if value is None:
            continue
        hard = resource.getrlimit(which)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (value, value))


_ARMS: dict[int, Callable[[], None]] = {}


def death_signal() -> Callable[[], None]:
    """A function that makes the calling child die with this process (Linux prctl): made once per process, as
    a connection forks a twin per run (making it, a library handle and a class of ctypes', takes longer than
    the twin's first request)."""
    parent = os.getpid()
    arm = _ARMS.get(parent)
    if arm is None:
        arm = _ARMS[parent] = _make_arm(parent)
    return arm


def _make_arm(parent: int) -> Callable[[], None]:
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError, ImportError):
        return lambda: None

    def arm() -> None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the line above
            os._exit(71)

    return arm
