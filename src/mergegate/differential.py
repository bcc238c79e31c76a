"""Seed 003: the parent/patch differential decision (pure), plus JSONL and contract loading.

``decide`` is the seed's scorer with two hardenings that keep its table:
rows are grouped, not overwritten, so the result does not depend on row order
(a duplicated ``(prop, seed)`` is a fail if any copy failed), and the contract
may list properties, so a property absent from both files is ``missing_seed``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mergegate import jsonio
from mergegate.errors import ConfigError

PASS, FAIL = "pass", "fail"
ACCEPT, REJECT, PROPOSE_FREEZE = "accept", "reject", "propose_freeze"

BOTH_PASS = "both_pass"
REGRESSION = "regression"
PARENT_FAIL_CLEARED = "parent_fail_cleared"
WITNESS_MISMATCH = "witness_mismatch"
UNIFORM_FAIL = "uniform_fail"
SHARED_VARIANT_FAIL = "shared_variant_fail"
MISSING_SEED = "missing_seed"
INCOMPLETE_CONTRACT = "incomplete_contract"
REASONS = (BOTH_PASS, REGRESSION, PARENT_FAIL_CLEARED, WITNESS_MISMATCH, UNIFORM_FAIL,
           SHARED_VARIANT_FAIL, MISSING_SEED, INCOMPLETE_CONTRACT)


@dataclass(frozen=True)
class Row:
    """One JSONL line: one property at one seed on one tree.

    ``signature`` and ``fixture_digest`` are optional extras a runner may add
    (seed 000's freeze match keys); ``decide`` reads only prop, seed, status, witness.
    """

    prop: str
    seed: int
    status: str
    witness: str = ""
    signature: str | None = None
    fixture_digest: str | None = None


@dataclass(frozen=True)
class PropResult:
    prop: str
    decision: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"prop": self.prop, "decision": self.decision, "reason": self.reason}


@dataclass(frozen=True)
class Decision:
    """Seed 003's decision object; ``reason`` only for ``incomplete_contract``."""

    decision: str
    results: tuple[PropResult, ...]
    reason: str | None = None

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"decision": self.decision}
        if self.reason is not None:
            data["reason"] = self.reason
        data["results"] = [r.to_dict() for r in self.results]
        return data


@dataclass(frozen=True)
class Contract:
    """What both runs must share.  Only ``seeds`` is required."""

    seeds: tuple[int, ...]
    properties: tuple[str, ...] = ()
    raw: tuple[tuple[str, Any], ...] = ()


# ---------------------------------------------------------------- the decision

def group(rows: Iterable[Row]) -> dict[str, list[Row]]:
    """Rows by property, in their original order (so one pass, not one scan per property)."""
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(r.prop, []).append(r)
    return out


def seed_split(statuses: Iterable[str]) -> bool:
    """Both pass and fail in one side's schedule."""
    seen = set(statuses)
    return PASS in seen and FAIL in seen


def side(rows: Sequence[Row], prop: str, seeds: Sequence[int]) -> list[str] | None:
    """The status per seed of ``prop`` (fail if any duplicate failed), or None if a seed is missing."""
    by_seed: dict[int, str] = {}
    for r in rows:
        if r.prop == prop and r.seed in seeds:
            by_seed[r.seed] = FAIL if FAIL in (by_seed.get(r.seed), r.status) else r.status
    if any(s not in by_seed for s in seeds):
        return None
    return [by_seed[s] for s in seeds]


def witnesses(rows: Sequence[Row], prop: str, seeds: Sequence[int]) -> list[str]:
    return sorted({r.witness for r in rows if r.prop == prop and r.seed in seeds and r.status == FAIL})


def classify(parent: Sequence[Row], patch: Sequence[Row], prop: str, seeds: Sequence[int]) -> PropResult:
    """Seed 003's table for one property."""
    p_st, c_st = side(parent, prop, seeds), side(patch, prop, seeds)
    if p_st is None or c_st is None or not seeds:
        return PropResult(prop, REJECT, MISSING_SEED)
    p_status = FAIL if FAIL in p_st else PASS
    c_status = FAIL if FAIL in c_st else PASS
    if p_status == PASS and c_status == PASS:
        return PropResult(prop, ACCEPT, BOTH_PASS)
    if p_status == PASS:
        return PropResult(prop, REJECT, REGRESSION)
    if c_status == PASS:
        return PropResult(prop, ACCEPT, PARENT_FAIL_CLEARED)
    if witnesses(parent, prop, seeds) != witnesses(patch, prop, seeds):
        return PropResult(prop, REJECT, WITNESS_MISMATCH)
    if not (seed_split(p_st) or seed_split(c_st)):
        return PropResult(prop, REJECT, UNIFORM_FAIL)
    return PropResult(prop, PROPOSE_FREEZE, SHARED_VARIANT_FAIL)


def decide(parent: Sequence[Row], patch: Sequence[Row], seeds: Sequence[int],
           properties: Iterable[str] = ()) -> Decision:
    """Seed 003's ``decide``: one regression (or any reject) rejects the whole patch.

    An empty side is ``reject/incomplete_contract``.  Invariant under row order.
    """
    if not parent or not patch:
        return Decision(REJECT, (), INCOMPLETE_CONTRACT)
    seeds = list(dict.fromkeys(int(s) for s in seeds))
    by_parent, by_patch = group(parent), group(patch)
    props = sorted(set(by_parent) | set(by_patch) | set(properties))
    results = tuple(classify(by_parent.get(p, ()), by_patch.get(p, ()), p, seeds) for p in props)
    if any(r.decision == REJECT for r in results):
        return Decision(REJECT, results)
    if any(r.decision == PROPOSE_FREEZE for r in results):
        return Decision(PROPOSE_FREEZE, results)
    return Decision(ACCEPT, results)


