"""The property runner, parent side: specs from the trusted side, one row per property x seed.

Every property x seed runs in a fresh process forked by a zygote
(``mergegate._worker``) that never imported production code; a thread per core
feeds the zygotes.  The oracle source executed is always the TRUSTED bytes
(the catalog's revision), whatever the tree under test holds.
"""

from __future__ import annotations

import ast
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mergegate import catalog, digest, fsutil, gitio, globs, signature, yamlio
from mergegate.errors import ConfigError, InternalError, UsageError
from mergegate.policy import FIXTURE, Policy
from mergegate.pool import Pool


@dataclass(frozen=True)
class Spec:
    """One property as the trusted revision defines it."""

    prop: catalog.Property
    source: bytes
    spec_hash: str


@dataclass(frozen=True)
class Tree:
    """A checked-out tree under test."""

    root: Path
    prod_roots: tuple[str, ...]
    fixture_digest: str
    label: str = ""


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

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "prop": self.prop, "seed": self.seed, "status": self.status, "witness": self.witness,
            "signature": self.signature, "spec_hash": self.spec_hash,
            "fixture_closure": self.fixture_closure, "fixture_digest": self.fixture_digest,
            "examples": self.examples, "duration_s": self.duration_s,
        }
        if self.error:
            data["error"] = self.error
        if self.fixtures_opened:
            data["fixtures_opened"] = list(self.fixtures_opened)
        if self.undeclared_fixtures:
            data["undeclared_fixtures"] = list(self.undeclared_fixtures)
        return data


# ---------------------------------------------------------------- trusted specs


def load_specs(rev: str, policy: Policy, cwd: str | Path | None = None) -> tuple[catalog.Catalog, list[Spec]]:
    """The catalog and each property's trusted oracle bytes at ``rev``; bad entries are errors."""
    cat = catalog.load_at(rev, policy.paths.catalog, None if cwd is None else str(cwd))
    entries = {e.path: e for e in gitio.ls_tree(rev, cwd)}
    wanted = [entries[p].sha for prop in cat.properties for p in (prop.source, prop.oracle_file) if p in entries]
    blobs = dict(gitio.read_blobs(wanted, cwd))
    specs = []
    for prop in cat.properties:
        entry_bytes = blobs[entries[prop.source].sha]
        oracle = entries.get(prop.oracle_file)
        if oracle is None or oracle.is_submodule:
            line = yamlio.load(entry_bytes, prop.source).line(("oracle",))
            raise ConfigError(prop.source, line, f"oracle file {prop.oracle_file} does not exist at {rev[:12]}",
                              "commit the oracle file or fix the catalog entry's oracle: path")
        source = blobs[oracle.sha]
        check_function(prop, source, entry_bytes)
        specs.append(Spec(prop, source, catalog.spec_hash(entry_bytes, source)))
    return cat, specs


def check_function(prop: catalog.Property, source: bytes, entry_bytes: bytes) -> None:
    """The oracle file must parse and define the catalog's test function at top level."""
    try:
        tree = ast.parse(source, prop.oracle_file)
    except SyntaxError as exc:
        raise ConfigError(prop.oracle_file, exc.lineno, f"syntax error: {exc.msg}", "fix the oracle file") from None
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if prop.oracle_function not in names:
        line = yamlio.load(entry_bytes, prop.source).line(("oracle",))
        raise ConfigError(prop.source, line, f"{prop.oracle_file} has no function {prop.oracle_function}",
                          "name a test function the oracle file defines")


# ---------------------------------------------------------------- trees


def literal_prefix(pattern: str) -> str:
    """The directory part of a glob before its first wildcard."""
    parts = []
    for part in pattern.strip("/").split("/"):
        if any(c in part for c in "*?["):
            break
        parts.append(part)
    return "/".join(parts)


def production_roots(root: Path, policy: Policy) -> tuple[str, ...]:
    """Import roots for the production globs: ``src/**`` -> src; a package dir -> its parent."""
    found: list[str] = []
    for pattern in policy.paths.production:
        prefix = literal_prefix(pattern)
        path = root / prefix if prefix else root
        if path.is_file():
            path = path.parent
        while path != root and (path / "__init__.py").exists():
            path = path.parent
        found.append(str(path))
    return tuple(dict.fromkeys(found))


