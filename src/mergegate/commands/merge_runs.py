"""``gate merge-runs``: join the JSONL files of sharded ``gate run`` jobs into one."""

from __future__ import annotations

import argparse
import json

from mergegate.errors import EXIT_OK, ConfigError, UsageError
from mergegate.records import fsutil, jsonio, runs


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="RUNS.jsonl", help="the shards' run files")
    parser.add_argument("--out", required=True, help="write the merged, sorted rows here")
    parser.add_argument("--seeds", help="require every property to have exactly these seeds (e.g. 11,29,47)")


def run(args: argparse.Namespace) -> int:
    rows: dict[tuple[str, int], str] = {}
    first: tuple[str, str, int] | None = None  # (tree, file, line) of the first row: every row shares its tree
    for path in args.inputs:
        parsed = runs.load_jsonl(path)  # validates every line, naming file:line
        with open(path, encoding="utf-8") as handle:
            lines = [(n, ln) for n, ln in jsonio.lines(handle.read()) if ln.strip()]
        for row, (number, line) in zip(parsed, lines, strict=True):
            key = (row.prop, row.seed)
            if key in rows:
                raise UsageError(f"{path}: {row.prop} seed {row.seed} is also in another shard",
                                 "give every shard the same --shard N and a different K")
            data = jsonio.loads(line, path, number)
            tree = data.get("tree") if isinstance(data.get("tree"), str) else ""
            if first is None:
                first = (tree, path, number)
            elif tree != first[0]:
                raise ConfigError(path, number, f"{row.prop} seed {row.seed} ran on tree {tree[:12] or '(none)'}, "
                                  f"but {first[1]}:{first[2]} on tree {first[0][:12] or '(none)'}",
                                  "merge the shards of one revision only (base and head separately)")
            rows[key] = json.dumps(data, sort_keys=True)
    if args.seeds:
        from mergegate.commands.run import parse_seeds

        seeds = set(parse_seeds(args.seeds))
        for prop in sorted({p for p, _ in rows}):
            missing = sorted(seeds - {s for p, s in rows if p == prop})
            if missing:
                raise UsageError(f"{prop} lacks seed(s) {missing}", "merge the run files of every shard")
    fsutil.atomic_write(args.out, "".join(rows[k] + "\n" for k in sorted(rows)).encode())
    tree = f" (tree {first[0][:12]})" if first and first[0] else ""
    print(f"{len(rows)} rows from {len(args.inputs)} file(s){tree} -> {args.out}")
    return EXIT_OK
