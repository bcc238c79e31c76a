"""``gate verdict``: base and head runs + ledger + claim set -> per-property verdicts and one decision.

Inputs (see docs/verdicts.md): JSONL run rows for the head (``--runs``) and the
base (``--base-runs``), a contract JSON with the seed schedule, the base
revision and the fixture digests, the freeze ledger, the claim set, and
optionally the catalog (canary / quarantine_eligible flags), the ids whose
oracle the patch edited, and the paths it touched.  ``--evidence DIR`` takes
them from an evidence directory.  Exit 0 only for ``admit``.
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

from mergegate.commands._engine_out import emit_json, line, table
from mergegate.errors import ConfigError, UsageError
from mergegate.records import jsonio, ledger, packet, runs
from mergegate.rules import differential as diff
from mergegate.rules import unified, verdicts


def configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--evidence", metavar="DIR", help="evidence directory: patch.jsonl, base.jsonl, contract.json, "
                                          "oracle_edited.json, fixture.digest")
    add("--runs", metavar="FILE", help="head run rows, JSONL (default: DIR/patch.jsonl)")
    add("--base-runs", metavar="FILE", help="base run rows, JSONL (default: DIR/base.jsonl)")
    add("--contract", metavar="FILE",
        help="contract JSON with seeds, base, fixture digests (default: DIR/contract.json)")
    add("--ledger", metavar="FILE", help="freeze ledger (default: ./freeze_ledger.yaml if present)")
    add("--catalog", metavar="DIR", help="catalog directory (canary, quarantine_eligible, claimed.yaml)")
    add("--claimed", metavar="FILE", help="claim set: claimed.yaml or a JSON list (default: the catalog's, "
                                          "else every property in the runs)")
    add("--oracle-edited", metavar="FILE", help="JSON list of property ids whose oracle the patch edited")
    add("--touched", metavar="PATH", action="append", default=None, help="a path the patch touches (repeat)")
    add("--base-revision", metavar="REV", help="the base revision the runs used (default: the contract's base)")
    add("--fixture-digest", metavar="DIGEST", help="fixture digest of both trees (default: contract/rows)")
    add("--agent", action="store_true", help="the patch is an agent's (freezes need allows_agent_rely)")
    add("--combiner", choices=verdicts.COMBINERS, default=None, help="default: the contract's, else strict")
    add("--now", metavar="ISO", help="judge expiry at this time (default: now)")
    add("--json", action="store_true", help="print one JSON object")


def _path(explicit: str | None, evidence: str | None, name: str) -> Path | None:
    if explicit:
        return Path(explicit)
    if evidence:
        return Path(evidence) / name
    return None


def _json_file(path: Path) -> Any:
    try:
        return jsonio.loads(path.read_bytes(), str(path))
    except FileNotFoundError:
        raise ConfigError(str(path), None, "no such file", "pass an existing file") from None


def _id_list(path: Path | None, key: str) -> tuple[str, ...] | None:
    if path is None:
        return None
    if path.suffix in (".yaml", ".yml"):
        from mergegate.records import catalog

        return catalog.parse_claimed(path.read_bytes(), str(path))
    data = _json_file(path)
    if isinstance(data, dict):
        data = data.get(key)
    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        raise ConfigError(str(path), 1, f"expected a JSON list of property ids (or {{\"{key}\": [...]}})",
                          'write ["prop.a", "prop.b"]')
    return tuple(data)


def _catalog(directory: str | None) -> Any:
    if directory is None:
        return None
    from mergegate.records import catalog

    root = Path(directory)
    if not root.is_dir():
        raise UsageError(f"{root}: no such catalog directory", "pass the directory with <id>.yaml files")
    files = {f"{root.as_posix()}/{p.name}": p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}
    return catalog.build(files, root.as_posix())


def _digest(raw: dict[str, Any], which: str, rows: list[diff.Row], evidence: str | None) -> str | None:
    found = diff.side_digest(raw, which)
    if found:
        return found
    if evidence and (Path(evidence) / "fixture.digest").is_file():
        return runs.parse_digest_file((Path(evidence) / "fixture.digest").read_text()).get(which)
    digests = {r.fixture_digest for r in rows}
    return digests.pop() if len(digests) == 1 else None  # rows that disagree give no digest: freezes void


def _split_paths(path: Path | None) -> tuple[str, ...]:
    """The touched paths a check recorded: ``oracle_edited.json``'s ``split`` (one list per path class)."""
    if path is None or not path.exists():
        return ()
    data = _json_file(path)
    split = data.get("split") if isinstance(data, dict) else None
    if not isinstance(split, dict):
        return ()
    from mergegate.records.policy import CLASSES

    return tuple(sorted({p for c in CLASSES for p in split.get(c) or () if isinstance(p, str)}))


def _touched(given: list[str] | None, in_contract: Any, edited_path: Path | None) -> tuple[str, ...]:
    if given is not None:
        return tuple(given)
    if isinstance(in_contract, str):
        return (in_contract,)
    if isinstance(in_contract, list) and in_contract:
        return tuple(str(t) for t in in_contract)
    return _split_paths(edited_path)