def files_matching(root: Path, patterns: Sequence[str]) -> dict[str, bytes]:
    """``{relative path: bytes}`` of the regular files under ``root`` matching ``patterns``."""
    out: dict[str, bytes] = {}
    for start in sorted({literal_prefix(p) for p in patterns}):
        base = root / start if start else root
        candidates = [base] if base.is_file() else (p for p in base.rglob("*") if p.is_file())
        for path in candidates:
            rel = path.relative_to(root).as_posix()
            if not rel.startswith(".git/") and globs.matches(rel, patterns):
                out[rel] = path.read_bytes()
    return out


def tree_digest(root: Path, policy: Policy) -> str:
    """Seed 000's fixture digest of the fixtures directory (one root) or of each root."""
    roots = sorted({literal_prefix(p) for p in policy.paths.fixtures})
    if len(roots) == 1:
        return digest.fixture_digest(root / roots[0])
    return digest.fixture_digest_of({r: digest.fixture_digest(root / r).encode() for r in roots})


def tree_info(root: Path, policy: Policy, label: str = "") -> Tree:
    root = root.resolve()
    return Tree(root, production_roots(root, policy), tree_digest(root, policy), label)


# ---------------------------------------------------------------- running


Task = tuple[Tree, Spec, int]
Progress = Callable[[Task, Row], None]


