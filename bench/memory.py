"""Bench: peak resident memory of ``gate check`` on a patch adding one big docs file (issue 25).

An agent's patch adds N MB of ``x`` lines to ``docs/big.txt`` (a few KB once packed).  The
script runs the real ``gate check --base HEAD^ --head HEAD`` in a child process and prints its
peak RSS (``ru_maxrss`` of the gate process itself, read as it exits, and the largest of its
own children, git included) for N = 1, 25 and 100 MB, and the ratio against the baseline below.
Goal: under 300 MB at 100 MB, and independent of N (the 100 MB peak within 1.5x of the 1 MB one).
Lines are ``x`` alone, the worst case for a reader that splits the patch into lines (the issue's).

    .venv/bin/python bench/memory.py [SIZES_MB ...]   (default: 1 25 100)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from _repo import clean_env, fast_import, git, temp_dir  # bench/ is on sys.path when run as a script

# The baseline: commit 32bc457 (before issue 25), measured on this machine with this script (VmHWM, MB).
# 100 MB was not run there: it would need about 14 GB (the 25 MB run took 3.5 GB).
BASELINE_MB = {1: 167.0, 25: 3514.0}
GOAL_MB = 300.0

# Runs the CLI and reports, on its last stderr line, the gate's own peak RSS (VmHWM: this process since its
# exec; ``ru_maxrss`` would also count the parent's memory the child had before it) and its children's (KB).
PROBE = """
import json, resource, sys
from mergegate import main
try:
    code = main.main(sys.argv[1:])
finally:
    me = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"self_kb": me, "children_kb": kids}), file=sys.stderr)
sys.exit(code)
"""


def repo_with(size_mb: int) -> Path:
    repo = temp_dir("gate-bench-memory-") / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    subprocess.run([sys.executable, "-m", "mergegate", "init"], cwd=repo, env=clean_env(), check=True,
                   capture_output=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "adopt")
    fast_import(repo, {"docs/a.txt": b"doc\n", "src/m.py": b"def keep():\n    return 1\n"}, "base")
    line = b"x\n"  # the worst case: one object per line for a reader that splits the patch
    fast_import(repo, {"docs/big.txt": line * (size_mb * (1 << 20) // len(line))}, "a big docs file")
    return repo


def peak(size_mb: int) -> tuple[float, float, float, int]:
    # Built in a child: the file's bytes never sit in this process, whose children's ru_maxrss would count them.
    repo = Path(subprocess.run([sys.executable, __file__, "--build", str(size_mb)], capture_output=True, text=True,
                               check=True).stdout.strip())
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PROBE, "check", "--base", "HEAD^", "--head", "HEAD"], cwd=repo,
                          env=clean_env(), capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return report["self_kb"] / 1024, report["children_kb"] / 1024, took, proc.returncode


def main(argv: list[str]) -> int:
    if argv[:1] == ["--build"]:
        print(repo_with(int(argv[1])))
        return 0
    sizes = [int(a) for a in argv] or [1, 25, 100]
    print(f"{'added':>8}  {'gate MB':>8}  {'children MB':>11}  {'time s':>6}  {'exit':>4}  {'baseline MB':>11}  ratio")
    peaks = {}
    for size in sizes:
        own, kids, took, code = peak(size)
        peaks[size] = own
        base = BASELINE_MB.get(size)
        ratio = f"{base / own:.1f}x less" if base else "-"  # baseline / now
        print(f"{size:>6}MB  {own:>8.0f}  {kids:>11.0f}  {took:>6.1f}  {code:>4}  "
              f"{base if base else '-':>11}  {ratio}")
    worst, first, last = max(peaks.values()), peaks[min(peaks)], peaks[max(peaks)]
    ok = worst < GOAL_MB and last <= 1.5 * first
    print(f"goal: every peak under {GOAL_MB:.0f} MB, the largest file's within 1.5x of the smallest's: "
          f"{'met' if ok else 'NOT met'} (largest peak {worst:.0f} MB; {max(peaks)} MB: {last:.0f}, "
          f"{min(peaks)} MB: {first:.0f})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