def when(text: str | None) -> dt.datetime:
    """``--now`` (tests judge expiry at a fixed time), else the clock."""
    if not text:
        return ledger.utcnow()
    try:
        return ledger.parse_when(text)
    except ValueError:
        raise UsageError(f"bad --now {text!r}", "write an ISO date such as 2026-09-20T00:00:00Z") from None


def _summary(rows: list[diff.Row], prop: str) -> str:
    mine = [r for r in rows if r.prop == prop]
    if not mine:
        return "missing"
    fails = sum(r.status == "fail" for r in mine)
    return f"fail {fails}/{len(mine)}" if fails else f"pass {len(mine)}/{len(mine)}"


def run(args: argparse.Namespace) -> int:
    ev = args.evidence
    if ev:
        if not Path(ev).is_dir():
            raise UsageError(f"{ev}: no such evidence directory", "pass the directory a check wrote")
        packet.verify(ev)  # a mixed or torn packet is refused, never half-read
    contract_path = _path(args.contract, ev, "contract.json")
    if contract_path is None:
        raise UsageError("no contract", "pass --contract FILE or --evidence DIR")
    contract = runs.load_contract(contract_path)
    raw = dict(contract.raw)
    head_path, base_path = _path(args.runs, ev, "patch.jsonl"), _path(args.base_runs, ev, "base.jsonl")
    if head_path is None or base_path is None:
        raise UsageError("no run files", "pass --runs and --base-runs, or --evidence DIR")
    fresh = runs.fresh_seeds(contract, str(contract_path))
    head_rows = runs.load_jsonl(head_path, (*contract.seeds, *fresh))
    base_rows = runs.load_jsonl(base_path, (*contract.seeds, *fresh))
    now = when(args.now)
    led = _ledger(args.ledger)
    cat = _catalog(args.catalog)
    edited_path = _path(args.oracle_edited, ev, "oracle_edited.json")
    edited = _id_list(edited_path, "oracle_edited") if edited_path and edited_path.exists() else ()
    claimed = _id_list(Path(args.claimed), "claimed") if args.claimed else None
    if cat is not None:
        props = [(p.id, p.canary, p.quarantine_eligible) for p in cat.properties]
        claimed = cat.claimed if claimed is None else claimed
    else:
        names = {r.prop for r in head_rows} | {r.prop for r in base_rows} | set(contract.properties)
        props = [(p, False, False) for p in sorted(names | set(claimed or ()))]
    if claimed is None:
        claimed = tuple(p for p, _, _ in props)
    ctx = unified.RunContext(
        base_revision=str(args.base_revision or raw.get("base_revision") or raw.get("base") or ""),
        base_fixture_digest=args.fixture_digest or _digest(raw, "base", base_rows, ev),
        head_fixture_digest=args.fixture_digest or _digest(raw, "head", head_rows, ev),
        touched_paths=_touched(args.touched, raw.get("touched"), edited_path),
        agent=args.agent or raw.get("agent") is True, now=now,
    )
    results = unified.evaluate(props, base_rows, head_rows, contract.seeds, oracle_edited=set(edited or ()),
                               freezes=led.entries, ctx=ctx, fresh=fresh)
    combiner = args.combiner or raw.get("combiner") or verdicts.STRICT
    if combiner not in verdicts.COMBINERS:
        raise ConfigError(str(contract_path), None, f"unknown combiner {combiner!r}", "write strict or lenient")
    combined = verdicts.combine(unified.verdict_map(results), claimed, combiner)
    _print(args, results, combined, combiner, claimed, base_rows, head_rows)
    return 0 if combined.admitted else 1


def _ledger(path: str | None) -> ledger.Ledger:
    if path:
        return ledger.load(path)
    default = Path("freeze_ledger.yaml")
    return ledger.load(default) if default.is_file() else ledger.Ledger()


def _print(args: argparse.Namespace, results: tuple[unified.PropertyVerdict, ...], combined: verdicts.Combined,
           combiner: str, claimed: tuple[str, ...], base_rows: list[diff.Row], head_rows: list[diff.Row]) -> None:
    if args.json:
        emit_json({**combined.to_dict(), "combiner": combiner, "claimed": sorted(claimed),
                   "verdicts": [r.to_dict() for r in results]})
        return
    rows = []
    for r in results:
        note = "propose_freeze" if r.propose_freeze else ("spec review" if r.review else "")
        rows.append((r.prop, _summary(base_rows, r.prop), _summary(head_rows, r.prop), r.verdict, r.reason,
                     r.freeze_id, note or None))
    table(("property", "base", "head", "verdict", "reason", "freeze", "note"), rows)
    line("decision", f"{combined.decision} ({combined.reason}, combiner {combiner})")
    for r in results:
        for fid, codes in r.blockers:  # say why a registered freeze did not soften a fail
            print(f"  {r.prop}: freeze {fid} not applied: {', '.join(codes)}")
