"""``gate freeze open`` and ``gate freeze propose`` (kept apart from the small subcommands)."""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from mergegate.errors import ConfigError, UsageError
from mergegate.git import core
from mergegate.records import jsonio, ledger, packet, runs
from mergegate.records.fsutil import work_area
from mergegate.records.policy import Policy
from mergegate.rules import differential, globs


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prop", required=True, help="the property id to freeze")
    parser.add_argument("--reason", required=True, help="why this is a flake, not a product bug")
    parser.add_argument("--expires", required=True, help="an ISO date, or a duration such as 14d, 36h, 2w")
    parser.add_argument("--paths", required=True, nargs="+", metavar="GLOB", help="paths the freeze covers")
    parser.add_argument("--evidence", metavar="DIR",
                        help="evidence directory: base.jsonl, fixture.digest, contract.json")
    parser.add_argument("--run", metavar="FILE", help="JSONL run file of the base reproduction")
    parser.add_argument("--base", metavar="REV",
                        help="base revision of a --run file (default: the contract's, else HEAD)")
    parser.add_argument("--id", help="freeze id (default: the next FZ-NNN)")
    parser.add_argument("--allow-agent-rely", action="store_true", help="let agent patches rely on this freeze")


def _reproduction(args: argparse.Namespace) -> tuple[list[differential.Row], dict[str, Any], str | None]:
    """Rows, contract data and the fixture.digest text of the base reproduction."""
    if not args.evidence and not args.run:
        raise UsageError("no base reproduction given", "pass --evidence DIR or --run FILE from a base run")
    contract: dict[str, Any] = {}
    digest = None
    rows: list[differential.Row] = []
    if args.evidence:
        ev = Path(args.evidence)
        if ev.is_dir():
            packet.verify(ev)  # a mixed or torn packet is refused, never half-read
        if not ev.is_dir():
            raise UsageError(f"{ev}: no such evidence directory", "pass the directory a check wrote")
        if (ev / "contract.json").is_file():
            contract = dict(runs.load_contract(ev / "contract.json").raw)
        if (ev / "fixture.digest").is_file():
            digest = runs.parse_digest_file((ev / "fixture.digest").read_text()).get("base")
        if not args.run:
            rows = runs.load_jsonl(ev / "base.jsonl")
    if args.run:
        rows = runs.load_jsonl(args.run)
    return rows, contract, digest


def _match_keys(args: argparse.Namespace, rows: list[differential.Row], contract: dict[str, Any],
                digest: str | None) -> tuple[str, str, str, str]:
    """(signature, fixture_digest, base_revision, witness) from the evidence, or UsageError."""
    fails = [r for r in rows if r.prop == args.prop and r.status == "fail"]
    if not fails:
        raise UsageError(f"the base reproduction has no failing row for {args.prop}",
                         "reproduce the failure on the base revision first; no reproduction, no freeze")
    sigs = {r.signature for r in fails}
    if None in sigs or len(sigs) != 1:
        raise UsageError(f"the base rows of {args.prop} carry {len(sigs)} signature(s) {sorted(map(str, sigs))}",
                         "a freeze binds exactly one reproduced signature")
    digests = {r.fixture_digest for r in fails if r.fixture_digest} | ({digest} if digest else set())
    from_contract = differential.side_digest(contract, "base")
    if from_contract:
        digests.add(from_contract)
    if len(digests) != 1:
        raise UsageError(f"the evidence has {len(digests)} fixture digests for {args.prop}",
                         "use evidence from one run (fixture.digest or rows with fixture_digest)")
    base = contract.get("base_revision") or contract.get("base")
    if args.base or not isinstance(base, str):
        base = core.must_resolve(args.base or "HEAD")
    witness = sorted({r.witness for r in fails})[0]
    return str(sigs.pop()), digests.pop(), str(base), witness


def _next_id(led: ledger.Ledger) -> str:
    numbers = [int(m.group(1)) for e in led.entries if (m := re.fullmatch(r"FZ-(\d+)", e.id))]
    return f"FZ-{max(numbers, default=0) + 1:03d}"


def refuse(message: str, fix: str) -> int:
    print(f"gate freeze: refused: {message}; fix: {fix}", file=sys.stderr)
    return 1


