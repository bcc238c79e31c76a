"""The sandbox container's options, built by a pure function so a test can read every one.

Nothing here talks to Docker; ``sandbox.py`` hands the dict to
``client.containers.create(**options)`` (create never pulls an image).
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from importlib import resources
from typing import Any

LABEL = "mergegate.sandbox"
LABEL_DEADLINE = "mergegate.deadline"
SANDBOX_UID = 10001
AGENT_PATH = "/opt/gate/agent.py"
HOME = "/tmp/home"
HYPOTHESIS_DIR = "/tmp/hypothesis"
RELAY_DIR = "/relay"
OUT_PATH = "/out/result.json"  # the agent's one output: a host file, capped by the fsize ulimit


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandbox run."""

    mem_bytes: int = 1024 * 1024 * 1024
    cpus: float = 1.0
    pids: int = 128
    nofile: int = 256
    fsize_bytes: int = 4 * 1024 * 1024
    tmpfs_bytes: int = 128 * 1024 * 1024
    staging_bytes: int = 64 * 1024 * 1024
    staging_inodes: int = 256
    wall_clock_s: float = 600.0


@dataclass(frozen=True)
class Mounts:
    """Host paths bound into the container.  Only the ``out`` file is writable.

    Scratch space (``/staging``) is a size- and inode-limited tmpfs that dies with the
    container; what the agent reports comes back through the one bound file ``out``,
    whose size the fsize ulimit caps and next to which nothing can be created.
    """

    repo: str  # a filtered export of HEAD: the oracle tree is not in it
    job: str  # directory holding job.json (and, read-only, the candidates the host wrote for triage)
    agent: str  # the agent script file
    out: str  # an empty host file the agent writes its result into
    relay_socket: str | None = None


def _bind(source: str, target: str, read_only: bool) -> dict[str, Any]:
    return {"Type": "bind", "Source": source, "Target": target, "ReadOnly": read_only}


def mounts(paths: Mounts) -> list[dict[str, Any]]:
    """The bind mounts, in the Engine API's shape."""
    result = [
        _bind(paths.repo, "/repo", True),
        _bind(paths.job, "/job", True),
        _bind(paths.agent, AGENT_PATH, True),
        _bind(paths.out, OUT_PATH, False),
    ]
    if paths.relay_socket:
        # connect() on a socket needs no write permission on the mount itself.
        result.append(_bind(paths.relay_socket, f"{RELAY_DIR}/model.sock", True))
    return result


@functools.cache
def seccomp_profile() -> str:
    """Our seccomp profile (``sandbox/seccomp.json``, in the package as ``drafter/files/seccomp.json``), compact,
    as the Engine API takes it."""
    text = resources.files("mergegate.drafter").joinpath("files/seccomp.json").read_text()
    return json.dumps(json.loads(text), separators=(",", ":"))


def denied_syscalls() -> set[str]:
    """Every system call name the profile refuses outright (for ``doctor`` and the tests)."""
    rules = json.loads(seccomp_profile())["syscalls"]
    return {n for r in rules if r["action"] == "SCMP_ACT_ERRNO" and not r.get("args") for n in r["names"]}


def sandbox_uid(host_uid: int) -> int:
    """Run as the caller's own uid when it is not root (its files stay its own), else as 10001."""
    return host_uid if host_uid != 0 else SANDBOX_UID


def container_options(image: str, paths: Mounts, limits: Limits, deadline_epoch: float,
                      uid: int = SANDBOX_UID, runtime: str | None = None) -> dict[str, Any]:
    """Every option of the sandbox container; see docs/drafter.md for the why of each."""
    if uid == 0:
        raise ValueError("the sandbox never runs as root")
    from docker.types import LogConfig, Mount, Ulimit

    options: dict[str, Any] = {
        "image": image,
        "command": ["python3", "-I", "-B", AGENT_PATH, "/job/job.json"],
        "user": f"{uid}:{uid}",
        "working_dir": "/tmp",
        "environment": {
            "HOME": HOME,
            "HYPOTHESIS_STORAGE_DIRECTORY": HYPOTHESIS_DIR,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "LANG": "C.UTF-8",
        },
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {"/tmp": f"rw,noexec,nosuid,nodev,size={limits.tmpfs_bytes},mode=1777",
                  "/staging": f"rw,noexec,nosuid,nodev,size={limits.staging_bytes},"
                              f"nr_inodes={limits.staging_inodes},uid={uid},gid={uid},mode=0700"},
        "mounts": [Mount(m["Target"], m["Source"], type="bind", read_only=m["ReadOnly"])
                   for m in mounts(paths)],
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges", f"seccomp={seccomp_profile()}"],
        "mem_limit": limits.mem_bytes,
        "memswap_limit": limits.mem_bytes,  # equal: no swap on top of the memory limit
        "nano_cpus": int(limits.cpus * 1e9),
        "pids_limit": limits.pids,
        "ulimits": [
            Ulimit(name="nofile", soft=limits.nofile, hard=limits.nofile),
            Ulimit(name="fsize", soft=limits.fsize_bytes, hard=limits.fsize_bytes),
        ],
        "init": True,
        # The engine keeps container output on the host's disk: cap it.
        "log_config": LogConfig(type="json-file", config={"max-size": "1m", "max-file": "1"}),
        "ipc_mode": "private",
        "labels": {LABEL: "1", LABEL_DEADLINE: str(int(deadline_epoch))},
        "detach": True,
        "use_config_proxy": False,
    }
    if runtime:  # e.g. gVisor's runsc; else the engine's default (runc)
        options["runtime"] = runtime
    return options


def runsc_missing_args(registration: dict[str, Any]) -> list[str]:
    """What a gVisor runtime registration lacks for our sandbox; empty for other runtimes.  Pure.

    Without ``--oci-seccomp`` gVisor ignores the container's seccomp profile (ours) silently.
    """
    if "runsc" not in os.path.basename(str(registration.get("path") or "")):
        return []
    args = [str(a).lstrip("-") for a in registration.get("runtimeArgs") or []]
    return [] if ("oci-seccomp" in args or "oci-seccomp=true" in args) else ["--oci-seccomp"]
