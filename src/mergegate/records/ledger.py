"""The freeze ledger (``freeze_ledger.yaml``): schema, loading, lint, atomic writes.

A freeze is a time-boxed record that may turn one matching ``fail`` into
``inconclusive`` and nothing else.  An entry without an expiry is a standing
waiver, so loading refuses it, like an unknown key, a duplicate id or a bad date,
with the file, the line and the fix.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mergegate.errors import ConfigError
from mergegate.records import yamlio
from mergegate.rules import globs
from mergegate.rules.freezes import VERSION, Budget, Entry, Ledger, added

__all__ = ["VERSION", "Budget", "Entry", "Ledger", "added", "format_when", "lint", "load", "load_at", "parse",
           "parse_expiry", "parse_when", "render", "save", "to_json", "utcnow", "valid_id", "with_props"]

_ENTRY_KEYS = (
    "id", "prop_id", "signature", "fixture_digest", "base_revision", "paths", "reason",
    "witness", "opened_by", "opened_at", "expires_at", "allows_agent_rely", "test_nodeid",
)
_REQUIRED = (
    "id", "signature", "fixture_digest", "base_revision", "paths", "reason",
    "opened_by", "opened_at", "expires_at",
)
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


def valid_id(text: str) -> bool:
    """Whether ``text`` may be a freeze id (as in the file: a letter or digit, then letters, digits, ``_.-``)."""
    return _ID.fullmatch(text) is not None


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


# ---------------------------------------------------------------- dates

def parse_when(value: Any) -> dt.datetime:
    """A YAML date, datetime or ISO string as an aware UTC datetime (naive means UTC).

    Raises ValueError on anything else.
    """
    if isinstance(value, dt.datetime):
        when = value
    elif isinstance(value, dt.date):
        when = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        when = dt.datetime.fromisoformat(text)
    else:
        raise ValueError(f"{value!r} is not a date")
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    try:
        return when.astimezone(dt.UTC)
    except OverflowError:
        raise ValueError(f"{value!r} is out of range") from None


def format_when(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_DURATION = re.compile(r"(\d+)([dhw])")


def parse_expiry(text: str, now: dt.datetime) -> dt.datetime:
    """``14d``/``36h``/``2w`` from ``now``, or an ISO date/datetime.  ValueError otherwise."""
    match = _DURATION.fullmatch(text.strip())
    if match:
        n, unit = int(match.group(1)), match.group(2)
        try:
            return now + dt.timedelta(**{{"d": "days", "h": "hours", "w": "weeks"}[unit]: n})
        except OverflowError:
            raise ValueError(f"{text!r} is past the last date a clock can name") from None
    return parse_when(text)


# ---------------------------------------------------------------- parsing

def parse(text: str | bytes, source: str = "freeze_ledger.yaml") -> Ledger:
    """Validate a ledger text; every problem is a ConfigError with file, line and fix."""
    doc = yamlio.load(text, source)
    if doc.data is None:
        raise ConfigError(source, 1, "the freeze ledger is empty",
                          "write `version: 1`, a budget and `entries: []` (gate init does)")
    top = yamlio.check_keys(doc, (), doc.data, ("version", "budget", "entries"), required=("version",))
    if type(top["version"]) is not int or top["version"] != VERSION:  # `version: true` is not 1
        raise doc.error(("version",), f"unsupported ledger version {top['version']!r}", "write version: 1")
    budget = _budget(doc, top.get("budget"))
    raw_entries = top.get("entries")
    raw_entries = [] if raw_entries is None else raw_entries
    yamlio.expect(doc, ("entries",), raw_entries, list, "a list of freeze entries")
    entries: list[Entry] = []
    seen: dict[str, int | None] = {}
    for index, raw in enumerate(raw_entries):
        entry = _entry(doc, ("entries", index), raw)
        if entry.id in seen:
            raise doc.error(("entries", index, "id"),
                            f"duplicate freeze id {entry.id!r} (first at line {seen[entry.id]})",
                            "give each entry its own id")
        seen[entry.id] = entry.line
        entries.append(entry)
    return Ledger(VERSION, budget, tuple(entries), source)


def _budget(doc: yamlio.Doc, raw: Any) -> Budget:
    if raw is None:
        return Budget()
    values = yamlio.check_keys(doc, ("budget",), raw, ("max_active", "max_added_per_patch"))
    for key, value in values.items():
        yamlio.expect(doc, ("budget", key), value, int, "a whole number")
        if value < 0:
            raise doc.error(("budget", key), f"budget.{key} must not be negative", "write 0 or more")
    return Budget(**values)


def _entry(doc: yamlio.Doc, path: yamlio.Path, raw: Any) -> Entry:
    if isinstance(raw, dict) and raw.get("expires_at") is None:
        raise doc.error(path, "freeze entry has no expires_at: a freeze without expiry is a standing waiver",
                        "add expires_at: <ISO date in the future>, or delete the entry")
    values = yamlio.check_keys(doc, path, raw, _ENTRY_KEYS, required=_REQUIRED)
    if "prop_id" not in values and "test_nodeid" not in values:
        raise doc.error(path, "freeze entry names no property", "add prop_id: <catalog id> or test_nodeid: <node id>")
    strings: dict[str, str] = {}
    for key in ("id", "prop_id", "test_nodeid", "signature", "fixture_digest", "base_revision", "reason",
                "opened_by"):
        if key in ("prop_id", "test_nodeid") and key not in values:
            strings[key] = ""
            continue
        value = values[key]
        yamlio.expect(doc, (*path, key), value, str, "a string")
        if not value.strip():
            raise doc.error((*path, key), f"{key} must not be empty", f"write the {key}")
        strings[key] = value
    if not _ID.fullmatch(strings["id"]):
        raise doc.error((*path, "id"), f"bad freeze id {strings['id']!r}", "use letters, digits, '.', '_', '-'")
    witness = values.get("witness") or ""
    yamlio.expect(doc, (*path, "witness"), witness, str, "a string")
    paths = yamlio.str_list(doc, (*path, "paths"), values["paths"])
    if not paths:
        raise doc.error((*path, "paths"), "a freeze must name the paths it covers", "write paths: [src/...]")
    for i, pattern in enumerate(paths):
        if not globs.is_valid(pattern):
            raise doc.error((*path, "paths", i), f"bad glob {pattern!r}", "fix the pattern")
    rely = values.get("allows_agent_rely", False)
    yamlio.expect(doc, (*path, "allows_agent_rely"), rely, bool, "true or false")
    opened = _date(doc, (*path, "opened_at"), values["opened_at"])
    expires = _date(doc, (*path, "expires_at"), values["expires_at"])
    if expires <= opened:
        raise doc.error((*path, "expires_at"), "expires_at is not after opened_at",
                        "give an expiry later than the opening date")
    return Entry(paths=paths, witness=witness, allows_agent_rely=rely, line=doc.line(path),
                 opened_at=opened, expires_at=expires, **strings)


def with_props(ledger: Ledger, by_nodeid: Mapping[str, str], ids: Iterable[str]) -> Ledger:
    """Entries naming their test by ``test_nodeid`` get the catalog id whose node id it is.

    A node id no catalog entry has, or a ``prop_id`` that disagrees with its ``test_nodeid``,
    is a ConfigError (the ledger is read fail-closed).
    """
    known = frozenset(ids)
    out = []
    for e in ledger.entries:
        if not e.test_nodeid:
            out.append(e)
            continue
        prop = by_nodeid.get(e.test_nodeid)
        if prop is None:
            raise ConfigError(ledger.source, e.line, f"test_nodeid {e.test_nodeid!r} is no catalog entry's oracle",
                              "catalogue the test (gate catalog import) or name the entry's prop_id")
        if e.prop_id and e.prop_id != prop and e.prop_id in known:
            raise ConfigError(ledger.source, e.line, f"prop_id {e.prop_id!r} is not the entry for {e.test_nodeid!r}",
                              f"write prop_id: {prop} or drop one of the two")
        out.append(replace(e, prop_id=prop))
    return replace(ledger, entries=tuple(out))


def _date(doc: yamlio.Doc, path: yamlio.Path, value: Any) -> dt.datetime:
    try:
        return parse_when(value)
    except ValueError:
        raise doc.error(path, f"bad date {value!r}", 'write an ISO date such as "2026-09-26T09:00:00Z"') from None


def load(path: str | Path) -> Ledger:
    """The ledger file at ``path`` on disk; a missing file is a ConfigError."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(str(path), None, "no freeze ledger here", "run `gate init` to create one") from None
    return parse(data, str(path))


