"""``gate seeds``: the policy's seeds, or fresh ones for a CI matrix (every shard runs the same)."""

from __future__ import annotations

import argparse

from mergegate.errors import EXIT_OK, UsageError
from mergegate.git import core
from mergegate.records import repo


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fresh", action="store_true", help="draw fresh seeds from the operating system's "
                        "randomness (gate.yaml verdict.fresh_seeds of them), none of them a policy seed")
    parser.add_argument("-n", type=int, metavar="N", help="with --fresh: draw N seeds instead")
    parser.add_argument("--trusted", metavar="REV", default="HEAD",
                        help="read gate.yaml from REV (the target's tip in CI; default HEAD)")


def run(args: argparse.Namespace) -> int:
    policy = repo.load_policy(core.must_resolve(args.trusted))
    seeds = policy.verdict.seeds
    if not args.fresh:
        if args.n is not None:
            raise UsageError("-n goes with --fresh", "run gate seeds --fresh -n N")
        print(",".join(map(str, seeds)))
        return EXIT_OK
    count = policy.verdict.fresh_seeds if args.n is None else args.n
    if not 1 <= count <= 64:
        raise UsageError(f"cannot draw {count} fresh seeds", "pass -n between 1 and 64 (or set "
                         "verdict.fresh_seeds in gate.yaml)")
    from mergegate.pipeline import coverage as change_coverage

    print(",".join(map(str, change_coverage.fresh_seeds(count, seeds))))
    return EXIT_OK
