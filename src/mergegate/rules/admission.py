"""Seed 002: the admission judge and its canaries' decisions (pure)."""

from __future__ import annotations

import ast
import datetime as dt
import hashlib
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from mergegate.rules import secretscan
from mergegate.rules.freezes import Entry
from mergegate.rules.patchparse import DiffError, ParsedDiff, parse_diff

CANARIES = ("parse_diff", "apply_check", "no_secret_marker", "public_signature")


class Kind(Enum):
    CANARY_FAIL = "CANARY_FAIL"
    PROP_FAIL = "PROP_FAIL"
    PROP_PASS = "PROP_PASS"
    FREEZE_HIT = "FREEZE_HIT"


@dataclass(frozen=True)
class Check:
    test_id: str
    canary: bool
    quarantine_eligible: bool
    kind: Kind


def blob_id(diff: bytes) -> str:
    """The content address of a patch: sha256 of its bytes."""
    return hashlib.sha256(diff).hexdigest()


def admit(diff: bytes, checks: Sequence[Check], freeze_ids: Collection[str],
          channel_infra: bool = False) -> dict[str, Any]:
    """Seed 002's judge, object shapes and words verbatim.

    ``{"blob","verdict":"reject","reason":"infra"|"empty_blob"}``,
    ``{"blob","verdict":"reject","canary_bad","illegal_freeze","uncovered_fail"}`` or
    ``{"blob","verdict":"admit"|"hold","held"}``.
    """
    if channel_infra:
        return {"blob": blob_id(diff) if diff.strip() else None, "verdict": "reject", "reason": "infra"}
    if not diff.strip():
        return {"blob": None, "verdict": "reject", "reason": "empty_blob"}
    bid = blob_id(diff)
    canary_bad: list[str] = []
    illegal: list[str] = []
    uncovered: list[str] = []
    held: list[str] = []
    for c in checks:
        if c.canary and c.kind != Kind.PROP_PASS:
            canary_bad.append(c.test_id)
            continue
        if c.kind == Kind.PROP_PASS:
            continue
        freeze_ok = (
            c.test_id in freeze_ids
            and c.quarantine_eligible
            and not c.canary
            and c.kind in (Kind.PROP_FAIL, Kind.FREEZE_HIT)
        )
        if freeze_ok:
            held.append(c.test_id)
        elif c.kind == Kind.FREEZE_HIT:
            illegal.append(c.test_id)
        else:
            uncovered.append(c.test_id)
    if canary_bad or illegal or uncovered:
        return {"blob": bid, "verdict": "reject", "canary_bad": canary_bad,
                "illegal_freeze": illegal, "uncovered_fail": uncovered}
    return {"blob": bid, "verdict": "hold" if held else "admit", "held": held}


def freeze_row_usable(entry: Entry, test_id: str, touched: Iterable[str],
                      quarantine_eligible: bool, now: dt.datetime) -> bool:
    """Seed 002 step 8: same test id, overlapping touched paths, eligible, unexpired."""
    return (entry.prop_id == test_id and quarantine_eligible
            and entry.covers_any(touched) and not entry.expired(now))


def usable_freeze_ids(entries: Iterable[Entry], checks: Iterable[Check], touched: Iterable[str],
                      now: dt.datetime) -> set[str]:
    """Test ids that some ledger row may hold (never a canary)."""
    touched = tuple(touched)
    rows = tuple(entries)
    return {c.test_id for c in checks if not c.canary and any(
        freeze_row_usable(e, c.test_id, touched, c.quarantine_eligible, now) for e in rows)}


@dataclass(frozen=True)
class CanaryResult:
    name: str
    ok: bool
    detail: str

    def check(self) -> Check:
        return Check(self.name, True, False, Kind.PROP_PASS if self.ok else Kind.CANARY_FAIL)


def canary_parse_diff(diff: bytes) -> tuple[CanaryResult, ParsedDiff | None]:
    try:
        parsed = parse_diff(diff)
    except DiffError as exc:
        return CanaryResult("parse_diff", False, str(exc)), None
    return CanaryResult("parse_diff", True, f"{len(parsed.files)} file(s)"), parsed


def canary_no_secret_marker(parsed: ParsedDiff, markers: Sequence[str],
                            binary_after: Mapping[str, bytes] | None = None,
                            cap: int = secretscan.MAX_SCAN_BYTES) -> CanaryResult:
    """No ADDED line matches a secret marker (removing a leaked key is fine).

    A binary file has no lines in the patch, so ``binary_after`` (its bytes after the
    patch) is scanned whole: a NUL byte must not hide a key from the scan.  The scan is
    linear (``secretscan``); a patch bringing more than ``cap`` bytes is a miss, unread.
    """
    binaries = binary_after or {}
    size = sum(len(raw) for f in parsed.files for _, raw in f.added) + sum(len(d) for d in binaries.values())
    reason = secretscan.over_cap(size, cap)
    if reason is not None:
        return CanaryResult("no_secret_marker", False, reason)
    patterns = [re.compile(m) for m in markers]
    for f in parsed.files:
        for number, raw in f.added:
            hit = secretscan.search(patterns, raw.decode("utf-8", "replace"))
            if hit is not None:
                where = f"{f.new_path or f.old_path}:{number}"
                return CanaryResult("no_secret_marker", False, f"{where} adds a line matching {hit.pattern!r}")
    for path, data in sorted(binaries.items()):
        hit = secretscan.search(patterns, data.decode("latin-1"))
        if hit is not None:
            return CanaryResult("no_secret_marker", False, f"binary file {path} holds a match for {hit.pattern!r}")
    return CanaryResult("no_secret_marker", True, f"{len(patterns)} marker(s), no match")


def public_names(source: bytes) -> frozenset[str]:
    """Public top-level functions and classes of a module (SyntaxError propagates)."""
    tree = ast.parse(source)
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return frozenset(n.name for n in tree.body if isinstance(n, kinds) and not n.name.startswith("_"))


def bound_names(source: bytes) -> frozenset[str]:
    """Every name a module binds at top level: defs, classes, assignments, imports.

    A public function that becomes ``add = _fast_add`` or ``from ._impl import add``
    is still there for callers, so it has not vanished.
    """
    tree = ast.parse(source)
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def canary_public_signature(before: Mapping[str, bytes | None],
                            after: Mapping[str, bytes | None]) -> CanaryResult:
    """Every public name of each module at base is still defined there at head.

    ``before``/``after``: ``{path: source or None (absent)}`` for the production
    ``.py`` files the patch touches.  A head module that does not parse is a miss.
    """
    lost: list[str] = []
    for path in sorted(before):
        old = before[path]
        if old is None:
            continue
        try:
            old_names = public_names(old)
        except (SyntaxError, ValueError):
            continue  # the base never offered a readable API here
        new = after.get(path)
        try:
            new_names = bound_names(new) if new is not None else frozenset()
        except (SyntaxError, ValueError) as exc:
            return CanaryResult("public_signature", False, f"{path} does not parse at head: {exc}")
        lost.extend(f"{path}::{name}" for name in sorted(old_names - new_names))
    if lost:
        return CanaryResult("public_signature", False, "public names vanished: " + ", ".join(lost))
    return CanaryResult("public_signature", True, f"{len(before)} module(s) keep their public names")
