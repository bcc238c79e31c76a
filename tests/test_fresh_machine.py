"""The README's quick start, word for word, on a fresh Debian bookworm with only python3 and git, as root.

The machine: ``debootstrap --variant=minbase --include=python3,git bookworm`` (from the Debian mirror this
machine's apt already uses), ``docker import``, ``docker run --network host``; a clone of this repository
inside.  Its two commands run as the README prints them.  The second (the whole suite, about ten minutes
on two cores) is bounded here: ``PYTEST_ADDOPTS`` names a few test files, and ``CI`` is unset, so the
engine and sandbox tests the container cannot host skip; everything before pytest (the system packages,
the virtualenv, ruff, mypy) runs whole.

The one thing the machine adds is its own network trust: where this CI reaches the package registries
through a proxy with its own certificate authority, that bundle is mounted and named (``PIP_CERT``,
``SSL_CERT_FILE``), as a company machine's would be.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from mergegate.drafter import image

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.usefixtures("docker_engine")]

ROOT = Path(__file__).resolve().parent.parent
TAG = "mergegate-fresh:bookworm"
CA = Path("/etc/ssl/certs/ca-certificates.crt")
SUBSET = "tests/test_verdicts.py tests/test_policy.py"


def _quick_start() -> list[str]:
    """The quick start's two commands, as the README has them."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert len(commands) == 2, commands
    return commands


def _rootfs() -> Path:
    """The cached bookworm root file system with python3 and git only (made once per machine)."""
    tarball = image.cache_dir() / "bookworm-minbase-python3-git.tar"
    if tarball.is_file():
        return tarball
    if shutil.which("debootstrap") is None or os.geteuid() != 0:
        pytest.fail("the fresh-machine test needs root and debootstrap (.ci/setup-docker.sh installs it)")
    mirror = image.mirror_from_sources(image._apt_sources())
    assert mirror, "no Debian bookworm mirror in this machine's apt sources"
    image.cache_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=image.cache_dir(), prefix="fresh.") as tmp:
        root = Path(tmp) / "root"
        subprocess.run(["debootstrap", "--variant=minbase", "--include=python3,git", "bookworm", str(root), mirror],
                       check=True, capture_output=True)
        subprocess.run(["tar", "-C", str(root), "-cf", f"{tarball}.tmp", "."], check=True)
        os.replace(f"{tarball}.tmp", tarball)
    return tarball


def _image(engine: Any) -> str:
    try:
        engine.images.get(TAG)
    except Exception:
        subprocess.run(["docker", "import", str(_rootfs()), TAG], check=True, capture_output=True)
    return TAG


def test_the_quick_start_runs_word_for_word_on_a_fresh_bookworm(docker_engine: Any, tmp_path: Path) -> None:
    tag = _image(docker_engine)
    clone = tmp_path / "mergegate"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    first, second = _quick_start()
    script = (f"set -e\ncd /src\n{first}\n"
              f"echo '=== second command'\nPYTEST_ADDOPTS={SUBSET!r} {second}\n")
    mounts = ["-v", f"{clone}:/src"]
    env = ["-e", "HOME=/root"]
    if CA.is_file():
        mounts += ["-v", f"{CA}:/etc/mergegate-ca.crt:ro"]
        env += ["-e", "PIP_CERT=/etc/mergegate-ca.crt", "-e", "SSL_CERT_FILE=/etc/mergegate-ca.crt"]
    proc = subprocess.run(["docker", "run", "--rm", "--network", "host", *mounts, *env, tag, "sh", "-c", script],
                          capture_output=True, text=True, timeout=1500, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    # the first command: python3-venv installed with apt (root), the gate installed, the demo's verdicts
    assert "scripts/demo.sh: installing python3-venv (apt-get)" in out, out[-3000:]
    assert "all scenarios matched" in out, out[-3000:]
    # the second: what the tests need installed with apt, lint and types whole, the bounded suite green
    second_out = out.split("=== second command", 1)[1]
    assert "scripts/test.sh: installing openssh-client (apt-get)" in second_out, second_out[-3000:]
    assert re.search(r"\d+ passed", second_out), second_out[-3000:]
