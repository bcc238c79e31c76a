"""``gate diff``: base and head side by side under one contract, then seed 003's ``decide``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mergegate.errors import EXIT_NO, EXIT_OK
from mergegate.git import branches, core, diffs
from mergegate.pipeline import diffrun
from mergegate.records import fsutil, packet, repo, runs
from mergegate.rules import differential, split
from mergegate.runner.rows import write_jsonl
from mergegate.runner.specs import load_specs


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base", help="the parent revision (trusted side; default: the default branch)")
    parser.add_argument("--head", required=True, help="the patch revision")
    parser.add_argument("--out", default=".gate/diff", help="directory for contract.json, base.jsonl, patch.jsonl")
    parser.add_argument("--json", action="store_true", help="print the decision as JSON")
    parser.add_argument("-j", "--jobs", type=int, help="processes in parallel (default: one per core)")


def run(args: argparse.Namespace) -> int:
    head = core.must_resolve(args.head)
    base = core.merge_base(core.must_resolve(branches.base_or_default(args.base)), head)
    policy = repo.load_policy(base)
    cat, specs = load_specs(base, policy)
    edited = split.oracle_edited(cat, split.split(diffs.tree_changes(base, head), policy))
    seeds = policy.verdict.seeds
    from mergegate.pipeline.progress import progress_bar

    with progress_bar(quiet=args.json) as progress:
        pair = diffrun.run_pair(base, head, policy, cat, specs, seeds, skip_head=edited, jobs=args.jobs,
                                progress=progress)
    out = Path(args.out)

    def fill(folder: Path) -> None:
        fsutil.atomic_write(folder / "contract.json", diffrun.canonical(pair.contract) + b"\n")
        write_jsonl(pair.base_rows, folder / "base.jsonl")
        write_jsonl(pair.head_rows, folder / "patch.jsonl")

    packet.write(out, fill)  # whole, sealed: never a mix of two runs
    decision = differential.decide(
        runs.load_jsonl(out / "base.jsonl"), runs.load_jsonl(out / "patch.jsonl"),
        seeds, [p.id for p in cat.properties],
    )
    data = {"contract_hash": pair.contract_hash, "oracle_edited": list(edited), **decision.to_dict()}
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(f"decision: {decision.decision}" + (f" ({decision.reason})" if decision.reason else ""))
        for r in decision.results:
            print(f"  {r.prop:<32} {r.decision:<15} {r.reason}")
        print(f"contract {pair.contract_hash[:16]}  evidence in {out}")
    return EXIT_OK if decision.decision == differential.ACCEPT else EXIT_NO
