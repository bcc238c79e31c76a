"""The subject's hard limits, lowered before production runs (loaded by ``server.py``, by path).

Standard library only, and as untrusted as the rest of the subject: a process can never raise a hard
limit again, so what production inherits is bounded from its first line.
"""

from __future__ import annotations

import contextlib
import resource
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
