"""Real git repositories for tests: no mocks, the real git and the real gate CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ENV_DROP = ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GATE_AGENT", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_NAME",
            # a suite run inside a GitHub or GitLab job is not the job the gate judges (tests set these themselves)
            "GITHUB_ACTIONS", "GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT",
            "GITHUB_WORKFLOW_REF", "GITLAB_CI", "CI_CONFIG_PATH")
HUMAN = {"GIT_AUTHOR_NAME": "Pat Person", "GIT_AUTHOR_EMAIL": "pat@example.com",
         "GIT_COMMITTER_NAME": "Pat Person", "GIT_COMMITTER_EMAIL": "pat@example.com"}
AGENT = {"GIT_AUTHOR_NAME": "coder", "GIT_AUTHOR_EMAIL": "coder[bot]@example.com",
         "GIT_COMMITTER_NAME": "coder", "GIT_COMMITTER_EMAIL": "coder[bot]@example.com"}

# A run outside CI, even inside the suite's own `CI=true` job: the gate reads an empty value as unset.
NOT_CI = {"CI": "", "GITHUB_ACTIONS": "", "GITLAB_CI": ""}


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ENV_DROP}
    env.update(HUMAN)
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    if extra:
        env.update(extra)
    return env


def git(repo: Path, *args: str, env: Mapping[str, str] | None = None, check: bool = True,
        stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", *args], cwd=repo, env=clean_env(env), input=stdin.decode() if stdin else None,
                          capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def gate(cwd: Path, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None,
         check: int | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real CLI (``python -m mergegate``) as a user would."""
    proc = subprocess.run([sys.executable, "-m", "mergegate", *args], cwd=cwd, env=clean_env(env),
                          input=stdin, capture_output=True, text=True, check=False)
    if check is not None and proc.returncode != check:
        raise AssertionError(f"gate {' '.join(args)} exited {proc.returncode}, wanted {check}:\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def write(repo: Path, files: Mapping[str, str | bytes | None]) -> None:
    """Write (str/bytes) or delete (None) files under ``repo``."""
    for rel, content in files.items():
        path = repo / rel
        if content is None:
            if path.is_symlink() or path.exists():
                path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def init_repo(path: Path, gate_init: bool = True, object_format: str | None = None) -> Path:
    """A new repository on branch main; with ``gate_init``, scaffolded and committed."""
    path.mkdir(parents=True, exist_ok=True)
    fmt = [f"--object-format={object_format}"] if object_format else []
    git(path, "init", "-q", "-b", "main", *fmt)
    git(path, "config", "user.name", "Pat Person")
    git(path, "config", "user.email", "pat@example.com")
    git(path, "config", "commit.gpgsign", "false")
    if gate_init:
        gate(path, "init", check=0)
        git(path, "add", "-A")
        git(path, "commit", "-q", "--no-verify", "-m", "gate init")
    return path


def commit(repo: Path, files: Mapping[str, str | bytes | None], message: str = "change",
           env: Mapping[str, str] | None = None, verify: bool = False) -> str:
    """Write files, stage everything, commit (hooks skipped unless ``verify``); return the id."""
    write(repo, files)
    git(repo, "add", "-A")
    args = ["commit", "-q", "--allow-empty", "-m", message]
    if not verify:
        args.append("--no-verify")
    git(repo, *args, env=env)
    return git(repo, "rev-parse", "HEAD").stdout.strip()


def sign_and_commit(repo: Path, files: Mapping[str, str | bytes | None], message: str = "oracle change") -> str:
    """An oracle-only change by a person, with the manifest re-signed."""
    write(repo, files)
    git(repo, "add", "-A")
    gate(repo, "manifest", "sign", "--staged", check=0)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", message)
    return git(repo, "rev-parse", "HEAD").stdout.strip()


def production_subject(factory: Any, module: str, source: str, tag: str) -> Iterator[Any]:
    """A real subject process (sandboxed when bubblewrap works) serving ``source`` as production module ``module``;
    for a module-scoped fixture: ``yield from production_subject(tmp_path_factory, "objmod", SOURCE, "o")``."""
    from mergegate.runner.subject import sandbox

    tree = factory.mktemp("tree")
    (tree / "src").mkdir()
    (tree / "src" / f"{module}.py").write_text(source)
    spec = sandbox.SubjectSpec(str(tree), (str(tree / "src"),), preload=(module,))
    subject = sandbox.Subject(spec, sandbox.choose("auto"), factory.mktemp("scratch"), tag)
    try:
        yield subject
    finally:
        subject.close()


def traced_at(func: Any, offset: int, action: Any, *args: Any) -> tuple[Any, list[Any]]:
    """``func(*args)`` with ``action(frame)`` run once just before the instruction of ``func`` at ``offset``, from a
    tracer (code that runs between two of the caller's instructions); the result and what ``action`` returned."""
    import sys

    seen: list[Any] = []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode" and frame.f_code is func.__code__ and frame.f_lasti == offset and not seen:
            seen.append(action(frame))
        return tracer

    sys.settrace(tracer)
    try:
        value = func(*args)
    finally:
        sys.settrace(None)
    return value, seen
