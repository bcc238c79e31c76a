"""A real server for pre-receive tests: a bare repository with the hook, pushed to over the local transport."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mergegate.hooks.pre_receive import install_pre_receive
from tests.helpers import git, init_repo


@dataclass
class Server:
    work: Path
    bare: Path

    def push(self, *refspecs: str, env: Mapping[str, str] | None = None, force: bool = False
             ) -> subprocess.CompletedProcess[str]:
        args = ["push", "--porcelain", *(["--force"] if force else []), "origin", *(refspecs or ("main",))]
        return git(self.work, *args, env=env, check=False)

    def ref(self, name: str) -> str | None:
        proc = git(self.bare, "rev-parse", "--verify", "-q", name, check=False)
        return proc.stdout.strip() or None

    def hook(self, stdin: str, *args: str, env: Mapping[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
        """Run ``gate pre-receive`` by hand in the bare repository (bad-input tests)."""
        from tests.helpers import gate

        return gate(self.bare, "pre-receive", *args, stdin=stdin, env=env)


def make_server(tmp: Path, object_format: str | None = None, seed: bool = True,
                hook: bool = True, fmt: str = "plain") -> Server:
    """A work repository (gate init'ed) and a bare server seeded with its first commit."""
    work = init_repo(tmp / "work", object_format=object_format)
    bare = tmp / "server.git"
    fmt_args = [f"--object-format={object_format}"] if object_format else []
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", *fmt_args, str(bare)], check=True)
    git(work, "remote", "add", "origin", str(bare))
    if seed:
        git(work, "push", "-q", "origin", "main")
    if hook:
        install_pre_receive(bare, fmt=fmt)
    return Server(work, bare)


def refused(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """The hook's refusal lines (``remote: `` stripped), in order."""
    lines = []
    for raw in proc.stderr.splitlines():
        line = raw.removeprefix("remote: ").rstrip()
        if _REFUSAL.match(line):
            lines.append(line)
    return lines


_REFUSAL = re.compile(r"(GL-HOOK-ERR: )?([0-9a-f]{12}|refs/\S+) [a-z,-]+: ")
