"""Host-side validation of what the container reported.  The container is not trusted.

The one result file is read as data only: no symlink is followed, nothing but a
regular file is opened, its size is capped, only the keys the host issued count,
and each candidate must parse, hold no terminal control character and not use
``st.nothing()``.  A draft's bytes are fixed (and hashed) here, as they leave the
container; triage later runs a read-only copy of exactly these bytes.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mergegate import textsafe

MAX_CANDIDATE_BYTES = 64 * 1024
MAX_RESULTS_BYTES = 4 * 1024 * 1024  # = the container's fsize ulimit
MAX_WITNESS = 4000
TRIAGE_RESULTS = ("pass", "fail", "error")
MAX_TESTS = 20  # test functions per candidate: each becomes a catalog entry a person reads
MAX_TEST_NAME = 80  # characters: the name goes into a catalog file name and a property id


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
class Drafted:
    """A candidate that passed host-side validation: its bytes, fixed when they left the container."""

    key: str
    code: bytes

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
    tests = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    return test_limits([t.name for t in tests]) or _asserts_nothing(tree, tests)


def _checks(node: ast.AST, helpers: set[str]) -> bool:
    """Whether ``node`` holds an assert or a raise, an ``assert*``/``raises``/``fail`` call, or an asserting helper."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assert | ast.Raise):
            return True
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in helpers or name.startswith("assert") or name in ("raises", "fail"):
                return True
    return False


def _asserts_nothing(tree: ast.Module, tests: list[ast.FunctionDef]) -> str | None:
    """Why a test that asserts no relation makes the candidate not worth a review, or None."""
    others = [n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("test")]
    helpers = {n.name for n in others if _checks(n, set())}
    idle = [t.name for t in tests if not _checks(t, helpers)]
    if not idle:
        return None
    return (f"{', '.join(idle[:3])} asserts nothing: a test that only calls the code finds crashes, "
            "not wrong answers, and is not worth a person's review")


def test_limits(tests: list[str]) -> str | None:
    """Why these top-level test names cannot become catalog entries, or None.  Pure."""
    if not tests:
        return "draft defines no top-level test_* function"
    if len(tests) > MAX_TESTS:
        return f"draft defines {len(tests)} test functions, over the limit of {MAX_TESTS} per candidate"
    long = next((t for t in tests if len(t) > MAX_TEST_NAME), None)
    if long is not None:
        return (f"test name {long[:40]}... is {len(long)} characters, over the limit of {MAX_TEST_NAME}: "
                "it would not fit a catalog file name")
    if len(set(tests)) != len(tests):
        return "draft defines a test function twice: only the last would run"
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


def read_results(path: Path) -> dict[str, Any]:
    """The agent's result document; {} when absent, not a regular file, oversized or not JSON."""
    data = read_capped(path, MAX_RESULTS_BYTES)
    if data is None:
        return {}
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def collect(results: Mapping[str, Any], keys: Iterable[str]) -> tuple[list[Drafted], list[Rejected]]:
    """Validate the drafts of a result document against the issued ``keys``; other keys are ignored."""
    drafts = _dict(results.get("drafts"))
    accepted: list[Drafted] = []
    rejected: list[Rejected] = []
    for key in keys:
        note = _dict(drafts.get(key))
        code = note.get("code")
        if note.get("status") != "drafted" or not isinstance(code, str):
            reason = str(note.get("reason", "") or "the sandbox reported no draft")
            rejected.append(Rejected(key, reason[:MAX_WITNESS]))
            continue
        data = code.encode("utf-8", errors="surrogatepass")
        why = check_code(data)
        if why is not None:
            rejected.append(Rejected(key, why))
            continue
        accepted.append(Drafted(key, data))
    return accepted, rejected
