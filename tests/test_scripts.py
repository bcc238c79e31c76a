"""scripts/test.sh names what it needs with the apt command; scripts/venv.sh makes a broken .venv again."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.readme import ROOT


def _bin_without(tmp_path: Path, *absent: str) -> str:
    """A PATH with the few tools the script calls, minus ``absent``."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in ("git", "python3", "dirname", "id", "ssh-keygen", "bwrap"):
        found = os.path.realpath(sys._base_executable) if tool == "python3" else shutil.which(tool)  # not a shim
        if found and tool not in absent:
            (folder / tool).symlink_to(found)
    return str(folder)


def test_test_sh_names_what_is_missing_with_the_apt_command(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    assert bash
    env = {**os.environ, "PATH": _bin_without(tmp_path, "ssh-keygen", "git")}
    proc = subprocess.run([bash, str(ROOT / "scripts/test.sh")], env=env, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 2
    assert "missing: git openssh-client" in proc.stderr and "apt-get install -y git openssh-client" in proc.stderr


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    (proj / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts/venv.sh", proj / "scripts/venv.sh")
    (proj / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "tiny"\nversion = "0"\n\n[project.optional-dependencies]\ntest = []\n'
        "\n[tool.setuptools]\npy-modules = []\n")
    return proj


def test_venv_sh_makes_a_broken_venv_again(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    # python3-venv was missing when it was made: a python, no pip.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(proj / ".venv")], check=True)
    proc = subprocess.run(["bash", "scripts/venv.sh"], cwd=proj, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert ".venv is broken" in proc.stderr
    assert subprocess.run([str(proj / ".venv/bin/python"), "-m", "pip", "--version"], capture_output=True,
                          check=False).returncode == 0
    # No python at all: made again too; a sound one is left alone.
    (proj / ".venv/bin/python").unlink()
    proc = subprocess.run(["bash", "scripts/venv.sh"], cwd=proj, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and ".venv is broken" in proc.stderr, proc.stderr
    marker = proj / ".venv/keep"
    marker.write_text("")
    proc = subprocess.run(["bash", "scripts/venv.sh"], cwd=proj, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and marker.exists() and "broken" not in proc.stderr
