"""Bench (issue 21 item 3): adopting a 1,000-test suite: `gate catalog import`, its trial, and the hooked commit.

A temporary repository adopted with ``gate init`` holds a small production package (``src/calc``) and
1,000 plain tests in 50 files under ``oracles/properties/`` (committed by a person, no entries yet).
Side by side, alternating, best of ``--rounds`` (each round on a fresh copy of that repository):

(a) ``gate catalog import --no-trial`` (1,000 entries written), then the oracle-only commit of those
    entries through the gate's own pre-commit hook (``gate install``; ``gate manifest sign --staged``
    first, as the import tells a person to): against (a') the same 1,000 files written by a plain
    Python loop and ``git commit --no-verify``. Goal: seconds, not minutes.
(b) ``gate catalog import`` with its trial (each new entry run sealed on the work tree; in-process
    only where that fails, which here is never): against (b') plain pytest running the same 1,000
    tests once (``python -m pytest oracles/properties``, production importable, no cache). The ratio
    is the sealed runner's speed on plain tests (issue 21 item 5).

    .venv/bin/python bench/catalog_import.py [--rounds 2] [--files 50] [--tests 20] [--skip-trial]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _repo import ROOT, clean_env, gate, git, mergegate_rev, temp_dir

sys.path.insert(0, str(ROOT))
from tests.helpers import init_repo, sign_and_commit

OPS = '''\
"""A small production package."""


def add(a, b):
    return a + b


def clamp(x, lo, hi):
    return max(lo, min(hi, x))


def words(text):
    return [w for w in text.split() if w]
'''


def test_file(i: int, n: int) -> str:
    lines = ['"""Generated plain tests."""', "from calc.ops import add, clamp, words", ""]
    for j in range(n):
        lines += ["", f"def test_case_{i}_{j}():", f'    """Case {i}.{j} holds."""',
                  f"    assert add({j}, {i}) == {i + j}",
                  f"    assert clamp({j}, 0, 10) == {min(j, 10)}",
                  "    assert words('a b  c') == ['a', 'b', 'c']", ""]
    return "\n".join(lines) + "\n"


def build(files: int, tests: int) -> Path:
    repo = init_repo(temp_dir("bench-import-") / "repo")
    content: dict[str, str | bytes | None] = {"src/calc/__init__.py": "", "src/calc/ops.py": OPS}
    content.update({f"oracles/properties/test_mod{i:02d}.py": test_file(i, tests) for i in range(files)})
    sign_and_commit(repo, content, "the suite, before adoption")
    return repo


def fresh(repo: Path) -> Path:
    dest = temp_dir("bench-import-copy-") / "repo"
    shutil.copytree(repo, dest, symlinks=True)
    return dest


def timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def gate_import_and_commit(repo: Path) -> tuple[float, float]:
    t_import = timed(lambda: gate(repo, "catalog", "import", "--no-trial"))
    gate(repo, "install")

    def hooked_commit() -> None:
        git(repo, "add", "-A")
        gate(repo, "manifest", "sign", "--staged")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "catalog: adopt 1000 tests")  # through the gate's pre-commit hook

    return t_import, timed(hooked_commit)


def plain_write_and_commit(repo: Path, entries: dict[str, bytes]) -> float:
    def run() -> None:
        for rel, data in entries.items():
            (repo / rel).write_bytes(data)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--no-verify", "-m", "plain")

    return timed(run)


def plain_pytest(repo: Path) -> float:
    env = clean_env({"PYTHONPATH": str(repo / "src"), "PYTHONDONTWRITEBYTECODE": "1"})
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "oracles/properties"]
    return timed(lambda: subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--tests", type=int, default=20)
    ap.add_argument("--skip-trial", action="store_true")
    args = ap.parse_args()
    total = args.files * args.tests
    print(f"mergegate {mergegate_rev()}; {total} plain tests in {args.files} files; {os.cpu_count()} cores; "
          f"load {os.getloadavg()[0]:.1f}")
    base = build(args.files, args.tests)
    probe = fresh(base)
    gate(probe, "catalog", "import", "--no-trial")
    cat = probe / "oracles/catalog"
    entries = {p.relative_to(probe).as_posix(): p.read_bytes() for p in cat.iterdir() if p.is_file()}
    print(f"{len(entries)} catalog files per import")
    res: dict[str, list[float]] = {k: [] for k in ("import", "hooked", "plain", "trial", "pytest")}
    for _ in range(args.rounds):
        t_import, t_hooked = gate_import_and_commit(fresh(base))
        res["import"].append(t_import)
        res["hooked"].append(t_hooked)
        res["plain"].append(plain_write_and_commit(fresh(base), entries))
        if not args.skip_trial:
            repo = fresh(base)
            res["trial"].append(timed(lambda r=repo: gate(r, "catalog", "import")))
            written = sum(1 for p in (repo / "oracles/catalog").glob("mod*.yaml"))
            sealed = sum(1 for p in (repo / "oracles/catalog").glob("mod*.yaml") if b"isolation" not in p.read_bytes())
            print(f"  trial: {written} entries written, {sealed} sealed")
            res["pytest"].append(plain_pytest(repo))
        print("  round: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in res.items() if v), flush=True)
    best = {k: min(v) for k, v in res.items() if v}
    adopt = best["import"] + best["hooked"]
    print(f"(a)  import --no-trial {best['import']:.2f} s + hooked commit {best['hooked']:.2f} s = {adopt:.2f} s; "
          f"plain writes + commit --no-verify {best['plain']:.2f} s; goal: seconds, not minutes")
    if "trial" in best:
        print(f"(b)  import with its trial {best['trial']:.2f} s; plain pytest once {best['pytest']:.2f} s: "
              f"{best['trial'] / best['pytest']:.2f}x")
    print(f"load at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
