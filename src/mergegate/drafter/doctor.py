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
from mergegate.drafter.options import Limits, Mounts, container_options, sandbox_uid
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
print(json.dumps({"uid": os.getuid(), "cap_eff": status.get("CapEff", "").strip(),
  "no_new_privs": status.get("NoNewPrivs", "").strip(), "root_writable": can_write("/usr"),
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
}


def _host_hypothesis() -> str:
    """Triage must run the Hypothesis the host has; a stale image is rebuilt."""
    import hypothesis

    return str(hypothesis.__version__)


def probe(client: Any, image: str) -> dict[str, Any]:
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
                                    uid=sandbox_uid(os.getuid()))
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


def report(image: str) -> int:
    """Print one line per check; exit 0 when every check holds, 1 otherwise."""
    client = sandbox.connect()
    version = client.version().get("Version", "?")
    print(f"ok       engine answers (Docker {version})")
    img = sandbox.require_image(client, image)
    print(f"ok       image {image} ({img.short_id})")
    swept = sandbox.sweep(client)
    if swept:
        print(f"note     removed {len(swept)} leftover sandbox container(s): {', '.join(swept)}")
    facts = probe(client, image)
    bad = 0
    for key, check in EXPECT.items():
        good = check(facts.get(key))
        bad += not good
        print(textsafe.line(f"{'ok' if good else 'FAIL':<8} {key} = {facts.get(key)!r}"))
    return EXIT_NO if bad else 0
