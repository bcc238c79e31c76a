"""Bench: `gate pre-receive` on ~6,500-commit pushes, against `git log --raw` and GitPython.

Builds two histories with `git fast-import`: (1) a synthetic one (a few files per
commit, renames, ~1% merges of side branches, a few hundred guarded files, properly
re-signed oracle-only commits); (2) a merge-heavy one (a quarter of the commits are
merges, side branches holding oracle-only and production commits, so most merges'
first-parent diffs mix both kinds: ``tests/merge_history.py``).  For each, seeds an
empty bare repository with its root commit, installs the hook, pushes the rest over
the local transport and prints:
  - the hook's wall time (measured by a wrapper around the installed hook);
  - `git log --raw --no-renames` over the same range (goal: hook <= 3x);
  - a per-commit GitPython diff loop over the same range (synthetic only; goal: hook >= 50x faster);
  - whether the hook fits GitHub Enterprise's 5 s pre-receive budget.

Run: .venv/bin/python bench/pre_receive.py [--commits 6500] [--gitpython-sample N]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _repo import clean_env, git, median, temp_dir
from tests import merge_history  # the merge-heavy history the pre-receive test pushes too

from mergegate.hooks.pre_receive import hook_script, install_pre_receive
from mergegate.records import manifest, policy

GHE_BUDGET_S = 5.0


class History:
    """A fast-import stream of one main line with side branches merged back."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.out: list[bytes] = []
        self.mark = 0
        self.when = 1_700_000_000
        self.prod: list[str] = []  # production files on main
        self.signed: dict[str, bytes] = {}  # signed guarded files on main (for the manifest)
        self.commits = 0
        self.counts = {"merges": 0, "oracle-only commits": 0, "renames": 0}

    def _data(self, data: bytes) -> None:
        self.out.append(b"data %d\n%s\n" % (len(data), data))

    def commit(self, ref: str, changes: list[tuple[str, bytes | None]], parent: int | None,
               merge: int | None = None, author: str = "dev@example.com") -> int:
        self.mark += 1
        self.when += 60
        self.commits += 1
        self.out.append(b"commit %s\nmark :%d\n" % (ref.encode(), self.mark))
        ident = f"Dev <{author}> {self.when} +0000\n".encode()
        self.out.append(b"author " + ident + b"committer " + ident)
        self._data(f"change {self.mark}".encode())
        if parent is not None:
            self.out.append(b"from :%d\n" % parent)
        if merge is not None:
            self.out.append(b"merge :%d\n" % merge)
        for path, data in changes:
            if data is None:
                self.out.append(b"D %s\n" % path.encode())
            else:
                self.out.append(b"M 100644 inline %s\n" % path.encode())
                self._data(data)
        self.out.append(b"\n")
        return self.mark

    def blob(self, path: str) -> bytes:
        return f"# {path}\nvalue = {self.rng.random()!r}\n".encode()

    def manifest_change(self) -> tuple[str, bytes]:
        rows = [manifest.Row(hashlib.sha256(d).hexdigest(), len(d), p) for p, d in self.signed.items()]
        return policy.Paths().manifest, manifest.render(rows)


def root_changes(h: History) -> list[tuple[str, bytes | None]]:
    changes: list[tuple[str, bytes | None]] = [
        ("gate.yaml", policy.DEFAULT_TEXT.encode()),
        ("freeze_ledger.yaml", b"version: 1\nbudget: {max_active: 3, max_added_per_patch: 0}\nentries: []\n"),
    ]
    h.signed["gate.yaml"] = policy.DEFAULT_TEXT.encode()
    guarded = ([f"oracles/properties/test_p{i}.py" for i in range(100)]
               + [f"oracles/fixtures/data/f{i}.json" for i in range(150)]
               + [f"oracles/fixtures/tables/p{i}.yaml" for i in range(50)])  # not catalog entries: those must load
    for path in guarded:
        h.signed[path] = h.blob(path)
        changes.append((path, h.signed[path]))
    for k in range(40):
        for j in range(30):
            path = f"src/pkg{k}/mod{j}.py"
            h.prod.append(path)
            changes.append((path, h.blob(path)))
    changes.append(h.manifest_change())
    return changes


