"""``gate run``: the property catalog at one revision or tree, one JSONL row per property x seed."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mergegate import textsafe
from mergegate.errors import EXIT_NO, EXIT_OK, EXIT_USAGE, UsageError
from mergegate.git import core
from mergegate.records import repo
from mergegate.records.policy import Policy
from mergegate.runner.rows import Row, write_jsonl
from mergegate.runner.schedule import for_every_seed, parse_shard, plan, run_tasks
from mergegate.runner.specs import Spec, load_specs
from mergegate.runner.trees import tree_info


def configure(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--rev", help="run the properties on this revision (checked out in a private worktree)")
    where.add_argument("--tree", help="run the properties on this directory as it is (its rows name no tree: "
                       "gate check --base-runs/--head-runs refuses them)")
    parser.add_argument("--trusted", metavar="REV",
                        help="read policy, catalog and oracle files from REV (default: --rev, or HEAD)")
    parser.add_argument("--merged-into", metavar="TARGET",
                        help="run on the merge result of --rev into TARGET's tip (what gate check judges for a "
                        "head forked before it; --rev itself when it already contains the tip)")
    parser.add_argument("--seeds", help="comma-separated seeds (default: gate.yaml verdict.seeds)")
    parser.add_argument("--fresh-seeds", metavar="SEEDS",
                        help="comma-separated fresh seeds run after --seeds (CI shards: every shard and side the "
                        "same ones, from `gate seeds --fresh` in the job that starts the matrix; gate check "
                        "--fresh-seeds then judges them)")
    parser.add_argument("--coverage-base", metavar="REV",
                        help="record change coverage: the lines of the production files changed since REV "
                        "(the target's tip gate check judges against) that each run executed (head shards)")
    parser.add_argument("--out", help="write the JSONL rows here (without it, only the report is printed)")
    parser.add_argument("--shard", metavar="K/N", help="run only the K-th of N slices (for a CI matrix)")
    parser.add_argument("--only", action="append", default=[], metavar="ID", help="run only this property")
    parser.add_argument("-j", "--jobs", type=int, help="processes in parallel (default: gate.yaml runner.jobs)")


def parse_seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise UsageError(f"bad seeds {text!r}", "write --seeds 11,29,47") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise UsageError(f"bad seeds {text!r}: need distinct integers", "write --seeds 11,29,47")
    return seeds


def only(specs: list[Spec], ids: list[str]) -> list[Spec]:
    """The specs named by ``--only`` (all without it); an unknown id is a usage error."""
    if not ids:
        return specs
    unknown = sorted(set(ids) - {s.prop.id for s in specs})
    if unknown:
        raise UsageError(f"no property {unknown[0]!r} in the catalog", "pass an id from oracles/catalog")
    return [s for s in specs if s.prop.id in ids]


def run(args: argparse.Namespace) -> int:
    trusted_rev = core.must_resolve(args.trusted or args.rev or "HEAD")
    policy = repo.load_policy(trusted_rev)
    _cat, specs = load_specs(trusted_rev, policy)
    specs = only(specs, args.only)
    seeds = parse_seeds(args.seeds) if args.seeds else policy.verdict.seeds
    seeds = (*seeds, *fresh_seeds(args.fresh_seeds, seeds))
    shard = parse_shard(args.shard) if args.shard else None
    pairs = plan(specs, seeds, shard)
    from mergegate.runner import rows as rowlib

    if args.coverage_base and not args.rev:
        raise UsageError("--coverage-base needs --rev", "pass --rev REV (the head the check judges)")
    if args.rev:
        from mergegate.pipeline import diffrun

        rev = core.must_resolve(args.rev)
        if args.merged_into:
            rev = merge_result(rev, core.must_resolve(args.merged_into))
        trace: list[str] = []
        if args.coverage_base:
            from mergegate.pipeline import coverage as change_coverage

            trace = sorted(change_coverage.changed_lines(core.must_resolve(args.coverage_base), rev, policy))
        with diffrun.worktrees([rev], omit=[policy.paths.catalog]) as (tree_dir,):
            rows = _run(tree_dir, pairs, policy, args.jobs, trace)
        rows = diffrun.bind(rowlib.with_reproduce(for_every_seed(rows, specs, seeds), rev=rev,
                                                  trusted=trusted_rev), rev)
    else:
        tree_dir = Path(args.tree)
        if not tree_dir.is_dir():
            raise UsageError(f"{args.tree}: no such directory", "pass a checked-out tree")
        rows = _run(tree_dir, pairs, policy, args.jobs)
        rows = rowlib.with_reproduce(for_every_seed(rows, specs, seeds), tree=args.tree,
                                     trusted=args.trusted)
    if args.out:
        write_jsonl(rows, args.out)
    return report(rows, args.out)


def merge_result(rev: str, target: str) -> str:
    """The revision ``gate check`` judges for the head ``rev`` aimed at ``target``."""
    from mergegate.pipeline import judged

    pair = judged.judge_pair(target, rev, judged.MERGE)
    if pair.mode == judged.MERGE_CONFLICT:
        raise UsageError(f"{rev[:12]} conflicts with {target[:12]} ({', '.join(pair.conflicts[:4])})",
                         judged.FIX_STALE)
    return pair.head


def fresh_seeds(text: str | None, seeds: tuple[int, ...]) -> tuple[int, ...]:
    """``--fresh-seeds``: distinct integers, none of them among ``seeds``."""
    if not text:
        return ()
    fresh = parse_seeds(text)
    if set(fresh) & set(seeds):
        raise UsageError(f"bad fresh seeds {text!r}: {sorted(set(fresh) & set(seeds))[0]} is one of the seeds",
                         "draw them with gate seeds --fresh")
    return fresh


def _run(tree_dir: Path, pairs: list[tuple[Spec, int]], policy: Policy, jobs: int | None,
         trace: Sequence[str] = ()) -> list[Row]:
    import dataclasses

    from mergegate.pipeline.progress import progress_bar

    tree = tree_info(tree_dir, policy)
    if trace:
        tree = dataclasses.replace(tree, trace=tuple(trace))
    with progress_bar() as progress:
        return run_tasks([(tree, spec, seed) for spec, seed in pairs], policy, jobs, progress)


def report(rows: list[Row], out: str | None) -> int:
    """One line per failing row on stderr (then Hypothesis's falsifying example), a summary on stdout;
    exit 2 if an oracle cannot load."""
    failed = [r for r in rows if r.status != "pass"]
    for r in failed:
        print(textsafe.line(f"fail  {r.prop} seed={r.seed}  {r.witness}  {r.error or ''}".rstrip()), file=sys.stderr)
        for text in (r.falsifying_example or "").splitlines():
            print("  " + textsafe.line(text), file=sys.stderr)
    print(f"{len(rows)} rows: {len(rows) - len(failed)} pass, {len(failed)} fail" + (f" -> {out}" if out else ""))
    broken = sorted({r.prop for r in rows if r.load_error})
    if broken:
        print(f"gate run: {', '.join(broken)} could not load its oracle (see the errors above); "
              "fix: make the property's imports resolve in the tree", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_NO if failed else EXIT_OK
