"""``gate merge-runs``: join the JSONL files of sharded ``gate run`` jobs into one."""

from __future__ import annotations

import argparse
import json

from mergegate.errors import EXIT_OK, UsageError
from mergegate.records import fsutil, jsonio, runs


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="RUNS.jsonl", help="the shards' run files")
    parser.add_argument("--out", required=True, help="write the merged, sorted rows here")
    parser.add_argument("--seeds", help="require every property to have exactly these seeds (e.g. 11,29,47)")


def run(args: argparse.Namespace) -> int:
    rows: dict[tuple[str, int], str] = {}
    for path in args.inputs:
        parsed = runs.load_jsonl(path)  # validates every line, naming file:line
        with open(path, encoding="utf-8") as handle:
            lines = [ln for _, ln in jsonio.lines(handle.read()) if ln.strip()]
        for row, line in zip(parsed, lines, strict=True):
            key = (row.prop, row.seed)
            if key in rows:
                raise UsageError(f"{path}: {row.prop} seed {row.seed} is also in another shard",
                                 "give every shard the same --shard N and a different K")
            rows[key] = json.dumps(jsonio.loads(line, path), sort_keys=True)
    if args.seeds:
        from mergegate.commands.run import parse_seeds

        seeds = set(parse_seeds(args.seeds))
        for prop in sorted({p for p, _ in rows}):
            missing = sorted(seeds - {s for p, s in rows if p == prop})
            if missing:
                raise UsageError(f"{prop} lacks seed(s) {missing}", "merge the run files of every shard")
    fsutil.atomic_write(args.out, "".join(rows[k] + "\n" for k in sorted(rows)).encode())
    print(f"{len(rows)} rows from {len(args.inputs)} file(s) -> {args.out}")
    return EXIT_OK