def production_changes(h: History, rename_rate: float) -> list[tuple[str, bytes | None]]:
    changes: list[tuple[str, bytes | None]] = []
    for path in h.rng.sample(h.prod, h.rng.randint(1, 4)):
        changes.append((path, h.blob(path)))
    if h.rng.random() < rename_rate:
        old = h.rng.choice(h.prod)
        new = old.replace(".py", f"_r{h.mark}.py")
        h.prod[h.prod.index(old)] = new
        changes += [(old, None), (new, h.blob(new))]
        h.counts["renames"] += 1
    if h.rng.random() < 0.1:
        changes.append((f"docs/note{h.mark}.md", b"notes\n"))
    return changes


def oracle_changes(h: History) -> list[tuple[str, bytes | None]]:
    guarded = [p for p in h.signed if p != "gate.yaml"]
    changes: list[tuple[str, bytes | None]] = []
    for path in h.rng.sample(guarded, h.rng.randint(1, 3)):
        h.signed[path] = h.blob(path)
        changes.append((path, h.signed[path]))
    changes.append(h.manifest_change())
    return changes


def build_stream(total: int, seed: int = 7) -> tuple[bytes, int, str]:
    """The fast-import stream, the number of commits and a one-line description of its shape."""
    h = History(seed)
    main = h.commit("refs/heads/main", root_changes(h), None)
    side_no = 0
    while h.commits < total:
        roll = h.rng.random()
        if roll < 0.03:
            main = h.commit("refs/heads/main", oracle_changes(h), main)
            h.counts["oracle-only commits"] += 1
        elif roll < 0.045:  # a side branch of a few production commits, merged back
            side_no += 1
            side, files = main, []
            for i in range(h.rng.randint(2, 5)):
                path = f"src/side{side_no}/m{i}.py"
                files.append((path, h.blob(path)))
                side = h.commit("refs/heads/side", [files[-1]], side)
                main = h.commit("refs/heads/main", production_changes(h, 0.0), main)
            main = h.commit("refs/heads/main", list(files), main, merge=side)
            h.counts["merges"] += 1
        else:
            main = h.commit("refs/heads/main", production_changes(h, 0.05), main)
    h.out.append(b"reset refs/heads/side\nfrom 0000000000000000000000000000000000000000\n\n")
    shape = ", ".join(f"{v} {k}" for k, v in h.counts.items())
    shape += f", {len(h.signed) - 1} signed guarded files, {len(h.prod)} production files"
    return b"".join(h.out), h.commits, shape


def timed(fn: object, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return median(times)


def gitpython_loop(repo: Path, rng: str, sample: int | None) -> tuple[float, int]:
    import git as gitpython  # GitPython: imported here, its import cost is not the loop's

    r = gitpython.Repo(repo)
    commits = list(r.iter_commits(rng))
    if sample:
        commits = commits[:sample]
    start = time.perf_counter()
    for c in commits:
        if c.parents:
            c.parents[0].diff(c)
        else:
            c.diff(gitpython.NULL_TREE)
    return time.perf_counter() - start, len(commits)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=6500)
    parser.add_argument("--gitpython-sample", type=int, default=0,
                        help="time GitPython on the first N commits and scale up (0: all)")
    parser.add_argument("--keep", action="store_true", help="keep the repositories (path printed)")
    args = parser.parse_args()
    tmp = temp_dir("gate-bench-receive-")
    try:
        return measure(args, tmp)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def _accepted_line(stderr: str) -> str:
    lines = [x.removeprefix("remote: ").strip() for x in stderr.splitlines() if "push accepted" in x]
    return lines[0] if lines else "?"


