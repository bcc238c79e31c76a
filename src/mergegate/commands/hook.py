"""``gate hook NAME``: one client-side check of the commit being made (pre-commit's entry)."""

from __future__ import annotations

import argparse
import sys

from mergegate.hooks import pre_commit

ORDER = ["guard", "no-mix", "manifest"]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=[*pre_commit.HOOKS, "all"], help="which check; all: every one")
    parser.add_argument("files", nargs="*", help=argparse.SUPPRESS)  # pre-commit may pass file names


def run(args: argparse.Namespace) -> int:
    names = ORDER if args.name == "all" else [args.name]
    outcomes = pre_commit.run_hooks(names, stop_early=args.name == "all")
    failed = [o for o in outcomes if not o.ok]
    for outcome in failed:
        print(outcome.message, file=sys.stderr)
    return 1 if failed else 0
