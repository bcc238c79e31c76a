"""One JSONL row per property x seed x tree, made from what the evaluator reported."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from mergegate.records import fsutil
from mergegate.records.policy import FIXTURE, Policy
from mergegate.rules.differential import RAN, Decisions
from mergegate.runner import signature

SEALED, SHARED = "sealed", "shared"


@dataclass(frozen=True)
class Row:
    """One JSONL line: one property at one seed on one tree."""

    prop: str
    seed: int
    status: str
    witness: str = ""
    signature: str | None = None
    spec_hash: str = ""
    fixture_closure: str = ""
    fixture_digest: str = ""
    examples: int = 0
    duration_s: float = 0.0
    error: str | None = None
    fixtures_opened: tuple[str, ...] = ()
    undeclared_fixtures: tuple[str, ...] = ()
    load_error: bool = False
    isolation: str = ""  # sealed | shared ("" in rows from elsewhere that do not say: never sealed)
    containment: str = ""  # bwrap | none
    falsifying_example: str | None = None  # Hypothesis's own text for the minimal failing example
    reproduce: str | None = None  # one command that runs this property at this seed on this tree again
    production_calls: int = 0  # sealed: requests the run made of production (calls, attributes, operators)
    production_s: float = 0.0  # sealed: seconds of duration_s spent in them (production's work and the round trips)
    revision: str = ""  # the commit the run checked out ("" for a directory run: gate run --tree)
    tree: str = ""  # that commit's tree: rows are accepted only for the tree being judged
    items: tuple[tuple[str, str], ...] = ()  # (node id, outcome) of each item the run collected (trusted/observe.py)
    decisions: tuple[Decisions, ...] = ()  # each Hypothesis item's example and step logs
    # Change coverage: (path, lines) of the changed production files this run executed, as the
    # subject reported it (production's own report); None: not measured (base, shared, crashed).
    lines_run: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    lines_at_import: tuple[tuple[str, tuple[int, ...]], ...] = ()  # of those, run importing production

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "prop": self.prop, "seed": self.seed, "status": self.status, "witness": self.witness,
            "signature": self.signature, "spec_hash": self.spec_hash,
            "fixture_closure": self.fixture_closure, "fixture_digest": self.fixture_digest,
            "examples": self.examples, "duration_s": self.duration_s,
            "isolation": self.isolation, "containment": self.containment,
        }
        if self.error:
            data["error"] = self.error
        if self.falsifying_example:
            data["falsifying_example"] = self.falsifying_example
        if self.reproduce:
            data["reproduce"] = self.reproduce
        if self.fixtures_opened:
            data["fixtures_opened"] = list(self.fixtures_opened)
        if self.undeclared_fixtures:
            data["undeclared_fixtures"] = list(self.undeclared_fixtures)
        if self.production_calls:
            data["production_calls"], data["production_s"] = self.production_calls, self.production_s
        if self.tree:
            data["revision"], data["tree"] = self.revision, self.tree
        if self.items:
            data["items"] = dict(self.items)
        if self.decisions:
            data["decisions"] = {d.nodeid: {"cases": d.cases, "steps": d.steps, "rejected": {
                "cases": d.rejected_cases, "steps": d.rejected_steps}} for d in self.decisions}
        if self.lines_run is not None:
            data["lines_run"] = {path: list(lines) for path, lines in self.lines_run}
            data["lines_at_import"] = {path: list(lines) for path, lines in self.lines_at_import}
        return data


_FIELDS = frozenset(f.name for f in fields(Row))


def replaced(row: Row, **changes: Any) -> Row:
    """``dataclasses.replace(row, **changes)`` at a fifth of its cost (a check copies every row two or three
    times: a plain test's row to each seed, then each with its revision and tree): a Row has no ``__post_init__``
    and no field outside ``__init__``, so a copy of its fields with ``changes`` over them is the same row."""
    unknown = changes.keys() - _FIELDS
    if unknown:
        raise TypeError(f"Row has no field {sorted(unknown)[0]!r}")
    new = object.__new__(Row)
    state = new.__dict__
    state.update(row.__dict__)
    state.update(changes)
    return new


LOAD_ERROR = "loading the oracle"


def make_row(prop: Any, seed: int, out: dict[str, Any], policy: Policy, *, spec_hash: str, closure: str,
             fixture_digest: str, roots: Sequence[str], isolation: str, containment: str) -> Row:
    """A row from the evaluator's outcome ``out``; ``prop`` is the catalog entry."""
    status = "pass" if out.get("status") == "pass" else "fail"
    witness = str(out.get("witness") or "")
    error = out.get("error")
    opened = tuple(sorted({p for p in out.get("opened") or () if policy.classify(p) == FIXTURE}))
    undeclared = tuple(p for p in opened if not prop.uses_fixture(p))
    if undeclared:
        # The fixture closure hash covers only declared fixtures: bytes the property read
        # but did not declare are outside the contract, so the run cannot vouch for them.
        status = "fail"
        note = f"opened undeclared fixture(s): {', '.join(undeclared)}"
        error = f"{error}; {note}" if error else note
        if not witness:
            witness = f"UndeclaredFixture:{prop.oracle_file}"
    sig = falsifying = None
    if status == "fail":
        sig = signature.signature(prop.id, witness, str(out.get("counterexample") or ""), roots)
        if error:
            error = signature.normalise(str(error), roots)
        falsifying = signature.normalise(str(out.get("falsifying_example") or ""), roots) or None
    return Row(
        prop=prop.id, seed=seed, status=status, witness=witness, signature=sig,
        spec_hash=spec_hash, fixture_closure=closure, fixture_digest=fixture_digest,
        examples=int(out.get("examples") or 0), duration_s=float(out.get("duration_s") or 0.0),
        error=error, fixtures_opened=opened, undeclared_fixtures=undeclared,
        load_error=str(error or "").startswith(LOAD_ERROR), isolation=isolation, containment=containment,
        falsifying_example=falsifying, production_calls=_count(out.get("calls")),
        production_s=_seconds(out.get("production_s")), items=items_of(out.get("items")),
        decisions=decisions_of(out.get("decisions")),
        lines_run=lines_run(out.get("lines_run")),
        lines_at_import=lines_run(out.get("lines_at_import")) or (),
    )


OUTCOMES = (*RAN, "skipped", "xfailed", "notrun")


def items_of(value: Any) -> tuple[tuple[str, str], ...]:
    """A run's ``{node id: outcome}`` as sorted pairs; anything malformed is dropped (the item did not run)."""
    if not isinstance(value, dict):
        return ()
    return tuple(sorted((k, v) for k, v in value.items() if type(k) is str and type(v) is str and v in OUTCOMES))


def decisions_of(value: Any) -> tuple[Decisions, ...]:
    """A run's ``{node id: {"cases", "steps", "rejected"}}``; a malformed log is read as empty."""
    if not isinstance(value, dict):
        return ()
    out = []
    for nodeid, log in sorted(value.items(), key=lambda kv: str(kv[0])):
        if type(nodeid) is not str or not isinstance(log, dict):
            continue
        rejected = log.get("rejected")
        rejected = rejected if isinstance(rejected, dict) else {}
        out.append(Decisions(nodeid, _text(log.get("cases")), _text(log.get("steps")),
                             _count(rejected.get("cases")), _count(rejected.get("steps"))))
    return tuple(out)


def _text(value: Any) -> str:
    return value if type(value) is str else ""


def lines_run(value: Any) -> tuple[tuple[str, tuple[int, ...]], ...] | None:
    """A run's ``{path: [line, ...]}`` as sorted pairs; None for anything that is not that."""
    if type(value) is not dict:
        return None
    pairs = []
    for path, lines in value.items():
        if type(path) is not str or type(lines) is not list or not all(type(n) is int and n > 0 for n in lines):
            return None
        pairs.append((path, tuple(sorted(set(lines)))))
    return tuple(sorted(pairs))


def _count(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0


def _seconds(value: Any) -> float:
    return round(float(value), 4) if type(value) in (int, float) and 0 <= value < 1e6 else 0.0


def reproduce_command(prop: str, seed: int, *, rev: str | None = None, tree: str | None = None,
                      trusted: str | None = None) -> str:
    """``gate run`` of one property at one seed, on the revision (or tree) it failed on, the oracle from ``trusted``."""
    import shlex

    where = f"--rev {shlex.quote(rev[:12])}" if rev else f"--tree {shlex.quote(tree or '.')}"
    oracle = f" --trusted {shlex.quote(trusted[:12])}" if trusted and trusted != rev else ""
    return f"gate run {where}{oracle} --only {shlex.quote(prop)} --seeds {seed}"


def with_reproduce(rows: Sequence[Row], *, rev: str | None = None, tree: str | None = None,
                   trusted: str | None = None) -> list[Row]:
    """The rows, each failing one with the command that reproduces it."""
    return [replaced(r, reproduce=reproduce_command(r.prop, r.seed, rev=rev, tree=tree, trusted=trusted))
            if r.status == "fail" and not r.reproduce else r for r in rows]


def write_jsonl(rows: Sequence[Row], path: str | Path) -> None:
    """Rows as JSONL, sorted by (prop, seed), written atomically."""
    ordered = sorted(rows, key=lambda r: (r.prop, r.seed))
    data = "".join(json.dumps(r.to_json(), sort_keys=True) + "\n" for r in ordered)
    fsutil.atomic_write(path, data.encode())


def row_from_json(data: dict[str, Any]) -> Row:
    """A row read back from JSONL (already validated by ``differential.parse_jsonl``)."""
    return Row(
        prop=str(data["prop"]), seed=int(data["seed"]), status=str(data["status"]),
        witness=str(data.get("witness") or ""), signature=data.get("signature") or None,
        spec_hash=str(data.get("spec_hash") or ""), fixture_closure=str(data.get("fixture_closure") or ""),
        fixture_digest=str(data.get("fixture_digest") or ""), examples=int(data.get("examples") or 0),
        duration_s=float(data.get("duration_s") or 0.0), error=data.get("error") or None,
        fixtures_opened=tuple(data.get("fixtures_opened") or ()),
        undeclared_fixtures=tuple(data.get("undeclared_fixtures") or ()),
        load_error=str(data.get("error") or "").startswith(LOAD_ERROR),
        isolation=str(data.get("isolation") or ""), containment=str(data.get("containment") or ""),
        falsifying_example=str(data.get("falsifying_example") or "") or None,
        reproduce=str(data.get("reproduce") or "") or None,
        production_calls=_count(data.get("production_calls")), production_s=_seconds(data.get("production_s")),
        revision=_text(data.get("revision")), tree=_text(data.get("tree")),
        items=items_of(data.get("items")), decisions=decisions_of(data.get("decisions")),
        lines_run=lines_run(data.get("lines_run")), lines_at_import=lines_run(data.get("lines_at_import")) or (),
    )


def bound(rows: Sequence[Row], revision: str, tree: str) -> list[Row]:
    """The rows, each naming the revision and tree it ran on."""
    return [replaced(r, revision=revision, tree=tree) for r in rows]
