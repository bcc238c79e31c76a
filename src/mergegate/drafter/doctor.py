"""``gate sandbox doctor``: engine, image, and a probe container started with the real options."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from mergegate import textsafe
from mergegate.drafter import sandbox
from mergegate.drafter.options import Limits, Mounts, container_options, denied_syscalls, sandbox_uid
from mergegate.errors import EXIT_NO, UsageError

# Runs inside the probe container; prints one JSON object of facts.
PROBE = r"""
import json, os, socket
def can_write(path):
    try:
        with open(os.path.join(path, ".probe"), "w") as f: f.write("x")
        os.unlink(os.path.join(path, ".probe")); return True
    except OSError: return False
status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2); net = True
except OSError: net = False
try:
    import hypothesis, black; deps = hypothesis.__version__
except Exception as e: deps = "missing: %s" % e
import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
def denied(nr, *args):
    ret = libc.syscall(nr, *args)
    return "denied (%s)" % os.strerror(ctypes.get_errno()) if ret < 0 else "ALLOWED"
arm = platform.machine() in ("aarch64", "arm64")
io_uring = denied(425, 1, ctypes.create_string_buffer(120))
ptrace = denied(117 if arm else 101, 0, 0, 0, 0)  # PTRACE_TRACEME
nnp = str(libc.prctl(39, 0, 0, 0, 0))  # PR_GET_NO_NEW_PRIVS: gVisor's /proc/self/status lacks the line
kernel = open("/proc/version").read().strip()
setuid = []
for top in ("/bin", "/sbin", "/usr", "/etc", "/lib", "/opt", "/var"):
    for here, dirs, files in os.walk(top):
        for name in files:
            try:
                if os.lstat(os.path.join(here, name)).st_mode & 0o6000: setuid.append(os.path.join(here, name))
            except OSError: pass
uid_map = " ".join(open("/proc/self/uid_map").read().split())
print(json.dumps({"uid": os.getuid(), "cap_eff": status.get("CapEff", "").strip(),
  "seccomp": status.get("Seccomp", "").strip(), "io_uring_setup": io_uring, "ptrace": ptrace,
  "setuid_files": setuid[:10], "uid_map": uid_map,
  "no_new_privs": nnp, "kernel": kernel, "root_writable": can_write("/usr"),
  "repo_writable": can_write("/repo"), "staging_writable": can_write("/staging"),
  "tmp_writable": can_write("/tmp"), "network": net, "interfaces": sorted(os.listdir("/sys/class/net")),
  "deps": deps, "home": os.environ.get("HOME"), "env_keys": sorted(os.environ)}))
"""

EXPECT: dict[str, Any] = {
    "uid": lambda v: v != 0, "cap_eff": lambda v: int(v or "1", 16) == 0, "no_new_privs": lambda v: v == "1",
    "root_writable": lambda v: v is False, "repo_writable": lambda v: v is False,
    "staging_writable": lambda v: v is True, "tmp_writable": lambda v: v is True,
    "network": lambda v: v is False, "interfaces": lambda v: v == ["lo"],
    "deps": lambda v: v == _host_hypothesis(),
    "seccomp": lambda v: v == "2", "io_uring_setup": lambda v: str(v).startswith("denied"),
    "ptrace": lambda v: str(v).startswith("denied"), "setuid_files": lambda v: v == [],
}


def _host_hypothesis() -> str:
    """Triage must run the Hypothesis the host has; a stale image is rebuilt."""
    import hypothesis

    return str(hypothesis.__version__)


def uid_mapping(uid_map: str, uid: int) -> str:
    """What ``/proc/self/uid_map`` says about the sandbox user on the host.  Pure."""
    parts = uid_map.split()
    if parts[:3] == ["0", "0", "4294967295"]:
        return f"none (no user namespace: the sandbox's uid {uid} is uid {uid} on the host)"
    if len(parts) >= 3 and parts[0].isdigit() and parts[1].isdigit():
        return f"remapped (container uid {parts[0]} is host uid {parts[1]}, {parts[2]} ids)"
    return f"unknown ({uid_map or 'empty'})"


def probe(client: Any, image: str, runtime: str | None = None) -> dict[str, Any]:
    """Start one container with the sandbox options and a probe command; its facts."""
    with tempfile.TemporaryDirectory(prefix="gate-doctor-") as tmp:
        root = Path(tmp)
        for name in ("repo", "job"):
            (root / name).mkdir()
            (root / name).chmod(0o755)
        (root / "result.json").touch(mode=0o666)
        (root / "result.json").chmod(0o666)
        mounts = Mounts(str(root / "repo"), str(root / "job"), str(sandbox.agent_path()), str(root / "result.json"))
        options = container_options(image, mounts, Limits(wall_clock_s=60), time.time() + 120,
                                    uid=sandbox_uid(os.getuid()), runtime=runtime)
        options["command"] = ["python3", "-I", "-c", PROBE]
        box = client.containers.create(**options)
        try:
            box.start()
            box.wait(timeout=60)
            out = box.logs(stdout=True, stderr=False).decode(errors="replace").strip()
        finally:
            with contextlib.suppress(Exception):
                box.remove(force=True)
    try:
        return dict(json.loads(out.splitlines()[-1]))
    except (ValueError, IndexError):
        raise UsageError(f"the probe container printed no facts ({textsafe.line(out[:120])!r})",
                         "rebuild the image: gate sandbox build") from None


def report(image: str, runtime: str | None = None) -> int:
    """Print one line per check; exit 0 when every check holds, 1 otherwise."""
    client = sandbox.connect()
    version = client.version().get("Version", "?")
    print(f"ok       engine answers (Docker {version})")
    img = sandbox.require_image(client, image)
    print(f"ok       image {image} ({img.short_id})")
    used = sandbox.require_runtime(client, runtime)
    origin = "drafter.runtime" if runtime else "the engine's default; set drafter.runtime: runsc for gVisor"
    print(textsafe.line(f"{'ok' if runtime else 'note':<8} runtime = {used} ({origin})"))
    print(f"ok       seccomp profile = mergegate ({len(denied_syscalls())} system calls denied, "
          "namespace flags of clone refused)")
    swept = sandbox.sweep(client)
    if swept:
        print(f"note     removed {len(swept)} leftover sandbox container(s): {', '.join(swept)}")
    facts = probe(client, image, runtime)
    bad = 0
    for key, check in EXPECT.items():
        good = check(facts.get(key))
        bad += not good
        print(textsafe.line(f"{'ok' if good else 'FAIL':<8} {key} = {facts.get(key)!r}"))
    mapping = uid_mapping(str(facts.get("uid_map", "")), int(facts.get("uid") or 0))
    print(textsafe.line(f"note     uid mapping = {mapping}"))
    print(textsafe.line(f"note     kernel = {facts.get('kernel')} (the kernel the sandbox's code talks to)"))
    return EXIT_NO if bad else 0
