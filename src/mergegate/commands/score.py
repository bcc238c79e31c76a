"""``gate score [REF]``: seed 004's merge scorecard for the patch ``REF^..REF``.

Path classes come from the policy, and the policy, budget and ledger from the
trusted side ``REF^``; the patch's own ledger is read only to count what it
adds.  Exit 0 only for ``accept``.
"""

from __future__ import annotations

import argparse
import hashlib
import os

from mergegate.commands._engine_out import emit_json, line, table
from mergegate.errors import ConfigError, UsageError
from mergegate.git import blobs, core, diffs
from mergegate.records import catalog, ledger, manifest, repo
from mergegate.rules import agents, scorecard


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ref", nargs="?", default="HEAD", help="the commit to score against its parent (default: HEAD)")
    parser.add_argument("--relied-on", metavar="FREEZE_ID", action="append", default=None,
                        help="a freeze the patch's green run used (repeat); default for an agent patch: "
                             "every active freeze whose paths it touches")
    parser.add_argument("--json", action="store_true", help="print the scorecard object")


def run(args: argparse.Namespace) -> int:
    ref = core.must_resolve(args.ref)
    parent = core.resolve(f"{ref}^1")
    if parent is None:
        raise UsageError(f"{args.ref} has no parent: there is no trusted side to score against",
                         "score a later commit")
    policy = repo.load_policy(parent)
    changed = [c.path for c in diffs.tree_changes(parent, ref)]
    now = ledger.utcnow()
    cat = catalog.load_at(parent, policy.paths.catalog)
    base_ledger = ledger.with_props(ledger.load_at(parent, policy.paths.ledger), cat.by_nodeid(), cat.by_id())
    head_ledger: ledger.Ledger | None = None
    if policy.paths.ledger in changed:
        try:
            head_ledger = ledger.with_props(ledger.load_at(ref, policy.paths.ledger), cat.by_nodeid(), cat.by_id())
        except ConfigError:
            head_ledger = None  # the patch broke the ledger: scored as unreadable
    author = core.out(["log", "-1", "--format=%ae", ref]).decode().strip()
    agent = agents.is_agent(policy, os.environ, author)
    data = blobs.file_at(ref, policy.paths.manifest)
    if args.relied_on is not None:
        relied = tuple(args.relied_on)
    else:
        relied = scorecard.could_rely(base_ledger, changed, now) if agent else ()
    card = scorecard.score(
        changed, policy, agent=agent, base_ledger=base_ledger, head_ledger=head_ledger, now=now,
        manifest_ok=manifest.verify_at(ref, policy).ok,
        manifest_sha256=hashlib.sha256(data).hexdigest() if data is not None else None,
        relied_on=relied,
    )
    if args.json:
        emit_json(card.to_dict())
    else:
        table(("path", "class"), [(p, policy.classify(p)) for p in sorted(changed)],
              title=f"{ref[:12]} by {author or '?'} ({'agent' if agent else 'person'})")
        for key in ("debt", "oracle_hits", "fixture_hits", "freeze_ledger_touched", "active_no_rely_freezes",
                    "manifest_sha256", "reasons"):
            line(key, card.to_dict()[key])
        line("verdict", card.verdict)
    return 0 if card.verdict == scorecard.ACCEPT else 1
