"""``gate split RANGE | --staged``: the diff's paths by class, as JSON."""

from __future__ import annotations

import argparse
import json

from mergegate.errors import UsageError
from mergegate.git import core, diffs, revrange
from mergegate.records import catalog, repo
from mergegate.rules import split as splitmod


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("range", nargs="?", help="BASE...HEAD, BASE..HEAD or one commit")
    parser.add_argument("--staged", action="store_true", help="the commit being made (the index)")


def run(args: argparse.Namespace) -> int:
    if bool(args.range) == bool(args.staged):
        raise UsageError("give a range or --staged", "e.g. gate split main...HEAD, or gate split --staged")
    top = core.toplevel()
    if args.staged:
        pol = repo.trusted_policy(top)
        changes = diffs.staged_changes(top)
        cat_rev = core.head(top)
    else:
        rng = revrange.parse(args.range, top)
        cat_rev = rng.base if core.resolve(rng.base, top) else None
        pol = repo.load_policy(cat_rev, top) if cat_rev else repo.load_policy(rng.head, top)
        changes = diffs.tree_changes(rng.base, rng.head, top)
    split_ = splitmod.split(changes, pol)
    cat = catalog.load_at(cat_rev, pol.paths.catalog, str(top))
    print(json.dumps(splitmod.to_json(split_, splitmod.oracle_edited(cat, split_)), indent=2, ensure_ascii=False))
    return 0