def load_at(rev: str | None, ledger_path: str, cwd: str | Path | None = None) -> Ledger:
    """The ledger at a revision (None: the index); absent means an empty ledger."""
    from mergegate.git import blobs

    data = blobs.file_at(rev, ledger_path, cwd)
    if data is None:
        return Ledger(source=ledger_path)
    return parse(data, ledger_path if rev is None else f"{ledger_path} (at {rev})")


# ---------------------------------------------------------------- writing

def render(ledger: Ledger) -> bytes:
    """The ledger as YAML text (stable key order; dates as quoted ISO strings)."""
    import yaml

    entries = [_entry_dict(e) for e in ledger.entries]
    data = {
        "version": ledger.version,
        "budget": {"max_active": ledger.budget.max_active,
                   "max_added_per_patch": ledger.budget.max_added_per_patch},
        "entries": entries,
    }
    text: str = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
    return text.encode()


def _entry_dict(e: Entry) -> dict[str, object]:
    return {
        "id": e.id, "prop_id": e.prop_id, **({"test_nodeid": e.test_nodeid} if e.test_nodeid else {}),
        "signature": e.signature,
        "fixture_digest": e.fixture_digest, "base_revision": e.base_revision,
        "paths": list(e.paths), "reason": e.reason, "witness": e.witness,
        "opened_by": e.opened_by, "opened_at": format_when(e.opened_at),
        "expires_at": format_when(e.expires_at), "allows_agent_rely": e.allows_agent_rely,
    }


