"""Run the agent in a container: engine checks, the repository export, the run, the cleanup.

Candidate code never runs on the host: the host writes the job, starts the
container, waits with a wall-clock limit, kills it if needed, removes it in a
``finally``, and only then reads back the staging directory (as data).
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from mergegate.drafter.options import (
    LABEL,
    LABEL_DEADLINE,
    Limits,
    Mounts,
    container_options,
    runsc_missing_args,
    sandbox_uid,
)
from mergegate.errors import InternalError, UsageError

BUILD_FIX = "run `gate sandbox build` (nothing is pulled from a registry)"


@dataclass(frozen=True)
class Outcome:
    """How the container ended."""

    exit_code: int | None
    killed_at_wall_clock: bool
    oom_killed: bool
    log_tail: str


def connect() -> Any:
    """A docker client whose engine answers, or a one-line UsageError."""
    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        raise UsageError("the docker SDK is not installed", "pip install 'mergegate[drafter]'") from None
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except DockerException as exc:
        reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise UsageError(f"no Docker engine answers at {where} ({reason})",
                         "start the engine (docs/drafter.md) or set DOCKER_HOST") from None
    except Exception as exc:  # requests' own errors when the engine dies mid-handshake
        raise UsageError(f"no Docker engine answers at {where} ({type(exc).__name__})",
                         "start the engine (docs/drafter.md) or set DOCKER_HOST") from None
    return client


def require_image(client: Any, image: str) -> Any:
    """The local image; a missing one is an error that names `gate sandbox build` (no pull)."""
    from docker.errors import ImageNotFound

    try:
        return client.images.get(image)
    except ImageNotFound:
        raise UsageError(f"the sandbox image {image} is not in the local engine", BUILD_FIX) from None


def sweep(client: Any, now: float | None = None) -> list[str]:
    """Remove labelled sandbox containers past their deadline.

    Only the deadline counts: a container another ``gate`` process has just created,
    or that has just exited, still belongs to that process, which removes it itself.
    """
    now = time.time() if now is None else now
    removed = []
    for box in client.containers.list(all=True, filters={"label": LABEL}):
        try:
            deadline = float(box.labels.get(LABEL_DEADLINE, "0") or 0)
        except ValueError:
            deadline = 0.0
        if deadline < now:
            with contextlib.suppress(Exception):
                box.remove(force=True)
                removed.append(box.short_id)
    return removed


def agent_path() -> Path:
    return Path(str(resources.files("mergegate.drafter").joinpath("agent.py")))


# ---------------------------------------------------------------- one run

def require_runtime(client: Any, runtime: str | None) -> str:
    """The runtime the sandbox will use; a configured one the engine does not know is a usage error."""
    info = client.info()
    known = sorted(info.get("Runtimes") or {})
    if runtime is None:
        return str(info.get("DefaultRuntime") or "runc")
    if runtime not in known:
        raise UsageError(f"drafter.runtime {runtime} is not registered with the Docker engine "
                         f"(it has {', '.join(known) or 'none'})",
                         "install and register it (gVisor: Debian package runsc, registered as docs/drafter.md says), "
                         "or remove drafter.runtime from gate.yaml")
    missing = runsc_missing_args(dict((info.get("Runtimes") or {})[runtime] or {}))
    if missing:
        raise UsageError(f"drafter.runtime {runtime} is gVisor registered without {' '.join(missing)}: "
                         "the sandbox's seccomp profile would not apply inside it",
                         "add it to the runtime's runtimeArgs in /etc/docker/daemon.json and send dockerd "
                         "SIGHUP (.ci/setup-docker.sh does both; see docs/drafter.md)")
    return runtime


def run(client: Any, image: str, paths: Mounts, limits: Limits, runtime: str | None = None) -> Outcome:
    """Start the container, wait up to the wall clock, kill, remove.  Never raises half-way."""
    from docker.errors import APIError

    require_image(client, image)
    require_runtime(client, runtime)
    sweep(client)
    options = container_options(image, paths, limits, time.time() + limits.wall_clock_s + 60,
                                uid=sandbox_uid(os.getuid()), runtime=runtime)
    try:
        box = client.containers.create(**options)
    except APIError as exc:
        raise InternalError(f"the engine refused the sandbox container: {exc.explanation or exc}") from None
    killed = False
    try:
        try:
            box.start()
        except APIError as exc:
            raise InternalError(f"the sandbox container did not start: {exc.explanation or exc}") from None
        try:
            status = box.wait(timeout=limits.wall_clock_s)
            code: int | None = int(status.get("StatusCode", -1))
        except Exception:  # the read timed out: the wall clock is up
            killed = True
            code = None
            with contextlib.suppress(Exception):
                box.kill()
            with contextlib.suppress(Exception):
                box.wait(timeout=30)
        box.reload()
        oom = bool(box.attrs.get("State", {}).get("OOMKilled"))
        logs = box.logs(stdout=True, stderr=True, tail=20).decode(errors="replace")
    finally:
        with contextlib.suppress(Exception):
            box.remove(force=True)
    return Outcome(code, killed, oom, logs[-2000:])
