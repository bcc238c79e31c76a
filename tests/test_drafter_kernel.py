"""The sandbox's kernel surface in a real container: our seccomp profile, no setuid file, the runtime.

Needs a Docker engine with mergegate-sandbox:latest (.ci/setup-docker.sh); skips
without one, fails in CI.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from mergegate.drafter import image
from mergegate.drafter.options import Limits, Mounts, container_options, sandbox_uid
from tests.helpers import commit, gate, init_repo, sign_and_commit

pytestmark = [pytest.mark.docker]

PROBE = r"""
import ctypes, json, os, platform
libc = ctypes.CDLL(None, use_errno=True)
arm = platform.machine() in ("aarch64", "arm64")
def call(nr, *args):
    ret = libc.syscall(nr, *args)
    return "ok" if ret >= 0 else os.strerror(ctypes.get_errno())
out = {
    "io_uring_setup": call(425, 1, ctypes.create_string_buffer(120)),
    "ptrace_traceme": call(117 if arm else 101, 0, 0, 0, 0),
    "ptrace_attach_init": call(117 if arm else 101, 16, 1, 0, 0),
    "unshare_user": call(97 if arm else 272, 0x10000000),
    "keyctl": call(219 if arm else 250, 0, 0, 0, 0),
    "bpf": call(280 if arm else 321, 0, 0, 0),
    "userfaultfd": call(282 if arm else 323, 0),
    "getpid": call(172 if arm else 39),
    "fork": "ok" if os.fork() or os._exit(0) else "",
}
setid = []
for top in ("/bin", "/sbin", "/usr", "/etc", "/lib", "/opt", "/var"):
    for here, _dirs, files in os.walk(top):
        setid += [os.path.join(here, f) for f in files if os.lstat(os.path.join(here, f)).st_mode & 0o6000]
out["setid"] = setid
print(json.dumps(out))
"""


def run_probe(client: Any, image_tag: str, tmp_path: Path, code: str = PROBE) -> dict[str, Any]:
    for name in ("repo", "job"):
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
    out = tmp_path / "result.json"
    out.touch()
    mounts = Mounts(str(tmp_path / "repo"), str(tmp_path / "job"), str(tmp_path / "job"), str(out))
    options = container_options(image_tag, mounts, Limits(wall_clock_s=60), time.time() + 120,
                                uid=sandbox_uid(os.getuid()))
    options["command"] = ["python3", "-I", "-c", code]
    options["mounts"] = [m for m in options["mounts"] if m["Target"] != "/opt/gate/agent.py"]
    box = client.containers.create(**options)
    try:
        box.start()
        box.wait(timeout=60)
        text = box.logs(stdout=True, stderr=True).decode(errors="replace")
    finally:
        box.remove(force=True)
    return dict(json.loads(text.strip().splitlines()[-1]))


def test_our_seccomp_profile_denies_io_uring_ptrace_and_namespaces(docker_engine: Any, tmp_path: Path) -> None:
    facts = run_probe(docker_engine, "mergegate-sandbox:latest", tmp_path)
    for call in ("io_uring_setup", "ptrace_traceme", "ptrace_attach_init", "unshare_user", "keyctl", "bpf",
                 "userfaultfd"):
        assert facts[call] == "Operation not permitted", (call, facts)
    assert facts["getpid"] == "ok" and facts["fork"] == "ok"  # ordinary work still runs
    assert facts["setid"] == []  # no setuid or setgid file in the image


def test_an_unregistered_runtime_is_one_clear_line(docker_engine: Any, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    commit(repo, {"src/calc.py": "def add(a: int, b: int) -> int:\n    return a + b\n"}, "production")
    sign_and_commit(repo, {"gate.yaml": (repo / "gate.yaml").read_text() + "drafter: {runtime: no-such-runtime}\n"})
    proc = gate(repo, "draft-props", check=2)
    assert proc.stderr.count("\n") == 1 and "drafter.runtime no-such-runtime is not registered" in proc.stderr
    assert "runsc" in proc.stderr
    doctor = gate(repo, "sandbox", "doctor", check=2)
    assert "no-such-runtime is not registered" in doctor.stderr


def _local_wheel(tmp_path: Path) -> Path:
    """A tiny project's wheel, written by hand (a wheel is a zip file): the project's own dependency."""
    wheels = tmp_path / "local-wheels"
    wheels.mkdir()
    info = "tinydep-1.0.dist-info"
    files = {"tinydep/__init__.py": "ANSWER = 42\n",
             f"{info}/METADATA": "Metadata-Version: 2.1\nName: tinydep\nVersion: 1.0\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(wheels / "tinydep-1.0-py3-none-any.whl", "w") as whl:
        for name, text in files.items():
            whl.writestr(name, text)
    return wheels


def _base_with_setuid(client: Any, tag: str) -> None:
    dockerfile = ("FROM mergegate-sandbox:latest\nUSER 0\n"
                  "RUN cp /usr/bin/python3 /usr/local/bin/rootpy && chmod 4755 /usr/local/bin/rootpy "
                  "&& chmod g+s /usr/bin/env\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile.encode()))
    buf.seek(0)
    client.images.build(fileobj=buf, custom_context=True, tag=tag, pull=False, network_mode="none", rm=True)


def test_build_strips_setuid_and_bakes_in_the_projects_dependencies(docker_engine: Any, tmp_path: Path) -> None:
    base, tag = "mergegate-sandbox:test-setuid-base", "mergegate-sandbox:test-with-deps"
    repo = init_repo(tmp_path / "r")
    commit(repo, {"src/calc.py": "import tinydep\n\ndef answer() -> int:\n    return tinydep.ANSWER\n"}, "production")
    sign_and_commit(repo, {"gate.yaml": (repo / "gate.yaml").read_text()
                           + "drafter: {image_requirements: [tinydep]}\n"})
    cache = tmp_path / "cache"
    cache.mkdir()
    # pip's ordinary client, pointed at local wheels only: the build needs no index here.
    env = {"GATE_SANDBOX_CACHE": str(cache), "PIP_NO_INDEX": "1",
           "PIP_FIND_LINKS": f"{_local_wheel(tmp_path)} {image.cache_dir() / 'wheels'}"}
    try:
        _base_with_setuid(docker_engine, base)
        assert run_probe(docker_engine, base, tmp_path / "p1", "import os; print(os.stat('/usr/local/bin/rootpy')"
                         ".st_mode & 0o4000 and '{\"setuid\": true}')")["setuid"]
        out = gate(repo, "sandbox", "build", "--base-image", base, "--image", tag, env=env, check=0).stdout
        assert "(with tinydep)" in out
        facts = run_probe(docker_engine, tag, tmp_path / "p2")
        assert facts["setid"] == []
        dep = run_probe(docker_engine, tag, tmp_path / "p3",
                        "import json, tinydep; print(json.dumps({'a': tinydep.ANSWER}))")
        assert dep == {"a": 42}
        labels = docker_engine.images.get(tag).labels
        assert labels[image.FORMAT_LABEL] == image.FORMAT
    finally:
        for t in (tag, base):
            with contextlib.suppress(Exception):
                docker_engine.images.remove(t, force=True)
