"""Rows and contracts read from files: strict JSONL runs, contract.json, fixture.digest; errors name file and line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mergegate.errors import ConfigError
from mergegate.records import jsonio
from mergegate.rules.differential import FAIL, PASS, Contract, Row


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
                                  "rerun both trees with the contract's seed schedule (shards' fresh seeds: "
                                  "pass gate check --fresh-seeds)")
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


def fresh_seeds(contract: Contract, source: str) -> tuple[int, ...]:
    """The contract's ``fresh_seeds`` (drawn by one check, run after ``seeds``); none when absent."""
    value = dict(contract.raw).get("fresh_seeds")
    if value is None:
        return ()
    if (not isinstance(value, list) or any(isinstance(s, bool) or not isinstance(s, int) for s in value)
            or len(set(value)) != len(value) or set(value) & set(contract.seeds)):
        raise ConfigError(source, 1, f"fresh_seeds must be a list of distinct integers not in seeds, not {value!r}",
                          'write "fresh_seeds": [] or the seeds the check drew')
    return tuple(value)
