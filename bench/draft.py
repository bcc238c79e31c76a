"""Bench: triage of 20 ghostwriter candidates in ONE sandbox container start, against the same
candidates under pytest on the host.  Goal: sandbox / host <= 2x.

Usage: .venv/bin/python bench/draft.py [--rounds N]
Needs a Docker engine and the sandbox image (.ci/setup-docker.sh).  Both sides run the same
files with the same Hypothesis settings (100 examples, derandomized, no database); each side's
time is the wall clock of the whole thing a user waits for (container create, start, wait and
removal for the sandbox; interpreter start, collection and run for pytest).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIB = '''"""A library with a wide public surface for the ghostwriter."""


def add(a: int, b: int) -> int:
    return a + b


def mul(a: int, b: int) -> int:
    return a * b


def maximum(a: int, b: int) -> int:
    return a if a >= b else b


def minimum(a: int, b: int) -> int:
    return a if a <= b else b


def clamp(x: int, lo: int, hi: int) -> int:
    return max(lo, min(x, hi))


def absolute(x: int) -> int:
    return -x if x < 0 else x


def negate(x: int) -> int:
    return -x


def is_even(n: int) -> bool:
    return n % 2 == 0


def reverse(xs: list[int]) -> list[int]:
    return xs[::-1]


def sort_ints(xs: list[int]) -> list[int]:
    return sorted(xs)


def dedupe(xs: list[int]) -> list[int]:
    return list(dict.fromkeys(xs))


def total(xs: list[int]) -> int:
    return sum(xs)


def encode(s: str) -> bytes:
    return s.encode("utf-8")


def decode(b: bytes) -> str:
    return b.decode("utf-8")


def upper(s: str) -> str:
    return s.upper()


def join_words(words: list[str]) -> str:
    return " ".join(words)


def split_words(s: str) -> list[str]:
    return s.split()


def to_hex(n: int) -> str:
    return hex(n)


def from_hex(s: str) -> int:
    return int(s, 16)


def count_chars(s: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for ch in s:
        out[ch] = out.get(ch, 0) + 1
    return out


def merge(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {**a, **b}


def head(xs: list[int], n: int) -> list[int]:
    return xs[:n]
'''

CONFTEST = '''from hypothesis import HealthCheck, settings
settings.register_profile("gate", database=None, max_examples=100, derandomize=True, deadline=None,
                          print_blob=False, suppress_health_check=[HealthCheck.too_slow])
'''


def sh(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args[:4])} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@e", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@e"}
    for args in (["git", "init", "-q", "-b", "main"], [sys.executable, "-m", "mergegate", "init"]):
        sh(args, repo, env)
    (repo / "src").mkdir()
    (repo / "src" / "benchlib.py").write_text(LIB)
    sh(["git", "add", "-A"], repo, env)
    sh(["git", "commit", "-q", "--no-verify", "-m", "lib"], repo, env)
    return repo


def draft(repo: Path, count: int) -> dict[str, bytes]:
    proc = sh([sys.executable, "-m", "mergegate", "draft-props", "--json", "--max", "30"], repo)
    report = json.loads(proc.stdout)
    ids = [q["id"] for q in report["queued"]][:count]
    if not ids:
        raise SystemExit("no candidate queued")
    codes = [(repo / ".gate/queue" / cid / "candidate.py").read_bytes() for cid in ids]
    # The drafter queues only drafts worth a review (fewer than the library's functions): reuse them,
    # each copy a file of its own, until there are `count` to triage.
    return {f"c{i:03d}": codes[i % len(codes)] + f"# copy {i // len(codes)}\n".encode() for i in range(count)}


def host_pytest(repo: Path, root: Path, candidates: dict[str, bytes]) -> tuple[float, str]:
    tests = root / "host"
    tests.mkdir(exist_ok=True)
    (tests / "conftest.py").write_text(CONFTEST)
    for key, code in candidates.items():
        (tests / f"test_{key}.py").write_bytes(code)
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.perf_counter()
    proc = sh([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-profile=gate",
               "--rootdir", str(tests), str(tests)], tests, env)
    elapsed = time.perf_counter() - started
    return elapsed, (proc.stdout.strip().splitlines() or ["?"])[-1]


def sandbox_triage(repo: Path, candidates: dict[str, bytes]) -> tuple[float, str]:
    from mergegate.drafter import pipeline
    from mergegate.records import repo as repo_mod

    policy = repo_mod.trusted_policy(repo)
    started = time.perf_counter()
    results = pipeline.triage(repo, policy, candidates, triage_s=20.0, max_examples=100)
    elapsed = time.perf_counter() - started
    counts: dict[str, int] = {}
    for r in results.values():
        counts[r.result] = counts.get(r.result, 0) + 1
    return elapsed, ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gate-bench-draft-") as tmp:
        root = Path(tmp)
        repo = make_repo(root)
        candidates = draft(repo, args.count)
        box_times, host_times = [], []
        box_summary = host_summary = ""
        for _ in range(args.rounds):  # alternate the two sides so drift hits both
            t, box_summary = sandbox_triage(repo, candidates)
            box_times.append(t)
            t, host_summary = host_pytest(repo, root, candidates)
            host_times.append(t)
    box, host = statistics.median(box_times), statistics.median(host_times)
    print(f"candidates            {len(candidates)} ghostwriter drafts, 100 examples each, derandomized")
    print(f"sandbox (1 container) {box:6.2f} s median of {args.rounds}  [{box_summary}]"
          f"  runs: {', '.join(f'{t:.2f}' for t in box_times)}")
    print(f"host pytest           {host:6.2f} s median of {args.rounds}  [{host_summary}]"
          f"  runs: {', '.join(f'{t:.2f}' for t in host_times)}")
    ratio = box / host
    print(f"ratio sandbox/host    {ratio:.2f}x (goal <= 2x: {'met' if ratio <= 2 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
