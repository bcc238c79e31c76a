"""Manifest speed (issue 2), measured side by side in one run:

1. verify of a 1 GiB, 10,000-file fixture tree against `sha256sum -c` of the
   same tree, warm caches (page cache and our blob-id cache).  Goal: >= 5x faster.
2. re-sign after one changed file against a full sign (cold cache).  Goal: >= 20x faster.
3. cold verify, as a fresh CI clone does it (no blob-id cache, page cache dropped
   with ``sync; echo 3 > /proc/sys/vm/drop_caches`` before each run, both sides
   alternately) against `sha256sum -c`.  Goal: >= 2x faster (every core hashes).

    python bench/manifest.py [--files 10000] [--mib 1024] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _repo import clean_env, git, median, temp_dir
from tests.helpers import init_repo, write


def build(files: int, mib: int) -> Path:
    repo = init_repo(temp_dir("mg-manifest-") / "r")
    git(repo, "config", "core.compression", "0")  # random bytes do not compress; do not spend minutes trying
    size = mib * 1024 * 1024 // files
    chunks = [b"commit refs/heads/main\n", b"committer Bench <b@example.com> 1700000000 +0000\n",
              b"data 4\nbulk\n", b"from refs/heads/main^0\n"]
    seed = os.urandom(size + files)
    for i in range(files):
        data = seed[i : i + size]
        chunks.append(b"M 100644 inline oracles/fixtures/d%02d/f%05d.bin\ndata %d\n" % (i % 64, i, len(data)))
        chunks.append(data + b"\n")
    subprocess.run(["git", "-c", "core.compression=0", "fast-import", "--quiet"], cwd=repo, input=b"".join(chunks),
                   check=True, env=clean_env())
    git(repo, "reset", "-q", "--hard", "main")
    return repo


def timed(cmd: list[str], cwd: Path, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, env=clean_env(), capture_output=True, check=False)
        samples.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{cmd} failed: {proc.stdout.decode()[-500:]} {proc.stderr.decode()[-500:]}")
    return median(samples)


def drop_caches() -> bool:
    """Empty the page cache (root only); False when this process may not."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


def cold(gate_cmd: list[str], peer_cmd: list[str], repo: Path, runs: int) -> tuple[float, float, bool]:
    """Median cold times of ``sha256sum -c`` and ``gate manifest verify``, run alternately."""
    peer, ours, dropped = [], [], True
    for _ in range(runs):
        dropped &= drop_caches()
        peer.append(timed(peer_cmd, repo, 1))
        shutil.rmtree(repo / ".git/mergegate", ignore_errors=True)
        dropped &= drop_caches()
        ours.append(timed([*gate_cmd, "manifest", "verify"], repo, 1))
    return median(peer), median(ours), dropped


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    t0 = time.perf_counter()
    repo = build(args.files, args.mib)
    print(f"built {args.files} files, {args.mib} MiB in {time.perf_counter() - t0:.1f} s")
    gate_cmd = [sys.executable, "-m", "mergegate"]
    cache = repo / ".git/mergegate"

    shutil.rmtree(cache, ignore_errors=True)
    full_sign = timed([*gate_cmd, "manifest", "sign", "--staged"], repo, 1)  # cold: every blob hashed
    git(repo, "commit", "-q", "--no-verify", "-am", "sign")
    # sha256sum's own check file over the same tree
    listing = subprocess.run(["git", "ls-files", "-z", "oracles/fixtures"], cwd=repo, capture_output=True,
                             check=True).stdout.split(b"\0")[:-1]
    sums = subprocess.run(["xargs", "-0", "sha256sum"], cwd=repo, input=b"\0".join(listing), capture_output=True,
                          check=True).stdout
    (repo.parent / "SHA256SUMS").write_bytes(sums)
    peer_cmd = ["sha256sum", "--quiet", "-c", str(repo.parent / "SHA256SUMS")]
    timed(peer_cmd, repo, 1)  # warm the page cache for both
    peer = timed(peer_cmd, repo, args.runs)
    ours_index = timed([*gate_cmd, "manifest", "verify"], repo, args.runs)
    ours_worktree = timed([*gate_cmd, "manifest", "verify", "--worktree"], repo, args.runs)

    resigns = []
    for n in range(args.runs):
        write(repo, {"oracles/fixtures/d00/f00000.bin": os.urandom(1024) + str(n).encode()})
        git(repo, "add", "-A")
        resigns.append(timed([*gate_cmd, "manifest", "sign", "--staged"], repo, 1))
    resign = median(resigns)
    git(repo, "checkout", "-q", "--", ".")
    git(repo, "reset", "-q", "--hard", "HEAD")
    cold_peer, cold_ours, dropped = cold(gate_cmd, peer_cmd, repo, max(3, args.runs // 2))
    print(f"sha256sum -c (warm, median of {args.runs}):      {peer:8.3f} s")
    print(f"gate manifest verify (index, warm):        {ours_index:8.3f} s   "
          f"{peer / ours_index:6.1f}x faster (goal >= 5x)")
    print(f"gate manifest verify --worktree (warm):    {ours_worktree:8.3f} s   {peer / ours_worktree:6.1f}x faster")
    print(f"full sign (cold cache, every blob hashed): {full_sign:8.3f} s")
    print(f"re-sign after one changed file (median):   {resign:8.3f} s   "
          f"{full_sign / resign:6.1f}x faster (goal >= 20x)")
    how = "page cache dropped before each run" if dropped else "page cache NOT dropped (not root): warm"
    print(f"cold: sha256sum -c {cold_peer:.3f} s, gate manifest verify (no blob cache) {cold_ours:.3f} s: "
          f"{cold_peer / cold_ours:.2f}x faster (goal >= 2x; {how}; {os.cpu_count()} cores)")
    shutil.rmtree(repo.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