# ---------------------------------------------------------------- loading

def parse_jsonl(text: str, source: str, seeds: Sequence[int] | None = None) -> list[Row]:
    """Validate JSONL rows; a bad line is a ConfigError naming ``source:line``.

    With ``seeds``, a row whose seed is not in the contract is refused too: it
    cites another contract, and two logs without a shared contract cannot be scored.
    """
    rows: list[Row] = []
    for number, line in jsonio.lines(text):
        if line.strip():
            row = parse_row(line, source, number)
            if seeds is not None and row.seed not in seeds:
                raise ConfigError(source, number, f"seed {row.seed} is not in the contract's seeds {list(seeds)}",
                                  "rerun both trees with the contract's seed schedule")
            rows.append(row)
    return rows


def parse_row(line: str, source: str, number: int) -> Row:
    data = jsonio.loads(line, source, number, "write one JSON object per line")
    if not isinstance(data, dict):
        raise ConfigError(source, number, "a row must be a JSON object", 'write {"prop":..,"seed":..,"status":..}')
    missing = [k for k in ("prop", "seed", "status") if k not in data]
    if missing:
        raise ConfigError(source, number, f"row lacks {', '.join(missing)}",
                          'every row needs "prop", "seed" and "status"')
    prop, seed, status = data["prop"], data["seed"], data["status"]
    if not isinstance(prop, str) or not prop:
        raise ConfigError(source, number, "prop must be a non-empty string", 'write "prop": "prop.id"')
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(source, number, f"seed must be an integer, not {seed!r}", 'write "seed": 11')
    if status not in (PASS, FAIL):
        raise ConfigError(source, number, f"status must be pass or fail, not {status!r}",
                          'a run that did not finish is written as "fail" with a witness')
    witness = data.get("witness") or ""
    if not isinstance(witness, str):
        raise ConfigError(source, number, "witness must be a string", 'write "witness": "Type:assertion"')
    return Row(prop, seed, status, witness, _opt_str(data, "signature", source, number),
               _opt_str(data, "fixture_digest", source, number))


def _opt_str(data: dict[str, Any], key: str, source: str, number: int) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(source, number, f"{key} must be a string", f'write "{key}": "..."')
    return value or None


def load_jsonl(path: str | Path, seeds: Sequence[int] | None = None) -> list[Row]:
    """Rows of a JSONL run file (validated as ``parse_jsonl``); a missing file is a ConfigError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(str(path), None, "no such run file", "pass the JSONL file a run wrote") from None
    except UnicodeDecodeError:
        raise ConfigError(str(path), None, "not UTF-8 text", "write JSONL in UTF-8") from None
    return parse_jsonl(text, str(path), seeds)


def parse_contract(text: str, source: str) -> Contract:
    """``{"seeds": [..], "properties": [..]?, ...}``; other keys are kept, not judged here."""
    data = jsonio.loads(text, source)
    if not isinstance(data, dict) or "seeds" not in data:
        raise ConfigError(source, 1, "the contract needs a seeds list", 'write {"seeds": [11, 29, 47]}')
    seeds = data["seeds"]
    if (not isinstance(seeds, list) or not seeds
            or any(isinstance(s, bool) or not isinstance(s, int) for s in seeds)
            or len(set(seeds)) != len(seeds)):
        raise ConfigError(source, 1, f"seeds must be a non-empty list of distinct integers, not {seeds!r}",
                          'write "seeds": [11, 29, 47]')
    props = data.get("properties") or []
    names = tuple(_prop_name(p, source) for p in props) if isinstance(props, list) else None
    if names is None:
        raise ConfigError(source, 1, "properties must be a list", 'write "properties": [{"id": ...}]')
    return Contract(tuple(seeds), names, tuple(sorted((str(k), v) for k, v in data.items())))


def _prop_name(item: Any, source: str) -> str:
    if isinstance(item, str) and item:
        return item
    if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"]:
        return str(item["id"])
    raise ConfigError(source, 1, f"bad property {item!r} in the contract", 'write {"id": "prop.x"} or "prop.x"')


def load_contract(path: str | Path) -> Contract:
    path = Path(path)
    try:
        return parse_contract(path.read_bytes().decode("utf-8"), str(path))
    except UnicodeDecodeError:
        raise ConfigError(str(path), None, "not UTF-8 text", "write the contract in UTF-8") from None
    except FileNotFoundError:
        raise ConfigError(str(path), None, "no contract file", 'write {"seeds": [...]} there') from None


def parse_digest_file(text: str) -> dict[str, str]:
    """``fixture.digest``: one bare digest (seed 000's ``tee``), or ``base <d>``/``head <d>`` lines.

    A bare digest is returned for both sides.
    """
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    if len(lines) == 1 and len(lines[0]) == 1:
        return {"base": lines[0][0], "head": lines[0][0]}
    return {parts[0]: parts[1] for parts in lines if len(parts) == 2}


def side_digest(contract: dict[str, Any], side_name: str) -> str | None:
    """A side's fixture digest from a contract: ``fixture_digest`` as a string or ``{"base","head"}``,
    or ``<side>_fixture_digest``."""
    value = contract.get(f"{side_name}_fixture_digest")
    if isinstance(value, str) and value:
        return value
    value = contract.get("fixture_digest")
    if isinstance(value, dict):
        value = value.get(side_name)
    return value if isinstance(value, str) and value else None
