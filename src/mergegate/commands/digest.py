"""``gate digest [DIR]``: seed 000's fixture digest of a directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from mergegate.errors import UsageError
from mergegate.records.digest import fixture_digest


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", nargs="?", default="oracles/fixtures", help="default: oracles/fixtures")


def run(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    if not root.is_dir():
        raise UsageError(f"{args.dir}: not a directory", "pass the fixtures directory: gate digest oracles/fixtures")
    print(fixture_digest(root))
    return 0
