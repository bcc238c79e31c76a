"""Host-side validation of what the container staged.  The container is not trusted.

Files are read as data only: no symlink is followed, nothing but a regular file
is opened, every size is capped, names must be the keys the host issued, each
candidate must parse and must not use ``st.nothing()``.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mergegate import textsafe

MAX_CANDIDATE_BYTES = 64 * 1024
MAX_RESULTS_BYTES = 1024 * 1024
MAX_WITNESS = 4000
KEY = re.compile(r"c[0-9]{3}")
RESULTS = "results.json"
TRIAGE_RESULTS = ("pass", "fail", "error")


@dataclass(frozen=True)
class Triage:
    """The sandbox's report on one candidate (advisory: the person decides)."""

    result: str  # pass | fail | error | not_run
    witness: str = ""
    tests: tuple[tuple[str, str], ...] = ()
    elapsed_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"result": self.result, "witness": self.witness, "tests": dict(self.tests),
                "elapsed_s": self.elapsed_s}


@dataclass(frozen=True)
class Staged:
    """A candidate that passed host-side validation."""

    key: str
    code: bytes
    triage: Triage

    @property
    def id(self) -> str:
        return hashlib.sha256(self.code).hexdigest()


@dataclass(frozen=True)
class Rejected:
    key: str
    reason: str


def _uses_nothing(tree: ast.Module) -> int | None:
    """Line of the first ``st.nothing()`` / ``nothing()`` call, if any."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name == "nothing":
                return node.lineno
    return None


def check_code(code: bytes) -> str | None:
    """Why this candidate is refused, or None.  Pure."""
    if not code.strip():
        return "empty draft"
    if len(code) > MAX_CANDIDATE_BYTES:
        return f"draft is {len(code)} bytes, over the {MAX_CANDIDATE_BYTES} byte cap"
    try:
        text = code.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"draft does not parse: UnicodeDecodeError: {exc}"
    unsafe = textsafe.first_unsafe(text)
    if unsafe is not None:
        row, col, shown = unsafe
        return (f"draft contains a terminal control or invisible character ({shown} at line {row}, column {col}): "
                "what a person reads would not be what runs")
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"draft does not parse: {type(exc).__name__}: {getattr(exc, 'msg', exc)}"
    line = _uses_nothing(tree)
    if line is not None:
        return (f"draft uses st.nothing() at line {line}: the drafter found no strategy for an argument, "
                "so the property could never run an example")
    if not any(isinstance(n, ast.FunctionDef) and n.name.startswith("test") for n in tree.body):
        return "draft defines no top-level test_* function"
    return None


def read_capped(path: Path, cap: int) -> bytes | None:
    """A regular file's bytes, never following a symlink or blocking on a FIFO; None if refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > cap:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(cap + 1)
        return data if len(data) <= cap else None
    finally:
        os.close(fd)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def parse_triage(raw: Any) -> Triage:
    """Sanitise one triage record from results.json."""
    if not isinstance(raw, dict) or raw.get("result") not in TRIAGE_RESULTS:
        return Triage("not_run", "the sandbox reported no triage for this candidate")
    tests_raw = _dict(raw.get("tests"))
    tests = tuple((str(k)[:200], str(v)[:20]) for k, v in list(tests_raw.items())[:100])
    elapsed = raw.get("elapsed_s")
    return Triage(
        result=raw["result"], witness=str(raw.get("witness", ""))[:MAX_WITNESS], tests=tests,
        elapsed_s=float(elapsed) if isinstance(elapsed, int | float) else 0.0,
    )


def read_results(staging: Path) -> dict[str, Any]:
    data = read_capped(staging / RESULTS, MAX_RESULTS_BYTES)
    if data is None:
        return {}
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def collect(staging: Path, keys: Mapping[str, str]) -> tuple[list[Staged], list[Rejected], list[str]]:
    """Validate the staging directory against the issued ``keys`` (key -> target).

    Returns the accepted candidates, the rejections (with reasons) and the names
    of unexpected entries, which are ignored.
    """
    results = read_results(staging)
    triage = _dict(results.get("triage"))
    drafts = _dict(results.get("drafts"))
    staged: list[Staged] = []
    rejected: list[Rejected] = []
    unexpected = sorted(name for name in os.listdir(staging)
                        if name != RESULTS and not (name.endswith(".py") and name[:-3] in keys))
    for key in keys:
        code = read_capped(staging / f"{key}.py", MAX_CANDIDATE_BYTES)
        if code is None:
            note = _dict(drafts.get(key))
            reason = str(note.get("reason", "no draft staged (or not a regular file within the size cap)"))
            rejected.append(Rejected(key, reason[:MAX_WITNESS]))
            continue
        why = check_code(code)
        if why is not None:
            rejected.append(Rejected(key, why))
            continue
        staged.append(Staged(key, code, parse_triage(triage.get(key))))
    return staged, rejected, unexpected
