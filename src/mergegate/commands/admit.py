"""``gate admit PATCH.diff [--base REV]``: seed 002's admission judge on a patch file.

The four canaries run against the repository in the current directory, in
their fixed order, stopping at the first miss.  ``--checks`` adds the results
of other (non-canary) properties; a miss there may be held only by a usable
ledger row (same test id, overlapping paths, eligible, unexpired), read from
the base revision.  Exit 0 only for ``admit``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from mergegate.commands._engine_out import emit_json, line, table
from mergegate.errors import ConfigError, UsageError
from mergegate.git import core, gitpatch
from mergegate.pipeline import canaries as the_canaries
from mergegate.records import jsonio, ledger, repo
from mergegate.rules import admission
from mergegate.rules.patchparse import parse_diff


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("patch", metavar="PATCH.diff", help="the candidate patch ('-' reads standard input)")
    parser.add_argument("--base", default="HEAD", help="the pinned base revision (default: %(default)s)")
    parser.add_argument("--checks", metavar="FILE",
                        help='JSONL of other checks: {"test_id", "kind": PROP_PASS|PROP_FAIL|FREEZE_HIT, '
                             '"quarantine_eligible"}')
    parser.add_argument("--infra", action="store_true",
                        help="the draft channel failed (timeout, empty body, non-success status): reject as infra")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _read_patch(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(name).read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{name}: no such patch file", "pass the file the draft channel wrote") from None


def _checks(path: str | None, blob: str) -> list[admission.Check]:
    """Non-canary check rows; a row bound to another blob id belongs to another trial."""
    if path is None:
        return []
    checks = []
    for number, text in jsonio.lines(Path(path).read_bytes().decode("utf-8", "surrogateescape")):
        if not text.strip():
            continue
        data = jsonio.loads(text.encode("utf-8", "surrogateescape"), path, number)
        try:
            kind = admission.Kind(data["kind"])
            test_id = data["test_id"]
            eligible = data.get("quarantine_eligible", False)
        except (KeyError, ValueError, TypeError, AttributeError):
            raise ConfigError(path, number, "not a check row",
                              '{"test_id": "p", "kind": "PROP_FAIL", "quarantine_eligible": true}') from None
        if not isinstance(test_id, str) or test_id in admission.CANARIES or not isinstance(eligible, bool):
            raise ConfigError(path, number, f"bad check {test_id!r}", "canaries are run by the gate itself")
        if data.get("blob") not in (None, blob):
            raise ConfigError(path, number, f"check {test_id} was run on blob {str(data['blob'])[:12]}, "
                              f"not this patch's {blob[:12]}", "a changed diff is a new trial: rerun the checks")
        checks.append(admission.Check(test_id, False, eligible, kind))
    return checks


def run(args: argparse.Namespace) -> int:
    diff = _read_patch(args.patch)
    if args.infra or not diff.strip():
        result = admission.admit(diff, [], set(), channel_infra=args.infra)
        return _print(args, result, None, (), None)
    base = core.must_resolve(args.base)
    policy = repo.load_policy(base)
    canaries = the_canaries.run_canaries(diff, base, policy)
    others = _checks(args.checks, admission.blob_id(diff)) if all(c.ok for c in canaries) else []  # no partial credit
    checks = [c.check() for c in canaries] + others
    freeze_ids: set[str] = set()
    if others:
        led = ledger.load_at(base, policy.paths.ledger)
        reading = gitpatch.read(diff, base)  # the paths git applies, not our parser's reading
        touched = reading.parsed.touched if reading.parsed is not None else parse_diff(diff).touched
        freeze_ids = admission.usable_freeze_ids(led.entries, others, touched, ledger.utcnow())
    result = admission.admit(diff, checks, freeze_ids)
    seeds = hashlib.sha256(json.dumps(list(policy.verdict.seeds)).encode()).hexdigest()
    return _print(args, result, base, canaries, seeds)


def _print(args: argparse.Namespace, result: dict[str, object], base: str | None,
           canaries: tuple[admission.CanaryResult, ...], seeds: str | None) -> int:
    code = 0 if result["verdict"] == "admit" else 1
    if args.json:  # seed 002 step 9: blob id, base revision, hash of the seed list, verdict, check vector
        emit_json({**result, "base": base, "seed_list_sha256": seeds,
                   "checks": [{"test_id": c.name, "canary": True, "ok": c.ok, "detail": c.detail}
                              for c in canaries]})
        return code
    if canaries:
        ran = {c.name: c for c in canaries}
        table(("canary", "result", "detail"),
              [(n, ("pass" if ran[n].ok else "fail") if n in ran else "not run", ran[n].detail if n in ran else None)
               for n in admission.CANARIES], title=f"blob {result['blob']} against {base}")
    for key in ("reason", "canary_bad", "illegal_freeze", "uncovered_fail", "held"):
        if key in result and (result[key] or key == "reason"):
            line(key, result[key])
    line("verdict", result["verdict"])
    return code
