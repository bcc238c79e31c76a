"""``gate freeze``: list, lint, expire, open or propose freezes.

``open`` is a person's act: it is refused in an agent's environment, and the
signature, fixture digest and base revision come from a base reproduction
(a run file or an evidence directory), never from the keyboard.  ``propose``
turns a ``propose_freeze`` decision into a review ticket; it never edits the ledger.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
from pathlib import Path

from mergegate.commands import _freeze_open
from mergegate.commands._engine_out import emit_json, line, table
from mergegate.errors import UsageError
from mergegate.git import core
from mergegate.records import ledger
from mergegate.records.policy import Policy


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("list", help="list freezes").add_argument("--json", action="store_true")
    sub.add_parser("lint", help="flag expired entries and an over-budget ledger (exit 1 if any)").add_argument(
        "--json", action="store_true")
    sub.add_parser("expire", help="remove expired entries (atomic rewrite)")
    _freeze_open.configure(sub.add_parser("open", help="a person opens a freeze from a base reproduction"))
    prop = sub.add_parser("propose", help="turn a propose_freeze decision into a review ticket")
    prop.add_argument("decision", nargs="?", default="decision.json", help="decision JSON (default: %(default)s)")
    prop.add_argument("--tickets", metavar="DIR", help="ticket directory (default: .gate/tickets at the top)")
    for p in sub.choices.values():
        p.add_argument("--ledger", metavar="FILE", help="the ledger file (default: the policy's, at the top)")
        p.add_argument("--now", metavar="ISO", help=argparse.SUPPRESS)  # tests judge expiry at a fixed time


def _policy() -> Policy:
    from mergegate.records import repo

    try:
        top = core.toplevel()
    except UsageError:
        return Policy()  # outside a repository (with --ledger): the defaults name the agent's environment
    try:
        return repo.trusted_policy(top)
    except UsageError:
        return Policy()  # no gate.yaml: the defaults still say which environment is an agent's


def _ledger_path(args: argparse.Namespace, policy: Policy) -> Path:
    if args.ledger:
        return Path(args.ledger)
    return core.toplevel() / policy.paths.ledger


def _lock(path: Path) -> Path:
    try:
        return core.git_path("gate-ledger.lock", path.parent)
    except Exception:  # not inside a repository: lock beside the file
        return path.with_name(f".{path.name}.lock")


def run(args: argparse.Namespace) -> int:
    from mergegate.commands.verdict import when

    now = when(args.now)
    if args.action == "propose":
        return _freeze_open.propose(args, now)
    policy = _policy()
    path = _ledger_path(args, policy)
    if args.action == "open":
        return _freeze_open.open_freeze(args, policy, path, _lock(path), now)
    if args.action == "expire":
        return _expire(path, now)
    led = ledger.load(path)
    if args.action == "list":
        return _list(args, led, now)
    return _lint(args, led, now)


def _list(args: argparse.Namespace, led: ledger.Ledger, now: dt.datetime) -> int:
    if args.json:
        emit_json({"version": led.version,
                   "budget": {"max_active": led.budget.max_active,
                              "max_added_per_patch": led.budget.max_added_per_patch},
                   "entries": [ledger.to_json(e, now) for e in led.entries]})
        return 0
    table(("id", "prop_id", "expires_at", "state", "agent may rely", "paths", "reason"),
          [(e.id, e.prop_id, ledger.format_when(e.expires_at), "expired" if e.expired(now) else "active",
            e.allows_agent_rely, e.paths, e.reason) for e in led.entries],
          title=f"{led.source}: {len(led.active(now))} active of budget {led.budget.max_active}")
    return 0


def _lint(args: argparse.Namespace, led: ledger.Ledger, now: dt.datetime) -> int:
    problems = ledger.lint(led, now)
    if args.json:
        emit_json({"ok": not problems, "problems": [
            {"code": p.code, "message": p.message, "entry": p.entry, "line": p.line} for p in problems]})
    else:
        for p in problems:
            where = f"{led.source}:{p.line}" if p.line else led.source
            print(f"{where}: {p.message}")
        fixes = {"expired": "run `gate freeze expire`", "over_budget": "close freezes or raise budget.max_active"}
        for code in sorted({p.code for p in problems}):
            print(f"fix: {fixes[code]}")
        if not problems:
            print(f"{led.source}: ok ({len(led.entries)} entries)")
    return 1 if problems else 0


def _expire(path: Path, now: dt.datetime) -> int:
    from mergegate.records import fsutil

    with fsutil.locked(_lock(path)):
        led = ledger.load(path)
        gone = [e.id for e in led.expired(now)]
        if gone:
            ledger.save(led.without(gone), path)
    line("removed", gone)
    return 0


def agent_env(policy: Policy) -> bool:
    return os.environ.get(policy.agents.env, "").strip() == "1"
