"""Adopting a 1,000-test suite: `gate catalog import` and the oracle-only commit of its catalog through the
gate's pre-commit hook, against git doing the same file work, and the import's trial against plain pytest.

Issue 21 item 3: "Import and the commit of a 1,000-entry catalog through the hook take seconds, not
minutes."  Baselines, measured side by side in one run on the same synthetic suite (50 files x 20 plain
tests, each importing the production package):
- write: `gate catalog import --no-trial` against writing the same 1,000 entry files with plain Python
  (one `open().write()` each, no fsync);
- commit: `git commit` with the gate's hook installed against the same commit with `--no-verify`;
- trial: `gate catalog import` (each entry run sealed and in-process on HEAD) against plain `pytest -q`
  over the same tests, run twice (the trial runs each test twice).

    python bench/catalog_import.py [--files 50 --tests 20]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _repo import clean_env, gate, git, temp_dir
from tests.helpers import init_repo, sign_and_commit


def suite(files: int, tests: int) -> dict[str, str]:
    out = {"src/pkg/__init__.py": "def f(x):\n    return x\n"}
    for i in range(files):
        body = "".join(f'def test_{j}():\n    """Claim {i}.{j}."""\n    assert f({j}) == {j}\n\n\n'
                       for j in range(tests))
        out[f"oracles/properties/test_m{i:02d}.py"] = "from pkg import f\n\n\n" + body
    return out


def timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--tests", type=int, default=20)
    args = parser.parse_args()
    n = args.files * args.tests
    repo = init_repo(temp_dir("mg-import-") / "r")
    sign_and_commit(repo, suite(args.files, args.tests), "the suite to adopt")
    gate(repo, "install", check=0)
    head = git(repo, "rev-parse", "HEAD").stdout.strip()

    def reset() -> None:
        git(repo, "reset", "-q", "--hard", head)
        git(repo, "clean", "-qfd")

    imp = timed(lambda: gate(repo, "catalog", "import", "--no-trial", check=0))
    texts = {p: p.read_bytes() for p in (repo / "oracles/catalog").glob("*.yaml")}
    git(repo, "add", "-A")
    gate(repo, "manifest", "sign", "--staged", check=0)
    git(repo, "add", "-A")
    hooked = timed(lambda: git(repo, "commit", "-q", "-m", "catalog: adopt"))
    reset()
    plain_write = timed(lambda: [p.write_bytes(b) for p, b in texts.items()])
    git(repo, "add", "-A")
    gate(repo, "manifest", "sign", "--staged", check=0)
    git(repo, "add", "-A")
    bare = timed(lambda: git(repo, "commit", "-q", "--no-verify", "-m", "catalog: adopt"))
    reset()
    trial = timed(lambda: gate(repo, "catalog", "import", check=0))
    env = clean_env({"PYTHONPATH": str(repo / "src")})
    pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "oracles/properties"]
    plain = timed(lambda: [subprocess.run(pytest_cmd, cwd=repo, env=env, capture_output=True, check=True)
                           for _ in range(2)])
    shutil.rmtree(Path(repo).parent, ignore_errors=True)
    print(f"{n} tests in {args.files} files")
    print(f"  gate catalog import --no-trial     {imp:6.2f} s   plain writes of the same entries {plain_write:6.3f} s")
    print(f"  commit through the gate's hook     {hooked:6.2f} s   git commit --no-verify {bare:6.3f} s   "
          f"ratio {hooked / bare:.1f}x")
    print(f"  import with its trial              {trial:6.2f} s   plain pytest, twice {plain:6.2f} s   "
          f"ratio {trial / plain:.2f}x")
    print(f"  import + hooked commit: {imp + hooked:.2f} s (goal: seconds, not minutes)")


if __name__ == "__main__":
    main()
