"""Hook latency: our three pre-commit hooks together against pre-commit-hooks'
`check-added-large-files`, on the same 10-file commit in a repository holding
10,000 guarded files.  Goal (issue 2): no slower than that peer.

    python bench/hook_latency.py [--runs 15]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _repo import clean_env, fast_import, gate, git, median, temp_dir
from tests.helpers import init_repo, write

HEAVY = ("git", "docker", "httpx", "hypothesis", "rich")


def build(n_guarded: int) -> tuple[object, list[str]]:
    repo = init_repo(temp_dir("mg-hook-") / "r")
    files = {f"oracles/fixtures/set{i // 500:02d}/f{i:05d}.json": b'{"i": %d}' % i for i in range(n_guarded)}
    files |= {f"src/pkg/mod{i:03d}.py": b"X = %d\n" % i for i in range(200)}
    fast_import(repo, files)
    gate(repo, "manifest", "sign", "--staged", check=0)
    git(repo, "commit", "-q", "--no-verify", "-am", "sign")
    changed = [f"src/pkg/mod{i:03d}.py" for i in range(10)]
    write(repo, {p: f"X = {p!r}\n" for p in changed})
    git(repo, "add", "-A")
    return repo, changed


def timed(cmd: list[str], cwd: object, runs: int) -> tuple[float, int]:
    env = clean_env()
    samples, code = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        code = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, check=False).returncode  # type: ignore[arg-type]
        samples.append(time.perf_counter() - start)
    return median(samples), code


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--guarded", type=int, default=10_000)
    args = parser.parse_args()
    repo, changed = build(args.guarded)
    # What pre-commit runs: each hook's entry, a console script of the hook's environment.
    bindir = Path(sys.executable).parent
    ours = [[str(bindir / "gate"), "hook", name] for name in ("guard", "no-mix", "manifest")]
    peer = [str(bindir / "check-added-large-files"), *changed]
    stamp = Path(git(repo, "rev-parse", "--git-path", "mergegate/hook-ok").stdout.strip())
    if not stamp.is_absolute():
        stamp = Path(repo) / stamp  # type: ignore[operator]
    cache = stamp.parent

    counter = iter(range(1_000_000))

    def next_change() -> None:
        """Commit what is staged (untimed) and stage the next 10-file change: HEAD moves every run."""
        git(repo, "commit", "-q", "--no-verify", "--allow-empty", "-m", "next")
        n = next(counter)
        write(repo, {p: f"X = {n}  # {p}\n" for p in changed})
        git(repo, "add", "-A")

    def one_commit() -> float:
        next_change()
        return sum(timed(cmd, repo, 1)[0] for cmd in ours)

    shutil.rmtree(cache, ignore_errors=True)
    cold = one_commit()  # no caches at all: the first commit after a clone
    totals, peers = [], []
    for _ in range(args.runs):  # interleaved, so both see the same machine state
        totals.append(one_commit())
        peers.append(timed(peer, repo, 1)[0])
    combined = [str(bindir / "gate"), "hook", "all"]
    singles = []
    for _ in range(args.runs):
        next_change()
        singles.append(timed(combined, repo, 1)[0])
    codes = [timed(cmd, repo, 1)[1] for cmd in ours]
    probe = subprocess.run(
        [sys.executable, "-c",
         "import sys, runpy; sys.argv=['gate','hook','all']\n"
         "from mergegate.main import main\nmain(['hook','all'])\n"
         f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"],
        cwd=repo, env=clean_env(), capture_output=True, text=True, check=False)
    ours_ms, peer_ms = median(totals) * 1000, median(peers) * 1000
    print(f"repository: {args.guarded} guarded files, a 10-file production commit; exit codes {codes}")
    print(f"our three hooks together (median of {args.runs}): {ours_ms:7.1f} ms")
    print(f"check-added-large-files  (median of {args.runs}): {peer_ms:7.1f} ms")
    print(f"ratio ours/peer: {ours_ms / peer_ms:.2f}x (goal <= 1.00x)")
    one_ms = median(singles) * 1000
    print(f"gate-checks, the three in one process (median): {one_ms:7.1f} ms, ratio {one_ms / peer_ms:.2f}x")
    print(f"first commit after a clone (cold caches, one run): {cold * 1000:7.1f} ms")
    print(f"heavy modules imported on the hook path: {probe.stdout.strip() or probe.stderr.strip()}")


if __name__ == "__main__":
    main()
