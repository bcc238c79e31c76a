"""A whole merge-heavy history pushed to a real bare repository with the installed hook."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from mergegate.hooks.pre_receive import install_pre_receive
from tests.helpers import clean_env, git
from tests.merge_history import build
from tests.receive_helpers import refused


def _mixing_commits(repo: Path, rng: str) -> set[str]:
    """Independently of mergegate: non-merge commits touching oracles/ and src/ at once."""
    out = git(repo, "log", "--no-merges", "--no-renames", "--format=%x01%H", "--name-only", rng).stdout
    found = set()
    for block in out.split("\x01")[1:]:
        sha, *paths = block.split()
        if any(p.startswith("oracles/") for p in paths) and any(p.startswith("src/") for p in paths):
            found.add(sha[:12])
    return found


def _git_commands(trace: Path) -> list[str]:
    """The git subcommand of every git process the push started (``GIT_TRACE2``'s cmd_name lines)."""
    return [line.split("cmd_name ")[1].split()[0] for line in trace.read_text().splitlines()
            if " cmd_name " in line]


def test_merge_heavy_history_refusals_equal_the_mixing_commits(tmp_path: Path) -> None:
    stream, shape = build(400, mix_rate=0.12, oracles=40, production=120)
    source, server = tmp_path / "source.git", tmp_path / "server.git"
    for repo in (source, server):
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=source, input=stream, check=True, env=clean_env())
    root = git(source, "rev-list", "--max-parents=0", "main").stdout.split()[0]
    merges = len(git(source, "rev-list", "--merges", "main").stdout.split())
    assert merges * 4 >= shape.commits  # at least a quarter of the history are merges
    git(source, "push", "-q", str(server), f"{root}:refs/heads/main")  # the seed, hook not yet installed
    install_pre_receive(server)
    trace = tmp_path / "trace2"

    proc = git(source, "push", str(server), "main", check=False, env={"GIT_TRACE2": str(trace)})

    assert proc.returncode != 0
    expected = _mixing_commits(source, f"{root}..main")
    assert len(expected) >= 5 and len(expected) == shape.counts["mixing"]
    lines = refused(proc)
    assert {line.split(" ")[0] for line in lines} == expected
    assert all(line.split(" ")[1] == "mixed:" for line in lines)  # correctly signed: mixing is all
    summary = re.search(r"push rejected \((\d+) refused commit\(s\) or ref\(s\)\)", proc.stderr)
    assert summary and int(summary.group(1)) == len(lines) == len(expected)
    # The many merges whose first-parent diff mixes are worked out in a fixed number of processes.
    commands = _git_commands(trace)
    assert len(commands) <= 24, commands  # the old hook: 91, three per such merge
    assert git(server, "rev-parse", "main").stdout.strip() == root