def plan(specs: Sequence[Spec], seeds: Sequence[int], shard: tuple[int, int] | None = None) -> list[tuple[Spec, int]]:
    """Every property x seed in (prop, seed order); with ``shard=(k, n)`` only the k-th of n slices."""
    pairs = [(s, seed) for s in sorted(specs, key=lambda s: s.prop.id) for seed in seeds]
    if shard is None:
        return pairs
    k, n = shard
    return [pair for i, pair in enumerate(pairs) if i % n == k - 1]


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` with 1 <= K <= N."""
    try:
        k_text, n_text = text.split("/")
        k, n = int(k_text), int(n_text)
    except ValueError:
        raise UsageError(f"bad shard {text!r}", "write --shard K/N, e.g. --shard 1/4") from None
    if not 1 <= k <= n:
        raise UsageError(f"bad shard {text!r}: K must be between 1 and N", "write --shard 1/4 .. 4/4")
    return k, n


def default_jobs(policy: Policy) -> int:
    return policy.runner.jobs or len(os.sched_getaffinity(0)) or 1


def run_tasks(tasks: Sequence[Task], policy: Policy, jobs: int | None = None,
              progress: Progress | None = None) -> list[Row]:
    """Run every task in a pool of ``jobs`` zygotes; rows in task order."""
    if not tasks:
        return []
    size = max(1, min(jobs or default_jobs(policy), len(tasks)))
    begin = getattr(progress, "begin", None)  # a progress bar may want the total first
    if callable(begin):
        begin(len(tasks))
    with tempfile.TemporaryDirectory(prefix="gate-run-") as scratch_dir:
        scratch = Path(scratch_dir)
        (scratch / "pycache").mkdir()
        (scratch / "home").mkdir()
        closures = _closures(tasks)
        pool = Pool(size, policy.runner.timeout_s, scratch)
        ex = ThreadPoolExecutor(size)

        def one(index: int) -> Row:
            tree, spec, seed = tasks[index]
            job = _job(index, tree, spec, seed, policy, scratch)
            try:
                out = pool.submit(job)
            except InternalError as exc:
                if pool.closed:
                    raise
                # The zygote died under this job (e.g. the OOM killer): a crash, a fail; a fresh one serves on.
                out = {"status": "fail", "witness": "Crash:runner", "error": exc.message}
            if out.get("witness") in ("Crash:runner", "Timeout:runner"):
                out["error"] = f"{out.get('error')}{_stderr_tail(scratch / f'stderr-{index}.log')}"
            row = _row(tree, spec, seed, out, policy, closures[(tree.root, spec.prop.id)])
            if progress is not None:
                progress(tasks[index], row)
            return row

        try:
            futures = [ex.submit(one, i) for i in range(len(tasks))]
            return [f.result() for f in futures]
        finally:
            # Kill the zygotes first (an interrupt must not wait for running properties),
            # then let the feeding threads finish against the closed pool.
            pool.close()
            ex.shutdown(wait=True, cancel_futures=True)


def _stderr_tail(path: Path, limit: int = 600) -> str:
    """The end of a crashed run's stderr, for the row's error text (empty if none)."""
    try:
        data = path.read_bytes()[-limit:].decode(errors="replace").strip()
    except OSError:
        return ""
    return f"; stderr: {data}" if data else ""


def _closures(tasks: Sequence[Task]) -> dict[tuple[Path, str], str]:
    out: dict[tuple[Path, str], str] = {}
    for tree, spec, _seed in tasks:
        key = (tree.root, spec.prop.id)
        if key not in out:
            files = files_matching(tree.root, spec.prop.fixtures) if spec.prop.fixtures else {}
            out[key] = catalog.fixture_closure(spec.prop, files)
    return out


def _job(index: int, tree: Tree, spec: Spec, seed: int, policy: Policy, scratch: Path) -> dict[str, Any]:
    oracle_root, module = _module_name(tree, spec.prop.oracle_file)
    return {
        "id": index, "prop": spec.prop.id, "seed": seed, "tree": str(tree.root),
        "oracle_file": spec.prop.oracle_file, "function": spec.prop.oracle_function,
        "source": spec.source.decode("utf-8", "surrogateescape"), "max_examples": spec.prop.max_examples,
        "prod_roots": list(tree.prod_roots), "oracle_root": oracle_root, "module": module,
        "timeout": policy.runner.timeout_s, "pycache": str(scratch / "pycache"),
        "home": str(scratch / "home"), "stderr": str(scratch / f"stderr-{index}.log"),
    }


def _module_name(tree: Tree, oracle_file: str) -> tuple[str, str]:
    """Import root and dotted module name, as pytest's rootdir-less "prepend" mode finds them.

    The import root goes on sys.path BEFORE the production roots: a production
    module can never shadow an oracle helper (the price: an oracle file named
    like a production package hides it, which fails closed).
    """
    path = tree.root / oracle_file
    parts = [path.stem]
    directory = path.parent
    while directory != tree.root and (directory / "__init__.py").exists():
        parts.insert(0, directory.name)
        directory = directory.parent
    return str(directory), ".".join(parts)


def _row(tree: Tree, spec: Spec, seed: int, out: dict[str, Any], policy: Policy, closure: str) -> Row:
    status = "pass" if out.get("status") == "pass" else "fail"
    witness = str(out.get("witness") or "")
    error = out.get("error")
    opened = tuple(sorted({p for p in out.get("opened") or () if policy.classify(p) == FIXTURE}))
    undeclared = tuple(p for p in opened if not spec.prop.uses_fixture(p))
    if undeclared:
        # The fixture closure hash covers only declared fixtures: bytes the property read
        # but did not declare are outside the contract, so the run cannot vouch for them.
        status = "fail"
        note = f"opened undeclared fixture(s): {', '.join(undeclared)}"
        error = f"{error}; {note}" if error else note
        if not witness:
            witness = f"UndeclaredFixture:{spec.prop.oracle_file}"
    sig = None
    if status == "fail":
        sig = signature.signature(spec.prop.id, witness, str(out.get("counterexample") or ""), [str(tree.root)])
        if error:
            error = signature.normalise(str(error), [str(tree.root)])
    return Row(
        prop=spec.prop.id, seed=seed, status=status, witness=witness, signature=sig,
        spec_hash=spec.spec_hash, fixture_closure=closure, fixture_digest=tree.fixture_digest,
        examples=int(out.get("examples") or 0), duration_s=float(out.get("duration_s") or 0.0),
        error=error, fixtures_opened=opened, undeclared_fixtures=undeclared,
        load_error=str(error or "").startswith("loading the oracle"),
    )


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
        load_error=str(data.get("error") or "").startswith("loading the oracle"),
    )
