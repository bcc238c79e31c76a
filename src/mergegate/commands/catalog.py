"""``gate catalog check|import|status``.

``import`` writes a catalog entry per test of the oracle tree that has none,
after trying each on the work tree (``mergegate.pipeline.trial``);
``status`` lists tests with no entry and entries whose test is gone (see
``mergegate.pipeline.adopt``).  ``check`` runs each property sealed and shared on a
revision: a property that cannot run sealed (it needs production objects in its own
process) is marked ``isolation: shared`` by a person.  This command tells which
properties give the same rows both ways, so that choice is made on evidence.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Sequence

from mergegate.commands.run import only, parse_seeds
from mergegate.errors import EXIT_NO, EXIT_OK
from mergegate.git import core
from mergegate.pipeline import diffrun
from mergegate.records import repo
from mergegate.runner.rows import SEALED, SHARED, Row
from mergegate.runner.schedule import plan, run_tasks
from mergegate.runner.specs import Spec, load_specs
from mergegate.runner.trees import tree_info


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = sub.add_parser("check", help="run every property sealed and shared on a revision and compare")
    check.add_argument("--rev", default="HEAD", help="the revision to run (default: HEAD)")
    check.add_argument("--seeds", help="comma-separated seeds (default: gate.yaml verdict.seeds)")
    check.add_argument("--only", action="append", default=[], metavar="ID", help="only this property")
    check.add_argument("--json", action="store_true", help="one JSON object per property")
    check.add_argument("-j", "--jobs", type=int, help="processes in parallel")


    imp = sub.add_parser("import", help="write a catalog entry for each test of the oracle tree that has none")
    imp.add_argument("paths", nargs="*", metavar="PATH", help="only tests under these oracle paths (default: all)")
    imp.add_argument("--dry-run", action="store_true", help="print the entries, write nothing")
    imp.add_argument("--no-trial", action="store_true",
                     help="write every entry as sealed without running it first (the default runs each new entry "
                     "on the work tree: sealed if it passes sealed, isolation: shared if it passes only in-process, "
                     "left out if it fails both ways)")
    imp.add_argument("-j", "--jobs", type=int, help="processes in parallel for the trial")
    status = sub.add_parser("status", help="tests with no catalog entry, and entries whose test is gone")
    status.add_argument("--rev", help="read a revision instead of the work tree")


def run(args: argparse.Namespace) -> int:
    if args.action == "import":
        from mergegate.commands import catalog_adopt

        return catalog_adopt.run_import(args)
    if args.action == "status":
        from mergegate.commands import catalog_adopt

        return catalog_adopt.run_status(args)
    rev = core.must_resolve(args.rev)
    policy = repo.load_policy(rev)
    _cat, specs = load_specs(rev, policy)
    specs = only(specs, args.only)
    seeds = parse_seeds(args.seeds) if args.seeds else policy.verdict.seeds
    both = [_as(s, mode) for s in specs for mode in (SEALED, SHARED)]
    with diffrun.worktrees([rev], omit=[policy.paths.catalog]) as (tree_dir,):
        tree = tree_info(tree_dir, policy, "trusted")
        rows = run_tasks([(tree, spec, seed) for spec, seed in plan(both, seeds)], policy, args.jobs)
    results = [compare(s.prop.id, s.prop.isolation, rows) for s in specs]
    for result in results:
        print(json.dumps(result, sort_keys=True) if args.json else _line(result))
    disagree = [r["prop"] for r in results if not r["agree"]]
    if not args.json:
        print(f"{len(results) - len(disagree)} of {len(results)} properties agree sealed and shared")
    return EXIT_NO if disagree else EXIT_OK


def _as(spec: Spec, mode: str) -> Spec:
    return dataclasses.replace(spec, prop=dataclasses.replace(spec.prop, isolation=mode))


def compare(prop: str, catalogued: str, rows: Sequence[Row]) -> dict[str, object]:
    """Per seed, the (status, witness) of both modes; they agree when every seed matches."""
    by_mode: dict[str, dict[int, tuple[str, str]]] = {SEALED: {}, SHARED: {}}
    for r in rows:
        if r.prop == prop:
            by_mode[r.isolation][r.seed] = (r.status, r.witness)
    sealed, shared = by_mode[SEALED], by_mode[SHARED]
    return {"prop": prop, "catalog": catalogued, "agree": sealed == shared,
            "sealed": {str(k): list(v) for k, v in sorted(sealed.items())},
            "shared": {str(k): list(v) for k, v in sorted(shared.items())}}


def _line(result: dict[str, object]) -> str:
    def summary(mode: str) -> str:
        runs = result[mode]
        assert isinstance(runs, dict)
        fails = [f"{seed}:{witness}" for seed, (status, witness) in runs.items() if status != "pass"]
        return "pass" if not fails else "fail " + ", ".join(fails)

    verdict = "agree   " if result["agree"] else "DISAGREE"
    return (f"{verdict} {result['prop']}  (catalog: isolation {result['catalog']})  "
            f"sealed: {summary('sealed')}  shared: {summary('shared')}")
