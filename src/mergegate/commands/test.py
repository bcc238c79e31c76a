"""``gate test``: run the properties locally on the work tree, production importable, no bytecode left behind.

Two ways:
- default: pytest over the work tree's oracle tree (the properties as you are
  writing them), with the production import roots on ``PYTHONPATH``.  Production
  shares the process: a developer's check, never a verdict.
- ``--sealed``: ``gate run --tree .``: HEAD's catalog and oracle, the work tree's
  production, sealed and seeded exactly as ``gate check`` runs them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from mergegate.errors import UsageError
from mergegate.git import core
from mergegate.records import repo
from mergegate.records.policy import Policy


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sealed", action="store_true",
                        help="run HEAD's catalog on the work tree as gate check does (gate run --tree .)")
    parser.add_argument("--only", action="append", default=[], metavar="ID", help="--sealed: only this property")
    parser.add_argument("--seeds", help="--sealed: comma-separated seeds (default: gate.yaml verdict.seeds)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER,
                        help="passed to pytest (default: the oracle tree), e.g. -- -k total -x")


def run(args: argparse.Namespace) -> int:
    top = core.toplevel()
    extra = [a for a in args.pytest_args if a != "--"] if args.pytest_args else []
    if args.sealed:
        if extra:
            raise UsageError("pytest arguments do not apply to --sealed", "use --only ID and --seeds S")
        argv = ["run", "--tree", str(top), *(f"--only={i}" for i in args.only)]
        argv += [f"--seeds={args.seeds}"] if args.seeds else []
        from mergegate import main

        return main.main(argv)
    if args.only or args.seeds:
        raise UsageError("--only and --seeds go with --sealed", "pass pytest's own -k, or add --sealed")
    pol = repo.load_policy(None) if (top / "gate.yaml").exists() else repo.trusted_policy()
    return pytest_run(top, pol, extra)


# pytest's exit codes as the gate's: failed, not collected, none collected -> 1; usage -> 2; else 3
EXIT_CODES = {0: 0, 1: 1, 2: 1, 5: 1, 4: 2}


def pytest_run(root: Path, pol: Policy, extra: list[str]) -> int:
    from mergegate.runner import trees

    prod = trees.production_roots(root, pol)
    oracle = sorted({trees.literal_prefix(p) for p in pol.paths.oracle} - {""}) or ["."]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*prod, *filter(None, [env.get("PYTHONPATH", "")])])
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing compiled lands in the oracle tree
    print(f"gate test: pytest {' '.join(oracle)} with {', '.join(os.path.relpath(p, root) for p in prod) or '.'} "
          "importable (a local run, production in the same process: gate check gives the verdict)", file=sys.stderr)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *(extra or oracle)]
    return EXIT_CODES.get(subprocess.run(cmd, cwd=root, env=env, check=False).returncode, 3)
