"""``gate deps``: the trusted revision's runtime dependencies, printed or installed, never built from the head."""

from __future__ import annotations

import argparse
import subprocess
import sys

from mergegate.errors import EXIT_OK, InternalError
from mergegate.git import blobs, branches, core


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base", help="the target branch or revision (default: the repository's default branch)")
    parser.add_argument("--head", default="HEAD", help="the patch revision (default: HEAD); the dependencies "
                        "come from merge-base(base, head), the revision gate check trusts")
    parser.add_argument("--extra", action="append", default=[], metavar="NAME",
                        help="also an optional dependency group of [project.optional-dependencies]")
    parser.add_argument("--requirements", action="append", default=[], metavar="FILE",
                        help="also a requirements file, read at the trusted revision (plain requirements only)")
    parser.add_argument("--install", action="store_true",
                        help="install them into this interpreter's environment (the gate's) with pip")


def run(args: argparse.Namespace) -> int:
    from mergegate.ci import deps

    base = core.must_resolve(branches.base_or_default(args.base))
    trusted = core.merge_base(base, core.must_resolve(args.head))
    files = {}
    for name in args.requirements:
        data = blobs.file_at(trusted, name)
        if data is None:
            from mergegate.errors import UsageError

            raise UsageError(f"{name} is not in the trusted revision {trusted[:12]}",
                             "name a requirements file the base branch has")
        files[name] = data
    reqs = deps.requirements(blobs.file_at(trusted, deps.PYPROJECT), args.extra, files)
    print(f"# runtime dependencies of {trusted[:12]} (merge-base), read with git: nothing of the head is built")
    for req in reqs:
        print(req)
    if args.install and reqs:
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--", *reqs],
                              check=False)
        if proc.returncode != 0:
            raise InternalError(f"pip install exited {proc.returncode}", "read pip's output above")
    return EXIT_OK