def to_json(e: Entry, now: dt.datetime) -> dict[str, object]:
    data = _entry_dict(e)
    data["expired"] = e.expired(now)
    return data


def save(ledger: Ledger, path: str | Path) -> None:
    """Write atomically (temporary file, fsync, rename): never a half-written ledger."""
    from mergegate.records import fsutil

    fsutil.atomic_write(path, _header(Path(path)) + render(ledger))


def _header(path: Path) -> bytes:
    """The leading comment lines of the file being replaced: a person's notes survive a rewrite."""
    try:
        lines = path.read_bytes().splitlines(keepends=True)
    except OSError:
        return b""
    head = []
    for raw in lines:
        if not raw.startswith(b"#"):
            break
        head.append(raw)
    return b"".join(head)


# ---------------------------------------------------------------- lint

@dataclass(frozen=True)
class Problem:
    """One lint finding."""

    code: str  # expired | over_budget
    message: str
    entry: str | None = None
    line: int | None = None


def lint(ledger: Ledger, now: dt.datetime) -> tuple[Problem, ...]:
    """Expired entries still listed, and more active entries than ``budget.max_active``."""
    problems = [
        Problem("expired", f"freeze {e.id} ({e.prop_id}) expired at {format_when(e.expires_at)}",
                e.id, e.line)
        for e in ledger.expired(now)
    ]
    active = ledger.active(now)
    if len(active) > ledger.budget.max_active:
        problems.append(Problem(
            "over_budget",
            f"{len(active)} active freezes exceed budget.max_active={ledger.budget.max_active}",
        ))
    return tuple(problems)