def open_freeze(args: argparse.Namespace, policy: Policy, path: Path, lock: Path, now: dt.datetime) -> int:
    """Add one entry to the ledger (atomic, locked), or refuse."""
    from mergegate.records import fsutil
    from mergegate.rules import agents

    try:
        author = core.author_email()
    except Exception:  # outside a repository there is no author, only the environment
        author = ""
    if agents.is_agent(policy, os.environ, author):
        return refuse(f"an agent may not open a freeze ({agents.agent_reason(policy, os.environ, author)})",
                      "a person opens freezes, from a base reproduction")
    try:
        expires = ledger.parse_expiry(args.expires, now)
    except ValueError:
        raise UsageError(f"bad --expires {args.expires!r}", "write an ISO date or a duration such as 14d") from None
    if expires <= now:
        raise UsageError(f"--expires {args.expires} is not in the future", "give a future date")
    for pattern in args.paths:
        if not globs.is_valid(pattern):
            raise UsageError(f"bad path glob {pattern!r}", "write e.g. src/parser/**")
    if args.id and not ledger.valid_id(args.id):
        raise UsageError(f"bad freeze id {args.id!r}", "use letters, digits, '.', '_' and '-'")
    signature, digest, base, witness = _match_keys(args, *_reproduction(args))
    with fsutil.locked(lock):
        led = ledger.load(path)
        entry = ledger.Entry(
            id=args.id or _next_id(led), prop_id=args.prop, signature=signature, fixture_digest=digest,
            base_revision=base, paths=tuple(args.paths), reason=args.reason, opened_by=author or "unknown",
            opened_at=now, expires_at=expires, witness=witness, allows_agent_rely=args.allow_agent_rely,
        )
        if entry.id in led.by_id():
            raise UsageError(f"freeze id {entry.id} is taken", "pick another --id")
        if len(led.active(now)) + 1 > led.budget.max_active:
            return refuse(f"the ledger already holds {len(led.active(now))} active freezes "
                          f"(budget.max_active={led.budget.max_active})", "close a freeze first")
        ledger.save(led.with_entry(entry), path)
    print(f"opened {entry.id} for {entry.prop_id}: signature {signature[:16]}, base {base[:12]}, "
          f"expires {ledger.format_when(expires)}")
    print("commit the ledger change on its own (a ledger-only commit) for review")
    return 0


def _proposals(data: Any, source: str) -> list[tuple[str, str]]:
    """(prop, reason) for each proposal in a seed-003 decision or a verdict/check decision."""
    if not isinstance(data, dict):
        raise ConfigError(source, 1, "a decision must be a JSON object", "pass the decision.json a check wrote")
    found = []
    for item in data.get("results") or []:
        if isinstance(item, dict) and item.get("decision") == "propose_freeze":
            found.append((str(item.get("prop")), str(item.get("reason", "shared_variant_fail"))))
    for item in data.get("verdicts") or data.get("properties") or []:
        if isinstance(item, dict) and item.get("propose_freeze") is True:
            found.append((str(item.get("prop")), str(item.get("reason", "shared_variant_fail"))))
    return sorted(set(found))


def propose(args: argparse.Namespace, now: dt.datetime) -> int:
    """Write one review ticket per proposal under .gate/tickets/; the ledger is never touched."""
    from mergegate.commands._engine_out import line
    from mergegate.records import fsutil

    source = Path(args.decision)
    if source.name == "decision.json" and (source.parent / packet.SEAL).exists():
        packet.verify(source.parent)
    try:
        raw = source.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{source}: no such decision file", "run `gate decide --out decision.json` first") from None
    data = jsonio.loads(raw, str(source), fix="pass a decision JSON")
    proposals = _proposals(data, str(source))
    if not proposals:
        print(f"{source}: nothing to propose (no propose_freeze)")
        return 1
    if args.tickets:
        directory = Path(args.tickets)
    else:
        try:
            directory = work_area(core.toplevel()) / "tickets"
        except UsageError:
            directory = Path(".gate") / "tickets"
    written = []
    for prop, reason in proposals:
        digest = hashlib.sha256(raw + b"\0" + prop.encode()).hexdigest()
        ticket = {
            "ticket": f"{prop}-{digest[:12]}", "status": "proposed", "prop": prop, "reason": reason,
            "decision_file": str(source.resolve()), "decision_sha256": hashlib.sha256(raw).hexdigest(),
            "created_at": ledger.format_when(now),
            "review": "a person checks the witness and the seed split, reproduces the failure on the base, "
                      "then runs: gate freeze open --prop " + prop + " --evidence DIR --reason ... "
                      "--expires 14d --paths ...",
        }
        target = directory / f"{ticket['ticket']}.json"
        fsutil.atomic_write(target, (json.dumps(ticket, indent=2) + "\n").encode())
        written.append(str(target))
    line("tickets", written)
    return 0
