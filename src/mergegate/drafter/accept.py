"""Install an accepted candidate: oracle file (0444), catalog entries, claim, re-signed manifest.

The result is left staged as an oracle-only change for the person to commit;
nothing is committed here.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from mergegate.drafter import journal, stage
from mergegate.drafter.queue import Meta
from mergegate.errors import UsageError
from mergegate.git import core, diffs
from mergegate.records import catalog, fsutil, manifest
from mergegate.records.policy import GUARDED, ORACLE, Policy


def oracle_dir(policy: Policy) -> str:
    """The literal directory in front of the first oracle glob (``oracles/properties``)."""
    for pattern in policy.paths.oracle:
        literal = re.split(r"[*?\[]", pattern, maxsplit=1)[0]
        prefix = literal[: literal.rfind("/")] if "/" in literal else ""
        if prefix:
            return prefix
    raise UsageError("paths.oracle has no directory to install into", "write e.g. oracle: [\"oracles/properties/**\"]")


def slug(target: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", target.lower()).strip("_")[:40] or "candidate"


def test_functions(code: bytes) -> list[str]:
    """Top-level ``test*`` functions of a candidate, in file order."""
    tree = ast.parse(code)
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]


def entry_text(pid: str, oracle: str, claim: str, covers: list[str]) -> bytes:
    """A catalog entry (JSON strings are valid YAML scalars, so quoting is exact)."""
    lines = [
        f"id: {pid}",
        f"oracle: {json.dumps(oracle)}",
        f"claim: {json.dumps(claim)}",
        "canary: false",
        "quarantine_eligible: false",
        "fixtures: []",
        "max_examples: 100",
        f"covers: {json.dumps(covers)}",
    ]
    return ("\n".join(lines) + "\n").encode()


def claimed_text(old: bytes, ids: list[str], source: str) -> bytes:
    """claimed.yaml with ``ids`` appended; its leading comments kept."""
    current = list(catalog.parse_claimed(old, source))
    comments = [line for line in old.decode().splitlines() if line.startswith("#")]
    merged = current + [i for i in ids if i not in current]
    return ("\n".join([*comments, "claimed:", *(f"  - {json.dumps(i)}" for i in merged)]) + "\n").encode()


def check_index(policy: Policy, top: Path) -> None:
    """Refuse when something other than oracle paths is already staged (no mixed commit)."""
    other = [c.path for c in diffs.staged_changes(top) if policy.classify(c.path) not in GUARDED]
    if other:
        raise UsageError(f"the index already holds non-oracle changes ({other[0]}, ...)",
                         "commit or unstage them first: an accepted candidate is an oracle-only commit")


def install(top: Path, policy: Policy, meta: Meta, code: bytes, entry_dir: Path | None = None) -> str:
    """Write, stage and sign; returns the oracle file's path.

    Everything is checked before the first write (``planned``).  With ``entry_dir`` (the queue
    entry), a journal of every path touched is written first (``journal``), so a killed install
    is rolled back by the next run.
    """
    check_index(policy, top)
    rel, files = planned(top, policy, meta, code)
    if entry_dir is not None:
        journal.begin(top, entry_dir, [*files, policy.paths.manifest])
    for path, (data, mode) in files.items():
        fsutil.atomic_write(top / path, data, mode=mode)
    core.out(["add", "--", *(f":(literal,top){p}" for p in files)], top)
    manifest.sign_staged(policy, top)
    return rel


def planned(top: Path, policy: Policy, meta: Meta, code: bytes) -> tuple[str, dict[str, tuple[bytes, int | None]]]:
    """The oracle path and every file the install writes (catalog entries, the oracle file read-only,
    claimed.yaml); refuses, before any write, a candidate over the limits or a path already taken."""
    tests = test_functions(code)
    why = stage.test_limits(tests)
    if why is not None:
        raise UsageError(f"candidate {meta.id[:12]}: {why}", "reject it; the drafter can make a smaller one")
    short = meta.id[:8]
    rel = f"{oracle_dir(policy)}/test_{slug(meta.target)}_{short}.py"
    if policy.classify(rel) != ORACLE:
        raise UsageError(f"{rel} would not be an oracle path", "check paths.oracle in gate.yaml")
    if (top / rel).exists():
        raise UsageError(f"{rel} already exists", "remove it or reject the candidate")
    cat_dir = policy.paths.catalog
    files: dict[str, tuple[bytes, int | None]] = {}
    ids = []
    for func in tests:
        pid = f"{func.removeprefix('test_').strip('_') or 'property'}-{short}"
        text = entry_text(pid, f"{rel}::{func}", f"drafted by {meta.drafter} for {meta.target}; accepted by a person",
                          [meta.target_path] if meta.target_path else [])
        catalog.parse_entry(text, f"{cat_dir}/{pid}.yaml")  # our own output must load
        if (top / cat_dir / f"{pid}.yaml").exists():
            raise UsageError(f"{cat_dir}/{pid}.yaml already exists", "remove it or reject the candidate")
        files[f"{cat_dir}/{pid}.yaml"] = (text, 0o644)
        ids.append(pid)
    files[rel] = (code, 0o444)
    claimed = top / cat_dir / catalog.CLAIMED_FILE
    if claimed.is_file():
        files[f"{cat_dir}/{catalog.CLAIMED_FILE}"] = (claimed_text(claimed.read_bytes(), ids, str(claimed)), None)
    return rel, files
