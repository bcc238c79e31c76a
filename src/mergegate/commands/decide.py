"""``gate decide``: seed 003's differential decision over parent.jsonl and patch.jsonl.

Reads ``parent.jsonl``, ``patch.jsonl`` and ``differential-contract.json`` from
the current directory unless told otherwise.  Exit 0 only for ``accept``.
"""

from __future__ import annotations

import argparse
import json

from mergegate.commands._engine_out import emit_json, line, table
from mergegate.records import runs
from mergegate.rules import differential as diff


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parent", default="parent.jsonl", help="parent (base) run rows (default: %(default)s)")
    parser.add_argument("--patch", default="patch.jsonl", help="patch (head) run rows (default: %(default)s)")
    parser.add_argument("--contract", default="differential-contract.json",
                        help='the shared contract, {"seeds": [...]} (default: %(default)s)')
    parser.add_argument("--out", metavar="FILE", help="also write the decision JSON here (for `gate freeze propose`)")
    parser.add_argument("--json", action="store_true", help="print the decision object (seed 003's shape)")


def run(args: argparse.Namespace) -> int:
    contract = runs.load_contract(args.contract)
    parent = runs.load_jsonl(args.parent, contract.seeds)
    patch = runs.load_jsonl(args.patch, contract.seeds)
    decision = diff.decide(parent, patch, contract.seeds, contract.properties)
    data = decision.to_dict()
    if args.out:
        from mergegate.records import fsutil

        fsutil.atomic_write(args.out, (json.dumps(data, indent=2) + "\n").encode())
    if args.json:
        emit_json(data)
    else:
        table(("property", "decision", "reason"), [(r.prop, r.decision, r.reason) for r in decision.results],
              title=f"seeds {list(contract.seeds)}; parent {len(parent)} rows, patch {len(patch)} rows")
        line("decision", decision.decision + (f" ({decision.reason})" if decision.reason else ""))
    return 0 if decision.decision == diff.ACCEPT else 1
