"""Bench: how many queued drafts are worth a person's time, on real open-source modules.

Usage: .venv/bin/python bench/draft_quality.py [--examples N] [--wheels DIR]
Needs a Docker engine and the sandbox image (.ci/setup-docker.sh), and pip's ordinary
client to fetch three small pure-Python, typed packages at pinned versions (or --wheels
DIR holding them): idna 3.10, itsdangerous 2.2.0, base58 2.1.1.  Each wheel's package is
unpacked into a fresh repository as its production code.

A queued candidate is *useful* when it runs (triage pass or fail, not error), every
test asserts a relation (an assert, a raise or an assert* call), and it passes on the
current code.  Current: `gate draft-props` (ghostwriter modes, host filters).  Baseline,
side by side in the same run: the previous drafter, `ghostwriter.magic` on each function
alone and every parsable candidate queued (only st.nothing() refused).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGES = {"idna": "3.10", "itsdangerous": "2.2.0", "base58": "2.1.1"}


@dataclass
class Tally:
    queued: int = 0
    runs: int = 0
    asserts: int = 0
    useful: int = 0
    seconds: float = 0.0

    def share(self) -> float:
        return self.useful / self.queued if self.queued else 0.0


def fetch(wheels: Path | None, root: Path) -> Path:
    """The pinned wheels: from ``wheels``, else through ``pip download`` (the registry's ordinary client)."""
    if wheels is not None:
        return wheels
    dest = root / "wheels"
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                           "-d", str(dest), *(f"{k}=={v}" for k, v in PACKAGES.items())],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"pip download failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}; "
                         "pass --wheels DIR holding the three wheels")
    return dest


def make_repo(root: Path, wheels: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@e", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@e"}
    for args in (["git", "init", "-q", "-b", "main"], [sys.executable, "-m", "mergegate", "init"]):
        subprocess.run(args, cwd=repo, env=env, check=True, capture_output=True)
    (repo / "src").mkdir()
    for name, version in PACKAGES.items():
        with zipfile.ZipFile(wheels / f"{name}-{version}-py3-none-any.whl") as whl:
            for member in whl.namelist():
                if member.startswith(f"{name}/") and member.endswith(".py"):
                    whl.extract(member, repo / "src")
    for args in (["git", "add", "-A"], ["git", "commit", "-q", "--no-verify", "-m", "production"]):
        subprocess.run(args, cwd=repo, env=env, check=True, capture_output=True)
    return repo


def asserts_every_test(code: bytes) -> bool:
    from mergegate.drafter import stage

    tree = ast.parse(code)
    tests = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    return bool(tests) and stage._asserts_nothing(tree, tests) is None


@contextlib.contextmanager
def previous_drafter() -> Iterator[None]:
    """The drafter before this change: magic per function, every parsable candidate queued."""
    from mergegate.drafter import modes, pipeline, stage

    saved = (modes.plan, stage.check_code, pipeline.not_worth_review)

    def old_check(code: bytes) -> str | None:
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            return "does not parse"
        if stage._uses_nothing(tree) is not None:
            return "st.nothing()"
        return None if any(isinstance(n, ast.FunctionDef) and n.name.startswith("test") for n in tree.body) else "none"

    modes.plan = lambda apis: [modes.Plan("magic", (a,)) for a in apis]  # type: ignore[assignment]
    stage.check_code = old_check  # type: ignore[assignment]
    pipeline.not_worth_review = lambda result: None  # type: ignore[assignment]
    try:
        yield
    finally:
        modes.plan, stage.check_code, pipeline.not_worth_review = saved  # type: ignore[assignment]


def measure(repo: Path, examples: int) -> Tally:
    from mergegate.drafter import pipeline, queue
    from mergegate.records import repo as repo_mod

    shutil.rmtree(repo / ".gate" / "queue", ignore_errors=True)
    policy = repo_mod.trusted_policy(repo)
    started = time.perf_counter()
    report = pipeline.draft(repo, policy, pipeline.Request(max_n=60, max_examples=examples), os.environ)
    tally = Tally(seconds=time.perf_counter() - started)
    for q in report.queued:
        code = queue.candidate_code(repo, queue.find(repo, q.id))
        tally.queued += 1
        runs = q.triage.result in ("pass", "fail")
        asserts = asserts_every_test(code)
        tally.runs += runs
        tally.asserts += asserts
        tally.useful += runs and asserts and q.triage.result == "pass"
    return tally


def line(name: str, t: Tally) -> str:
    return (f"{name:<28} {t.queued:>3} queued, {t.runs:>3} run, {t.asserts:>3} assert a relation, "
            f"{t.useful:>3} also pass: useful {t.share():6.1%}  ({t.seconds:.1f} s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--examples", type=int, default=100, help="Hypothesis examples per test in triage")
    parser.add_argument("--wheels", type=Path, help="a folder holding the three pinned wheels (no download)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gate-bench-quality-") as tmp:
        repo = make_repo(Path(tmp), fetch(args.wheels, Path(tmp)))
        with previous_drafter():
            baseline = measure(repo, args.examples)
        current = measure(repo, args.examples)
    print(f"packages                     {', '.join(f'{k} {v}' for k, v in PACKAGES.items())} (PyPI wheels)")
    print(line("baseline: magic, all queued", baseline))
    print(line("current: modes + filters", current))
    goal = current.share() >= 0.5
    ratio = f"{current.share() / baseline.share():.1f}x" if baseline.share() else "n/a (baseline 0)"
    print(f"useful share current/baseline {ratio}; goal >= 50% useful: {'met' if goal else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
