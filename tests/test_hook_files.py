"""The ready-to-install hook files at the top of the repository (``hooks/``), as a server admin and a
developer install them: copied into a real bare repository's hooks, and into a clone's ``.git/hooks``."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.helpers import commit, git, sign_and_commit
from tests.receive_helpers import Server, make_server, refused

HOOKS = Path(__file__).resolve().parent.parent / "hooks"
GATE_BIN = str(Path(sys.executable).parent)  # where the installed ``gate`` script is
MIX = {"src/app.py": "x = 2\n", "oracles/fixtures/data.json": "{}\n"}


def _path(with_gate: bool) -> dict[str, str]:
    system = "/usr/local/bin:/usr/bin:/bin"
    return {"PATH": f"{GATE_BIN}:{system}" if with_gate else system}


@pytest.fixture
def srv(tmp_path: Path) -> Server:
    server = make_server(tmp_path, hook=False)
    shutil.copy(HOOKS / "pre-receive", server.bare / "hooks" / "pre-receive")
    return server


def test_the_hook_files_are_executable_sh_scripts() -> None:
    for name in ("pre-receive", "pre-commit"):
        path = HOOKS / name
        assert os.access(path, os.X_OK), f"hooks/{name} is not executable"
        assert path.read_text().startswith("#!/bin/sh\n")


def test_copied_pre_receive_refuses_a_mixing_push(srv: Server) -> None:
    before = srv.ref("main")
    bad = commit(srv.work, MIX)
    proc = srv.push(env=_path(True))
    assert proc.returncode != 0 and "pre-receive hook declined" in proc.stdout + proc.stderr
    assert srv.ref("main") == before
    lines = refused(proc)
    assert len(lines) == 1 and lines[0].startswith(f"{bad[:12]} mixed"), proc.stderr


def test_copied_pre_receive_accepts_production_and_signed_oracle_commits(srv: Server) -> None:
    commit(srv.work, {"src/app.py": "x = 1\n"})
    tip = sign_and_commit(srv.work, {"oracles/properties/test_p.py": "def test_p():\n    assert True\n"})
    proc = srv.push(env=_path(True))
    assert proc.returncode == 0 and "push accepted" in proc.stderr, proc.stderr
    assert srv.ref("main") == tip


def test_copied_pre_receive_speaks_gitlab_when_gitlab_runs_it(srv: Server) -> None:
    commit(srv.work, MIX)
    proc = srv.push(env={**_path(True), "GL_USERNAME": "pat", "GL_ID": "user-1"})
    assert proc.returncode != 0
    assert any(line.startswith("GL-HOOK-ERR: ") for line in refused(proc)), proc.stderr


def test_copied_pre_receive_fails_closed_without_gate(srv: Server) -> None:
    before = srv.ref("main")
    commit(srv.work, {"src/app.py": "x = 3\n"})  # an innocent push: still refused, never waved through
    proc = srv.push(env=_path(False))
    assert proc.returncode != 0 and srv.ref("main") == before
    assert "'gate' is not installed where this hook runs: push refused" in proc.stderr
    proc = srv.push(env={**_path(False), "MERGEGATE_GATE": str(Path(GATE_BIN) / "gate")})
    assert proc.returncode == 0 and "push accepted" in proc.stderr, proc.stderr


def test_copied_pre_commit_refuses_a_mixing_commit(tmp_path: Path) -> None:
    work = make_server(tmp_path, hook=False).work
    hooks = Path(git(work, "rev-parse", "--git-path", "hooks").stdout.strip())
    hooks = hooks if hooks.is_absolute() else work / hooks
    hooks.mkdir(parents=True, exist_ok=True)
    shutil.copy(HOOKS / "pre-commit", hooks / "pre-commit")
    head = git(work, "rev-parse", "HEAD").stdout.strip()
    with pytest.raises(AssertionError, match="mix"):
        commit(work, MIX, env=_path(True), verify=True)
    assert git(work, "rev-parse", "HEAD").stdout.strip() == head
    git(work, "reset", "-q", "--hard")
    git(work, "clean", "-qfd")
    commit(work, {"src/app.py": "x = 5\n"}, env=_path(True), verify=True)
    assert git(work, "rev-parse", "HEAD").stdout.strip() != head


def test_the_wheel_carries_the_sandbox_folder_as_files(tmp_path: Path) -> None:
    """``sandbox/`` is the one definition of the image: a wheel install reads the same bytes (not links)."""
    import subprocess
    import zipfile

    root = HOOKS.parent
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp_path), str(root)], check=True, capture_output=True, cwd=tmp_path)
    (wheel,) = tmp_path.glob("mergegate-*.whl")
    with zipfile.ZipFile(wheel) as z:
        for name in ("Dockerfile", "seccomp.json"):
            assert z.read(f"mergegate/drafter/files/{name}") == (root / "sandbox" / name).read_bytes()