def push_history(tmp: Path, stream: bytes) -> tuple[Path, str, str, float, str] | None:
    """Import ``stream``, seed a hooked bare server with its root, push the rest: the server, the
    range, the hook's seconds and its last line (None when the hook refused the push)."""
    tmp.mkdir()
    source, server = tmp / "source.git", tmp / "server.git"
    for repo in (source, server):
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=source, input=stream, check=True, env=clean_env())
    root = git(source, "rev-list", "--max-parents=0", "main").stdout.split()[0]
    tip = git(source, "rev-parse", "main").stdout.strip()
    git(source, "push", "-q", str(server), f"{root}:refs/heads/main")  # the seed: hook not yet installed
    hook = install_pre_receive(server)
    timing = tmp / "hook-seconds"
    real = hook.with_name("pre-receive.gate")
    real.write_text(hook_script(sys.executable))
    real.chmod(0o755)
    hook.write_text(f'#!/bin/sh\ns=$(date +%s%N); "{real}"; rc=$?; e=$(date +%s%N)\n'
                    f'echo $((e - s)) > "{timing}"; exit $rc\n')
    start = time.perf_counter()
    proc = git(source, "push", str(server), "main", check=False)
    push_s = time.perf_counter() - start
    if proc.returncode != 0:
        print(proc.stderr)
        print("FAIL: the hook refused the generated history")
        return None
    hook_s = int(timing.read_text()) / 1e9
    print(f"  push: {push_s:.2f}s total; hook: {hook_s:.3f}s "
          f"({_accepted_line(proc.stderr)})")
    return server, f"{root}..{tip}", tip, hook_s, root


def against_log(server: Path, rng: str, hook_s: float) -> float:
    log_s = timed(lambda: subprocess.run(["git", "log", "--raw", "--no-renames", rng], cwd=server,
                                         capture_output=True, check=True))
    ratio = hook_s / log_s
    print(f"  git log --raw --no-renames over the same {rng[:8]}..: {log_s:.3f}s; hook / log = "
          f"{ratio:.2f}x (goal <= 3x) {'OK' if ratio <= 3 else 'MISSED'}; "
          f"GitHub Enterprise budget {GHE_BUDGET_S:.0f}s: {'fits' if hook_s < GHE_BUDGET_S else 'DOES NOT FIT'}")
    return ratio


def measure(args: argparse.Namespace, tmp: Path) -> int:
    stream, count, shape = build_stream(args.commits)
    print(f"1. synthetic history: {count} commits ({shape})")
    pushed = push_history(tmp / "synthetic", stream)
    if pushed is None:
        return 1
    server, rng, _tip, hook_s, _root = pushed
    synthetic = against_log(server, rng, hook_s)
    gp_s, gp_n = gitpython_loop(server, rng, args.gitpython_sample or None)
    per_commit = gp_s / gp_n
    gp_total = per_commit * (count - 1)
    scaled = " (scaled from a sample)" if gp_n < count - 1 else ""
    print(f"  GitPython per-commit diff loop: {gp_total:.2f}s{scaled}, {per_commit * 1000:.2f} ms/commit; "
          f"hook is {gp_total / hook_s:.0f}x faster (goal >= 50x) {'OK' if gp_total >= 50 * hook_s else 'MISSED'}")

    heavy_stream, h = merge_history.build(args.commits)
    merges = h.counts["merges"]
    print(f"2. merge-heavy history: {h.commits} commits, {merges} merges ({merges / h.commits:.0%}), "
          f"{h.counts['oracle-only']} oracle-only commits, most side branches mixing both kinds")
    pushed = push_history(tmp / "merge-heavy", heavy_stream)
    if pushed is None:
        return 1
    server, rng, _tip, hook_s, _root = pushed
    heavy = against_log(server, rng, hook_s)
    print(f"hook / git log: synthetic {synthetic:.2f}x, merge-heavy {heavy:.2f}x (goal <= 3x each)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
